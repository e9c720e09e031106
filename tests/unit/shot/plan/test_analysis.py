"""Pass 1's pure parts (shot.plan.analysis, shot.plan.tracking): the cache's pack/unpack round trip
and key, gap filling, and the plan of faces to swap per frame (within shots, never across a cut)."""

from __future__ import annotations

import hashlib
from dataclasses import replace
from pathlib import Path

import numpy as np

from facefuse.shot.plan.analysis import (
    ANALYSIS_VERSION,
    AnalysisCache,
    AnalysisKey,
    ShotAnalysis,
    analyse_frame,
    missing_frames,
    pack_detections,
    unpack_detections,
)
from facefuse.shot.plan.cuts import FrameSignature, frame_signature
from facefuse.shot.plan.make import plan_targets
from facefuse.shot.plan.options import PlanOptions
from facefuse.shot.plan.smoothing import OneEuroParams
from facefuse.shot.plan.tracking import Track, fill_short_gaps
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
    detections = {3: (_face(0, _unit(0)), _face(100, _unit(1), 0.6)), 4: (),
                  7: (_face(5, _unit(2)),)}
    back = unpack_detections(pack_detections(detections))
    assert list(back) == [3, 4, 7] and back[4] == ()
    for frame, faces in detections.items():
        assert len(back[frame]) == len(faces)
        assert all(_same(a, b) for a, b in zip(back[frame], faces))


def test_pack_without_embeddings_unpacks_none():
    back = unpack_detections(pack_detections({1: (_face(0),)}))
    assert back[1][0].embedding is None


def _picture(level: int) -> np.ndarray:
    """A flat grey frame: pictures of different levels are different shots."""
    return np.full((36, 64, 3), level, np.uint8)


def _signatures(levels: dict[int, int]) -> dict[int, FrameSignature]:
    return {n: frame_signature(_picture(level)) for n, level in levels.items()}


def test_the_cache_round_trip_and_damage_is_a_miss(tmp_path: Path):
    cache = AnalysisCache(tmp_path / "analysis")
    detections = {1: (_face(0, _unit(0)),), 2: ()}
    assert cache.load(KEY).faces == {} and cache.load(KEY).signatures == {}
    cache.save(KEY, ShotAnalysis(detections, _signatures({1: 40, 2: 200})))
    loaded = cache.load(KEY)
    assert list(loaded.faces) == [1, 2] and _same(loaded.faces[1][0], detections[1][0])
    assert list(loaded.signatures) == [1, 2] and loaded.cuts == (2,)
    np.testing.assert_array_equal(loaded.signatures[2].thumbnail, np.full((18, 32, 3), 200))
    cache.path(KEY).write_bytes(b"not an npz")
    assert cache.load(KEY).faces == {}


def test_the_key_depends_on_everything_that_changes_detections():
    others = [replace(KEY, content_sha256="d" * 64), replace(KEY, detector="det:9"),
              replace(KEY, recogniser="rec:9"), replace(KEY, detector_size_px=320),
              replace(KEY, detector_score=0.6), replace(KEY, colorspace="ACEScg"),
              replace(KEY, version=1), replace(KEY, version=2)]
    assert len({KEY.digest, *(k.digest for k in others)}) == 9


def test_the_key_names_the_analysis_version():
    """The digest is of the key's fields and its version: an entry keyed by the same fields
    without the version (detections only, no cut signatures) names another file, so the shot
    is analysed again, signatures and all."""
    assert ANALYSIS_VERSION == 5 and KEY.version == ANALYSIS_VERSION
    text = "\n".join(str(v) for v in ("c" * 64, "det:1", "rec:2", 640, 0.5, None))
    assert KEY.digest == hashlib.sha256(f"{text}\nanalysis-v5".encode()).hexdigest()
    assert KEY.digest != hashlib.sha256(text.encode()).hexdigest()


def test_analyse_frame_gives_faces_and_a_signature_and_nothing_for_a_failed_frame():
    frame = np.zeros((4, 4, 3), np.uint8)
    found = analyse_frame(3, frame, lambda f: (_face(0),))
    assert list(found.faces) == [3] and len(found.faces[3]) == 1 and list(found.signatures) == [3]
    failed = analyse_frame(2, "failed", lambda f: (_face(0),))
    assert not failed.faces and not failed.signatures
    merged = ShotAnalysis().merged(found).merged(failed)
    assert missing_frames([1, 2, 3], merged.faces) == (1, 2)


