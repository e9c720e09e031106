"""What the timeline and the people grid show of a shot, read from facefuse's review report
(report.json, docs/review.md): the analysed range, cuts, people with their thumbnails and
presence, per-frame marks (faces found, people swapped, flag kinds) and the flagged ranges.
Plain data, no Qt: a clip that has not been looked at yet is `ShotReview.empty(first, last)`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any

Ranges = tuple[tuple[int, int], ...]


@dataclass(frozen=True, slots=True)
class PersonRow:
    """One person of the shot plan (p1, p2, ... by first appearance)."""

    person_id: str
    frames: Ranges
    frame_count: int
    presence: float
    swapped: bool
    source: str | None
    why: str
    thumbnail: Path | None = None

    def seen(self, frame: int) -> bool:
        return any(first <= frame <= last for first, last in self.frames)


@dataclass(frozen=True, slots=True)
class FrameMarks:
    """One analysed frame: faces found, the people swapped in it, the kinds of its flags."""

    found: int = 0
    swapped: tuple[str, ...] = ()
    flags: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class FlagRow:
    kind: str
    first: int
    last: int
    person_id: str
    reason: str


@dataclass(frozen=True, slots=True)
class ShotReview:
    """A shot as the review saw it. first/last: the frame range shown; folder: the report
    folder (None before a review)."""

    first: int
    last: int
    cuts: tuple[int, ...] = ()
    people: tuple[PersonRow, ...] = ()
    marks: Mapping[int, FrameMarks] = field(default_factory=lambda: MappingProxyType({}))
    flags: tuple[FlagRow, ...] = ()
    flagged: Ranges = ()
    folder: Path | None = None

    @classmethod
    def empty(cls, first: int, last: int) -> ShotReview:
        return cls(first, last)

    @property
    def reviewed(self) -> bool:
        return self.folder is not None

    def person(self, person_id: str) -> PersonRow | None:
        return next((p for p in self.people if p.person_id == person_id), None)

    def next_flag(self, frame: int, step: int = 1) -> int | None:
        """The first frame of the next flagged range after `frame` (step 1) or of the one
        before it (step -1); None when there is none that way."""
        starts = sorted({first for first, _ in self.flagged})
        if step > 0:
            return next((s for s in starts if s > frame), None)
        return next((s for s in reversed(starts) if s < frame), None)

    def flags_at(self, frame: int) -> tuple[FlagRow, ...]:
        return tuple(f for f in self.flags if f.first <= frame <= f.last)


def review_from_report(data: Mapping[str, Any], folder: Path) -> ShotReview:
    """The ShotReview of a report's JSON (load_report(folder).data) written into `folder`."""
    people = tuple(_person(p, folder) for p in data["people"])
    marks = {row["frame"]: FrameMarks(int(row["found"]), tuple(row["swapped"]),
                                      tuple(row["flags"]))
             for row in data["strip"]}
    flags = tuple(FlagRow(f["kind"], f["first"], f["last"], f["person"], f["reason"])
                  for f in data["flags"])
    return ShotReview(data["frames"]["first"], data["frames"]["last"], tuple(data["cuts"]),
                      people, MappingProxyType(marks), flags,
                      tuple((a, b) for a, b in data["flagged_frames"]), folder)


def _person(row: Mapping[str, Any], folder: Path) -> PersonRow:
    thumbnail = folder / row["thumbnail"] if row.get("thumbnail") else None
    return PersonRow(row["id"], tuple((a, b) for a, b in row["frames"]), int(row["frame_count"]),
                     float(row["presence"]), bool(row["swapped"]), row["source"], row["why"],
                     thumbnail)


def ranges_text(ranges: Ranges) -> str:
    """1-20, 31, 40-45"""
    return ", ".join(f"{a}-{b}" if a != b else f"{a}" for a, b in ranges)


# one colour per person (p1, p2, ...), the same on the timeline and on the person's card
PERSON_RGB = ((90, 170, 255), (255, 140, 60), (120, 220, 120), (220, 110, 220),
              (250, 220, 80), (90, 220, 220), (240, 100, 120), (170, 150, 255))


def person_rgb(review: ShotReview, person_id: str) -> tuple[int, int, int]:
    ids = [p.person_id for p in review.people]
    index = ids.index(person_id) if person_id in ids else 0
    return PERSON_RGB[index % len(PERSON_RGB)]


def review_with_plan(review: ShotReview, plan: Any) -> ShotReview:
    """`review` with who is swapped (and with what, and why) taken from a newer shot plan of
    the same shot (facefuse.plan_shot after the user gave someone a source or skipped them)."""
    decided = {p.person_id: p for p in plan.people}
    people = tuple(_replan(row, decided.get(row.person_id)) for row in review.people)
    marks = {frame: FrameMarks(m.found, tuple(f.person_id for f in plan.faces(frame)), m.flags)
             for frame, m in review.marks.items()}
    return ShotReview(review.first, review.last, review.cuts, people, MappingProxyType(marks),
                      review.flags, review.flagged, review.folder)


def _replan(row: PersonRow, planned: Any) -> PersonRow:
    if planned is None:
        return row
    return PersonRow(row.person_id, row.frames, row.frame_count, row.presence,
                     bool(planned.swapped), planned.source, planned.why, row.thumbnail)
