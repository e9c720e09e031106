"""Temporal smoothing of face landmarks along a track: the One Euro filter, run zero-phase.

The One Euro filter (Casiez, Roussel and Vogel, CHI 2012) is a first-order low-pass filter whose
cutoff rises with speed: ``cutoff = min_cutoff + beta * |dx|`` where ``dx`` is the signal's
derivative, itself low-passed at ``d_cutoff``. Each step blends with
``alpha = 1 / (1 + tau / Te)``, ``tau = 1 / (2 pi cutoff)``, ``Te`` the sampling period. Slow
motion (jitter around a still face) is smoothed hard, fast motion is followed closely.

The render's analysis pass sees the whole shot, so ``smooth_landmarks`` may be non-causal: it
averages a forward and a backward run (``zero_phase``), which cancels the filter's lag. The
measures ``landmark_jitter_px`` and ``lag_frames`` are the numbers the defaults were chosen by
(the table is in tests/golden/test_temporal.py).

``smooth_pose`` then smooths the face's *pose* harder: the scale and roll of the similarity
that maps its landmarks onto a crop template, about their centroid, keeping the centroid and
the shape of the points. The pasted face and its blend mask are laid out in crop space, so
jitter of scale and roll moves the whole blend edge at once: it is what makes the pasted
region flicker where the face hardly moves (figures in tests/golden/test_flicker.py). A face's
size and roll change slowly, so they bear a lower cutoff than the points.
"""

from __future__ import annotations

import itertools
import logging
from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np

from ..errors import InputError
from ..geometry import estimate_similarity, template_points
from ..types import Face
from .tracking import Track

log = logging.getLogger(__name__)

# Gaps in a track of up to this many missing frames are bridged (the filter steps over them
# with a longer period); a longer gap restarts the filter.
MAX_BRIDGED_FRAMES = 3


@dataclass(frozen=True, slots=True)
class OneEuroParams:
    """Parameters of the One Euro filter.

    min_cutoff: cutoff in Hz when the signal is still (lower = smoother, more lag when slow).
    beta: cutoff increase in Hz per unit/s of filtered speed. For ``one_euro`` the unit is the
        series' own; ``smooth_landmarks`` divides beta by the face scale (``face_scale_px``), so
        there it reads "Hz per face scale per second" and works the same at any resolution.
    d_cutoff: cutoff in Hz of the low-pass on the derivative.
    Defaults chosen by measurement on the golden clips (tests/golden/test_temporal.py).
    """

    min_cutoff: float = 1.0
    beta: float = 3.0
    d_cutoff: float = 2.0

    def __post_init__(self) -> None:
        if not (self.min_cutoff > 0 and self.d_cutoff > 0 and self.beta >= 0):
            raise InputError(f"One Euro needs min_cutoff > 0, d_cutoff > 0 and beta >= 0, not "
                             f"{self.min_cutoff}, {self.d_cutoff}, {self.beta}")


# The pose filter: cutoff 0.5 Hz when still, rising by 5 Hz per unit/s of log-scale or roll
# (radians) speed. Chosen on the golden clips' pasted-region flicker and on synthetic tracks
# (rolls of 30 degrees in 0.5 s, 1.5x zooms in 1 s, a 1.5 Hz roll nod of +-10 degrees, still
# faces; 12.5-30 fps): landmark error 0.97x that of smoothing the points alone on average,
# 1.11x at worst (the nod); see tests/golden/test_flicker.py.
POSE_SMOOTHING = OneEuroParams(min_cutoff=0.5, beta=5.0, d_cutoff=2.0)


def _alpha(cutoff_hz: np.ndarray | float, period_s: float) -> np.ndarray:
    """The smoothing factor of a first-order low-pass at cutoff_hz sampled every period_s."""
    tau_s = 1.0 / (2.0 * np.pi * np.asarray(cutoff_hz, dtype=np.float64))
    return np.asarray(1.0 / (1.0 + tau_s / period_s))


