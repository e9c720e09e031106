"""Occlusion, region and mouth masks, pixel boost and the swapper weight through the whole
pixel path: the real YuNet detector on a real photo, contract models for everything else, and
pixel assertions in frame space (tests/contract_models.py says what each model computes)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from facefuse import geometry
from facefuse.config import Settings
from facefuse.errors import InputError
from facefuse.io.images import read_image
from facefuse.pipeline import Pipeline
from facefuse.stages.swap import blend_identity
from facefuse.types import FrameResult
from facefuse.vectors import l2_normalise
from tests import contract_models as cm

CROP_PX = 128  # the inswapper contracts' crop
RECT_256 = (64, 96, 192, 160)  # the occluded rectangle, in XSeg's 256 px space (x0, y0, x1, y1)


@pytest.fixture(scope="module")
def masks_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("mask-pipeline-models")
    cm.xseg_rectangle(root / "xseg_rect.onnx", RECT_256)
    nose = np.zeros((64, 64), int)
    nose[16:40, 20:44] = 10  # in 8 px blocks of the parser's 512 px input
    nose[48:56, 20:44] = 1
    cm.bisenet_labels(root / "bisenet_nose.onnx", nose)
    mouth = np.ones((64, 64), int)
    mouth[44:54, 22:42] = 11
    cm.bisenet_labels(root / "bisenet_mouth.onnx", mouth)
    cm.hyperswap_identity(root / "hyperswap_identity.onnx")
    cm.hyperswap_colour(root / "hyperswap_colour.onnx")
    cm.identity_swapper(root / "identity_512.onnx", size=512)
    return root


@pytest.fixture()
def astronaut(testdata: Path) -> np.ndarray:
    return read_image(testdata / "media" / "astronaut.png")


def run(settings: Settings, frame: np.ndarray, testdata: Path) -> FrameResult:
    with Pipeline(settings) as pipeline:
        identity = pipeline.source_identity([testdata / "media" / "obama.jpg"])
        return pipeline.process_frame(frame, identity)


def crop_coords(frame_shape: tuple[int, ...], kps5: np.ndarray, size_px: int) -> np.ndarray:
    """(H, W, 2): where each frame pixel lands in the swapper's crop (what paste samples)."""
    matrix = geometry.frame_to_crop_matrix(kps5, "arcface_128", size_px)
    ys, xs = np.mgrid[: frame_shape[0], : frame_shape[1]]
    points = np.stack([xs.ravel(), ys.ravel()], axis=1)
    return geometry.transform_points(points, matrix).reshape(*frame_shape[:2], 2)


def inside(coords: np.ndarray, rect: tuple[float, float, float, float],
           margin: float = 0.0) -> np.ndarray:
    x0, y0, x1, y1 = rect
    x, y = coords[..., 0], coords[..., 1]
    return ((x >= x0 + margin) & (x <= x1 - 1 - margin)
            & (y >= y0 + margin) & (y <= y1 - 1 - margin))


def test_an_occluded_rectangle_keeps_exactly_the_target_pixels(settings, contract_dir,
                                                               masks_dir, testdata, astronaut):
    colour = replace(settings, swapper=str(contract_dir / "colour_swapper.onnx"))
    plain = run(colour, astronaut, testdata)
    occluded = run(replace(colour, occluder=str(masks_dir / "xseg_rect.onnx")), astronaut,
                   testdata)
    coords = crop_coords(astronaut.shape, occluded.swapped[0].kps5, CROP_PX)
    rect = tuple(v * CROP_PX / 256 for v in RECT_256)  # (32, 48, 96, 80) in the crop
    hidden = inside(coords, rect, margin=4.0)  # 4 px: the soft inside edge and the warp
    assert hidden.sum() > 300
    np.testing.assert_array_equal(occluded.frame[hidden], astronaut[hidden])
    assert occluded.matte[hidden].max() == 0.0
    # 20 px away from the rectangle (four sigmas of the soft edge, which lies on the visible
    # side) the occlusion mask is 1: exactly the unoccluded swap
    clear = inside(coords, (16, 16, 112, 112)) & ~inside(coords, rect, margin=-20.0)
    assert clear.sum() > 300
    np.testing.assert_array_equal(occluded.frame[clear], plain.frame[clear])
    assert np.abs(plain.frame[hidden].astype(int) - astronaut[hidden]).mean() > 20  # it can fail


