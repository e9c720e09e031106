"""What the timeline and the people grid show of a shot, read from facefuse's review report
(report.json, docs/review.md): the analysed range, cuts, people with their thumbnails and
presence, per-frame marks (faces found, people swapped, flag kinds) and the flagged ranges.
Plain data, no Qt: a clip that has not been looked at yet is `ShotReview.empty(first, last)`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
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


Box = tuple[str, float, float, float, float]  # person id, x1, y1, x2, y2 in frame pixels


@dataclass(frozen=True, slots=True)
class FrameMarks:
    """One analysed frame: faces found, the people swapped in it, the kinds of its flags, and
    where each person's face is (from the plan; () when only a report was read)."""

    found: int = 0
    swapped: tuple[str, ...] = ()
    flags: tuple[str, ...] = ()
    boxes: tuple[Box, ...] = ()


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
    folder (None before a review); planned: the people are known (from a plan or a report);
    fixed: flags of an earlier review that a correction (an override) made go, their reason
    saying which (`with_fixed`); page: the review's HTML page (None: not known)."""

    first: int
    last: int
    cuts: tuple[int, ...] = ()
    people: tuple[PersonRow, ...] = ()
    marks: Mapping[int, FrameMarks] = field(default_factory=lambda: MappingProxyType({}))
    flags: tuple[FlagRow, ...] = ()
    flagged: Ranges = ()
    folder: Path | None = None
    planned: bool = False
    fixed: tuple[FlagRow, ...] = ()
    page: Path | None = None

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

    def fixed_at(self, frame: int) -> tuple[FlagRow, ...]:
        return tuple(f for f in self.fixed if f.first <= frame <= f.last)


def review_from_report(data: Mapping[str, Any], folder: Path,
                       page: Path | None = None) -> ShotReview:
    """The ShotReview of a report's JSON (load_report(folder).data) written into `folder`;
    page: its HTML page (write_review's result.page)."""
    people = tuple(_person(p, folder) for p in data["people"])
    marks = {row["frame"]: FrameMarks(int(row["found"]), tuple(row["swapped"]),
                                      tuple(row["flags"]))
             for row in data["strip"]}
    flags = tuple(FlagRow(f["kind"], f["first"], f["last"], f["person"] or "", f["reason"])
                  for f in data["flags"])  # person null: a flag of the frames (will_fail)
    return ShotReview(data["frames"]["first"], data["frames"]["last"], tuple(data["cuts"]),
                      people, MappingProxyType(marks), flags,
                      tuple((a, b) for a, b in data["flagged_frames"]), folder, True,
                      page=page)


def _person(row: Mapping[str, Any], folder: Path) -> PersonRow:
    thumbnail = folder / row["thumbnail"] if row.get("thumbnail") else None
    return PersonRow(row["id"], tuple((a, b) for a, b in row["frames"]), int(row["frame_count"]),
                     float(row["presence"]), bool(row["swapped"]), row["source"], row["why"],
                     thumbnail)


def people_text(count: int) -> str:
    """"1 person", "8 people"."""
    return f"{count} {'person' if count == 1 else 'people'}"


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
    boxes = plan_boxes(plan)
    marks = {frame: FrameMarks(m.found, tuple(f.person_id for f in plan.faces(frame)), m.flags,
                               boxes.get(frame, m.boxes))
             for frame, m in review.marks.items()}
    return ShotReview(review.first, review.last, review.cuts, people, MappingProxyType(marks),
                      review.flags, review.flagged, review.folder, True, review.fixed,
                      review.page)


def _replan(row: PersonRow, planned: Any) -> PersonRow:
    if planned is None:
        return row
    return PersonRow(row.person_id, row.frames, row.frame_count, row.presence,
                     bool(planned.swapped), planned.source, planned.why, row.thumbnail)


def review_from_plan(plan: Any, first: int, last: int) -> ShotReview:
    """What a shot plan (facefuse.plan_shot) says before its review report is written: the
    people, who is swapped, the faces found and the cuts; no flags nor thumbnails yet (the
    report brings them). first/last: the clip's range (the plan's analysed frames lie in it)."""
    people = tuple(PersonRow(p.person_id, _runs(p.frames), len(p.frames),
                             float(p.person.presence), bool(p.swapped), p.source, p.why)
                   for p in plan.people)
    boxes = plan_boxes(plan)
    marks = {frame: FrameMarks(len(plan.analysis.faces.get(frame, ())),
                               tuple(f.person_id for f in plan.faces(frame)), (),
                               boxes.get(frame, ()))
             for frame in plan.frames}
    return ShotReview(first, last, tuple(plan.cuts), people, MappingProxyType(marks),
                      planned=True)


def _runs(frames: tuple[int, ...]) -> Ranges:
    runs: list[tuple[int, int]] = []
    for frame in frames:
        if runs and frame == runs[-1][1] + 1:
            runs[-1] = (runs[-1][0], frame)
        else:
            runs.append((frame, frame))
    return tuple(runs)


def plan_boxes(plan: Any) -> dict[int, tuple[Box, ...]]:
    """frame -> each person's detected face box in it, from a shot plan's tracks."""
    boxes: dict[int, list[Box]] = {}
    for person in plan.people:
        for track in person.person.tracks:
            for frame, face in zip(track.frames, track.faces, strict=True):
                x1, y1, x2, y2 = (float(v) for v in face.bbox_xyxy)
                boxes.setdefault(frame, []).append((person.person_id, x1, y1, x2, y2))
    return {frame: tuple(found) for frame, found in boxes.items()}


def with_boxes(review: ShotReview, boxes_from: ShotReview) -> ShotReview:
    """`review` (read from a report) with the face boxes of an earlier plan-made review."""
    marks = {frame: replace(m, boxes=boxes_from.marks[frame].boxes)
             if frame in boxes_from.marks else m for frame, m in review.marks.items()}
    return replace(review, marks=MappingProxyType(marks))


Correction = tuple[str, str, int, int]  # person, action, first, last (corrections.Entry)


def with_fixed(review: ShotReview, before: ShotReview,
               corrections: tuple[Correction, ...]) -> ShotReview:
    """`review` (written after a people change) with the flags that a correction of their
    person covers marked fixed ("fixed by hold 1004-1007"): those it still has (the kinds that
    read the detections, such as missed, stay in the report) and those of `before` it no
    longer has. Fixed flags leave the flagged frames."""
    def fixing(flag: FlagRow) -> Correction | None:
        return next((c for c in reversed(corrections) if c[0] == flag.person_id
                     and c[2] <= flag.first and flag.last <= c[3]), None)
    now = {(f.kind, f.person_id, f.first, f.last) for f in review.flags}
    gone = [f for f in (*before.flags, *before.fixed)
            if (f.kind, f.person_id, f.first, f.last) not in now]
    fixed, kept = [], []
    for flag in (*review.flags, *gone):
        by = fixing(flag)
        if by is not None:
            fixed.append(replace(flag, reason=f"fixed by {by[1]} {by[2]}-{by[3]}"))
        elif flag in review.flags:
            kept.append(flag)
    if len(kept) == len(review.flags) and not fixed:
        return review
    return replace(review, flags=tuple(kept), fixed=tuple(dict.fromkeys(fixed)),
                   flagged=_merged(tuple((f.first, f.last) for f in kept)))


def _merged(ranges: Ranges) -> Ranges:
    merged: list[tuple[int, int]] = []
    for first, last in sorted(ranges):
        if merged and first <= merged[-1][1] + 1:
            merged[-1] = (merged[-1][0], max(last, merged[-1][1]))
        else:
            merged.append((first, last))
    return tuple(merged)
