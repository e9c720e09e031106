"""Flags: the frames of a shot plan a person should look at, each with a reason in words.

Flags concern the people the plan swaps (a person left untouched changes no pixel); each is one
kind, one person and one range of frames (consecutive analysed frames of one kind and person
merge into one range, never across a cut), with the worst value measured in it. The faces
measured are a person's planned faces (what is swapped: gaps filled, landmarks smoothed) unless
a kind says it reads the detections (the person's tracks, as the detector found them). Sizes
are relative to the face size: the square root of the face box's area.

=================  ==========================================================================
kind               fires where
=================  ==========================================================================
missed             a track has no face for frames between its first and last, that gap
                   filling left open (more than tracking.MAX_FILLED_FRAMES in a row) but at
                   most MISSED_MAX_FRAMES (a longer gap is taken as the person out of shot)
identity_jump      two consecutive detections of one track have embeddings less similar than
                   IDENTITY_JUMP_SIMILARITY (cosine): the track may have jumped to someone else
low_confidence     a detection of the track scores below LOW_CONFIDENCE
box_jump           the planned face moves between consecutive frames by more than BOX_JUMP face
                   sizes: the largest of the box centre's shift, the landmarks' mean shift and
                   the change of face size (|log| of the ratio)
mask_flicker       the blend mask's area changes by more than MASK_AREA_SPIKE (a share) between
                   consecutive frames; the area of the convex hull of the planned face's five
                   landmarks stands in for the mask's area (the mask is laid out from them)
swap_dropout       the person is swapped before and after, within one shot, but not in these
                   frames (at most MISSED_MAX_FRAMES): the face reverts to the original
too_small          the swapper's aligned crop enlarges the planned face more than MAX_UPSCALE
                   times: the scale of the similarity that takes the face's landmarks onto
                   the swapper's template at its input size (geometry.frame_to_crop_matrix;
                   128 px for inswapper), so the face is swapped at less than the model's
                   resolution and upscaled back
extreme_yaw        the planned face's frontality (shot.plan.people.frontality) is below
                   EXTREME_YAW_FRONTALITY: turned towards profile, where swappers fail first
will_fail          the render fails these frames (of no one person): the input's reader
                   refused them when the shot was analysed (ShotAnalysis.failures: damaged,
                   truncated, not an image, or of another size or channel count than the
                   sequence's first frame), the reason its own; no other kind is raised on them
=================  ==========================================================================

The faces are measured by review.measures (sizes, movement, landmark-hull areas, the series).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import TYPE_CHECKING

import numpy as np

from ..geometry import frame_to_crop_matrix
from ..shot.plan.people import frontality
from ..shot.plan.tracking import MAX_FILLED_FRAMES, Track
from ..types import Face
from ..vectors import l2_normalise
from .measures import area_change, movement, planned_tracks
from .records import WILL_FAIL, Flag

if TYPE_CHECKING:  # the plan's module loads the analysis (OpenCV): types only here
    from ..shot.plan.plan import PlannedPerson, ShotPlan

MISSED_MAX_FRAMES = 12
IDENTITY_JUMP_SIMILARITY = 0.3
LOW_CONFIDENCE = 0.6
BOX_JUMP = 0.25
MASK_AREA_SPIKE = 0.25
MAX_UPSCALE = 1.5
EXTREME_YAW_FRONTALITY = 0.3
DEFAULT_SWAPPER_SIZE_PX = 128  # inswapper's input; the review takes the swapper's own size
DEFAULT_SWAPPER_TEMPLATE = "arcface_128"  # ... and its template

KINDS = (WILL_FAIL, "missed", "identity_jump", "low_confidence", "box_jump", "mask_flicker",
         "swap_dropout", "too_small", "extreme_yaw")
# Whether a kind's worst value is its lowest (True) or its highest.
_LOWEST_IS_WORST = MappingProxyType({
    "missed": False, "identity_jump": True, "low_confidence": True, "box_jump": False,
    "mask_flicker": False, "swap_dropout": False, "too_small": False, "extreme_yaw": True,
    WILL_FAIL: False})
FAILURE_REASONS_SHOWN = 3  # the frames of a will_fail range whose own reason its flag quotes


@dataclass(frozen=True, slots=True)
class Thresholds:
    """The limits the flags use (the module constants by default)."""

    missed_max_frames: int = MISSED_MAX_FRAMES
    identity_jump_similarity: float = IDENTITY_JUMP_SIMILARITY
    low_confidence: float = LOW_CONFIDENCE
    box_jump: float = BOX_JUMP
    mask_area_spike: float = MASK_AREA_SPIKE
    max_upscale: float = MAX_UPSCALE
    extreme_yaw_frontality: float = EXTREME_YAW_FRONTALITY
    swapper_size_px: int = DEFAULT_SWAPPER_SIZE_PX
    swapper_template: str = DEFAULT_SWAPPER_TEMPLATE


@dataclass(frozen=True, slots=True)
class _Hit:
    kind: str
    person_id: str
    frame: int
    value: float


# -- hits per kind -------------------------------------------------------------------------------

def _detection_hits(person: PlannedPerson, limits: Thresholds) -> Iterator[_Hit]:
    """missed, identity_jump and low_confidence: from the person's tracks (the detections)."""
    pid = person.person_id
    for track in person.person.tracks:
        for frame, face in zip(track.frames, track.faces):
            if face.score < limits.low_confidence:
                yield _Hit("low_confidence", pid, frame, float(face.score))
        yield from _track_gaps(track, pid, limits)
        yield from _identity_jumps(track, pid, limits)


