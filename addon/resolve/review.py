"""Markers on the placed swap from a review report (`report.json`, facefuse's review).

Only the report's flags are read here: {"flags": [{"kind", "frames": [first, last], "person",
"reason"}, ...]}, frames numbered as the engine numbers the source (inclusive). Each flag that
touches the item becomes a marker on the placed item: its name the kind, its note the reason
(the person in its custom data), its colour the kind's (MARKER_COLOURS, Resolve's marker colours).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any

from facefuse import InputError

from .timeline import ItemSpan

MARKER_COLOURS = MappingProxyType({
    "missed": "Red", "swap_flicker": "Pink", "identity_jump": "Fuchsia",
    "low_confidence": "Yellow", "box_jump": "Cyan", "landmark_jump": "Sky",
    "mask_flicker": "Purple", "matte_flicker": "Lavender", "too_small": "Sand",
    "extreme_yaw": "Cream"})
OTHER_COLOUR = "Lemon"


@dataclass(frozen=True, slots=True)
class Marker:
    """A marker on the placed item: `frame` is its offset from the item's first frame."""

    frame: int
    duration: int
    color: str
    name: str
    note: str
    custom: str = ""


def read_flags(path: Path) -> list[dict[str, Any]]:
    """The flags of a review report; InputError when it cannot be read."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise InputError(f"cannot read the review report {path}: {exc}") from None
    flags = data.get("flags") if isinstance(data, dict) else None
    if not isinstance(flags, list):
        raise InputError(f"the review report {path} has no list of flags")
    return [flag for flag in flags if isinstance(flag, dict)]


def markers(path: Path, span: ItemSpan) -> tuple[Marker, ...]:
    """The markers of the report's flags that touch the item's engine frames."""
    first, last = span.engine_frames
    found = []
    for flag in read_flags(path):
        frames = flag.get("frames")
        if not (isinstance(frames, list) and len(frames) == 2
                and all(isinstance(f, int) and not isinstance(f, bool) for f in frames)):
            raise InputError(f"the review report {path} has a flag whose frames are not "
                             f"[first, last]: {frames!r}")
        lo, hi = max(frames[0], first), min(frames[1], last)
        if lo > hi:
            continue
        kind = str(flag.get("kind") or "flag")
        found.append(Marker(lo - first, hi - lo + 1, MARKER_COLOURS.get(kind, OTHER_COLOUR),
                            kind, str(flag.get("reason") or ""), str(flag.get("person") or "")))
    return tuple(found)