def _one_euro_rows(values: np.ndarray, periods_s: np.ndarray,
                   params: OneEuroParams) -> np.ndarray:
    """Causal One Euro over float64 (T, N) rows; periods_s: (T-1,) seconds between rows."""
    out = np.empty_like(values)
    out[0] = values[0]
    speed = np.zeros(values.shape[1])
    for t in range(1, len(values)):
        period = float(periods_s[t - 1])
        raw_speed = (values[t] - out[t - 1]) / period
        speed += _alpha(params.d_cutoff, period) * (raw_speed - speed)
        alpha = _alpha(params.min_cutoff + params.beta * np.abs(speed), period)
        out[t] = out[t - 1] + alpha * (values[t] - out[t - 1])
    return out


def _check_rate(rate_hz: float) -> None:
    if not rate_hz > 0:
        raise InputError(f"the frame rate must be positive, not {rate_hz}")


def one_euro(series: np.ndarray, rate_hz: float, params: OneEuroParams) -> np.ndarray:
    """Causal One Euro filter along axis 0, each coordinate independently.

    series: (T, ...) samples taken every 1 / rate_hz seconds (any units). Returns an array of the
    same shape (the input's float dtype, float64 for integer input); the first sample is kept.
    """
    _check_rate(rate_hz)
    values = np.asarray(series)
    if len(values) == 0:
        return values.astype(_float_dtype(values))
    rows = values.reshape(len(values), -1).astype(np.float64)
    periods = np.full(len(values) - 1, 1.0 / rate_hz)
    return _one_euro_rows(rows, periods, params).reshape(values.shape).astype(
        _float_dtype(values))


def _float_dtype(values: np.ndarray) -> np.dtype:
    return values.dtype if np.issubdtype(values.dtype, np.floating) else np.dtype(np.float64)


def landmark_spread_px(kps: np.ndarray) -> np.ndarray:
    """RMS distance of the points from their centroid: (..., P, 2) -> float64 (...)."""
    points = np.asarray(kps, dtype=np.float64)
    centred = points - points.mean(axis=-2, keepdims=True)
    return np.asarray(np.sqrt((centred ** 2).sum(axis=-1).mean(axis=-1)))


def face_scale_px(kps: np.ndarray) -> float:
    """A face's size in pixels: the median over frames of landmark_spread_px.

    kps: (T, 5, 2) frame pixels. About 0.55 x the interocular distance on a frontal face.
    """
    return float(np.median(landmark_spread_px(kps)))


def _segments(frames: np.ndarray) -> list[slice]:
    """Runs of frames whose steps miss at most MAX_BRIDGED_FRAMES frames."""
    breaks = np.flatnonzero(np.diff(frames) > MAX_BRIDGED_FRAMES + 1) + 1
    bounds = [0, *breaks.tolist(), len(frames)]
    return [slice(a, b) for a, b in itertools.pairwise(bounds)]


def _smooth_run(rows: np.ndarray, periods_s: np.ndarray, params: OneEuroParams,
                zero_phase: bool) -> np.ndarray:
    """One run without restarts: causal, or the mean of a forward and a backward pass."""
    forward = _one_euro_rows(rows, periods_s, params)
    if not zero_phase:
        return forward
    backward = _one_euro_rows(rows[::-1], periods_s[::-1], params)[::-1]
    return 0.5 * (forward + backward)


