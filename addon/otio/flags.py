"""Review flags as markers: the flags of a review report (the report.json a render's review
writes) become markers on the swapped clip, one per flag over its frames, named
`facefuse KIND`, red, with the person and the reason as the comment.

A flag is read as {"kind", "first", "last", "person", "reason"} (report.json, checked by
facefuse.load_report). Its frames are the render's own frame numbers, which on a swapped clip
are its media time in frames (see media), so a marker lands on exactly the flagged frames.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import opentimelineio as otio
from opentimelineio.opentime import TimeRange

from facefuse import load_report

from .times import time_at

FLAG_COLOUR = otio.schema.MarkerColor.RED


def markers_from_report(path: Path, rate: float) -> list[otio.schema.Marker]:
    """A marker per flag of the report at `path`, its times at `rate` (the swapped clip's
    rate as the timeline stores it). InputError (facefuse.load_report's one sentence) when
    the report cannot be read or is not a review report."""
    return [_marker(flag, rate) for flag in load_report(path).data["flags"]]


def _marker(flag: Mapping[str, Any], rate: float) -> otio.schema.Marker:
    first, last = int(flag["first"]), int(flag["last"])
    span = TimeRange(time_at(first, rate), time_at(last - first + 1, rate))
    person, reason = flag.get("person") or "", flag.get("reason") or ""
    comment = f"{person}: {reason}" if person else str(reason)
    return otio.schema.Marker(name=f"facefuse {flag['kind']}", marked_range=span,
                              color=FLAG_COLOUR, comment=comment)
