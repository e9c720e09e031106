"""Review flags as markers: the flags of a review report (the report.json a render's review
writes) become markers on the swapped clip, one per flag over its frames, named
`facefuse KIND`, red, with the person and the reason as the comment.

A flag is read as {"kind", "first", "last", "person", "reason"} (report.json, checked by
facefuse.load_report). Its frames are the render's own frame numbers; the caller says which
media time each number is (conform: the swapped clip's media times), so a marker lands on
exactly the flagged frames.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import opentimelineio as otio
from opentimelineio.opentime import RationalTime, TimeRange

from facefuse import load_report

FLAG_COLOUR = otio.schema.MarkerColor.RED
# the media time at which the frame a render numbers N starts
TimeOf = Callable[[int], RationalTime]


def markers_from_report(path: Path, time_of: TimeOf) -> list[otio.schema.Marker]:
    """A marker per flag of the report at `path`, over the media times `time_of` gives its
    frames. InputError (facefuse.load_report's one sentence) when the report cannot be read or
    is not a review report."""
    return [_marker(flag, time_of) for flag in load_report(path).data["flags"]]


def _marker(flag: Mapping[str, Any], time_of: TimeOf) -> otio.schema.Marker:
    first, last = int(flag["first"]), int(flag["last"])
    start = time_of(first)
    span = TimeRange(start, (time_of(last + 1) - start).rescaled_to(start.rate))
    person, reason = flag.get("person") or "", flag.get("reason") or ""
    comment = f"{person}: {reason}" if person else str(reason)
    return otio.schema.Marker(name=f"facefuse {flag['kind']}", marked_range=span,
                              color=FLAG_COLOUR, comment=comment)
