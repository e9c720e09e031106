"""ArcFaceEmbedder and its pure helpers: contract recognisers, then the real MobileFaceNet."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import cv2
import numpy as np
import pytest

from facefuse.geometry import template_points, transform_points
from facefuse.models.manifest import Family, load_manifest
from facefuse.stages.embed import (
    ArcFaceEmbedder,
    cosine_similarity,
    l2_normalise,
)
from facefuse.stages.tensors import crops_to_nchw
from facefuse.types import AlignedCrop, Face
from tests import contract_models as cm


@pytest.fixture(scope="module")
def family() -> Family:
    return load_manifest().families["arcface"]


@pytest.fixture(scope="module")
def models(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("embed-models")


def make_crop(seed: int) -> AlignedCrop:
    image = np.random.default_rng(seed).uniform(0.0, 255.0, (112, 112, 3)).astype(np.float32)
    return AlignedCrop(image=image, frame_to_crop=np.eye(2, 3), template="arcface_112_v2",
                       size_px=112)


class CountingSession:
    """Wraps an InferenceSession and counts run() calls (to see batching)."""

    def __init__(self, session: Any) -> None:
        self.session = session
        self.runs = 0

    def get_inputs(self) -> Any:
        return self.session.get_inputs()

    def get_outputs(self) -> Any:
        return self.session.get_outputs()

    def run(self, *args: Any, **kwargs: Any) -> Any:
        self.runs += 1
        return self.session.run(*args, **kwargs)


# -- pure helpers -----------------------------------------------------------------------------

def test_preprocess_follows_colour_mean_and_std(family: Family) -> None:
    image = np.zeros((112, 112, 3), np.float32)
    image[0, 0] = (0.0, 127.5, 255.0)  # B, G, R
    tensor = crops_to_nchw(image, family)
    assert tensor.shape == (1, 3, 112, 112) and tensor.dtype == np.float32
    np.testing.assert_allclose(tensor[0, :, 0, 0], [1.0, 0.0, -1.0])
    bgr = dataclasses.replace(family, colour="bgr", mean=0.0, std=2.0)
    np.testing.assert_allclose(crops_to_nchw(image, bgr)[0, :, 0, 0], [0.0, 63.75, 127.5])


def test_preprocess_takes_a_batch(family: Family) -> None:
    batch = np.stack([make_crop(0).image, make_crop(1).image])
    tensor = crops_to_nchw(batch, family)
    assert tensor.shape == (2, 3, 112, 112)
    np.testing.assert_array_equal(tensor[1], crops_to_nchw(batch[1], family)[0])


def test_l2_normalise_rows_and_keeps_zero() -> None:
    vectors = np.array([[3.0, 4.0], [0.0, 0.0]], np.float32)
    out = l2_normalise(vectors)
    assert out.dtype == np.float32
    np.testing.assert_allclose(out, [[0.6, 0.8], [0.0, 0.0]])


def test_cosine_similarity() -> None:
    a = np.array([1.0, 0.0, 0.0], np.float32)
    assert cosine_similarity(a, 5 * a) == pytest.approx(1.0)
    assert cosine_similarity(a, np.array([0.0, 2.0, 0.0])) == pytest.approx(0.0)
    assert cosine_similarity(a, -a) == pytest.approx(-1.0)
    assert cosine_similarity(a, np.array([1.0, 1.0, 0.0])) == pytest.approx(np.sqrt(0.5))
    with pytest.raises(ValueError):
        cosine_similarity(a, np.ones(4))


# -- contract recogniser ----------------------------------------------------------------------

@pytest.mark.parametrize("dim", [512, 128])
def test_embed_gives_the_normalised_model_output(models: Path, family: Family, dim: int) -> None:
    embedder = ArcFaceEmbedder(cm.cpu_session(cm.contract_recogniser(models / f"r{dim}.onnx", dim)),
                               family)
    crop = make_crop(0)
    vector = embedder.embed(crop)
    assert vector.shape == (dim,) and vector.dtype == np.float32
    assert np.linalg.norm(vector) == pytest.approx(1.0, abs=1e-5)
    tensor = ((crop.image[..., ::-1] - 127.5) / 127.5).transpose(2, 0, 1)[None]
    raw = cm.expected_recogniser_output(tensor.astype(np.float32), dim)[0]
    np.testing.assert_allclose(vector, raw / np.linalg.norm(raw), atol=1e-5)
    assert cosine_similarity(vector, embedder.embed(make_crop(1))) < 0.9


@pytest.mark.parametrize("batch", ["batch", 1], ids=["dynamic", "fixed"])
def test_embed_many_equals_a_loop_of_embed(models: Path, family: Family,
                                           batch: int | str) -> None:
    path = cm.contract_recogniser(models / f"r_batch_{batch}.onnx", 512, batch=batch)
    session = CountingSession(cm.cpu_session(path))
    embedder = ArcFaceEmbedder(session, family)  # type: ignore[arg-type]
    crops = [make_crop(seed) for seed in range(4)]
    many = embedder.embed_many(crops)
    runs = session.runs
    assert many.shape == (4, 512) and many.dtype == np.float32
    np.testing.assert_allclose(many, np.stack([embedder.embed(c) for c in crops]), atol=1e-5)
    assert runs == (1 if batch == "batch" else 4)
    assert embedder.embed_many([]).shape[0] == 0


def test_crop_warps_onto_the_family_template(models: Path, family: Family) -> None:
    embedder = ArcFaceEmbedder(cm.cpu_session(cm.contract_recogniser(models / "r.onnx")), family)
    frame = np.random.default_rng(0).integers(0, 256, (300, 400, 3), dtype=np.uint8)
    kps5 = template_points("arcface_112_v2", 112) * 1.7 + np.array([80.0, 40.0])
    face = Face(np.array([60, 30, 300, 260], np.float32), kps5.astype(np.float32), 0.9)
    crop = embedder.crop(frame, face)
    assert crop.image.shape == (112, 112, 3) and crop.image.dtype == np.float32
    assert crop.template == "arcface_112_v2" and crop.size_px == 112
    np.testing.assert_allclose(transform_points(kps5, crop.frame_to_crop),
                               template_points("arcface_112_v2", 112), atol=1e-3)


# -- the real MobileFaceNet (128-d) -----------------------------------------------------------

@pytest.fixture(scope="module")
def real(testdata: Path) -> tuple[Any, ArcFaceEmbedder]:
    """(YuNet detector, MobileFaceNet embedder) on the real test models."""
    from facefuse.stages.detect import YunetDetector

    manifest = load_manifest()
    detector = YunetDetector(
        cm.cpu_session(testdata / "models" / "face_detection_yunet_2023mar.onnx"),
        manifest.families["yunet"])
    mobilefacenet = dataclasses.replace(manifest.families["arcface"], mean=127.5, std=128.0)
    embedder = ArcFaceEmbedder(cm.cpu_session(testdata / "models" / "mobilefacenet_128d.onnx"),
                               mobilefacenet)
    return detector, embedder


def _identity(real: tuple[Any, ArcFaceEmbedder], frame: np.ndarray) -> np.ndarray:
    detector, embedder = real
    faces = detector.detect(frame)
    assert faces, "YuNet found no face"
    return embedder.embed(embedder.crop(frame, faces[0]))


def _video_frames(path: Path, indices: set[int]) -> dict[int, np.ndarray]:
    capture = cv2.VideoCapture(str(path))
    frames: dict[int, np.ndarray] = {}
    try:
        for index in range(max(indices) + 1):
            ok, frame = capture.read()
            assert ok, f"{path.name} ended before frame {index}"
            if index in indices:
                frames[index] = frame
    finally:
        capture.release()
    return frames


def test_different_people_are_dissimilar(testdata: Path, real: Any) -> None:
    obama = _identity(real, cv2.imread(str(testdata / "media" / "obama.jpg")))
    biden = _identity(real, cv2.imread(str(testdata / "media" / "biden.jpg")))
    assert obama.shape == (128,)
    assert cosine_similarity(obama, biden) < 0.31  # measured: -0.05


def test_the_same_person_is_similar_across_frames(testdata: Path, real: Any) -> None:
    frames = _video_frames(testdata / "media" / "asl_yes.mp4", {5, 50})
    early, late = (_identity(real, frames[i]) for i in (5, 50))
    assert cosine_similarity(early, late) > 0.5  # measured: 0.72