def smooth_landmarks(kps: np.ndarray, frames: Sequence[int], rate_hz: float,
                     params: OneEuroParams | None = None, zero_phase: bool = True) -> np.ndarray:
    """Smoothed landmarks of one track.

    kps: (T, 5, 2) frame pixels; frames: (T,) ascending frame numbers; rate_hz: frames per second.
    params (default OneEuroParams()): beta is taken per face scale, face_scale_px of each run
    (at least 1 px). zero_phase: average a forward and a backward run, so the result has (almost)
    no lag; otherwise causal. Gaps of up to MAX_BRIDGED_FRAMES missing frames are stepped over
    with their true duration; a longer gap restarts the filter (the runs are smoothed apart).
    Returns float32 (T, 5, 2); T = 1 returns a copy of the input.
    """
    _check_rate(rate_hz)
    params = params if params is not None else OneEuroParams()
    points = np.asarray(kps, dtype=np.float64)
    numbers = np.asarray(frames, dtype=np.int64)
    if points.ndim != 3 or points.shape[1:] != (5, 2) or len(numbers) != len(points):
        raise ValueError(f"need (T, 5, 2) landmarks and T frame numbers, not {points.shape} and "
                         f"{numbers.shape}")
    if np.any(np.diff(numbers) <= 0):
        raise ValueError("frame numbers must be strictly ascending")
    out = points.reshape(len(points), -1).copy()
    for run in _segments(numbers):
        if run.stop - run.start > 1:
            scaled = replace(params, beta=params.beta / max(face_scale_px(points[run]), 1.0))
            periods = np.diff(numbers[run]) / rate_hz
            out[run] = _smooth_run(out[run], periods, scaled, zero_phase)
    return out.reshape(points.shape).astype(np.float32)


def _rotation(angle_rad: float) -> np.ndarray:
    cos, sin = np.cos(angle_rad), np.sin(angle_rad)
    return np.array([[cos, -sin], [sin, cos]])


