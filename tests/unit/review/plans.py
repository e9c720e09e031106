"""Synthetic shot plans for the review tests: one steady face per track, planned as detected,
and helpers that spoil one thing in it."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace

import numpy as np

from facefuse.shot.plan.analysis import ShotAnalysis
from facefuse.shot.plan.people import Person
from facefuse.shot.plan.plan import PlannedFace, PlannedPerson, ShotPlan
from facefuse.shot.plan.tracking import Track
from facefuse.types import Face
from tests.unit.shot.identities import identity, seen

SIZE = 200.0  # face box side, px: above a 128 px swapper


def face(frame: int, who: int = 0, size: float = SIZE, x: float = 300.0, y: float = 300.0,
         score: float = 0.9, nose_along: float = 0.5) -> Face:
    """A frontal face `size` px across centred at (x, y), with person `who`'s identity."""
    left, right = np.array([x - 0.2 * size, y - 0.1 * size]), np.array([x + 0.2 * size,
                                                                          y - 0.1 * size])
    nose = left + nose_along * (right - left) + np.array([0.0, 0.1 * size])
    kps = np.array([left, right, nose, [x - 0.15 * size, y + 0.25 * size],
                    [x + 0.15 * size, y + 0.25 * size]], np.float32)
    box = np.array([x - size / 2, y - size / 2, x + size / 2, y + size / 2], np.float32)
    return Face(box, kps, score, seen(identity(who), frame, noise=0.1))


Spoil = Callable[[int, Face], Face | None]  # (frame, face) -> the face, or None: not detected


def plan_of(frames: Sequence[int], people: Sequence[Sequence[int]], cuts: Sequence[int] = (),
            spoil: Spoil | None = None, swapped: Sequence[bool] | None = None,
            planned_spoil: Spoil | None = None) -> ShotPlan:
    """A plan over `frames`: person i is seen (one track per shot) in people[i]'s frames;
    spoil changes or drops detections, planned_spoil the planned faces only. Every person is
    swapped unless `swapped` says otherwise."""
    tracks, persons = [], []
    for who, seen_in in enumerate(people):
        own = []
        for shot in _split(sorted(seen_in), cuts):
            detected = [(f, (spoil or _keep)(f, face(f, who))) for f in shot]
            kept = [(f, x) for f, x in detected if x is not None]
            own.append(Track(len(tracks), tuple(f for f, _ in kept), tuple(x for _, x in kept)))
            tracks.append(own[-1])
        persons.append(Person(who, tuple(own)))
    planned: dict[int, list[PlannedFace]] = {}
    planned_people = []
    for who, person in enumerate(persons):
        on = swapped is None or swapped[who]
        planned_people.append(PlannedPerson(f"p{who + 1}", person, "default" if on else None,
                                            "chosen" if on else "not chosen"))
        if not on:
            continue
        for track in person.tracks:
            for f, x in zip(track.frames, track.faces):
                shown = (planned_spoil or _keep)(f, x)
                if shown is not None:
                    planned.setdefault(f, []).append(
                        PlannedFace(shown, f"p{who + 1}", track.track_id, "default", True))
    detections: dict[int, list[Face]] = {f: [] for f in frames}
    for track in tracks:
        for f, x in zip(track.frames, track.faces):
            detections[f].append(x)
    analysis = ShotAnalysis({f: tuple(v) for f, v in detections.items()}, {})
    return ShotPlan("0" * 16, tuple(frames), tuple(cuts), tuple(planned_people),
                    {f: tuple(v) for f, v in sorted(planned.items())}, analysis)


def _keep(_frame: int, x: Face) -> Face:
    return x


def _split(frames: list[int], cuts: Sequence[int]) -> list[list[int]]:
    shots: dict[int, list[int]] = {}
    for f in frames:
        shots.setdefault(sum(1 for c in cuts if c <= f), []).append(f)
    return [shots[k] for k in sorted(shots)]


def moved(x: Face, dx: float = 0.0, scale: float = 1.0) -> Face:
    """The face shifted right by dx px and scaled about its centre."""
    box = np.asarray(x.bbox_xyxy, np.float64)
    centre = (box[:2] + box[2:]) / 2
    kps = (np.asarray(x.kps5, np.float64) - centre) * scale + centre + [dx, 0]
    box = np.concatenate([(box[:2] - centre) * scale + centre, (box[2:] - centre) * scale
                          + centre]) + [dx, 0, dx, 0]
    return replace(x, bbox_xyxy=box.astype(np.float32), kps5=kps.astype(np.float32))
