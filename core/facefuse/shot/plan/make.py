"""make_plan: a shot's analysis and options made into its ShotPlan.

From a shot's analysis (analysis.ShotAnalysis) `make_plan` decides, with the render's options
(options.PlanOptions): the cuts, the tracks within each shot, the people (people.group_people),
who is swapped and with which source (casting.decide_people), the faces filled into short
detection gaps, and the smoothed landmarks and pose.

Every face of a track carries the track's one steady identity, the mean embedding of its faces
in its first PLAN_LOOKAHEAD_S (Track.opening_embedding), so a swapper weight blends with one
target identity instead of each frame's own, which wanders; a frame's faces come in order of
their track's first appearance (paste order). For selector many without assignments every
decision is local (plan_horizon).
"""

from __future__ import annotations

import logging
import math
from collections.abc import Mapping, Sequence
from dataclasses import replace

from ...types import Face
from .analysis import DEFAULT_RATE_HZ, ShotAnalysis
from .casting import decide_people
from .options import PlanOptions
from .overrides import apply_overrides
from .people import group_people
from .plan import DEFAULT_SOURCE, SKIPPED, PlannedFace, PlannedPerson, ShotPlan
from .smoothing import smooth_tracks
from .tracking import MAX_FILLED_FRAMES, Track, build_shot_tracks, fill_short_gaps

log = logging.getLogger(__name__)

# How make_plan decides: cuts, tracks per shot, people and pose smoothing, all decided locally
# (see plan_horizon): fixed-lag smoothing, each track's identity from its opening frames, faces
# pasted in order of their track's first appearance, people named by first appearance. Part of
# the render fingerprint, so frames a render made with other decisions are not taken as done.
PLAN_VERSION = 3
# How far past a frame (in seconds of the shot) the analysis must reach before a local plan's
# decisions for that frame are final (see plan_horizon).
PLAN_LOOKAHEAD_S = 2.0


def make_plan(analysis: ShotAnalysis, options: PlanOptions, shot_id: str = "",
              frames: Sequence[int] | None = None) -> ShotPlan:
    """The plan of a shot (see the module docstring). frames: the analysed frames (default:
    those of `analysis`). InputError for an assignment or skip that names nobody in the shot,
    or overrides that do not fit it (shot.plan.overrides.apply_overrides: with overrides, every
    person's tracks are planned, and theirs kept where an entry swaps them)."""
    cuts = analysis.cuts
    tracks = build_shot_tracks(analysis.faces, cuts)
    people = decide_people(group_people(tracks), options)
    planned_people = [p for p in people if p.swapped or options.overrides is not None]
    by_track = {track.track_id: person for person in planned_people
                for track in person.person.tracks}
    chosen = sorted((t for person in planned_people for t in person.person.tracks),
                    key=lambda t: t.track_id)
    planned: dict[int, list[PlannedFace]] = {}
    for track, planned_track in zip(chosen, _planned_tracks(chosen, options)):
        steady = track.opening_embedding(_horizon_frames(options.rate_hz))
        owner = by_track[track.track_id]
        detected = frozenset(track.frames)
        for frame, face in zip(planned_track.frames, planned_track.faces):
            face = replace(face, embedding=steady) if steady is not None else face
            planned.setdefault(frame, []).append(PlannedFace(
                face, owner.person_id, track.track_id, owner.source or DEFAULT_SOURCE,
                frame in detected))
    swapped = [p for p in people if p.swapped]
    log.info("%d cuts, %d tracks, %d people; %d people (%d tracks) chosen for swapping",
             len(cuts), len(tracks), len(people), len(swapped),
             sum(len(p.person.tracks) for p in swapped))
    analysed = tuple(frames if frames is not None else sorted(analysis.faces))
    faces = {n: tuple(f) for n, f in sorted(planned.items())}
    corrected = {n for p in people if p.why == SKIPPED for n in p.frames}
    if options.overrides is not None:
        chosen_faces = faces
        faces = apply_overrides(options.overrides, faces, [p.person_id for p in people],
                                [p.person_id for p in swapped], analysed, cuts, shot_id)
        corrected |= _overridden(chosen_faces, faces, {p.person_id for p in swapped})
        people = _forced_people(people, faces)
    return ShotPlan(shot_id, analysed, cuts, people, faces, analysis, frozenset(corrected))


