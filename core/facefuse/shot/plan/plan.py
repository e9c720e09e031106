"""The shot plan: every decision a render makes for a shot, as one object.

From a shot's analysis (shot.plan.analysis.ShotAnalysis) `make_plan` decides, with the render's
options (`PlanOptions`): the cuts, the tracks within each shot, the people (tracks grouped by
identity within and across shots), who is swapped and with which source, the faces filled into
short detection gaps, and the smoothed landmarks and pose. The result, a `ShotPlan`, is what
render, preview, the review report and the hosts all read, so each shows the same decisions.

People are named "p1", "p2", ... in order of first appearance (shot.plan.people.group_people numbers
them deterministically), so the same analysis with the same options names them the same way:
`PlanOptions.assign` and `skip` refer to those names, and a `ShotPlan.shot_id` says which shot
they belong to.

Who is swapped: a person named in `assign` with their own source, a person in `skip` never, and
everyone else as the selector decides (one: the most screen presence; many; reference: people
like the reference face) with the default source (the render's -s images, key "default").
`assign_references` names a person by a picture instead: the person whose mean identity is most
like the picture's (at least `similarity`).

Every face of a track carries the track's one steady identity, the mean embedding of its faces
in its first PLAN_LOOKAHEAD_S (Track.opening_embedding), so a swapper weight blends with one
target identity instead of each frame's own, which wanders; a frame's faces come in order of
their track's first appearance (paste order). For selector many without assignments every
decision is local (plan_horizon).
"""

from __future__ import annotations

import hashlib
import logging
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace

import numpy as np

from ...errors import InputError
from ...selection import most_similar
from ...types import Face
from .analysis import DEFAULT_RATE_HZ, ShotAnalysis
from .overrides import Overrides, apply_overrides
from .people import Person, group_people, select_people
from .smoothing import OneEuroParams, smooth_tracks
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
DEFAULT_SOURCE = "default"  # the identity key of the render's own sources (-s)
SKIPPED = "skipped"  # PlannedPerson.why of a person the request skips


@dataclass(frozen=True, slots=True, eq=False)
class PlannedFace:
    """One face to swap in one frame.

    face: what is swapped (filled or smoothed landmarks, the track's steady embedding).
    person_id: the person it belongs to; track_id: its track (shot.plan.tracking.Track.track_id).
    source: the key of the identity it is swapped to (DEFAULT_SOURCE or an assigned image).
    detected: False where the face was filled in (a short gap), not detected.
    """

    face: Face
    person_id: str
    track_id: int
    source: str
    detected: bool = True


@dataclass(frozen=True, slots=True, eq=False)
class PlannedPerson:
    """One person of the shot and what the plan does with them.

    source: the identity key they are swapped to, None when they are not swapped.
    why: the decision in words ("main person (selector one)", "assigned", "skipped", ...).
    """

    person_id: str
    person: Person
    source: str | None
    why: str

    @property
    def swapped(self) -> bool:
        return self.source is not None

    @property
    def frames(self) -> tuple[int, ...]:
        """The frames where this person's face was detected, ascending."""
        return self.person.frames


@dataclass(frozen=True, slots=True, eq=False)
class ShotPlan:
    """The decisions of one shot (see the module docstring).

    shot_id: names the shot (its analysis key and analysed range; see shot_id_of).
    frames: the analysed frames. cuts: the frames that start a new shot. people: by person_id
    order. planned: the faces to swap per frame, in paste order (frames with none are absent).
    analysis: what the plan was made from. corrected: the frames where the user's own
    corrections take a face out of the swap: a skipped person's face is found there, or an
    override leaves a face the plan would swap as it is.
    """

    shot_id: str
    frames: tuple[int, ...]
    cuts: tuple[int, ...]
    people: tuple[PlannedPerson, ...]
    planned: Mapping[int, tuple[PlannedFace, ...]]
    analysis: ShotAnalysis = field(default_factory=ShotAnalysis)
    corrected: frozenset[int] = frozenset()

    def faces(self, frame: int) -> tuple[PlannedFace, ...]:
        """What is swapped in `frame`, in paste order (() for nothing)."""
        return self.planned.get(frame, ())

    def targets(self, frame: int) -> tuple[Face, ...]:
        """The faces swapped in `frame`, in paste order."""
        return tuple(planned.face for planned in self.faces(frame))

    def person(self, person_id: str) -> PlannedPerson:
        """The person named `person_id`; InputError naming the shot's people otherwise."""
        for person in self.people:
            if person.person_id == person_id:
                return person
        raise InputError(unknown_person(person_id, self.people))

    @property
    def sources(self) -> tuple[str, ...]:
        """The identity keys the plan swaps to, in first use."""
        return tuple(dict.fromkeys(p.source for p in self.people if p.source is not None))

    def frame_digest(self, frame: int) -> str:
        """A hash of everything `frame`'s swap takes from the plan: each face's source, box,
        landmarks and embedding, in paste order (equal digests: the same pixels). Person names
        are left out: they may change while a local plan grows, the faces do not."""
        digest = hashlib.sha256(b"facefuse-plan-frame")
        for planned in self.faces(frame):
            digest.update(f"{planned.source}|".encode())
            face = planned.face
            for array in (face.bbox_xyxy, face.kps5, face.embedding):
                if array is not None:
                    digest.update(np.ascontiguousarray(array, np.float32).tobytes())
        return digest.hexdigest()[:32]


