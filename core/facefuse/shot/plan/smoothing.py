"""Temporal smoothing of face landmarks along a track: the One Euro filter, run zero-phase.

The One Euro filter (Casiez, Roussel and Vogel, CHI 2012) is a first-order low-pass filter whose
cutoff rises with speed: ``cutoff = min_cutoff + beta * |dx|`` where ``dx`` is the signal's
derivative, itself low-passed at ``d_cutoff``. Each step blends with
``alpha = 1 / (1 + tau / Te)``, ``tau = 1 / (2 pi cutoff)``, ``Te`` the sampling period. Slow
motion (jitter around a still face) is smoothed hard, fast motion is followed closely.

``smooth_landmarks`` may be non-causal: it averages a forward and a backward run
(``zero_phase``), which cancels the filter's lag. With a ``lookahead`` (what the render uses,
see shot.plan.make.smoothing_lookahead) the backward run is fixed-lag: frame k's starts at most
lookahead frames after k, so k's result is final once the frames up to k + lookahead are
known, however long the track; every frame's backward run steps at once, as columns of one
vectorised filter. The One Euro filter forgets its start geometrically, so this stays within a
few hundredths of a pixel of backward runs from the track's end (tests/golden/test_temporal.py).
The measures ``landmark_jitter_px`` and ``lag_frames`` are the numbers the defaults were chosen
by (the table is in tests/golden/test_temporal.py).

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

from ...errors import InputError
from ...geometry import template_points
from ...types import Face
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


def _step_terms(periods_s: np.ndarray, params: OneEuroParams
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per step of periods_s seconds: (1 / period, 2 pi period, the derivative's smoothing
    factor). A first-order low-pass at cutoff f blends by alpha = x / (x + 1), x = 2 pi f Te
    (the same as 1 / (1 + tau / Te) with tau = 1 / (2 pi f))."""
    angular = 2.0 * np.pi * periods_s
    derivative = angular * params.d_cutoff
    return 1.0 / periods_s, angular, derivative / (derivative + 1.0)


_StepTerms = tuple[np.ndarray | float, np.ndarray | float, np.ndarray | float]


def _one_euro_step(previous: np.ndarray, speed: np.ndarray, value: np.ndarray,
                   terms: _StepTerms, params: OneEuroParams) -> tuple[np.ndarray, np.ndarray]:
    """One step of the filter: (filtered value, filtered speed) after `value`, with the step's
    _step_terms (all broadcast elementwise, float64)."""
    inverse_s, angular, alpha_d = terms
    change = value - previous
    speed = speed + alpha_d * (change * inverse_s - speed)
    blend = angular * (params.min_cutoff + params.beta * np.abs(speed))
    return previous + change * (blend / (blend + 1.0)), speed


def _one_euro_rows(values: np.ndarray, periods_s: np.ndarray,
                   params: OneEuroParams) -> np.ndarray:
    """Causal One Euro over float64 (T, N) rows; periods_s: (T-1,) seconds between rows."""
    out = np.empty_like(values)
    out[0] = values[0]
    speed = np.zeros(values.shape[1])
    steps = zip(*(terms.tolist() for terms in _step_terms(periods_s, params)))
    for t, terms in enumerate(steps, start=1):
        out[t], speed = _one_euro_step(out[t - 1], speed, values[t], terms, params)
    return out


def _fixed_lag_backward(values: np.ndarray, frames: np.ndarray, periods_s: np.ndarray,
                        params: OneEuroParams, lookahead: int) -> np.ndarray:
    """Row k of float64 (T, N) rows: the last value of a One Euro run backwards from the last
    row at most `lookahead` frame numbers after row k down to row k. frames: (T,) ascending
    frame numbers; periods_s: (T-1,) seconds between rows.

    Every row's run steps at once, as a column of one filter: a shorter run is padded at its
    start with copies of its first row, which leave the filter exactly where it started (no
    change, no speed), so each column is bitwise the run alone. Memory O(T N), time
    O(lookahead) vector steps."""
    rows = np.arange(len(values))
    starts = np.searchsorted(frames, frames + lookahead, side="right") - 1
    steps = int((starts - rows).max()) + 1
    # the terms of the step from row i + 1 down to row i (any positive period for the last row)
    terms = _step_terms(np.append(periods_s, 1.0)[:, None], params)
    out = values[np.minimum(rows + steps - 1, starts)]
    speed = np.zeros_like(out)
    for back in range(steps - 2, -1, -1):
        index = np.minimum(rows + back, starts)
        out, speed = _one_euro_step(out, speed, values[index],
                                    (terms[0][index], terms[1][index], terms[2][index]), params)
    return out


def _check_rate(rate_hz: float) -> None:
    if not rate_hz > 0:
        raise InputError(f"the frame rate must be positive, not {rate_hz}")


def _check_lookahead(lookahead: int | None) -> None:
    if lookahead is not None and lookahead < 0:
        raise InputError(f"the smoothing lookahead must be 0 frames or more, not {lookahead}")


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


