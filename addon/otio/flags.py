"""Review flags as markers: the flags of a review report (the report.json a render's review
writes) become markers on the swapped clip, one per flag over its frames, named
`facefuse KIND`, red, with the person and the reason as the comment.

A flag is read as {"kind", "frames": [first, last], "person", "reason"} (or with "first" and
"last" keys). Its frames are the render's own frame numbers, which on a swapped clip are its
media time in frames (see media), so a marker lands on exactly the flagged frames.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import opentimelineio as otio
from opentimelineio.opentime import TimeRange

from facefuse import InputError

from .times import time_at

FLAG_COLOUR = otio.schema.MarkerColor.RED


def markers_from_report(path: Path, rate: float) -> list[otio.schema.Marker]:
    """A marker per flag of the report at `path`, its times at `rate` (the swapped clip's
    rate as the timeline stores it). InputError when the report cannot be read."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
        return [_marker(flag, rate) for flag in data.get("flags", ())]
    except (OSError, ValueError, TypeError, KeyError, AttributeError) as exc:
        raise InputError(f"cannot read the review flags of {path}: {exc}") from None


def _marker(flag: Mapping[str, Any], rate: float) -> otio.schema.Marker:
    first, last = flag["frames"] if "frames" in flag else (flag["first"], flag["last"])
    first, last = int(first), int(last)
    if last < first:
        raise ValueError(f"a flag's frames run backwards ({first}-{last})")
    span = TimeRange(time_at(first, rate), time_at(last - first + 1, rate))
    person, reason = flag.get("person") or "", flag.get("reason") or ""
    comment = f"{person}: {reason}" if person else str(reason)
    return otio.schema.Marker(name=f"facefuse {flag['kind']}", marked_range=span,
                              color=FLAG_COLOUR, comment=comment)
