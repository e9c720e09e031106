"""Tracks from synthetic detections: crossings, gaps, re-identification, newcomers, cuts."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from facefuse.errors import InputError
from facefuse.shot.plan.tracking import (
    EXACT_ASSIGNMENT_MAX,
    Track,
    assign,
    box_iou_matrix,
    build_shot_tracks,
    build_tracks,
)
from facefuse.types import Face
from tests.unit.shot.identities import identity, seen


def _face(cx: float, cy: float, size: float = 60.0, embedding: np.ndarray | None = None) -> Face:
    box = np.array([cx - size / 2, cy - size / 2, cx + size / 2, cy + size / 2], np.float32)
    kps = np.array([[-0.2, -0.1], [0.2, -0.1], [0, 0.05], [-0.15, 0.2], [0.15, 0.2]], np.float32)
    return Face(box, kps * size + np.array([cx, cy], np.float32), 0.9, embedding)


def _people(tracks: tuple[Track, ...], identities: list[np.ndarray]) -> list[list[int]]:
    """For each track, which identity each of its faces came from."""
    return [[int(np.argmax([face.embedding @ ident for ident in identities]))
             for face in track.faces] for track in tracks]


def test_two_people_crossing_stay_on_their_tracks():
    alice, bob = identity(1), identity(2)
    detections = {}
    for frame in range(21):
        x_a, x_b = 100 + 10 * frame, 300 - 10 * frame  # the very same box at frame 10
        faces = [_face(x_a, 200, embedding=seen(alice, frame)),
                 _face(x_b, 200, embedding=seen(bob, frame))]
        detections[frame] = faces[::-1] if frame % 2 else faces  # detector order varies
    # After frame 10 both tracks' last boxes are identical: only the embeddings can tell.
    np.testing.assert_array_equal(detections[10][0].bbox_xyxy, detections[10][1].bbox_xyxy)
    tracks = build_tracks(detections)
    assert len(tracks) == 2
    assert all(track.frames == tuple(range(21)) for track in tracks)
    assert _people(tracks, [alice, bob]) == [[0] * 21, [1] * 21]
    assert tracks[0].faces[-1].bbox_xyxy[0] > tracks[0].faces[0].bbox_xyxy[0]  # alice went right


def test_without_embeddings_boxes_alone_link_faces():
    detections = {frame: [_face(100 + 5 * frame, 200), _face(400, 200 + 3 * frame)]
                  for frame in range(10)}
    tracks = build_tracks(detections)
    assert [t.frames for t in tracks] == [tuple(range(10))] * 2
    assert all(t.mean_embedding is None for t in tracks)
    xs = [float(face.bbox_xyxy[0]) for face in tracks[0].faces]
    assert xs == sorted(xs)


def test_a_fast_moving_face_keeps_its_track_by_embedding():
    alice = identity(1)
    detections = {frame: [_face(100 + 150 * (frame % 2), 200, embedding=seen(alice, frame))]
                  for frame in range(8)}  # jumps 150 px every frame: IoU 0
    (track,) = build_tracks(detections)
    assert track.length == 8


def test_a_face_missing_for_three_frames_keeps_its_track():
    alice = identity(1)
    frames = [*range(10), *range(13, 20)]
    detections = {f: [_face(200 + f, 200, embedding=seen(alice, f))] for f in frames}
    (track,) = build_tracks(detections)
    assert track.frames == tuple(frames)
    no_embeddings = {f: [_face(200 + f, 200)] for f in frames}
    assert len(build_tracks(no_embeddings)) == 1  # within max_gap the box is enough


def test_a_face_missing_for_ten_frames_is_reidentified_by_embedding():
    alice, bob = identity(1), identity(2)
    frames = [*range(10), *range(20, 30)]
    detections = {f: [_face(100 if f < 10 else 500, 200, embedding=seen(alice, f)),
                      _face(300, 400, embedding=seen(bob, f))] for f in frames}
    tracks = build_tracks(detections)
    assert [t.frames for t in tracks] == [tuple(frames)] * 2
    assert _people(tracks, [alice, bob]) == [[0] * 20, [1] * 20]
    without = {f: [_face(100 if f < 10 else 500, 200)] for f in frames}
    assert [t.frames for t in build_tracks(without)] == [tuple(range(10)), tuple(range(20, 30))]


def test_a_newcomer_starts_a_new_track():
    alice, bob = identity(1), identity(2)
    detections = {f: [_face(100, 200, embedding=seen(alice, f))] for f in range(12)}
    for f in range(5, 12):
        detections[f] = [*detections[f], _face(400, 200, embedding=seen(bob, f))]
    tracks = build_tracks(detections)
    assert [t.track_id for t in tracks] == [0, 1]
    assert tracks[1].frames == tuple(range(5, 12))
    assert _people(tracks, [alice, bob]) == [[0] * 12, [1] * 7]


def test_someone_else_in_the_same_place_is_not_the_same_track():
    """After a cut, a different person where the last one was: the embeddings veto the IoU."""
    alice, bob = identity(1), identity(2)
    detections = {f: [_face(200, 200, embedding=seen(alice if f < 6 else bob, f))]
                  for f in range(12)}
    tracks = build_tracks(detections)
    assert [t.frames for t in tracks] == [tuple(range(6)), tuple(range(6, 12))]
    loose = build_tracks(detections, veto_similarity=-1.0)
    assert len(loose) == 1


def test_tracking_is_deterministic_and_input_order_free():
    identities = [identity(i) for i in range(4)]
    rng = np.random.default_rng(5)
    detections = {}
    for frame in range(30):
        faces = [_face(100 + 90 * i + rng.normal(0, 20), 200 + rng.normal(0, 20),
                       embedding=seen(ident, frame, noise=0.8))
                 for i, ident in enumerate(identities) if rng.random() > 0.2]
        detections[frame] = faces
    first = build_tracks(detections)
    pairs = list(detections.items())[::-1]
    again = build_tracks(pairs)
    assert [(t.track_id, t.frames) for t in first] == [(t.track_id, t.frames) for t in again]
    assert all(a is b for t, u in zip(first, again) for a, b in zip(t.faces, u.faces))


def test_frame_listed_twice_is_refused():
    with pytest.raises(ValueError):
        build_tracks([(0, [_face(1, 1)]), (0, [_face(1, 1)])])
    with pytest.raises(InputError):
        build_tracks({}, iou_threshold=0.0)
    assert build_tracks({}) == ()


def test_tracks_never_cross_a_cut():
    alice, bob = identity(1), identity(2)
    # Alice is seen in the same place on both sides of the cut at frame 10 (a reverse shot);
    # after the cut Bob is seen beside her.
    detections = {f: [_face(100, 100, 60, seen(alice, f))] for f in range(10)}
    for f in range(10, 20):
        detections[f] = [_face(300, 100, 60, seen(bob, f)), _face(102, 100, 60, seen(alice, f))]
    assert build_tracks(detections)[0].frames == tuple(range(20))  # crosses it
    tracks = build_shot_tracks(detections, cuts=(10,))
    assert [t.frames for t in tracks] == [tuple(range(10)), tuple(range(10, 20)),
                                          tuple(range(10, 20))]
    assert [t.track_id for t in tracks] == [0, 1, 2]
    assert _people(tracks, [alice, bob]) == [[0] * 10, [1] * 10, [0] * 10]
    without_cuts = build_shot_tracks(detections, cuts=())
    assert [t.frames for t in without_cuts] == [tuple(range(20)), tuple(range(10, 20))]
    assert build_shot_tracks({}, cuts=(3,)) == ()


def test_track_helpers():
    alice = identity(1)
    track = Track(7, (3, 5, 9), tuple(_face(100, 100, s, seen(alice, s)) for s in (10, 20, 30)))
    assert track.length == 3
    assert track.mean_area_px == pytest.approx((100 + 400 + 900) / 3)
    mean = track.mean_embedding
    assert mean is not None and np.linalg.norm(mean) == pytest.approx(1.0, abs=1e-6)
    assert float(mean @ alice) > 0.9
    assert track.kps_series().shape == (3, 5, 2)
    with pytest.raises(ValueError):
        Track(0, (1, 2), (track.faces[0],))
    with pytest.raises(ValueError):
        Track(0, (2, 1), track.faces[:2])


def _brute_force(score: np.ndarray, allowed: np.ndarray) -> float:
    n_rows, n_cols = score.shape
    best = 0.0
    for cols in itertools.permutations([*range(n_cols), *[-1] * n_rows], n_rows):
        used = [c for c in cols if c >= 0]
        if len(used) != len(set(used)):
            continue
        if all(c < 0 or allowed[r, c] for r, c in enumerate(cols)):
            best = max(best, sum(score[r, c] for r, c in enumerate(cols) if c >= 0))
    return best


@pytest.mark.parametrize("shape", [(1, 1), (2, 3), (3, 2), (4, 4), (3, 5)])
def test_assignment_is_optimal(shape):
    rng = np.random.default_rng(sum(shape))
    for _ in range(20):
        score = rng.random(shape) + 0.01
        allowed = rng.random(shape) > 0.3
        pairs = assign(score, allowed)
        assert len({r for r, _ in pairs}) == len({c for _, c in pairs}) == len(pairs)
        assert all(allowed[r, c] for r, c in pairs)
        total = sum(score[r, c] for r, c in pairs)
        assert total == pytest.approx(_brute_force(score, allowed))


def test_assignment_beyond_the_exact_size_is_greedy_and_valid():
    n = EXACT_ASSIGNMENT_MAX + 3
    score = np.eye(n) + 0.01
    pairs = assign(score, np.ones((n, n), bool))
    assert pairs == [(i, i) for i in range(n)]
    assert assign(np.zeros((0, 3)), np.zeros((0, 3), bool)) == []


def test_box_iou_matrix():
    boxes = np.array([[0, 0, 10, 10], [5, 0, 15, 10], [20, 20, 20, 30]], np.float32)
    iou = box_iou_matrix(boxes, boxes)
    assert iou.shape == (3, 3)
    assert iou[0, 0] == pytest.approx(1.0) and iou[0, 1] == pytest.approx(50 / 150)
    assert iou[2, 2] == 0.0 and iou[0, 2] == 0.0