def _smooth_run(rows: np.ndarray, frames: np.ndarray, rate_hz: float, params: OneEuroParams,
                zero_phase: bool, lookahead: int | None) -> np.ndarray:
    """One run without restarts (float64 (T, N) rows at ascending frame numbers): causal, or the
    mean of the forward run and a backward one; the backward run of row k starts at most
    `lookahead` frames after k (None: at the end of the run)."""
    periods_s = np.diff(frames) / rate_hz
    forward = _one_euro_rows(rows, periods_s, params)
    if not zero_phase:
        return forward
    if lookahead is None:
        backward = _one_euro_rows(rows[::-1], periods_s[::-1], params)[::-1]
    else:
        backward = _fixed_lag_backward(rows, frames, periods_s, params, lookahead)
    return 0.5 * (forward + backward)


def _opening(frames: np.ndarray, lookahead: int | None) -> slice:
    """The rows of a run's first lookahead + 1 frames (None: the whole run)."""
    if lookahead is None:
        return slice(None)
    return slice(0, int(np.searchsorted(frames, frames[0] + lookahead, side="right")))


def _checked(kps: np.ndarray, frames: Sequence[int]) -> tuple[np.ndarray, np.ndarray]:
    """float64 (T, 5, 2) points and int64 (T,) strictly ascending frame numbers, or ValueError."""
    points = np.asarray(kps, dtype=np.float64)
    numbers = np.asarray(frames, dtype=np.int64)
    if points.ndim != 3 or points.shape[1:] != (5, 2) or len(numbers) != len(points):
        raise ValueError(f"need (T, 5, 2) landmarks and T frame numbers, not {points.shape} and "
                         f"{numbers.shape}")
    if np.any(np.diff(numbers) <= 0):
        raise ValueError("frame numbers must be strictly ascending")
    return points, numbers


def smooth_landmarks(kps: np.ndarray, frames: Sequence[int], rate_hz: float,
                     params: OneEuroParams | None = None, zero_phase: bool = True,
                     lookahead: int | None = None) -> np.ndarray:
    """Smoothed landmarks of one track.

    kps: (T, 5, 2) frame pixels; frames: (T,) ascending frame numbers; rate_hz: frames per second.
    params (default OneEuroParams()): beta is taken per face scale, face_scale_px of each run's
    first lookahead + 1 frames (the whole run when lookahead is None; at least 1 px).
    zero_phase: average a forward and a backward run, so the result has (almost) no lag;
    otherwise causal. lookahead: frame k's backward run starts at the run's last frame at most
    lookahead frames after k (fixed lag: frame k then depends on no frame past k + lookahead);
    None starts every backward run at the run's end. Gaps of up to MAX_BRIDGED_FRAMES missing
    frames are stepped over with their true duration; a longer gap restarts the filter (the
    runs are smoothed apart). Returns float32 (T, 5, 2); T = 1 returns a copy of the input.
    """
    _check_rate(rate_hz)
    _check_lookahead(lookahead)
    params = params if params is not None else OneEuroParams()
    points, numbers = _checked(kps, frames)
    out = points.reshape(len(points), -1).copy()
    for run in _segments(numbers):
        if run.stop - run.start > 1:
            opening = points[run][_opening(numbers[run], lookahead)]
            scaled = replace(params, beta=params.beta / max(face_scale_px(opening), 1.0))
            out[run] = _smooth_run(out[run], numbers[run], rate_hz, scaled, zero_phase,
                                   lookahead)
    return out.reshape(points.shape).astype(np.float32)


