"""The --overrides file (shot.plan.overrides): reading and checking it, which entry holds where, and
the faces `hold` fills in, and make_plan applying it (a render with it:
tests/integration/test_render_overrides.py)."""

from __future__ import annotations

import errno
import json
import os
import re
import time
from pathlib import Path

import numpy as np
import pytest

from facefuse.errors import ExitCode, InputError, OutputError
from facefuse.shot.plan import overrides as overrides_module
from facefuse.shot.plan.analysis import ShotAnalysis
from facefuse.shot.plan.make import make_plan
from facefuse.shot.plan.options import PlanOptions
from facefuse.shot.plan.overrides import (
    Override,
    Overrides,
    held_faces,
    load_overrides,
    write_overrides,
)
from facefuse.shot.plan.plan import DEFAULT_SOURCE
from facefuse.types import Face
from tests.unit.shot.faces import face_at


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
    (b"\xff\xfe", r"is not UTF-8 text \(byte 0xff at offset 0\)"),
    ({"schema": "facefuse.overrides/2", "overrides": []},
     r"is not a facefuse\.overrides/1 file \(its schema is 'facefuse\.overrides/2'\)$"),
    ([], r"its schema is None"),
    (_file(frames_typo=1), (r"has unknown keys frames_typo \(it takes schema, shot, analysed, "
                              r"overrides")),
    (_file(analysed="1-5,9"), r"analysed must be the range the shot id names"),
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
    overrides.check((1001, 1060), ("p1", "p2"), "a" * 16)  # outside: ignored (outside_note)
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


# -- applied by make_plan ------------------------------------------------------------------------

def _unit(index: int, dim: int = 8) -> np.ndarray:
    vector = np.zeros(dim, np.float32)
    vector[index] = 1.0
    return vector


def _analysis(missing: tuple[int, ...] = ()) -> ShotAnalysis:
    """p1 small on the left in frames 1-20, p2 large (the main person) in 3-20, except in
    `missing` frames, where p2 was not found; the lead moves right one pixel a frame."""
    faces = {}
    for n in range(1, 21):
        seen = [face_at(10, _unit(0))]
        if n >= 3 and n not in missing:
            seen.append(face_at(300 + n, _unit(1), 300))
        faces[n] = tuple(seen)
    return ShotAnalysis(faces)


def _plan(overrides: Overrides | None, missing: tuple[int, ...] = (), shot_id: str = "s" * 16,
          **options: object):
    return make_plan(_analysis(missing), PlanOptions("one", rate_hz=24.0, overrides=overrides,
                                                     **options), shot_id, tuple(range(1, 21)))


def _who(plan, frame: int) -> list[str]:
    return [face.person_id for face in plan.faces(frame)]


def test_no_entries_plan_exactly_as_no_overrides():
    plain, empty = _plan(None), _plan(Overrides(()))
    assert all(plain.frame_digest(n) == empty.frame_digest(n) for n in range(1, 21))
    assert not PlanOptions("many", overrides=Overrides(())).local  # planned on the whole range


def test_skip_keep_and_swap_change_only_their_frames():
    overrides = Overrides((Override(((5, 6),), "p2", "skip"),
                           Override(((8, 8),), None, "keep"),
                           Override(((10, 12),), "p1", "swap"),
                           Override(((11, 11),), "p2", "skip")))
    plain, fixed = _plan(None), _plan(overrides)
    changed = [n for n in range(1, 21) if plain.frame_digest(n) != fixed.frame_digest(n)]
    assert changed == [5, 6, 8, 10, 11, 12]
    assert _who(fixed, 5) == [] and _who(fixed, 8) == [] and _who(fixed, 9) == ["p2"]
    assert _who(fixed, 10) == ["p1", "p2"] and _who(fixed, 11) == ["p1"]  # in paste order
    assert fixed.faces(10)[0].source == DEFAULT_SOURCE
    assert not plain.person("p1").swapped and fixed.person("p1").swapped  # said in the plan
    assert fixed.person("p1").why.endswith("swapped where the overrides say so")