def test_merged_and_over_keep_faces_and_signatures_together():
    old = ShotAnalysis({1: (_face(0),), 2: ()}, _signatures({1: 40, 2: 40}))
    new = ShotAnalysis({3: (_face(5),)}, _signatures({3: 200}))
    both = old.merged(new)
    assert list(both.faces) == [1, 2, 3] and list(both.signatures) == [1, 2, 3]
    assert both.cuts == (3,)
    part = both.over([2, 3, 4])  # 4 was never analysed (it failed to decode)
    assert list(part.faces) == [2, 3, 4] and part.faces[4] == ()
    assert list(part.signatures) == [2, 3]


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
    analysis = ShotAnalysis(detections)
    many = plan_targets(analysis, PlanOptions("many", None, 0.4, 24.0, None))
    assert all(len(many[n]) == 2 for n in (1, 2, 4, 5)) and len(many[3]) == 2
    one = plan_targets(analysis, PlanOptions("one", None, 0.4, 24.0, OneEuroParams()))
    assert sorted(one) == [1, 2, 3, 4, 5] and all(len(faces) == 1 for faces in one.values())
    assert all(faces[0].bbox_xyxy[0] < 200 for faces in one.values()), "the lead, not the extra"
    reference = plan_targets(analysis, PlanOptions("reference", extra, 0.4, 24.0, None))
    assert all(faces[0].bbox_xyxy[0] == 300 for faces in reference.values())


def test_every_planned_face_of_a_track_carries_the_tracks_one_identity():
    """A swapper weight blends with the target's own identity: the track's mean embedding, not
    each frame's, which wanders (so the blended identity holds still over the shot)."""
    rng = np.random.default_rng(3)
    seen = {n: _unit(0) + rng.normal(0, 0.2, 8).astype(np.float32) for n in range(1, 7)}
    detections = {n: (_face(10 + n, v / np.linalg.norm(v)),) for n, v in seen.items()}
    planned = plan_targets(ShotAnalysis(detections), PlanOptions("one", None, 0.4, 24.0, None))
    embeddings = [faces[0].embedding for faces in planned.values()]
    assert len(embeddings) == 6 and all(e is not None for e in embeddings)
    assert all(np.array_equal(e, embeddings[0]) for e in embeddings)
    mean = np.sum([v / np.linalg.norm(v) for v in seen.values()], axis=0)
    np.testing.assert_allclose(embeddings[0], mean / np.linalg.norm(mean), atol=1e-6)
    assert not np.allclose(detections[1][0].embedding, embeddings[0], atol=1e-3)  # it can fail


def test_gap_filling_and_smoothing_never_bridge_a_cut():
    lead = _unit(0)
    # The lead is seen in frames 1-4 on the left and, after the cut at frame 6, on the right;
    # frame 5 (the last before the cut) has no face. Without the cut, frame 5 would be filled
    # in between and the smoothed landmarks of frames 4 and 6 pulled towards each other.
    detections = {n: (_face(10, lead),) for n in (1, 2, 3, 4)}
    detections.update({5: (), 6: (_face(400, lead),), 7: (_face(400, lead),)})
    levels = {n: 40 if n <= 5 else 200 for n in detections}
    analysis = ShotAnalysis(detections, _signatures(levels))
    assert analysis.cuts == (6,)
    one = plan_targets(analysis, PlanOptions("one", None, 0.4, 24.0, OneEuroParams()))
    assert sorted(one) == [1, 2, 3, 4, 6, 7], "frame 5 is not filled across the cut"
    np.testing.assert_allclose(one[4][0].kps5, detections[4][0].kps5, atol=1e-4)
    np.testing.assert_allclose(one[6][0].kps5, detections[6][0].kps5, atol=1e-4)
    uncut = plan_targets(ShotAnalysis(detections),
                         PlanOptions("one", None, 0.4, 24.0, OneEuroParams()))
    assert 5 in uncut and abs(float(uncut[4][0].kps5[0, 0] - detections[4][0].kps5[0, 0])) > 0.3


def test_a_long_tracks_identity_is_the_mean_of_its_opening_frames():
    """The steady identity must be known early (plan_horizon): the mean of the track's first
    PLAN_LOOKAHEAD_S of faces (48 frames at 24 fps), whatever comes later."""
    rng = np.random.default_rng(4)
    seen = {n: _unit(0) + rng.normal(0, 0.2, 8).astype(np.float32) + (n > 60) * _unit(1)
            for n in range(100)}
    seen = {n: v / np.linalg.norm(v) for n, v in seen.items()}
    detections = {n: (_face(10 + n / 4, v),) for n, v in seen.items()}
    planned = plan_targets(ShotAnalysis(detections),
                           PlanOptions("many", None, 0.4, 24.0, OneEuroParams()))
    steady = {faces[0].embedding.tobytes() for faces in planned.values()
              if faces[0].embedding is not None}
    assert len(planned) == 100 and len(steady) == 1
    opening = np.sum([seen[n] for n in range(48)], axis=0)
    np.testing.assert_allclose(planned[99][0].embedding, opening / np.linalg.norm(opening),
                               atol=1e-6)
    track = Track(0, tuple(seen), tuple(faces[0] for faces in detections.values()))
    assert track.opening_embedding(48) is not None
    assert not np.allclose(track.mean_embedding, track.opening_embedding(48), atol=1e-2)
