"""A review's `will_fail` flag (frames the render fails, of no one person: "person": null) as
each host shows flags: a Resolve marker of its own colour, an OTIO marker whose comment is the
reason alone, a panel flag row without a person (no "None" in the words under the timeline)."""

from __future__ import annotations

import json
from pathlib import Path

from opentimelineio.opentime import RationalTime

from addon.otio.flags import markers_from_report
from addon.panel.review import review_from_report
from addon.resolve.review import MARKER_COLOURS, OTHER_COLOUR, markers
from addon.resolve.timeline import ItemSpan
from tests.review_reports import review_report

REASON = "the render fails this frame: p.3.png is 316x238, not 320x240"


def _report(tmp_path: Path) -> Path:
    data = review_report([("will_fail", 3, 3, "", REASON), ("missed", 6, 8, "p1", "lost")],
                         last=20)
    data["flags"][0]["person"] = None
    path = tmp_path / "report.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def test_resolve_marks_the_frames_the_render_fails_in_their_own_colour(tmp_path: Path):
    found = markers(_report(tmp_path), ItemSpan(record_start=0, duration=20, left_offset=0))
    fails = next(m for m in found if m.name == "will_fail")
    assert (fails.frame, fails.duration, fails.note, fails.custom) == (2, 1, REASON, "")
    assert fails.color == MARKER_COLOURS["will_fail"] != OTHER_COLOUR
    assert fails.color not in {c for k, c in MARKER_COLOURS.items() if k != "will_fail"}


def test_otio_and_the_panel_show_the_flag_without_a_person(tmp_path: Path):
    path = _report(tmp_path)
    marker = markers_from_report(path, lambda n: RationalTime(n, 24))[0]
    assert (marker.name, marker.comment) == ("facefuse will_fail", REASON)
    review = review_from_report(json.loads(path.read_text(encoding="utf-8")), tmp_path)
    (row,) = review.flags_at(3)
    assert (row.kind, row.person_id, row.reason) == ("will_fail", "", REASON)