def test_a_later_entry_wins_in_the_plan():
    overrides = Overrides((Override(((1, 20),), None, "keep"), Override(((4, 4),), "p2", "swap")))
    plan = _plan(overrides)
    assert [n for n in range(1, 21) if plan.faces(n)] == [4]


def test_hold_fills_a_long_gap_from_the_track_on_either_side():
    missing = tuple(range(8, 16))  # 8 frames: longer than gap filling bridges
    assert all(_who(_plan(None, missing), n) == [] for n in missing)
    held = _plan(Overrides((Override(((8, 15),), "p2", "hold"),)), missing, smoothing=None)
    assert all(_who(held, n) == ["p2"] and not held.faces(n)[0].detected for n in missing)
    x = [float(held.faces(n)[0].face.bbox_xyxy[0]) for n in range(7, 17)]
    np.testing.assert_allclose(x, np.linspace(307, 316, 10), atol=1e-4)  # between 7 and 16


def test_overrides_that_do_not_fit_the_shot_are_refused():
    with pytest.raises(InputError, match=r"entry 1 names person p7, whom this shot does not "
                                         r"have \(its people: p1, p2\)$"):
        _plan(Overrides((Override(((1, 2),), "p7", "skip"),)))
    kept = _plan(Overrides((Override(((15, 25),), None, "keep"),)))  # 21-25: no such frames
    assert all(not kept.faces(n) for n in range(15, 21))
    with pytest.raises(InputError, match=r"is for shot 0123456789abcdef, not this one"):
        _plan(Overrides((), shot="0123456789abcdef"))


def test_what_hosts_write_reads_back_to_the_same_entries(tmp_path):
    """write_overrides writes the documented file (load_overrides reads it back entry for
    entry) and leaves a file that would say the same untouched."""
    overrides = Overrides((Override(((1001, 1010), (1035, 1035)), "p2", "skip"),
                           Override(((1040, 1042),), None, "keep")), shot="ab" * 8)
    path = write_overrides(tmp_path / "sub" / "o.json", overrides)
    back = load_overrides(path)
    assert (back.entries, back.shot) == (overrides.entries, overrides.shot)
    data = json.loads(path.read_text(encoding="utf-8"))
    assert data["schema"] == "facefuse.overrides/1" and data["overrides"][0] == {
        "frames": "1001-1010,1035", "action": "skip", "person": "p2"}
    before = path.stat().st_mtime_ns
    time.sleep(0.01)
    write_overrides(path, overrides)
    assert path.stat().st_mtime_ns == before


@pytest.mark.parametrize(("code", "reason"), [(errno.ENOSPC, "the disk is full"),
                                              (errno.EROFS, "the file system is read-only")])
def test_an_overrides_file_the_storage_refuses_is_one_sentence_with_code_6(
        tmp_path, monkeypatch, code, reason):
    def refuse(path, data):
        raise OSError(code, os.strerror(code), str(path))

    monkeypatch.setattr(overrides_module, "atomic_write_bytes", refuse)
    path = tmp_path / "o.json"
    with pytest.raises(OutputError) as info:
        write_overrides(path, Overrides((Override(((1, 2),), None, "skip"),)))
    assert str(info.value) == f"cannot write {path}: {reason}"
    assert info.value.exit_code == ExitCode.OUTPUT


def test_the_corrections_outside_the_frames_rendered_are_named_in_one_note():
    overrides = Overrides((Override(((1, 4),), None, "keep"),
                           Override(((8, 12), (30, 31)), "p1", "skip"),
                           Override(((40, 45),), "p2", "hold"),
                           Override(((50, 50),), None, "keep")), label="fix.json")
    assert overrides.outside_note((1, 50)) is None
    assert overrides.outside_note((5, 20)) == (
        "fix.json: the corrections outside frames 5-20 are ignored here: 3 entries wholly "
        "(1-4, 40-45, 50) and 1 in part (30-31)")