def _overridden(chosen: Mapping[int, tuple[PlannedFace, ...]],
                faces: Mapping[int, tuple[PlannedFace, ...]], swapped: set[str]) -> set[int]:
    """The frames where overrides took out a face of a person the plan swaps (`chosen`: the
    faces before the overrides, `faces` after)."""
    return {n for n, before in chosen.items()
            if {f.person_id for f in before if f.person_id in swapped}
            - {f.person_id for f in faces.get(n, ())}}


def _forced_people(people: Sequence[PlannedPerson],
                   faces: Mapping[int, tuple[PlannedFace, ...]]) -> tuple[PlannedPerson, ...]:
    """`people` with those the selector left out but overrides swap (swap, hold) said so."""
    forced = {face.person_id: face.source for planned in faces.values() for face in planned}
    return tuple(replace(p, source=forced[p.person_id], why=f"{p.why}; swapped where the "
                         "overrides say so") if not p.swapped and p.person_id in forced else p
                 for p in people)


def plan_targets(analysis: ShotAnalysis, options: PlanOptions) -> dict[int, tuple[Face, ...]]:
    """The faces to swap in each frame of make_plan's plan, in paste order."""
    plan = make_plan(analysis, options)
    return {frame: plan.targets(frame) for frame in plan.planned}


def _planned_tracks(tracks: Sequence[Track], options: PlanOptions) -> tuple[Track, ...]:
    """The tracks with short gaps filled and, when smoothing is given, smoothed (fixed lag)."""
    filled = tuple(fill_short_gaps(track) for track in tracks)
    if options.smoothing is None:
        return filled
    return smooth_tracks(filled, float(options.rate_hz or DEFAULT_RATE_HZ), options.smoothing,
                         lookahead=smoothing_lookahead(options.rate_hz))


def _horizon_frames(rate_hz: float | None) -> int:
    """PLAN_LOOKAHEAD_S in frames, and never less than gap filling reaches (see plan_horizon)."""
    return max(math.ceil(PLAN_LOOKAHEAD_S * float(rate_hz or DEFAULT_RATE_HZ)),
               MAX_FILLED_FRAMES)


def smoothing_lookahead(rate_hz: float | None) -> int:
    """How many frames past frame k the backward runs of the plan's smoothing start (the
    `lookahead` of smoothing.smooth_tracks): (horizon - MAX_FILLED_FRAMES) // 2, about 0.9 s.

    A smoothed face depends on frames up to twice this past its own (the pose is smoothed from
    the smoothed landmarks), and a track's frames after the last analysed face may still be
    filled up to MAX_FILLED_FRAMES in: together within plan_horizon."""
    return max((_horizon_frames(rate_hz) - MAX_FILLED_FRAMES) // 2, 0)


def plan_horizon(options: PlanOptions) -> int | None:
    """How many analysed frames past frame k make_plan needs before k's faces are final, or
    None when every frame's faces depend on the whole analysed range.

    A plan whose options are local (PlanOptions.local: selector many, nobody assigned or
    skipped) swaps everyone, so no decision weighs the whole range: for an analysis that covers
    the frames up to k + horizon (or to the end of the range), make_plan gives frame k the same
    faces as for the whole range, bitwise, so a render may swap frame k while analysis goes on.
    The horizon is ceil(PLAN_LOOKAHEAD_S x rate) frames (at least MAX_FILLED_FRAMES). What
    bounds it: cuts compare consecutive frames and tracks are built in frame order (causal);
    gap filling reaches MAX_FILLED_FRAMES ahead; smoothing is fixed-lag (smoothing_lookahead);
    a track's identity is the mean of its first horizon frames; faces are ordered by their
    track's first appearance. Person names may change as the analysis grows, which is why
    naming anyone makes the plan whole-range. one (the person with the most presence) and
    reference (people matched by their mean identity) need the whole range.
    """
    if not options.local:
        return None
    return _horizon_frames(options.rate_hz)
