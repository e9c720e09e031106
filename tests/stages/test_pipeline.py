"""The whole pixel path with contract swap models and the real YuNet detector: exact pixels."""

from __future__ import annotations

from dataclasses import replace

import cv2
import numpy as np
import pytest

from facefuse import geometry
from facefuse.errors import NoFaceError
from facefuse.io.images import read_image
from facefuse.paste import crop_roi
from facefuse.pipeline import Pipeline
from tests import contract_models


def with_swapper(settings, contract_dir, name):
    """`settings` with the contract swapper `name` (a file of the contract_dir fixture)."""
    return replace(settings, swapper=str(contract_dir / f"{name}.onnx"))


def _outside_roi(frame_shape, faces, template_size=128):
    """Boolean mask of pixels outside every pasted ROI (swap and enhance footprints)."""
    outside = np.ones(frame_shape[:2], bool)
    for face in faces:
        for template, size in (("arcface_128", template_size), ("ffhq_512", 512)):
            matrix = geometry.frame_to_crop_matrix(face.kps5, template, size)
            roi = crop_roi(frame_shape, size, geometry.invert_affine(matrix))
            outside[roi.slices()] = False
    return outside


def _psnr(a, b):
    mse = np.mean((a.astype(np.float64) - b.astype(np.float64)) ** 2)
    return 10 * np.log10(255.0 ** 2 / mse) if mse > 0 else float("inf")


def test_identity_swapper_changes_nothing_outside_the_roi(settings, testdata):
    target = read_image(testdata / "media" / "astronaut.png")
    with Pipeline(settings) as pipeline:
        identity = pipeline.source_identity([testdata / "media" / "obama.jpg"])
        result = pipeline.process_frame(target, identity)
    assert len(result.faces) == 1 and len(result.swapped) == 1
    face = result.swapped[0]
    assert 70 < face.bbox_xyxy[2] - face.bbox_xyxy[0] < 130  # ~90 px wide face
    outside = _outside_roi(target.shape, result.swapped)
    assert outside.sum() > 0.5 * outside.size
    np.testing.assert_array_equal(result.frame[outside], target[outside])
    roi = ~outside
    assert _psnr(result.frame[roi], target[roi]) >= 30.0
    assert not np.array_equal(result.frame, target)  # the face really went through the swapper
    assert set(result.timings_ms) >= {"detect", "select", "swap", "paste"}


def test_colour_swapper_paints_the_colour_the_latent_dictates(settings, contract_dir, testdata):
    target = read_image(testdata / "media" / "astronaut.png")
    colours = []
    with Pipeline(with_swapper(settings, contract_dir, "colour_swapper")) as pipeline:
        for source in ("obama.jpg", "biden.jpg"):
            identity = pipeline.source_identity([testdata / "media" / source])
            latent = pipeline.models.swapper().latent(identity.embedding)
            result = pipeline.process_frame(target, identity)
            face = result.swapped[0]
            matrix = geometry.frame_to_crop_matrix(face.kps5, "arcface_128", 128)
            cx, cy = geometry.transform_points([[64, 64]], geometry.invert_affine(matrix))[0]
            got_bgr = result.frame[round(cy), round(cx)].astype(float)
            expected_bgr = contract_models.expected_colour_rgb(latent)[::-1] * 255
            np.testing.assert_allclose(got_bgr, expected_bgr, atol=1.0)
            outside = _outside_roi(target.shape, result.swapped)
            np.testing.assert_array_equal(result.frame[outside], target[outside])
            colours.append(got_bgr)
    assert np.abs(colours[0] - colours[1]).max() > 10  # two identities, two colours


@pytest.mark.parametrize("dtype", [np.uint16, np.float32])
def test_deep_rgba_frames_keep_dtype_alpha_and_untouched_pixels(settings, testdata, dtype):
    rgb8 = read_image(testdata / "media" / "astronaut.png")
    alpha = np.tile(np.linspace(0, 1, rgb8.shape[1]), (rgb8.shape[0], 1))[..., None]
    scale = 65535 if dtype == np.uint16 else 1.0
    frame = np.concatenate([rgb8 / 255.0, alpha], axis=2) * scale
    frame = (np.rint(frame) if dtype == np.uint16 else frame).astype(dtype)
    frame[0, 0, :3] = 3.0 if dtype == np.float32 else frame[0, 0, :3]  # HDR corner survives
    with Pipeline(settings) as pipeline:
        identity = pipeline.source_identity([testdata / "media" / "obama.jpg"])
        result = pipeline.process_frame(frame, identity)
    assert result.frame.dtype == dtype and result.frame.shape == frame.shape
    np.testing.assert_array_equal(result.frame[..., 3], frame[..., 3])
    outside = _outside_roi(frame.shape, result.swapped)
    np.testing.assert_array_equal(result.frame[outside], frame[outside])
    as8 = geometry.to_display_uint8(result.frame)
    assert _psnr(as8[~outside], rgb8[~outside]) >= 30.0


