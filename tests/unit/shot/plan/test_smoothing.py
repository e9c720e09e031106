"""The One Euro filter, zero-phase landmark and pose smoothing, the jitter and lag measures, and
tracks."""

from __future__ import annotations

import numpy as np
import pytest

from facefuse.errors import InputError
from facefuse.shot.plan.smoothing import (
    MAX_BRIDGED_FRAMES,
    POSE_SMOOTHING,
    OneEuroParams,
    face_scale_px,
    lag_frames,
    landmark_jitter_px,
    landmark_spread_px,
    one_euro,
    smooth_faces,
    smooth_landmarks,
    smooth_pose,
    smooth_tracks,
)
from facefuse.shot.plan.tracking import Track
from facefuse.types import Face

RATE_HZ = 30.0
# A frontal face of about 16 px face scale (a 30 px interocular distance), away from the origin.
FACE = np.array([[-15, -10], [15, -10], [0, 3], [-12, 15], [12, 15]], np.float64) + 200.0


def _still(noise_px: float, frames: int = 90, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return FACE[None] + rng.normal(0.0, noise_px, (frames, 5, 2))


def _ramp(px_per_frame: float, frames: int = 60) -> np.ndarray:
    steps = np.arange(frames, dtype=np.float64)[:, None, None]
    return FACE[None] + steps * np.array([px_per_frame, 0.5 * px_per_frame])


def test_constant_signal_is_returned_unchanged():
    series = np.full((40, 3), 7.25)
    np.testing.assert_allclose(one_euro(series, RATE_HZ, OneEuroParams()), series, atol=1e-12)
    kps = np.repeat(FACE[None], 20, axis=0)
    np.testing.assert_allclose(smooth_landmarks(kps, range(20), RATE_HZ), kps, atol=1e-4)


def test_step_converges_without_overshoot():
    series = np.r_[np.zeros(10), np.full(50, 10.0)]
    out = one_euro(series, RATE_HZ, OneEuroParams(min_cutoff=1.0, beta=0.5))
    assert out[9] == 0.0 and 0.0 < out[10] < 10.0
    assert np.all(np.diff(out) >= 0) and out.max() <= 10.0
    assert out[-1] == pytest.approx(10.0, abs=1e-3)


def test_first_sample_is_kept_and_dtype_follows_input():
    series = np.arange(12, dtype=np.float32).reshape(6, 2)
    out = one_euro(series, RATE_HZ, OneEuroParams())
    assert out.dtype == np.float32 and out.shape == series.shape
    np.testing.assert_array_equal(out[0], series[0])
    assert one_euro(np.arange(5), RATE_HZ, OneEuroParams()).dtype == np.float64


@pytest.mark.parametrize("zero_phase", [False, True])
def test_noisy_still_point_loses_most_of_its_jitter(zero_phase):
    raw = _still(noise_px=0.3)
    smoothed = smooth_landmarks(raw, range(len(raw)), RATE_HZ, zero_phase=zero_phase)
    assert landmark_jitter_px(raw) / landmark_jitter_px(smoothed) > 4.0


def test_zero_phase_has_no_lag_on_a_ramp_and_causal_lags():
    raw = _ramp(0.5)
    causal = smooth_landmarks(raw, range(len(raw)), RATE_HZ, zero_phase=False)
    zero_phase = smooth_landmarks(raw, range(len(raw)), RATE_HZ, zero_phase=True)
    assert lag_frames(raw, causal) > 0.5
    assert abs(lag_frames(raw, zero_phase)) < 0.5
    assert abs(lag_frames(raw, zero_phase)) < 0.05  # measured 0.00; the ramp is exact


def test_lag_estimator_reads_known_shifts():
    t = np.arange(120, dtype=np.float64)
    raw = np.stack([40 * np.sin(2 * np.pi * t / 60), 10 * np.cos(2 * np.pi * t / 45)], axis=1)
    late = np.stack([40 * np.sin(2 * np.pi * (t - 2) / 60),
                     10 * np.cos(2 * np.pi * (t - 2) / 45)], axis=1)
    assert lag_frames(raw, late) == pytest.approx(2.0, abs=0.05)
    assert lag_frames(late, raw) == pytest.approx(-2.0, abs=0.05)
    assert lag_frames(raw, raw) == 0.0
    assert lag_frames(np.zeros((10, 2)), np.ones((10, 2))) == 0.0  # no motion


def test_jitter_is_mean_absolute_second_difference():
    kps = np.zeros((4, 5, 2))
    kps[2] = 1.0  # second differences 1, -2 on every coordinate
    assert landmark_jitter_px(kps) == pytest.approx(1.5)
    assert landmark_jitter_px(kps[:2]) == 0.0
    assert landmark_jitter_px(_ramp(3.0)) == pytest.approx(0.0, abs=1e-9)


def test_single_frame_is_returned_as_is():
    kps = FACE[None].astype(np.float32)
    out = smooth_landmarks(kps, [17], RATE_HZ)
    np.testing.assert_array_equal(out, kps)
    assert out is not kps


def test_long_gap_restarts_the_filter_short_gap_is_bridged():
    raw = _still(0.5, frames=20)
    raw[10:] += 100.0  # the face is somewhere else after the gap
    gap = MAX_BRIDGED_FRAMES + 1
    frames = [*range(10), *range(10 + gap, 20 + gap)]
    causal = smooth_landmarks(raw, frames, RATE_HZ, zero_phase=False)
    np.testing.assert_allclose(causal[10], raw[10], atol=1e-4)  # restarted: first sample kept
    both = smooth_landmarks(raw, frames, RATE_HZ)
    np.testing.assert_allclose(both[:10], smooth_landmarks(raw[:10], range(10), RATE_HZ),
                               atol=1e-5)
    np.testing.assert_allclose(both[10:], smooth_landmarks(raw[10:], range(10), RATE_HZ),
                               atol=1e-5)
    bridged = [*range(10), *range(10 + gap - 1, 20 + gap - 1)]
    assert np.abs(smooth_landmarks(raw, bridged, RATE_HZ, zero_phase=False)[10] - raw[10]
                  ).max() > 1.0


def test_bridged_gap_keeps_time_consistent():
    frames = np.r_[np.arange(10), np.arange(12, 22)]  # two frames missing
    raw = FACE[None] + frames[:, None, None] * np.array([0.5, 0.25])
    smoothed = smooth_landmarks(raw, frames, RATE_HZ)
    assert abs(lag_frames(raw, smoothed)) < 0.05
    # Across the gap the filter steps 3 frames' time: the ramp stays a ramp there (measured
    # 0.02 px; stepping as if no frame were missing gives 0.17 px). The ends of a zero-phase run
    # keep half the causal lag (0.2 px here), as any forward/backward average does.
    assert np.abs(smoothed[8:12] - raw[8:12]).max() < 0.05
    assert np.abs(smoothed - raw).max() < 0.3


def test_scale_free_beta_gives_the_same_result_at_any_resolution():
    raw = _still(0.4, frames=40) + _ramp(0.7, frames=40) - FACE[None]
    small = smooth_landmarks(raw, range(40), RATE_HZ)
    large = smooth_landmarks(raw * 4.0, range(40), RATE_HZ)
    np.testing.assert_allclose(large, small * 4.0, rtol=1e-5, atol=1e-3)
    assert face_scale_px(raw * 4.0) == pytest.approx(4.0 * face_scale_px(raw))


def test_bad_arguments_are_refused():
    with pytest.raises(InputError):
        OneEuroParams(min_cutoff=0.0)
    with pytest.raises(InputError):
        OneEuroParams(beta=-1.0)
    with pytest.raises(InputError):
        one_euro(np.zeros(3), 0.0, OneEuroParams())
    with pytest.raises(ValueError):
        smooth_landmarks(np.zeros((3, 5, 2)), [0, 2, 1], RATE_HZ)
    with pytest.raises(ValueError):
        smooth_landmarks(np.zeros((3, 5, 2)), [0, 1], RATE_HZ)
    with pytest.raises(InputError):
        smooth_landmarks(np.zeros((3, 5, 2)), [0, 1, 2], RATE_HZ, lookahead=-1)
    with pytest.raises(ValueError):
        smooth_pose(np.zeros((3, 5, 2)), [0, 2, 1], RATE_HZ)


def _track(kps: np.ndarray, frames: list[int]) -> Track:
    faces = []
    for points in kps.astype(np.float32):
        box = np.r_[points.min(axis=0) - 10, points.max(axis=0) + 10].astype(np.float32)
        faces.append(Face(box, points, 0.9, np.ones(4, np.float32) / 2))
    return Track(3, tuple(frames), tuple(faces))


def test_smooth_tracks_moves_landmarks_and_boxes_together():
    raw = _still(0.5, frames=30)
    track = _track(raw, list(range(30)))
    before = [face.kps5.copy() for face in track.faces]
    (smoothed,) = smooth_tracks([track], RATE_HZ)
    assert smoothed.track_id == 3 and smoothed.frames == track.frames
    for old, new, kept in zip(track.faces, smoothed.faces, before):
        np.testing.assert_array_equal(old.kps5, kept)  # the input faces are untouched
        assert new.score == old.score and new.embedding is old.embedding
        assert new.kps5.dtype == new.bbox_xyxy.dtype == np.float32
        shift = new.kps5.mean(axis=0) - old.kps5.mean(axis=0)
        old_centre = old.bbox_xyxy.reshape(2, 2).mean(axis=0)
        new_centre = new.bbox_xyxy.reshape(2, 2).mean(axis=0)
        scale = (new.bbox_xyxy[2] - new.bbox_xyxy[0]) / (old.bbox_xyxy[2] - old.bbox_xyxy[0])
        assert scale == pytest.approx(landmark_spread_px(new.kps5) / landmark_spread_px(old.kps5),
                                      rel=1e-4)
        expected = new.kps5.mean(axis=0) + (old_centre - old.kps5.mean(axis=0)) * scale
        np.testing.assert_allclose(new_centre, expected, atol=1e-3)
        assert np.abs(shift).max() < 2.0
    points = smooth_landmarks(raw, range(30), RATE_HZ)
    np.testing.assert_allclose(smoothed.kps_series(), smooth_pose(points, range(30), RATE_HZ),
                               atol=1e-4)
    (points_only,) = smooth_tracks([track], RATE_HZ, pose=None)
    np.testing.assert_allclose(points_only.kps_series(), points, atol=1e-5)
    assert smooth_tracks([], RATE_HZ) == ()


def _posed(roll_rad: np.ndarray, scale: np.ndarray, centre: np.ndarray | None = None
           ) -> np.ndarray:
    """FACE (centred) turned by roll and scaled, per frame: (T, 5, 2)."""
    shape = FACE - FACE.mean(axis=0)
    centre = np.full((len(roll_rad), 2), 200.0) if centre is None else centre
    cos, sin = np.cos(roll_rad)[:, None, None], np.sin(roll_rad)[:, None, None]
    x, y = shape[None, :, 0], shape[None, :, 1]
    turned = np.stack([cos[..., 0] * x - sin[..., 0] * y, sin[..., 0] * x + cos[..., 0] * y], -1)
    return turned * scale[:, None, None] + centre[:, None, :]


def _roll_and_scale(kps: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Roll (radians) and size (spread) per frame, from the eye line."""
    eyes = kps[:, 1] - kps[:, 0]
    return np.arctan2(eyes[:, 1], eyes[:, 0]), landmark_spread_px(kps)


def test_pose_smoothing_calms_scale_and_roll_and_keeps_centre_and_shape():
    rng = np.random.default_rng(5)
    frames = 60
    roll = rng.normal(0, 0.02, frames)        # about 1 degree of roll jitter
    scale = 1 + rng.normal(0, 0.02, frames)   # 2% size jitter
    centre = 200 + np.cumsum(rng.normal(0, 1.0, (frames, 2)), axis=0)  # free to wander
    kps = _posed(roll, scale, centre)
    out = smooth_pose(kps, range(frames), RATE_HZ)
    assert out.dtype == np.float32 and out.shape == kps.shape
    np.testing.assert_allclose(out.mean(axis=1), centre, atol=1e-3)  # centroids kept
    out_roll, out_size = _roll_and_scale(out.astype(np.float64))
    in_roll, in_size = _roll_and_scale(kps)
    assert np.std(out_roll) < 0.5 * np.std(in_roll)
    assert np.std(out_size) < 0.5 * np.std(in_size)
    # The shape is kept: undoing each frame's roll and size gives the same points.
    unroll = np.stack([[[np.cos(-r), -np.sin(-r)], [np.sin(-r), np.cos(-r)]] for r in out_roll])
    centred = out - out.mean(axis=1, keepdims=True)
    undone = np.einsum("tij,tpj->tpi", unroll, centred) * (
        landmark_spread_px(FACE) / out_size)[:, None, None]
    shape = np.broadcast_to(FACE - FACE.mean(axis=0), undone.shape)
    np.testing.assert_allclose(undone, shape, atol=1e-3)


def test_pose_smoothing_follows_a_fast_roll_without_lag():
    t = np.arange(45) / RATE_HZ
    roll = np.radians(30) * np.clip((t - 0.5) / 0.5, 0, 1)  # 30 degrees in half a second
    kps = _posed(roll, np.ones(len(t)))
    out = smooth_pose(kps, range(len(t)), RATE_HZ)
    out_roll, _ = _roll_and_scale(out.astype(np.float64))
    assert abs(lag_frames(roll, out_roll)) < 0.05
    assert np.abs(out_roll - roll).max() < np.radians(2.0)
    assert np.abs(out_roll[-5:] - roll[-5:]).max() < np.radians(0.5)  # settles on the end pose
    causal = smooth_pose(kps, range(len(t)), RATE_HZ, zero_phase=False)
    assert lag_frames(roll, _roll_and_scale(causal.astype(np.float64))[0]) > 0.3


def test_pose_smoothing_restarts_after_a_gap_and_leaves_degenerate_runs():
    assert POSE_SMOOTHING.min_cutoff < OneEuroParams().min_cutoff
    kps = _posed(np.r_[np.zeros(10), np.full(10, 0.5)], np.ones(20))
    frames = [*range(10), *range(10 + MAX_BRIDGED_FRAMES + 2, 20 + MAX_BRIDGED_FRAMES + 2)]
    np.testing.assert_allclose(smooth_pose(kps, frames, RATE_HZ), kps, atol=1e-4)
    flat = np.zeros((4, 5, 2))
    np.testing.assert_array_equal(smooth_pose(flat, range(4), RATE_HZ), flat)


# --------------------------------------------------------------------------------------------
# Fixed lag: a frame's backward run starts at most `lookahead` frames after it.

LOOKAHEAD = 10
# A wandering, noisy face with a bridged gap (2 frames missing) and a restart (8 missing).
WALK_FRAMES = np.r_[np.arange(40), np.arange(42, 80), np.arange(88, 130)]


def _walk(seed: int = 2) -> np.ndarray:
    rng = np.random.default_rng(seed)
    t = WALK_FRAMES[:, None, None] / RATE_HZ
    posed = _posed(0.2 * np.sin(2.0 * t[:, 0, 0]), 1 + 0.2 * np.sin(1.3 * t[:, 0, 0]))
    return posed + 30 * np.sin(t * np.array([1.7, 0.9])) + rng.normal(0, 0.4, posed.shape)


@pytest.mark.parametrize("end", [5, 10, 38, 39, 41, 60, 79, 90, 98, 110])
def test_fixed_lag_smoothing_reads_no_frame_past_its_lookahead(end: int):
    """Smoothed from the frames up to `end` only, every frame up to end - lookahead (points) or
    end - 2 x lookahead (points, then pose) comes out bitwise as from the whole track."""
    raw = _walk()
    faces = [Face(np.r_[p.min(axis=0), p.max(axis=0)].astype(np.float32), p.astype(np.float32),
                  0.9, None) for p in raw]
    known = WALK_FRAMES <= end
    points = smooth_landmarks(raw, WALK_FRAMES, RATE_HZ, lookahead=LOOKAHEAD)
    points_now = smooth_landmarks(raw[known], WALK_FRAMES[known], RATE_HZ, lookahead=LOOKAHEAD)
    final = WALK_FRAMES[known] <= end - LOOKAHEAD
    np.testing.assert_array_equal(points_now[final], points[:len(points_now)][final])
    both = smooth_faces(faces, WALK_FRAMES, RATE_HZ, lookahead=LOOKAHEAD)
    both_now = smooth_faces(faces[:int(known.sum())], WALK_FRAMES[known], RATE_HZ,
                            lookahead=LOOKAHEAD)
    for face, face_now, frame in zip(both, both_now, WALK_FRAMES):
        if frame <= end - 2 * LOOKAHEAD:
            np.testing.assert_array_equal(face_now.kps5, face.kps5)
            np.testing.assert_array_equal(face_now.bbox_xyxy, face.bbox_xyxy)
    # Backward runs from the end of the run reach further: where the run goes on past `end`,
    # the same check fails.
    whole = smooth_landmarks(raw, WALK_FRAMES, RATE_HZ)
    whole_now = smooth_landmarks(raw[known], WALK_FRAMES[known], RATE_HZ)
    if end in (38, 60, 110):
        assert not np.array_equal(whole_now[final], whole[:len(whole_now)][final])


def test_a_lookahead_past_the_run_is_the_whole_run_zero_phase():
    raw = _walk()
    span = int(WALK_FRAMES[-1] - WALK_FRAMES[0])
    for smooth in (smooth_landmarks, smooth_pose):
        np.testing.assert_array_equal(smooth(raw, WALK_FRAMES, RATE_HZ, lookahead=span),
                                      smooth(raw, WALK_FRAMES, RATE_HZ))
    causal = smooth_landmarks(raw, WALK_FRAMES, RATE_HZ, zero_phase=False, lookahead=0)
    opening_scale = smooth_landmarks(raw, WALK_FRAMES, RATE_HZ, zero_phase=False)
    assert not np.array_equal(causal, opening_scale)  # beta's face scale: the first frame only


def test_fixed_lag_stays_close_to_whole_run_zero_phase_and_keeps_no_lag():
    raw = _still(0.5, frames=900, seed=4) + _ramp(0.3, frames=900) - FACE[None]
    bounded = smooth_landmarks(raw, range(900), RATE_HZ, lookahead=28)  # the render's at 30 fps
    whole = smooth_landmarks(raw, range(900), RATE_HZ)
    assert np.abs(bounded - whole).max() < 0.01  # measured 0.0004 px
    assert abs(lag_frames(raw, bounded)) < 0.05
    ramp = _ramp(0.5)  # lag measured +0.44 frame (lookahead 0), -0.08 (5), -0.003 (10), 0.000 (28)
    assert abs(lag_frames(ramp, smooth_landmarks(ramp, range(60), RATE_HZ, lookahead=10))) < 0.01


def test_a_degenerate_frame_splits_the_pose_run_and_is_left_as_it_is():
    rng = np.random.default_rng(9)
    kps = _posed(rng.normal(0, 0.05, 30), 1 + rng.normal(0, 0.05, 30))
    kps[12] = 200.0  # every point on one spot
    out = smooth_pose(kps, range(30), RATE_HZ, lookahead=LOOKAHEAD)
    np.testing.assert_array_equal(out[12], kps[12].astype(np.float32))
    np.testing.assert_array_equal(out[:12], smooth_pose(kps[:12], range(12), RATE_HZ,
                                                        lookahead=LOOKAHEAD))
    np.testing.assert_array_equal(out[13:], smooth_pose(kps[13:], range(13, 30), RATE_HZ,
                                                        lookahead=LOOKAHEAD))
    assert np.abs(out[13:] - kps[13:]).max() > 0.1  # smoothed, not left