def _poses(points: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per frame of float64 (T, 5, 2) points: (log scale, roll) (T, 2) of the points relative to
    a centred template, roll unwrapped over time; the centroids (T, 2); and the shapes (T, 5, 2),
    the centred points with that scale and roll taken out, so that
    ``points = exp(log_scale) * shape @ R(roll).T + centroid``."""
    reference = template_points("arcface_112_v2", 1)
    reference = reference - reference.mean(axis=0)
    centroids = points.mean(axis=1)
    poses, shapes = np.empty((len(points), 2)), np.empty_like(points)
    for t, frame_points in enumerate(points):
        to_reference = estimate_similarity(frame_points, reference)[:, :2]  # s R(-roll)
        scale = float(np.hypot(to_reference[0, 0], to_reference[1, 0]))
        poses[t] = -np.log(scale), -np.arctan2(to_reference[1, 0], to_reference[0, 0])
        shapes[t] = (frame_points - centroids[t]) @ to_reference.T
    poses[:, 1] = np.unwrap(poses[:, 1])
    return poses, centroids, shapes


def smooth_pose(kps: np.ndarray, frames: Sequence[int], rate_hz: float,
                params: OneEuroParams | None = None, zero_phase: bool = True) -> np.ndarray:
    """Landmarks of one track with their pose (log scale and roll about the centroid) smoothed
    and their centroid and shape kept.

    kps: (T, 5, 2) frame pixels (e.g. already smooth_landmarks'); frames: (T,) ascending frame
    numbers; params: default POSE_SMOOTHING, beta in Hz per unit/s of log scale or radians (no
    pixel unit: it works at any resolution). Runs split and bridge gaps as smooth_landmarks;
    a run whose points coincide in a frame is left as it is. Returns float32 (T, 5, 2).
    """
    _check_rate(rate_hz)
    params = params if params is not None else POSE_SMOOTHING
    points = np.asarray(kps, dtype=np.float64)
    numbers = np.asarray(frames, dtype=np.int64)
    out = points.copy()
    for run in _segments(numbers):
        if run.stop - run.start < 2 or np.any(landmark_spread_px(points[run]) <= 1e-6):
            continue
        poses, centroids, shapes = _poses(points[run])
        periods = np.diff(numbers[run]) / rate_hz
        smoothed = _smooth_run(poses, periods, params, zero_phase)
        out[run] = [np.exp(log_scale) * shape @ _rotation(roll).T + centroid
                    for (log_scale, roll), shape, centroid in zip(smoothed, shapes, centroids)]
    return out.astype(np.float32)


def landmark_jitter_px(kps: np.ndarray) -> float:
    """Mean absolute second difference over frames, points and axes, in pixels.

    kps: (T, 5, 2) (or any (T, ...)) frame pixels, consecutive frames. White noise of standard
    deviation s on a still point gives about 1.95 s (sqrt(2 / pi) * sqrt(6) * s); real motion
    adds its acceleration. Fewer than 3 frames give 0.0.
    """
    points = np.asarray(kps, dtype=np.float64)
    if len(points) < 3:
        return 0.0
    return float(np.abs(np.diff(points, n=2, axis=0)).mean())


def lag_frames(raw: np.ndarray, smoothed: np.ndarray) -> float:
    """How many frames `smoothed` trails `raw` (negative: leads), least-squares, sub-frame.

    raw, smoothed: (T, ...) the same trajectories (e.g. (T, 5, 2) pixels), consecutive frames.
    Model: ``smoothed(t) = raw(t - L)``, to first order ``raw(t) - L v(t)`` with v the central-
    difference velocity of raw; L = -sum((smoothed - raw) v) / sum(v^2) over frames, points and
    axes. Frames weigh by their squared speed, so still stretches do not count; exact on a ramp,
    first-order on curved motion. Without motion (or T < 3) returns 0.0.
    """
    r = np.asarray(raw, dtype=np.float64).reshape(len(raw), -1)
    s = np.asarray(smoothed, dtype=np.float64).reshape(len(smoothed), -1)
    if r.shape != s.shape:
        raise ValueError(f"raw {r.shape} and smoothed {s.shape} differ")
    if len(r) < 3:
        return 0.0
    velocity = np.asarray(np.gradient(r, axis=0))
    energy = float((velocity ** 2).sum())
    return -float(((s - r) * velocity).sum()) / energy if energy > 0 else 0.0


def _moved_face(face: Face, kps5: np.ndarray) -> Face:
    """The face with new landmarks; its box shifted and scaled as the landmarks moved."""
    old_c = face.kps5.astype(np.float64).mean(axis=0)
    new_c = kps5.astype(np.float64).mean(axis=0)
    old_spread = float(landmark_spread_px(face.kps5))
    scale = float(landmark_spread_px(kps5)) / old_spread if old_spread > 0 else 1.0
    corners = face.bbox_xyxy.astype(np.float64).reshape(2, 2)
    box = ((corners - old_c) * scale + new_c).reshape(4)
    return replace(face, kps5=kps5.astype(np.float32), bbox_xyxy=box.astype(np.float32))


def smooth_faces(faces: Sequence[Face], frames: Sequence[int], rate_hz: float,
                 params: OneEuroParams | None = None, zero_phase: bool = True,
                 pose: OneEuroParams | None = POSE_SMOOTHING) -> tuple[Face, ...]:
    """Copies of one track's faces with smoothed kps5 (smooth_landmarks, then smooth_pose
    unless pose is None) and boxes moved along (see smooth_landmarks for the arguments)."""
    if not faces:
        return ()
    kps = np.stack([face.kps5 for face in faces])
    smoothed = smooth_landmarks(kps, frames, rate_hz, params, zero_phase)
    if pose is not None:
        smoothed = smooth_pose(smoothed, frames, rate_hz, pose, zero_phase)
    return tuple(_moved_face(face, points) for face, points in zip(faces, smoothed))


def smooth_tracks(tracks: Sequence[Track], rate_hz: float, params: OneEuroParams | None = None,
                  zero_phase: bool = True, pose: OneEuroParams | None = POSE_SMOOTHING
                  ) -> tuple[Track, ...]:
    """Copies of the tracks whose faces carry smoothed kps5 and boxes moved along with them.

    rate_hz: the shot's frames per second; see smooth_landmarks for params and zero_phase,
    smooth_pose for pose (None: the points only).
    """
    log.debug("smoothing %d tracks at %.3f fps (zero_phase=%s)", len(tracks), rate_hz,
              zero_phase)
    return tuple(replace(track, faces=smooth_faces(track.faces, track.frames, rate_hz, params,
                                                   zero_phase, pose))
                 for track in tracks)