def test_matte_is_zero_outside_and_one_at_the_face_centre(settings, testdata):
    target = read_image(testdata / "media" / "astronaut.png")
    with Pipeline(settings) as pipeline:
        result = pipeline.process_frame(target, pipeline.source_identity(
            [testdata / "media" / "obama.jpg"]))
    face = result.swapped[0]
    outside = _outside_roi(target.shape, result.swapped)
    assert result.matte.dtype == np.float32 and result.matte[outside].max() == 0.0
    nose = face.kps5[2].round().astype(int)
    assert result.matte[nose[1], nose[0]] > 0.99


def test_a_cache_hit_runs_no_model(settings, testdata):
    source = [testdata / "media" / "obama.jpg"]
    with Pipeline(settings) as first:
        expected = first.source_identity(source).embedding
        assert len(first.models.sessions) == 2  # detector + recogniser
    with Pipeline(settings) as second:
        np.testing.assert_array_equal(second.source_identity(source).embedding, expected)
        assert len(second.models.sessions) == 0
    with Pipeline(replace(settings, use_embedding_cache=False)) as third:
        np.testing.assert_allclose(third.source_identity(source).embedding, expected, atol=1e-6)
        assert len(third.models.sessions) == 2


def test_several_sources_average_into_one_normalised_identity(settings, testdata):
    media = testdata / "media"
    with Pipeline(settings) as pipeline:
        a = pipeline.source_identity([media / "obama.jpg"]).embedding
        b = pipeline.source_identity([media / "biden.jpg"]).embedding
        both = pipeline.source_identity([media / "obama.jpg", media / "biden.jpg"])
    mean = (a + b) / np.linalg.norm(a + b)
    np.testing.assert_allclose(both.embedding, mean, atol=1e-6)
    assert len(both.source_sha256) == 2


def test_source_without_a_face_is_a_no_face_error(settings, tmp_path):
    blank = tmp_path / "blank.png"
    cv2.imwrite(str(blank), np.full((300, 300, 3), 128, np.uint8))
    with Pipeline(settings) as pipeline, pytest.raises(NoFaceError, match="blank.png"):
        pipeline.source_identity([blank])


def test_sessions_are_created_once_across_frames(settings, testdata):
    target = read_image(testdata / "media" / "astronaut.png")
    with Pipeline(settings) as pipeline:
        identity = pipeline.source_identity([testdata / "media" / "obama.jpg"])
        for _ in range(3):
            pipeline.process_frame(target, identity)
        assert len(pipeline.models.sessions) == 3  # detector, recogniser, swapper


def test_two_pipelines_with_different_settings_share_a_process(settings, contract_dir, testdata):
    target = read_image(testdata / "media" / "astronaut.png")
    source = [testdata / "media" / "obama.jpg"]
    identity_pipe = Pipeline(settings)
    colour_pipe = Pipeline(with_swapper(settings, contract_dir, "colour_swapper"))
    try:
        a = identity_pipe.process_frame(target, identity_pipe.source_identity(source)).frame
        b = colour_pipe.process_frame(target, colour_pipe.source_identity(source)).frame
        a_again = identity_pipe.process_frame(target, identity_pipe.source_identity(source)).frame
    finally:
        identity_pipe.close()
        colour_pipe.close()
    np.testing.assert_array_equal(a, a_again)
    assert _psnr(a, b) < 30.0


def test_identity_enhancer_keeps_the_face_and_the_outside(settings, contract_dir, testdata):
    target = read_image(testdata / "media" / "astronaut.png")
    enhanced = replace(settings, enhancer=str(contract_dir / "identity_restorer.onnx"))
    with Pipeline(settings) as plain, Pipeline(enhanced) as pipeline:
        source = [testdata / "media" / "obama.jpg"]
        base = plain.process_frame(target, plain.source_identity(source)).frame
        result = pipeline.process_frame(target, pipeline.source_identity(source))
    outside = _outside_roi(target.shape, result.swapped)
    np.testing.assert_array_equal(result.frame[outside], target[outside])
    assert _psnr(result.frame, base) >= 35.0
    assert "enhance" in result.timings_ms


def test_target_without_faces_passes_through(settings, testdata):
    blank = np.full((240, 320, 3), 90, np.uint8)
    with Pipeline(settings) as pipeline:
        result = pipeline.process_frame(blank, pipeline.source_identity(
            [testdata / "media" / "obama.jpg"]))
    assert result.faces == () and result.matte is None
    np.testing.assert_array_equal(result.frame, blank)


def test_the_swapper_emap_is_read_from_the_model_once(settings, testdata, monkeypatch):
    target = read_image(testdata / "media" / "astronaut.png")
    source = [testdata / "media" / "obama.jpg"]
    with Pipeline(settings) as first:
        expected = first.process_frame(target, first.source_identity(source)).frame
    cached = list(settings.models_dir.glob("emap-*.npy"))
    assert len(cached) == 1

    def parse_again(_path):
        raise AssertionError("the emap was read from the ONNX file again")

    monkeypatch.setattr("facefuse.stages.swap.read_emap", parse_again)
    with Pipeline(settings) as second:
        again = second.process_frame(target, second.source_identity(source)).frame
    np.testing.assert_array_equal(again, expected)
