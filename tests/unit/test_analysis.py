"""Pass 1's pure parts (shot.analysis, shot.tracking): the cache's pack/unpack round trip and
key, gap filling, and the plan of faces to swap per frame."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np

from facefuse.shot.analysis import (
    AnalysisCache,
    AnalysisKey,
    analyse_frames,
    missing_frames,
    pack_detections,
    plan_targets,
    unpack_detections,
)
from facefuse.shot.smoothing import OneEuroParams
from facefuse.shot.tracking import Track, fill_short_gaps
from facefuse.types import Face

KEY = AnalysisKey("c" * 64, "det:1", "rec:2", 640, 0.5, None)


def _face(x: float, embedding: np.ndarray | None = None, score: float = 0.9,
          width: float = 50) -> Face:
    box = np.array([x, 10, x + width, 60], np.float32)
    kps = np.array([[x + 15, 25], [x + 35, 25], [x + 25, 35], [x + 17, 48], [x + 33, 48]],
                   np.float32)
    return Face(box, kps, score, embedding)


def _unit(index: int, dim: int = 8) -> np.ndarray:
    vector = np.zeros(dim, np.float32)
    vector[index] = 1.0
    return vector


def _same(a: Face, b: Face) -> bool:
    embeddings = (a.embedding is None and b.embedding is None) or (
        a.embedding is not None and b.embedding is not None
        and np.array_equal(a.embedding, b.embedding))
    return (np.array_equal(a.bbox_xyxy, b.bbox_xyxy) and np.array_equal(a.kps5, b.kps5)
            and a.score == np.float32(b.score) and embeddings)


def test_pack_unpack_round_trip_keeps_frames_order_and_empties():
    detections = {3: (_face(0, _unit(0)), _face(100, _unit(1), 0.6)), 4: (), 7: (_face(5, _unit(2)),)}
    back = unpack_detections(pack_detections(detections))
    assert list(back) == [3, 4, 7] and back[4] == ()
    for frame, faces in detections.items():
        assert len(back[frame]) == len(faces)
        assert all(_same(a, b) for a, b in zip(back[frame], faces))


def test_pack_without_embeddings_unpacks_none():
    back = unpack_detections(pack_detections({1: (_face(0),)}))
    assert back[1][0].embedding is None


def test_the_cache_round_trip_and_damage_is_a_miss(tmp_path: Path):
    cache = AnalysisCache(tmp_path / "analysis")
    detections = {1: (_face(0, _unit(0)),), 2: ()}
    assert cache.load(KEY) == {}
    cache.save(KEY, detections)
    loaded = cache.load(KEY)
    assert list(loaded) == [1, 2] and _same(loaded[1][0], detections[1][0])
    cache.path(KEY).write_bytes(b"not an npz")
    assert cache.load(KEY) == {}


def test_the_key_depends_on_everything_that_changes_detections():
    others = [replace(KEY, content_sha256="d" * 64), replace(KEY, detector="det:9"),
              replace(KEY, recogniser="rec:9"), replace(KEY, detector_size_px=320),
              replace(KEY, detector_score=0.6), replace(KEY, colorspace="ACEScg")]
    assert len({KEY.digest, *(k.digest for k in others)}) == 7


def test_analyse_frames_skips_failures_and_stops_when_cancelled():
    frame = np.zeros((4, 4, 3), np.uint8)
    seen: list[int] = []
    found = analyse_frames([(1, frame), (2, "failed"), (3, frame)], lambda f: (_face(0),),
                           on_frame=seen.append)
    assert list(found) == [1, 3] and seen == [1, 2, 3]
    calls = iter([False, True])
    assert list(analyse_frames([(1, frame), (2, frame)], lambda f: (), lambda: next(calls))) == [1]
    assert missing_frames([1, 2, 3], found) == (2,)


def test_short_gaps_are_filled_by_interpolation_long_ones_are_not():
    track = Track(track_id=0, frames=(1, 3, 10),
                  faces=(_face(0), _face(20, score=0.5), _face(90)))
    filled = fill_short_gaps(track, max_missing=3)
    assert filled.frames == (1, 2, 3, 10)
    middle = filled.faces[1]
    np.testing.assert_allclose(middle.bbox_xyxy, [10, 10, 60, 60])
    np.testing.assert_allclose(middle.kps5, (track.faces[0].kps5 + track.faces[1].kps5) / 2)
    assert middle.score == 0.5
    assert fill_short_gaps(track, max_missing=0).frames == track.frames


def test_plan_targets_follows_the_chosen_person_through_a_gap():
    lead, extra = _unit(0), _unit(1)
    detections = {n: (_face(10 + n, lead, width=90), _face(300, extra)) for n in (1, 2, 4, 5)}
    detections[3] = (_face(300, extra),)  # the lead (the larger face) is missed for one frame
    many = plan_targets(detections, "many", None, 0.4, 24.0, None)
    assert all(len(many[n]) == 2 for n in (1, 2, 4, 5)) and len(many[3]) == 2
    one = plan_targets(detections, "one", None, 0.4, 24.0, OneEuroParams())
    assert sorted(one) == [1, 2, 3, 4, 5] and all(len(faces) == 1 for faces in one.values())
    assert all(faces[0].bbox_xyxy[0] < 200 for faces in one.values()), "the lead, not the extra"
    reference = plan_targets(detections, "reference", extra, 0.4, 24.0, None)
    assert all(faces[0].bbox_xyxy[0] == 300 for faces in reference.values())
