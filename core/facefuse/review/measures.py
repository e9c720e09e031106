"""A person's planned faces measured: face size, movement between frames, the landmark hull's
area, and the series the review plots and flags.

Series (per person, per planned frame): ``jitter``, the landmarks' mean absolute second
difference (as smoothing.landmark_jitter_px, but per frame) in face sizes, and
``mask_area_change``, the signed relative change of the landmark-hull area from the previous
frame; None where a frame has no neighbour of the same track to measure against.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from ..types import Face

if TYPE_CHECKING:  # the plan's module loads the analysis (OpenCV): types only here
    from ..shot.plan.plan import ShotPlan


@dataclass(frozen=True, slots=True, eq=False)
class Series:
    """One person's measures over their planned frames (None: not measurable there)."""

    person_id: str
    frames: tuple[int, ...]
    jitter: tuple[float | None, ...]
    mask_area_change: tuple[float | None, ...]


# -- the faces measured ------------------------------------------------------------------------

def planned_tracks(plan: ShotPlan, person_id: str) -> dict[int, list[tuple[int, Face]]]:
    """A person's planned faces by track: track id -> [(frame, face)] in frame order."""
    tracks: dict[int, list[tuple[int, Face]]] = {}
    for frame in sorted(plan.planned):
        for planned in plan.planned[frame]:
            if planned.person_id == person_id:
                tracks.setdefault(planned.track_id, []).append((frame, planned.face))
    return tracks


def face_size(face: Face) -> float:
    """The square root of the box area, pixels (at least 1)."""
    return max(math.sqrt(face.area_px), 1.0)


def hull_area(kps5: np.ndarray) -> float:
    """Area (square pixels) of the convex hull of the landmarks (monotone chain, shoelace)."""
    points = sorted(map(tuple, np.asarray(kps5, np.float64).reshape(-1, 2).tolist()))
    if len(points) < 3:
        return 0.0

    def half(ordered: Iterable[tuple[float, float]]) -> list[tuple[float, float]]:
        chain: list[tuple[float, float]] = []
        for p in ordered:
            while len(chain) >= 2 and _cross(chain[-2], chain[-1], p) <= 0:
                chain.pop()
            chain.append(p)
        return chain[:-1]

    hull = half(points) + half(reversed(points))
    return 0.5 * abs(sum(a[0] * b[1] - b[0] * a[1]
                         for a, b in zip(hull, hull[1:] + hull[:1])))


def _cross(o: tuple[float, float], a: tuple[float, float], b: tuple[float, float]) -> float:
    return (a[0] - o[0]) * (b[1] - o[1]) - (a[1] - o[1]) * (b[0] - o[0])


def movement(a: Face, b: Face) -> float:
    """How far face b lies from face a, in face sizes (a's): the largest of the box centre's
    shift, the landmarks' mean shift and |log| of the size ratio."""
    size_a, size_b = face_size(a), face_size(b)
    centre = float(np.linalg.norm(_centre(b) - _centre(a))) / size_a
    landmarks = float(np.linalg.norm(np.asarray(b.kps5, np.float64) - a.kps5, axis=1).mean())
    return max(centre, landmarks / size_a, abs(math.log(size_b / size_a)))


def _centre(face: Face) -> np.ndarray:
    box = np.asarray(face.bbox_xyxy, np.float64)
    return (box[:2] + box[2:]) / 2.0


def area_change(a: Face, b: Face) -> float | None:
    """Signed relative change of the landmark-hull area from a to b (None when a has none)."""
    before, after = hull_area(a.kps5), hull_area(b.kps5)
    return (after - before) / before if before > 0 else None


# -- series --------------------------------------------------------------------------------------

def person_series(plan: ShotPlan, person_id: str) -> Series:
    """Jitter and mask-area change over a person's planned frames (see the module docstring)."""
    values: dict[int, tuple[float | None, float | None]] = {}
    for faces in planned_tracks(plan, person_id).values():
        for i, (frame, face) in enumerate(faces):
            values[frame] = (_jitter(faces, i), _change(faces, i))
    frames = tuple(sorted(values))
    return Series(person_id, frames, tuple(values[f][0] for f in frames),
                  tuple(values[f][1] for f in frames))


def _jitter(faces: Sequence[tuple[int, Face]], i: int) -> float | None:
    if i == 0 or i == len(faces) - 1:
        return None
    (f0, a), (f1, b), (f2, c) = faces[i - 1], faces[i], faces[i + 1]
    if f1 - f0 != 1 or f2 - f1 != 1:
        return None
    second = np.asarray(a.kps5, np.float64) - 2.0 * b.kps5 + c.kps5
    return float(np.abs(second).mean()) / face_size(b)


def _change(faces: Sequence[tuple[int, Face]], i: int) -> float | None:
    if i == 0 or faces[i][0] - faces[i - 1][0] != 1:
        return None
    return area_change(faces[i - 1][1], faces[i][1])