def test_the_enhancer_keeps_what_the_occlusion_mask_kept(settings, contract_dir, masks_dir,
                                                       testdata, astronaut):
    """The restorer's paste is held to the swap's mask: the occluded rectangle stays the
    target's pixels exactly (without that, restoring re-pastes a resampled copy over it), and
    every pixel the enhanced swap changed is inside the matte."""
    occluded = replace(settings, swapper=str(contract_dir / "colour_swapper.onnx"),
                       occluder=str(masks_dir / "xseg_rect.onnx"),
                       enhancer=str(contract_dir / "identity_restorer.onnx"), enhancer_blend=1.0)
    result = run(occluded, astronaut, testdata)
    coords = crop_coords(astronaut.shape, result.swapped[0].kps5, CROP_PX)
    hidden = inside(coords, tuple(v * CROP_PX / 256 for v in RECT_256), margin=4.0)
    assert hidden.sum() > 300
    np.testing.assert_array_equal(result.frame[hidden], astronaut[hidden])
    changed = np.any(result.frame != astronaut, axis=2)
    assert changed.sum() > 1000 and result.matte[changed].min() > 0.0


def test_a_parser_marking_the_nose_yields_exactly_that_region_in_the_matte(
        settings, masks_dir, testdata, astronaut):
    result = run(replace(settings, parser=str(masks_dir / "bisenet_nose.onnx"),
                         mask_regions=("nose",)), astronaut, testdata)
    coords = crop_coords(astronaut.shape, result.swapped[0].kps5, CROP_PX)
    nose = (20 * 8 / 4, 16 * 8 / 4, 44 * 8 / 4, 40 * 8 / 4)  # (40, 32, 88, 80) in the crop
    region = inside(coords, nose, margin=-1.0)  # one crop pixel of bilinear warp
    assert result.matte[~region].max() == 0.0
    core = inside(coords, nose, margin=16.0)  # past the soft inside edge (3 sigmas)
    assert core.sum() > 100 and result.matte[core].min() > 0.99
    skin = inside(coords, (40, 96, 88, 112), margin=-1.0) & ~region  # class 1 is not chosen
    assert skin.sum() > 30 and result.matte[skin].max() == 0.0
    with_skin = run(replace(settings, parser=str(masks_dir / "bisenet_nose.onnx"),
                            mask_regions=("skin", "nose")), astronaut, testdata)
    assert with_skin.matte[skin].max() > 0.3  # now chosen: in the matte


def test_the_mouth_mask_keeps_the_targets_own_mouth(settings, contract_dir, masks_dir,
                                                    testdata, astronaut):
    colour = replace(settings, swapper=str(contract_dir / "colour_swapper.onnx"))
    plain = run(colour, astronaut, testdata)
    parsed = replace(colour, parser=str(masks_dir / "bisenet_mouth.onnx"))
    speaking = run(replace(parsed, mouth_mask=True), astronaut, testdata)
    coords = crop_coords(astronaut.shape, speaking.swapped[0].kps5, CROP_PX)
    mouth = (22 * 2, 44 * 2, 42 * 2, 54 * 2)  # (44, 88, 84, 108) in the crop
    kept = inside(coords, mouth, margin=4.0)
    assert kept.sum() > 50
    np.testing.assert_array_equal(speaking.frame[kept], astronaut[kept])
    away = inside(coords, (16, 16, 112, 112)) & ~inside(coords, mouth, margin=-20.0)
    assert away.sum() > 1000
    np.testing.assert_array_equal(speaking.frame[away], plain.frame[away])
    without = run(parsed, astronaut, testdata)  # the region mask alone keeps the swapped mouth
    assert np.abs(without.frame[kept].astype(int) - astronaut[kept]).mean() > 20


def test_the_mouth_mask_without_a_parser_is_refused_at_once(settings):
    with pytest.raises(InputError, match="mouth mask finds the mouth with the face parser"):
        replace(settings, mouth_mask=True)  # Settings itself: hosts learn it before any job


def _psnr(a: np.ndarray, b: np.ndarray) -> float:
    mse = np.mean((a.astype(np.float64) - b.astype(np.float64)) ** 2)
    return float(10 * np.log10(255.0 ** 2 / mse)) if mse > 0 else float("inf")