@dataclass(frozen=True, slots=True, eq=False)
class PlanOptions:
    """What make_plan decides with.

    selector / reference / similarity: the default rule (Settings.selector; the reference
    embedding for "reference"). rate_hz: the shot's frame rate (None: DEFAULT_RATE_HZ).
    smoothing: landmark and pose smoothing, None for none. assign: person id -> source key;
    assign_references: (picture embedding, source key) pairs naming people by a picture;
    skip: person ids never swapped; skip_references: pictures of people never swapped.
    overrides: per-frame, per-person corrections (shot.plan.overrides), applied last.
    """

    selector: str = "one"
    reference: np.ndarray | None = None
    similarity: float = 0.4
    rate_hz: float | None = None
    smoothing: OneEuroParams | None = None
    assign: Mapping[str, str] = field(default_factory=dict)
    assign_references: tuple[tuple[np.ndarray, str], ...] = ()
    skip: frozenset[str] = frozenset()
    skip_references: tuple[np.ndarray, ...] = ()
    overrides: Overrides | None = None

    @property
    def local(self) -> bool:
        """Whether every decision is local (plan_horizon): selector many, nobody named, no
        overrides."""
        return (self.selector == "many" and not self.assign and not self.assign_references
                and not self.skip and not self.skip_references and self.overrides is None)


def person_name(person: Person) -> str:
    """The stable name of a person of group_people's numbering: p1, p2, ..."""
    return f"p{person.person_id + 1}"


def unknown_person(person_id: str, people: Sequence[PlannedPerson]) -> str:
    known = ", ".join(p.person_id for p in people) or "nobody (no face was found)"
    return f"there is no person {person_id!r} in this shot; its people are {known}"


def shot_id_of(analysis_digest: str, frames: Sequence[int]) -> str:
    """The id of a shot: its analysis key's digest and its analysed range."""
    text = f"{analysis_digest}|{frames[0]}-{frames[-1]}" if frames else analysis_digest
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


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


def decide_people(people: Sequence[Person], options: PlanOptions) -> tuple[PlannedPerson, ...]:
    """Who of `people` is swapped, with which source, and why (see the module docstring)."""
    names = {person_name(p): p for p in people}
    planned = [PlannedPerson(person_name(p), p, None, "") for p in people]
    for person_id in (*options.assign, *options.skip):
        if person_id not in names:
            raise InputError(unknown_person(person_id, planned))
    assigned = dict(options.assign)
    for embedding, source in options.assign_references:
        assigned.setdefault(_named_by_picture(people, embedding, options.similarity), source)
    skipped = options.skip | {_named_by_picture(people, embedding, options.similarity)
                              for embedding in options.skip_references}
    selected = {p.person_id for p in select_people(people, options.selector, options.reference,
                                                   options.similarity)}
    rule = f"selector {options.selector}"
    decided = []
    for person in planned:
        name, number = person.person_id, person.person.person_id
        if name in skipped:
            decided.append(replace(person, why=SKIPPED))
        elif name in assigned:
            decided.append(replace(person, source=assigned[name], why="assigned"))
        elif number in selected:
            decided.append(replace(person, source=DEFAULT_SOURCE, why=f"chosen ({rule})"))
        else:
            decided.append(replace(person, why=f"not chosen ({rule})"))
    return tuple(decided)


def _named_by_picture(people: Sequence[Person], embedding: np.ndarray,
                      similarity: float) -> str:
    """The name of the person most like a reference picture; InputError when nobody is."""
    best = most_similar(people, lambda p: p.mean_embedding, embedding, similarity)
    if not best:
        raise InputError(f"no person in this shot looks like the reference picture (similarity "
                         f"at least {similarity}); name the person by id (p1, p2, ...) instead")
    return person_name(best[0])


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
