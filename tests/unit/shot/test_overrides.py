"""The --overrides file (shot.overrides): reading and checking it, which entry holds where, and
the faces `hold` fills in. Applying it to a shot plan: tests/unit/shot/test_plan_overrides.py
and tests/integration/test_render_overrides.py."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest

from facefuse.errors import InputError
from facefuse.shot.overrides import Override, Overrides, held_faces, load_overrides
from facefuse.types import Face


def _write(tmp_path: Path, data: object) -> Path:
    path = tmp_path / "overrides.json"
    path.write_text(data if isinstance(data, str) else json.dumps(data))
    return path


def _file(*entries: dict, **extra: object) -> dict:
    return {"schema": "facefuse.overrides/1", **extra, "overrides": list(entries)}


def test_a_file_reads_back_as_its_entries_in_order(tmp_path):
    path = _write(tmp_path, _file({"frames": "1001-1010", "person": "p2", "action": "skip"},
                                  {"frames": [1003, 1004], "action": "keep", "note": "blink"},
                                  {"frames": "1020,1030-1031", "person": "p1",
                                   "action": "hold"}, shot="0123456789abcdef"))
    overrides = load_overrides(path)
    assert overrides.entries == (Override(((1001, 1010),), "p2", "skip"),
                                 Override(((1003, 1004),), None, "keep"),
                                 Override(((1020, 1020), (1030, 1031)), "p1", "hold"))
    assert overrides.shot == "0123456789abcdef"
    assert len(overrides.sha256) == 64


@pytest.mark.parametrize("content, message", [
    ("{nope", r"is not JSON \(.* at line 1\)$"),
    (b"\xff\xfe", r"is not JSON"),
    ({"schema": "facefuse.overrides/2", "overrides": []},
     r"is not a facefuse\.overrides/1 file \(its schema is 'facefuse\.overrides/2'\)$"),
    ([], r"its schema is None"),
    (_file(frames_typo=1), r"has unknown keys frames_typo \(it takes schema, shot, overrides"),
    (_file({"frames": "1-2", "person": "p1", "action": "blur"}),
     r"entry 1: action 'blur' is not one of skip, keep, swap, hold$"),
    (_file({"frames": "1-2", "action": "keep"}, {"frames": "1-2", "action": "swap"}),
     r"entry 2: swap needs a person \(keep alone keeps everyone\)$"),
    (_file({"frames": "9-2", "action": "keep"}),
     r"entry 1: frames '9-2' are not a range such as \"1001-1010\" or \[1001, 1010\]$"),
    (_file({"frames": [3], "action": "keep"}), r"entry 1: frames \[3\] are not a range"),
    (_file({"frames": [True, 2], "action": "keep"}), r"entry 1: frames \[True, 2\]"),
    (_file({"frame": "1-2", "action": "keep"}), r"entry 1 has unknown keys frame"),
    (_file({"frames": "1-2", "person": 2, "action": "skip"}),
     r"entry 1: person must be a person id such as p2$"),
    (_file("keep"), r"entry 1 is not an object"),
    (_file(shot=5), r"shot must be a shot id"),
    ({"schema": "facefuse.overrides/1", "overrides": {}}, r"overrides must be a list"),
])
def test_a_bad_file_is_one_sentence(tmp_path, content, message):
    path = tmp_path / "overrides.json"
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        _write(tmp_path, content)
    with pytest.raises(InputError, match=rf"^overrides file {re.escape(str(path))}\b.*"
                                         rf"{message}") as caught:
        load_overrides(path)
    assert "\n" not in str(caught.value)


def test_a_missing_file_is_refused(tmp_path):
    with pytest.raises(InputError, match=r"overrides file .*none\.json does not exist$"):
        load_overrides(tmp_path / "none.json")


def test_the_check_against_the_shot_names_what_is_wrong():
    overrides = Overrides((Override(((1001, 1005),), "p2", "skip"),
                           Override(((1050, 1070),), None, "keep")), label="fix.json")
    with pytest.raises(InputError, match=r"^fix\.json entry 2: frames 1050-1070 are outside "
                                         r"the analysed range 1001-1060$"):
        overrides.check((1001, 1060), ("p1", "p2"), "a" * 16)
    with pytest.raises(InputError, match=r"^fix\.json entry 1 names person p2, whom this shot "
                                         r"does not have \(its people: p1\)$"):
        overrides.check((1001, 1100), ("p1",), "a" * 16)
    other = Overrides((), shot="b" * 16, label="fix.json")
    with pytest.raises(InputError, match=r"^fix\.json is for shot b{16}, not this one "
                                         r"\(a{16}\)"):
        other.check((1001, 1100), ("p1",), "a" * 16)
    Overrides((), shot="a" * 16).check((1001, 1100), (), "a" * 16)


def test_a_later_entry_wins_for_the_same_frame_and_person():
    overrides = Overrides((Override(((1, 10),), "p1", "swap"),
                           Override(((4, 6),), None, "keep"),
                           Override(((5, 5),), "p2", "hold")))
    table = overrides.actions(range(1, 13), ("p1", "p2"))
    assert table["p1"] == {**dict.fromkeys(range(1, 11), "swap"), 4: "keep", 5: "keep",
                           6: "keep"}
    assert table["p2"] == {4: "keep", 5: "hold", 6: "keep"}


def _face(x: float, embedding: float = 0.0) -> Face:
    return Face(np.array([x, 0, x + 10, 10], np.float32),
                np.full((5, 2), x, np.float32), 0.9 - x / 1000,
                np.array([embedding, 1.0], np.float32))


def test_hold_interpolates_inside_a_shot_and_holds_at_its_ends():
    found = {10: _face(10, 1.0), 20: _face(30, 2.0), 40: _face(100, 3.0)}
    held = held_faces(found, range(5, 46), cuts=(35,))
    assert 10 not in held and 20 not in held  # found faces stay as they are
    np.testing.assert_allclose(held[15].bbox_xyxy, [20, 0, 30, 10])  # halfway, 10 -> 30
    assert held[14].embedding[0] == 1.0 and held[16].embedding[0] == 2.0  # the nearer's
    assert held[15].score == pytest.approx(found[20].score)
    assert all(held[n].bbox_xyxy[0] == 10 for n in range(5, 10))  # before the first: held
    assert all(held[n].bbox_xyxy[0] == 30 for n in range(21, 35))  # up to the cut: held
    assert all(held[n].bbox_xyxy[0] == 100 for n in (35, 36, 45))  # after it: the next shot's
    assert held_faces({}, range(3), cuts=()) == {}
    assert 5 not in held_faces({40: _face(1)}, range(5, 6), cuts=(35,))  # nothing in its shot
