"""The shot plan: every decision a render makes for a shot, as one object.

A `ShotPlan` (made by make.make_plan) is what render, preview, the review report and the hosts
all read, so each shows the same decisions: per frame, the faces to swap (`PlannedFace`) and,
per person, whether and with which source they are swapped (`PlannedPerson`).

People are named "p1", "p2", ... in order of first appearance (shot.plan.people.group_people numbers
them deterministically), so the same analysis with the same options names them the same way:
`PlanOptions.assign` and `skip` refer to those names, and a `ShotPlan.shot_id` says which shot
they belong to.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from ...errors import InputError
from ...types import Face
from .analysis import ShotAnalysis
from .people import Person

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