def _poses(points: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per frame of float64 (T, 5, 2) points (none degenerate): (log scale, roll) (T, 2) of the
    least-squares similarity taking a centred template onto the points, roll unwrapped over
    time; the centroids (T, 2); and the shapes (T, 5, 2), the centred points with that scale
    and roll taken out, so that ``points = exp(log_scale) * shape @ R(roll).T + centroid``."""
    reference = template_points("arcface_112_v2", 1)
    reference = reference - reference.mean(axis=0)
    centroids = points.mean(axis=1)
    centred = points - centroids[:, None]
    # points -> reference as [[a, -b], [b, a]] = s R(-roll) (geometry.estimate_similarity)
    spread = (centred ** 2).sum(axis=(1, 2))
    a = (centred * reference).sum(axis=(1, 2)) / spread
    b = (centred[..., 0] * reference[:, 1] - centred[..., 1] * reference[:, 0]).sum(axis=1) / spread
    poses = np.stack([-0.5 * np.log(a * a + b * b), -np.arctan2(b, a)], axis=1)
    poses[:, 1] = np.unwrap(poses[:, 1])
    to_reference = np.stack([np.stack([a, -b], axis=1), np.stack([b, a], axis=1)], axis=1)
    return poses, centroids, np.einsum("tpj,tij->tpi", centred, to_reference)


def _posed(poses: np.ndarray, shapes: np.ndarray, centroids: np.ndarray) -> np.ndarray:
    """The points of shapes (T, 5, 2) at poses (T, 2) (log scale, roll) about centroids (T, 2)."""
    scale, cos, sin = np.exp(poses[:, 0]), np.cos(poses[:, 1]), np.sin(poses[:, 1])
    x, y = shapes[..., 0], shapes[..., 1]
    turned = np.stack([cos[:, None] * x - sin[:, None] * y,
                       sin[:, None] * x + cos[:, None] * y], axis=-1)
    return scale[:, None, None] * turned + centroids[:, None]


def _pose_runs(numbers: np.ndarray, points: np.ndarray) -> list[slice]:
    """The runs of _segments split at frames whose points coincide (those are left out)."""
    degenerate = landmark_spread_px(points) <= 1e-6
    runs = []
    for run in _segments(numbers):
        bad = run.start + np.flatnonzero(degenerate[run])
        bounds = [run.start - 1, *bad.tolist(), run.stop]
        runs += [slice(a + 1, b) for a, b in itertools.pairwise(bounds) if b - a > 2]
    return runs


def smooth_pose(kps: np.ndarray, frames: Sequence[int], rate_hz: float,
                params: OneEuroParams | None = None, zero_phase: bool = True,
                lookahead: int | None = None) -> np.ndarray:
    """Landmarks of one track with their pose (log scale and roll about the centroid) smoothed
    and their centroid and shape kept.

    kps: (T, 5, 2) frame pixels (e.g. already smooth_landmarks'); frames: (T,) ascending frame
    numbers; params: default POSE_SMOOTHING, beta in Hz per unit/s of log scale or radians (no
    pixel unit: it works at any resolution). Runs split and bridge gaps, and lookahead bounds
    the backward runs, as in smooth_landmarks; a frame whose points coincide is left as it is
    and restarts the filter. Returns float32 (T, 5, 2).
    """
    _check_rate(rate_hz)
    _check_lookahead(lookahead)
    params = params if params is not None else POSE_SMOOTHING
    points, numbers = _checked(kps, frames)
    out = points.copy()
    for run in _pose_runs(numbers, points):
        poses, centroids, shapes = _poses(points[run])
        smoothed = _smooth_run(poses, numbers[run], rate_hz, params, zero_phase, lookahead)
        out[run] = _posed(smoothed, shapes, centroids)
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


def _moved_faces(faces: Sequence[Face], kps: np.ndarray) -> tuple[Face, ...]:
    """The faces with new landmarks kps (T, 5, 2); each box shifted and scaled as its landmarks
    moved (about their centroid)."""
    old = np.stack([face.kps5 for face in faces]).astype(np.float64)
    new = np.asarray(kps, dtype=np.float32)
    old_spread, new_spread = landmark_spread_px(old), landmark_spread_px(new)
    safe = np.where(old_spread > 0, old_spread, 1.0)
    scale = np.where(old_spread > 0, new_spread / safe, 1.0)
    corners = np.stack([face.bbox_xyxy for face in faces]).astype(np.float64).reshape(-1, 2, 2)
    old_c, new_c = old.mean(axis=1)[:, None], new.astype(np.float64).mean(axis=1)[:, None]
    boxes = ((corners - old_c) * scale[:, None, None] + new_c).reshape(-1, 4).astype(np.float32)
    return tuple(replace(face, kps5=points, bbox_xyxy=box)
                 for face, points, box in zip(faces, new, boxes))


def smooth_faces(faces: Sequence[Face], frames: Sequence[int], rate_hz: float,
                 params: OneEuroParams | None = None, zero_phase: bool = True,
                 pose: OneEuroParams | None = POSE_SMOOTHING,
                 lookahead: int | None = None) -> tuple[Face, ...]:
    """Copies of one track's faces with smoothed kps5 (smooth_landmarks, then smooth_pose
    unless pose is None) and boxes moved along (see smooth_landmarks for the arguments). With
    both filters a face depends on frames up to 2 x lookahead past its own."""
    if not faces:
        return ()
    kps = np.stack([face.kps5 for face in faces])
    smoothed = smooth_landmarks(kps, frames, rate_hz, params, zero_phase, lookahead)
    if pose is not None:
        smoothed = smooth_pose(smoothed, frames, rate_hz, pose, zero_phase, lookahead)
    return _moved_faces(faces, smoothed)


def smooth_tracks(tracks: Sequence[Track], rate_hz: float, params: OneEuroParams | None = None,
                  zero_phase: bool = True, pose: OneEuroParams | None = POSE_SMOOTHING,
                  lookahead: int | None = None) -> tuple[Track, ...]:
    """Copies of the tracks whose faces carry smoothed kps5 and boxes moved along with them.

    rate_hz: the shot's frames per second; see smooth_landmarks for params, zero_phase and
    lookahead, smooth_pose for pose (None: the points only).
    """
    log.debug("smoothing %d tracks at %.3f fps (zero_phase=%s, lookahead=%s)", len(tracks),
              rate_hz, zero_phase, lookahead)
    return tuple(replace(track, faces=smooth_faces(track.faces, track.frames, rate_hz, params,
                                                   zero_phase, pose, lookahead))
                 for track in tracks)
