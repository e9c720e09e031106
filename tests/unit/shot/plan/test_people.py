"""People from tracks (shot.plan.people): grouping by identity across shots, presence, selectors."""

from __future__ import annotations

import numpy as np
import pytest

from facefuse.errors import InputError
from facefuse.shot.plan.casting import select_people
from facefuse.shot.plan.people import MIN_FRONTALITY, face_presence, frontality, group_people
from facefuse.shot.plan.tracking import Track
from facefuse.types import Face
from tests.unit.shot.identities import identity, seen


def _face(size: float, embedding: np.ndarray | None, nose_along: float = 0.5) -> Face:
    """A face `size` px wide at (300, 300); nose_along: where the nose projects between the eyes
    (0.5 frontal, 0 or 1 over an eye)."""
    cx = cy = 300.0
    left, right = np.array([cx - 0.2 * size, cy]), np.array([cx + 0.2 * size, cy])
    nose = left + nose_along * (right - left) + np.array([0.0, 0.15 * size])
    kps = np.array([left, right, nose, [cx - 0.15 * size, cy + 0.3 * size],
                    [cx + 0.15 * size, cy + 0.3 * size]], np.float32)
    box = np.array([cx - size / 2, cy - size / 2, cx + size / 2, cy + size / 2], np.float32)
    return Face(box, kps, 0.9, embedding)


def _track(track_id: int, frames: range, identity: np.ndarray | None, size: float = 60.0,
           nose_along: float = 0.5) -> Track:
    faces = tuple(_face(size, None if identity is None else seen(identity, f), nose_along)
                  for f in frames)
    return Track(track_id, tuple(frames), faces)


def test_frontality_from_the_nose_between_the_eyes():
    assert frontality(_face(60, None).kps5) == pytest.approx(1.0)
    assert frontality(_face(60, None, nose_along=0.25).kps5) == pytest.approx(0.5)
    assert frontality(_face(60, None, nose_along=0.0).kps5) == pytest.approx(0.0)
    assert frontality(_face(60, None, nose_along=-0.3).kps5) == 0.0  # beyond the eye
    rolled = _face(60, None, nose_along=0.25).kps5 @ np.array([[0.6, 0.8], [-0.8, 0.6]],
                                                             np.float32)
    assert frontality(rolled) == pytest.approx(0.5, abs=1e-5)  # roll does not matter
    assert frontality(np.zeros((5, 2), np.float32)) == 0.0
    assert face_presence(_face(60, None)) == pytest.approx(60.0)
    assert face_presence(_face(60, None, nose_along=0.0)) == pytest.approx(60 * MIN_FRONTALITY)


def test_a_person_seen_in_several_shots_is_one_person():
    alice, bob = identity(1), identity(2)
    tracks = (_track(0, range(10), alice), _track(1, range(10, 20), bob),
              _track(2, range(20, 30), alice), _track(3, range(20, 30), bob),
              _track(4, range(30, 40), None))
    people = group_people(tracks)
    assert [[t.track_id for t in p.tracks] for p in people] == [[0, 2], [1, 3], [4]]
    assert [p.person_id for p in people] == [0, 1, 2]
    assert people[0].frames == (*range(10), *range(20, 30))
    mean = people[0].mean_embedding
    assert mean is not None and float(mean @ alice) > 0.9
    assert people[2].mean_embedding is None
    assert group_people(()) == ()


def test_faces_seen_at_once_are_never_one_person():
    alice = identity(1)
    twins = (_track(0, range(10), alice), _track(1, range(5, 15), alice),
             _track(2, range(20, 30), alice))
    groups = [[t.track_id for t in p.tracks] for p in group_people(twins)]
    assert len(groups) == 2 and sorted(map(len, groups)) == [1, 2]
    assert group_people(twins, similarity=1.01) and len(group_people(twins, 1.01)) == 3


def test_one_is_the_person_with_the_most_presence_over_all_shots():
    lead, close_up, extra = identity(1), identity(2), identity(3)
    tracks = (
        _track(0, range(30), lead, size=60),                     # 30 x 60 = 1800
        _track(1, range(30, 70), close_up, size=150, nose_along=0.1),  # 40 x 150 x .2 = 1200
        _track(2, range(70, 100), lead, size=60),                   # + 1800: the lead
        _track(3, range(70, 100), extra, size=50),                  # 1500
    )
    people = group_people(tracks)
    assert [p.presence for p in people] == pytest.approx([3600, 1200, 1500])
    (one,) = select_people(people, "one")
    assert [t.track_id for t in one.tracks] == [0, 2]  # swapped in both of the lead's shots
    # The longest single track (the close-up) and the largest face do not decide it.
    assert max(tracks, key=lambda t: t.length).track_id == 1
    assert [p.person_id for p in select_people(people, "many")] == [0, 2, 1]
    assert select_people((), "one") == ()


def _fixed_track(track_id: int, frames: range, embedding: np.ndarray) -> Track:
    unit = (embedding / np.linalg.norm(embedding)).astype(np.float32)
    return Track(track_id, tuple(frames), tuple(_face(60, unit) for _ in frames))


def test_reference_picks_people_not_tracks():
    lead, other, extra = identity(1), identity(2), identity(3)
    # The lead's second shot (track 2) alone looks little like the reference (cosine 0.10) but
    # is the lead (0.74 to the first shot): the reference picks the person, both shots.
    tracks = (_fixed_track(0, range(10), lead), _fixed_track(1, range(10, 20), extra),
              _fixed_track(2, range(20, 30), lead + 0.9 * other))
    reference = (lead - 0.9 * other) / np.linalg.norm(lead - 0.9 * other)
    assert float(tracks[2].mean_embedding @ reference) < 0.11
    people = group_people(tracks)
    (chosen,) = select_people(people, "reference", reference, threshold=0.4)
    assert [t.track_id for t in chosen.tracks] == [0, 2]
    assert select_people(people, "reference", identity(5), threshold=0.4) == ()
    with pytest.raises(InputError):
        select_people(people, "reference")
    with pytest.raises(InputError):
        select_people(people, "largest")
    with pytest.raises(ValueError):
        select_people(group_people((_track(0, range(3), None),)), "reference", lead)