def test_identity_hyperswap_with_pixel_boost_512_reproduces_the_face(settings, masks_dir,
                                                                    testdata, astronaut):
    hyperswap = replace(settings, swapper=str(masks_dir / "hyperswap_identity.onnx"))
    with Pipeline(replace(hyperswap, pixel_boost=512)) as pipeline:
        identity = pipeline.source_identity([testdata / "media" / "obama.jpg"])
        stage = pipeline.models.load("swapper").stage
        runs = []
        real_run = stage.session.run
        stage.session.run = lambda names, feeds: runs.append(feeds["target"].shape) or \
            real_run(names, feeds)
        result = pipeline.process_frame(astronaut, identity)
    assert runs == [(1, 3, 256, 256)] * 4  # 2 x 2 phase-shifted sub-images of the 512 crop
    face = result.matte > 0
    assert face.sum() > 5000
    assert _psnr(result.frame[face], astronaut[face]) >= 45.0
    assert not np.array_equal(result.frame, astronaut)
    plain = run(hyperswap, astronaut, testdata)
    assert np.sum((plain.matte > 0) != face) < 0.02 * face.sum()  # the same footprint


def test_a_512_px_swapper_given_by_path_and_a_boost_that_does_not_fit(settings, masks_dir,
                                                                      testdata, astronaut):
    big = replace(settings, swapper=str(masks_dir / "identity_512.onnx"))
    result = run(big, astronaut, testdata)
    face = result.matte > 0
    assert _psnr(result.frame[face], astronaut[face]) >= 45.0
    with Pipeline(big) as pipeline:
        assert pipeline.models.swapper().size_px == 512
        assert pipeline.models.load("swapper").family.name == "inswapper"
    with pytest.raises(InputError, match="pixel boost 768 does not fit identity_512.onnx"):
        run(replace(big, pixel_boost=768), astronaut, testdata)


def _centre_bgr(result: FrameResult, size_px: int = 256) -> np.ndarray:
    matrix = geometry.frame_to_crop_matrix(result.swapped[0].kps5, "arcface_128", size_px)
    half = size_px / 2
    x, y = geometry.transform_points([[half, half]], geometry.invert_affine(matrix))[0]
    return result.frame[round(y), round(x)].astype(np.float64)


def test_swapper_weight_half_is_the_swap_as_it_was_and_0_and_1_move_the_identity(
        settings, masks_dir, testdata, astronaut):
    colour = replace(settings, swapper=str(masks_dir / "hyperswap_colour.onnx"))
    with Pipeline(colour) as pipeline:
        identity = pipeline.source_identity([testdata / "media" / "obama.jpg"])
        default = pipeline.process_frame(astronaut, identity)
        target = pipeline.embed_faces(astronaut, default.swapped)[0].embedding
    expected = {0.5: cm.expected_hyperswap_rgb(l2_normalise(identity.embedding))[::-1]}
    np.testing.assert_allclose(_centre_bgr(default), expected[0.5], atol=1.0)
    for weight in (0.5, 0.0, 1.0):
        result = run(replace(colour, swapper_weight=weight), astronaut, testdata)
        blended = l2_normalise(blend_identity(identity.embedding, target, weight))
        want = cm.expected_hyperswap_rgb(blended)[::-1]
        np.testing.assert_allclose(_centre_bgr(result), want, atol=1.0)
        if weight == 0.5:
            np.testing.assert_array_equal(result.frame, default.frame)
        else:
            assert np.abs(want - expected[0.5]).max() > 5.0  # a change the test can see


def test_the_swapper_weight_uses_the_embedding_a_face_carries(settings, masks_dir, testdata,
                                                              astronaut):
    colour = replace(settings, swapper=str(masks_dir / "hyperswap_colour.onnx"),
                     swapper_weight=0.0)
    with Pipeline(colour) as pipeline:
        identity = pipeline.source_identity([testdata / "media" / "obama.jpg"])
        face = pipeline.detect(astronaut)[0]
        carried = replace(face, embedding=-identity.embedding)
        result = pipeline.swap_faces(astronaut, identity, [carried])
    blended = l2_normalise(blend_identity(identity.embedding, -identity.embedding, 0.0))
    np.testing.assert_allclose(_centre_bgr(result),
                               cm.expected_hyperswap_rgb(blended)[::-1], atol=1.0)
