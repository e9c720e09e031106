"""People, not tracks: tracks grouped by identity within and across shots.

A track is one face through part of one shot (shot.plan.tracking); the same person has a track in
every shot they appear in, and sometimes several in one shot (lost and found again). A Person
is the tracks that carry one identity.

Grouping (``group_people``): average-linkage clustering of the tracks' mean embeddings (cosine
similarity of the L2-normalised means). The two groups with the highest mean pairwise
similarity are joined while it is at least ``PERSON_SIMILARITY``, except that two groups whose
tracks share a frame never join (two faces seen at once are two people). Tracks without
embeddings stay people of their own.

Screen presence (``presence``): the sum, over every frame where the person's face was
detected, of the face's size (the square root of its box area, in pixels) times its
frontality (``frontality``: 1 for a face turned to the camera, down to ``MIN_FRONTALITY`` for
a profile). A lead seen frontal and large for long outweighs a profile close-up seen briefly,
and a person split over many shots counts all of them.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ...types import Face
from ...vectors import l2_normalise
from .tracking import Track

log = logging.getLogger(__name__)

# Two tracks' mean embeddings at least this similar are one person. Averaging over a track's
# frames makes means steadier than single faces: with the test recogniser (MobileFaceNet) on
# tests/golden/test_edited_footage.py the same man's tracks in two shots measure 0.95, tracks
# of different people 0.14-0.23. ArcFace w600k, the default recogniser, is not available to
# the tests: the threshold has not been measured on it.
PERSON_SIMILARITY = 0.45
MIN_FRONTALITY = 0.1


@dataclass(frozen=True, slots=True, eq=False)
class Person:
    """One identity's tracks, ordered by first frame.

    person_id: unique within one group_people result (0, 1, ... by first appearance).
    """

    person_id: int
    tracks: tuple[Track, ...]

    @property
    def frames(self) -> tuple[int, ...]:
        """The frame numbers where this person's face was detected, ascending."""
        return tuple(sorted(frame for track in self.tracks for frame in track.frames))

    @property
    def presence(self) -> float:
        """Screen presence: the sum of face_presence over every face of every track."""
        return float(sum(face_presence(face) for track in self.tracks for face in track.faces))

    @property
    def mean_embedding(self) -> np.ndarray | None:
        """L2-normalised float32 (D,) mean of every face's normalised embedding, or None."""
        vectors = [l2_normalise(np.ravel(face.embedding), dtype=np.float64)
                   for track in self.tracks for face in track.faces
                   if face.embedding is not None]
        if not vectors:
            return None
        return l2_normalise(np.sum(vectors, axis=0), dtype=np.float64).astype(np.float32)


def frontality(kps5: np.ndarray) -> float:
    """How squarely a face looks at the camera, from its 5 landmarks (frame pixels): 1 when the
    nose tip projects midway between the eyes on the line through them, falling linearly to 0
    when it projects onto an eye (or beyond: a profile). Rolled faces measure as upright ones."""
    points = np.asarray(kps5, dtype=np.float64)
    left_eye, right_eye, nose = points[0], points[1], points[2]
    axis = right_eye - left_eye
    length_sq = float(axis @ axis)
    if length_sq <= 0.0:
        return 0.0
    along = float((nose - left_eye) @ axis) / length_sq  # 0 at the left eye, 1 at the right
    return float(np.clip(1.0 - 2.0 * abs(along - 0.5), 0.0, 1.0))


def face_presence(face: Face) -> float:
    """One face's share of screen presence: sqrt(box area) px x max(frontality, MIN_FRONTALITY)."""
    return float(np.sqrt(face.area_px)) * max(frontality(face.kps5), MIN_FRONTALITY)


def _track_means(tracks: Sequence[Track]) -> tuple[np.ndarray, np.ndarray]:
    """(unit mean embeddings (N, D) float64, zero rows where none; which rows are known (N,))."""
    means = [track.mean_embedding for track in tracks]
    known = np.array([m is not None for m in means], bool)
    dim = next((m.shape[0] for m in means if m is not None), 0)
    rows = np.zeros((len(tracks), dim))
    for i, mean in enumerate(means):
        if mean is not None:
            rows[i] = mean
    return rows, known


def _overlaps(tracks: Sequence[Track]) -> np.ndarray:
    """(N, N) bool: the tracks share a frame number (seen at once, so not one person)."""
    spans = [frozenset(track.frames) for track in tracks]
    return np.array([[not a.isdisjoint(b) for b in spans] for a in spans], bool).reshape(
        len(tracks), len(tracks))


def _clusters(tracks: Sequence[Track], threshold: float) -> list[list[int]]:
    """Average-linkage clusters of track indices (see the module docstring)."""
    rows, known = _track_means(tracks)
    total = rows @ rows.T  # sums of pairwise similarities between clusters
    blocked = _overlaps(tracks) | ~(known[:, None] & known[None, :])
    sizes = np.ones(len(tracks))
    members = [[i] for i in range(len(tracks))]
    alive = np.ones(len(tracks), bool)
    while True:
        linkage = total / np.outer(sizes, sizes)
        linkage[blocked | ~(alive[:, None] & alive[None, :])] = -np.inf
        np.fill_diagonal(linkage, -np.inf)
        a, b = np.unravel_index(int(np.argmax(linkage)), linkage.shape)
        if not linkage[a, b] >= threshold:
            return [group for group, live in zip(members, alive) if live]
        a, b = min(a, b), max(a, b)
        total[a] += total[b]
        total[:, a] += total[:, b]
        blocked[a] |= blocked[b]
        blocked[:, a] |= blocked[:, b]
        sizes[a] += sizes[b]
        members[a] += members[b]
        alive[b] = False


def group_people(tracks: Sequence[Track], similarity: float = PERSON_SIMILARITY
                 ) -> tuple[Person, ...]:
    """The tracks grouped into people by identity (see the module docstring); deterministic.
    Returns the people by person_id, numbered by their first frame; a person's tracks by first
    frame."""
    if not tracks:
        return ()
    groups = [sorted((tracks[i] for i in group), key=lambda t: (t.frames[0], t.track_id))
              for group in _clusters(tracks, similarity)]
    groups.sort(key=lambda group: (group[0].frames[0], group[0].track_id))
    people = tuple(Person(number, tuple(group)) for number, group in enumerate(groups))
    log.debug("%d tracks grouped into %d people", len(tracks), len(people))
    return people
