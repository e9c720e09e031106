"""Flicker of the pasted region on the real clips: raw landmarks, smoothed landmarks, and
smoothed landmarks with the pose smoothed too (the render's default).

Real YuNet detections; the colour contract swapper (a flat colour pasted through the mask),
so what changes from frame to frame is where and how the face is pasted, not a model's output.
Between consecutive frames where the face hardly moves (its smoothed landmark centroid moves
less than 5% of the face scale), over the pixels either matte covers (> 0.01):

- matte flicker: the mean absolute change of the matte (0..1);
- pasted flicker: the mean absolute change of the output pixels (8-bit levels).

Measured on onnxruntime 1.32 CPU, opencv 4.11, numpy 1.26 (reproduce with
``FACEFUSE_TESTDATA=../shared/testdata python -m pytest tests/golden/test_flicker.py -s -q``):

    clip (still pairs), mask  raw matte / pasted   landmarks        + pose (default)
    asl_yes (28 of 64), box   0.0178 / 1.09        0.0096 / 0.72    0.0079 / 0.65
    head-pose male (63), box  0.0107 / 0.56        0.0061 / 0.37    0.0049 / 0.33
    asl_yes, box + hull       0.0217 / 1.55        0.0120 / 1.19    0.0114 / 1.17
    head-pose male, + hull    0.0122 / 0.78        0.0078 / 0.65    0.0070 / 0.63

(hull: --landmark-mask.) The same figures came out under numpy 2.4 and opencv 5.0. Smoothing
is the render's, fixed lag (make.smoothing_lookahead); with backward runs from the end of
the track (plan version 2) asl_yes with the box mask measured 0.0097 and 0.0080, every other
figure the same to the digits shown.

For scale, the input pixels under the same regions change by 1.85 (asl_yes) and 1.03 (male)
levels. The colour of a real swapper's output can flicker too; the contract swapper cannot
show that, and nothing here smooths it.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import pytest

from facefuse.config import Settings
from facefuse.pipeline import Pipeline
from facefuse.shot.plan.make import smoothing_lookahead
from facefuse.shot.plan.smoothing import landmark_spread_px, smooth_tracks
from facefuse.shot.plan.tracking import Track, build_tracks
from facefuse.types import SourceIdentity
from tests.render_media import read_clip_opencv

ASL = "asl_yes"
HEAD_POSE = "head-pose-face-detection-male"
VARIANTS = ("raw", "landmarks", "pose")


@dataclass(frozen=True)
class Pinned:
    still_pairs: int
    matte: tuple[float, float, float]   # raw, landmarks, landmarks + pose
    pasted: tuple[float, float, float]


PINNED = {  # (clip, --landmark-mask)
    (ASL, False): Pinned(28, (0.0178, 0.0096, 0.0079), (1.09, 0.72, 0.65)),  # fixed lag
    (HEAD_POSE, False): Pinned(63, (0.0107, 0.0061, 0.0049), (0.56, 0.37, 0.33)),
    (ASL, True): Pinned(28, (0.0217, 0.0120, 0.0114), (1.55, 1.19, 1.17)),
    (HEAD_POSE, True): Pinned(63, (0.0122, 0.0078, 0.0070), (0.78, 0.65, 0.63)),
}
MATTE_TOL = 0.0008
PASTED_TOL = 0.05


@dataclass(frozen=True)
class Flicker:
    still_pairs: int
    matte: float
    pasted: float
    input: float


def _still_pairs(track: Track) -> list[int]:
    """Frames t (pairs t-1, t) where the face hardly moves: its centroid moves < 5% of its
    scale."""
    points = track.kps_series()
    centroids = points.mean(axis=1)
    limit = 0.05 * float(np.median(landmark_spread_px(points)))
    steps = np.linalg.norm(np.diff(centroids, axis=0), axis=1)
    return [t + 1 for t in np.flatnonzero(steps < limit).tolist()]


def _flicker(pipeline: Pipeline, identity: SourceIdentity, frames: list[np.ndarray],
             track: Track, still: list[int]) -> Flicker:
    results = [pipeline.swap_faces(frame, identity, (face,))
               for frame, face in zip(frames, track.faces)]
    matte, pasted, picture = [], [], []
    for t in still:
        before, after = results[t - 1], results[t]
        assert before.matte is not None and after.matte is not None
        region = np.maximum(before.matte, after.matte) > 0.01
        matte.append(np.abs(after.matte - before.matte)[region].mean())
        pasted.append(np.abs(after.frame.astype(np.float64) - before.frame)[region].mean())
        picture.append(np.abs(frames[t].astype(np.float64) - frames[t - 1])[region].mean())
    return Flicker(len(still), float(np.mean(matte)), float(np.mean(pasted)),
                   float(np.mean(picture)))


Measured = dict[tuple[str, bool], dict[str, Flicker]]


@pytest.fixture(scope="module")
def flicker(testdata: Path, contract_dir: Path,
            tmp_path_factory: pytest.TempPathFactory) -> Measured:
    root = tmp_path_factory.mktemp("flicker")
    box_only = Settings(
        detector=str(testdata / "models" / "face_detection_yunet_2023mar.onnx"),
        recogniser=str(contract_dir / "recogniser_512.onnx"),
        swapper=str(contract_dir / "colour_swapper.onnx"),
        providers=("CPUExecutionProvider",), models_dir=root, cache_dir=root / "cache",
        offline=True)
    measured: Measured = {}
    with Pipeline(box_only) as pipeline, Pipeline(
            replace(box_only, landmark_mask=True)) as with_hull:
        identity = pipeline.source_identity([testdata / "media" / "astronaut.png"])
        for name in (ASL, HEAD_POSE):
            frames, rate = read_clip_opencv(testdata / "media" / f"{name}.mp4")
            (raw,) = build_tracks({n: pipeline.detect(f) for n, f in enumerate(frames)})
            lookahead = smoothing_lookahead(rate)  # the render's fixed lag
            (landmarks,) = smooth_tracks([raw], rate, pose=None, lookahead=lookahead)
            (pose,) = smooth_tracks([raw], rate, lookahead=lookahead)
            still = _still_pairs(pose)
            tracks = {"raw": raw, "landmarks": landmarks, "pose": pose}
            for hull, swapping in ((False, pipeline), (True, with_hull)):
                measured[name, hull] = {
                    variant: _flicker(swapping, identity, frames, tracks[variant], still)
                    for variant in VARIANTS}
    return measured


def _report(figures: dict[str, Flicker], label: str, record: pytest.RecordProperty) -> None:
    print(f"\n{label}: {figures['raw'].still_pairs} still pairs, input change "
          f"{figures['raw'].input:.2f} levels")
    for variant in VARIANTS:
        print(f"  {variant:9s} matte {figures[variant].matte:.4f}  pasted "
              f"{figures[variant].pasted:.3f}")
        record(f"{variant}_matte", round(figures[variant].matte, 5))
        record(f"{variant}_pasted", round(figures[variant].pasted, 4))


def _check_pinned(figures: dict[str, Flicker], pinned: Pinned) -> None:
    assert figures["raw"].still_pairs == pinned.still_pairs
    for variant, matte, pasted in zip(VARIANTS, pinned.matte, pinned.pasted):
        assert figures[variant].matte == pytest.approx(matte, abs=MATTE_TOL), variant
        assert figures[variant].pasted == pytest.approx(pasted, abs=PASTED_TOL), variant


@pytest.mark.parametrize("name", [ASL, HEAD_POSE])
def test_smoothing_the_pose_cuts_the_flicker_of_the_pasted_region(
        name: str, flicker: Measured, record_property: pytest.RecordProperty) -> None:
    figures = flicker[name, False]
    _report(figures, f"{name}, box mask", record_property)
    _check_pinned(figures, PINNED[name, False])
    assert figures["pose"].matte < 0.85 * figures["landmarks"].matte  # what the pose adds
    assert figures["pose"].matte < 0.5 * figures["raw"].matte
    assert figures["pose"].pasted < figures["landmarks"].pasted < figures["raw"].pasted


@pytest.mark.parametrize("name", [ASL, HEAD_POSE])
def test_with_the_landmark_mask_the_pose_filter_helps_less(
        name: str, flicker: Measured, record_property: pytest.RecordProperty) -> None:
    """The landmark hull follows the shape of the points, which the pose filter keeps as the
    landmark filter left it."""
    figures = flicker[name, True]
    _report(figures, f"{name}, box and landmark-hull masks", record_property)
    _check_pinned(figures, PINNED[name, True])
    assert figures["pose"].matte < figures["landmarks"].matte < 0.7 * figures["raw"].matte
    assert figures["pose"].matte > 0.85 * figures["landmarks"].matte