def _track_gaps(track: Track, pid: str, limits: Thresholds) -> Iterator[_Hit]:
    for a, b in itertools.pairwise(track.frames):
        gap = b - a - 1
        if MAX_FILLED_FRAMES < gap <= limits.missed_max_frames:
            yield from (_Hit("missed", pid, n, float(gap)) for n in range(a + 1, b))


def _identity_jumps(track: Track, pid: str, limits: Thresholds) -> Iterator[_Hit]:
    known = [(f, face.embedding) for f, face in zip(track.frames, track.faces)
             if face.embedding is not None]
    for (_, a), (frame, b) in itertools.pairwise(known):
        similarity = float(l2_normalise(np.ravel(a), dtype=np.float64)
                           @ l2_normalise(np.ravel(b), dtype=np.float64))
        if similarity < limits.identity_jump_similarity:
            yield _Hit("identity_jump", pid, frame, similarity)


def _planned_hits(plan: ShotPlan, pid: str, limits: Thresholds) -> Iterator[_Hit]:
    """box_jump, mask_flicker, too_small and extreme_yaw: from the person's planned faces."""
    for faces in planned_tracks(plan, pid).values():
        for frame, face in faces:
            enlarged = upscale(face, limits)
            if enlarged > limits.max_upscale:
                yield _Hit("too_small", pid, frame, enlarged)
            turned = frontality(face.kps5)
            if turned < limits.extreme_yaw_frontality:
                yield _Hit("extreme_yaw", pid, frame, turned)
        for (f0, a), (f1, b) in itertools.pairwise(faces):
            if f1 - f0 != 1:
                continue
            moved = movement(a, b)
            if moved > limits.box_jump:
                yield _Hit("box_jump", pid, f1, moved)
            change = area_change(a, b)
            if change is not None and abs(change) > limits.mask_area_spike:
                yield _Hit("mask_flicker", pid, f1, abs(change))


def upscale(face: Face, limits: Thresholds) -> float:
    """How much the swapper's aligned crop enlarges the face (crop px per frame px)."""
    try:
        matrix = frame_to_crop_matrix(face.kps5, limits.swapper_template, limits.swapper_size_px)
    except ValueError:  # degenerate landmarks
        return math.inf
    return float(math.sqrt(abs(np.linalg.det(matrix[:, :2]))))


def _dropout_hits(plan: ShotPlan, pid: str, limits: Thresholds) -> Iterator[_Hit]:
    """swap_dropout: runs of analysed frames inside one shot without the person's planned face,
    with planned faces on both sides."""
    swapped = {frame for frame, faces in plan.planned.items()
               if any(p.person_id == pid for p in faces)}
    for shot in _shots(plan.frames, plan.cuts):
        marks = [frame in swapped for frame in shot]
        for start, stop in _false_runs(marks):
            if 0 < start and stop < len(shot) and stop - start <= limits.missed_max_frames:
                yield from (_Hit("swap_dropout", pid, n, float(stop - start))
                            for n in shot[start:stop])


def _false_runs(marks: Sequence[bool]) -> Iterator[tuple[int, int]]:
    """(start, stop) index ranges of the runs of False."""
    index = 0
    for value, run in itertools.groupby(marks):
        length = len(list(run))
        if not value:
            yield index, index + length
        index += length


def _shots(frames: Sequence[int], cuts: Sequence[int]) -> list[list[int]]:
    """The analysed frames split at the cuts."""
    bounds = sorted(cuts)
    shots: dict[int, list[int]] = {}
    for frame in frames:
        shots.setdefault(sum(1 for c in bounds if c <= frame), []).append(frame)
    return [shots[i] for i in sorted(shots)]


# -- flags ---------------------------------------------------------------------------------------

