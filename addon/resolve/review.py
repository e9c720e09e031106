"""Markers on the placed swap from a review report (`report.json`, facefuse's review).

Only the report's flags are read here (facefuse.load_report checks the file): {"flags":
[{"kind", "first", "last", "person", "reason"}, ...]}, frames numbered as the engine numbers
the source (inclusive). Each flag that
touches the item becomes a marker on the placed item: its name the kind, its note the reason
(the person in its custom data), its colour the kind's (MARKER_COLOURS, Resolve's marker colours).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any

from facefuse import load_report

from .timeline import ItemSpan

MARKER_COLOURS = MappingProxyType({  # the review's flag kinds (docs/review.md)
    "missed": "Red", "swap_dropout": "Pink", "identity_jump": "Fuchsia",
    "low_confidence": "Yellow", "box_jump": "Cyan", "mask_flicker": "Purple",
    "too_small": "Sand", "extreme_yaw": "Cream", "will_fail": "Rose"})
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
    """The flags of a review report (facefuse.load_report checks it: InputError, one
    sentence, when it cannot be read or is not a review report)."""
    return [dict(flag) for flag in load_report(path).data["flags"]]


def markers(path: Path, span: ItemSpan) -> tuple[Marker, ...]:
    """The markers of the report's flags that touch the item's engine frames."""
    first, last = span.engine_frames
    found = []
    for flag in read_flags(path):
        lo, hi = max(int(flag["first"]), first), min(int(flag["last"]), last)
        if lo > hi:
            continue
        kind = str(flag.get("kind") or "flag")
        found.append(Marker(lo - first, hi - lo + 1, MARKER_COLOURS.get(kind, OTHER_COLOUR),
                            kind, str(flag.get("reason") or ""), str(flag.get("person") or "")))
    return tuple(found)