def find_flags(plan: ShotPlan, limits: Thresholds | None = None) -> tuple[Flag, ...]:
    """Every flag of the plan's swapped people, by first frame, then kind, then person."""
    limits = limits or Thresholds()
    hits: list[_Hit] = []
    for person in plan.people:
        if not person.swapped:
            continue
        hits += _detection_hits(person, limits)
        hits += _planned_hits(plan, person.person_id, limits)
        hits += _dropout_hits(plan, person.person_id, limits)
    failed = plan.analysis.failures
    flags = merge_hits([h for h in hits if h.frame not in failed], plan.frames, plan.cuts,
                       limits) + failure_flags(failed, plan.frames)
    return tuple(sorted(flags, key=lambda f: (f.first, KINDS.index(f.kind), f.person_id or "")))


def failure_flags(failures: Mapping[int, str], frames: Sequence[int]) -> list[Flag]:
    """One WILL_FAIL flag per run of consecutive analysed frames the render fails (`failures`:
    frame -> the reader's reason), quoting the first frames' reasons."""
    position = {frame: i for i, frame in enumerate(frames)}
    runs: list[list[int]] = []
    for frame in sorted((f for f in failures if f in position), key=position.__getitem__):
        if runs and position[frame] == position[runs[-1][-1]] + 1:
            runs[-1].append(frame)
        else:
            runs.append([frame])
    return [Flag(WILL_FAIL, run[0], run[-1], None, failure_reason(run, failures),
                 float(len(run))) for run in runs]


def failure_reason(run: Sequence[int], failures: Mapping[int, str]) -> str:
    """A will_fail flag's words: the render fails these frames, and why (the reader's)."""
    if len(run) == 1:
        return f"the render fails this frame: {failures[run[0]]}"
    quoted = "; ".join(f"frame {n}: {failures[n]}" for n in run[:FAILURE_REASONS_SHOWN])
    more = len(run) - FAILURE_REASONS_SHOWN
    return (f"the render fails these {len(run)} frames ({quoted}"
            + (f"; and {more} more)" if more > 0 else ")"))


def merge_hits(hits: Iterable[_Hit], frames: Sequence[int], cuts: Sequence[int],
               limits: Thresholds) -> list[Flag]:
    """Hits of one kind and person on consecutive analysed frames of one shot, as one Flag."""
    position = {frame: i for i, frame in enumerate(frames)}
    shot_of = {frame: i for i, shot in enumerate(_shots(frames, cuts)) for frame in shot}
    groups: dict[tuple[str, str], dict[int, float]] = {}
    for hit in hits:
        if hit.frame in position:
            groups.setdefault((hit.kind, hit.person_id), {})[hit.frame] = hit.value
    flags = []
    for (kind, pid), values in groups.items():
        ordered = sorted(values, key=position.__getitem__)
        run: list[int] = []
        for frame in ordered:
            if run and (position[frame] != position[run[-1]] + 1
                        or shot_of[frame] != shot_of[run[-1]]):
                flags.append(_flag(kind, pid, run, values, limits))
                run = []
            run.append(frame)
        flags.append(_flag(kind, pid, run, values, limits))
    return flags


def _flag(kind: str, pid: str, run: Sequence[int], values: Mapping[int, float],
          limits: Thresholds) -> Flag:
    pick = min if _LOWEST_IS_WORST[kind] else max
    worst = pick(values[f] for f in run)
    return Flag(kind, run[0], run[-1], pid, reason(kind, worst, len(run), limits), worst)


def reason(kind: str, value: float, frames: int, limits: Thresholds) -> str:
    """The flag's reason in words."""
    span = f"{frames} frame{'s' if frames != 1 else ''}"
    if kind == "missed":
        return (f"no face detected for {value:.0f} frames inside the track, more than gap "
                f"filling bridges ({MAX_FILLED_FRAMES})")
    if kind == "identity_jump":
        return (f"identity similarity between consecutive faces fell to {value:.2f} (below "
                f"{limits.identity_jump_similarity:.2f}): the track may have jumped to "
                "another face")
    if kind == "low_confidence":
        return (f"detector confidence down to {value:.2f} (below {limits.low_confidence:.2f}) "
                f"over {span}")
    if kind == "box_jump":
        return (f"the face jumps {value:.2f} face sizes in one frame (above "
                f"{limits.box_jump:.2f})")
    if kind == "mask_flicker":
        return (f"the mask area (landmark hull) changes {value:.0%} in one frame (above "
                f"{limits.mask_area_spike:.0%})")
    if kind == "swap_dropout":
        return f"swapped before and after but not in these {span}: the face reverts"
    if kind == "too_small":
        return (f"the swapper's {limits.swapper_size_px} px crop enlarges the face up to "
                f"{value:.2f}x (above {limits.max_upscale:.2f}x): it is swapped at less than "
                f"the model's resolution and upscaled (over {span})")
    if kind == "extreme_yaw":
        return (f"the face turns towards profile (frontality {value:.2f}, below "
                f"{limits.extreme_yaw_frontality:.2f}) over {span}")
    raise ValueError(f"unknown flag kind {kind!r}")
