"""FaceRestorer / CodeFormerRestorer and their pure helpers, against analytic contract models."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from facefuse.errors import InputError, ModelContractError
from facefuse.models.manifest import Family, load_manifest
from facefuse.stages.enhance import (
    CodeFormerRestorer,
    FaceRestorer,
    codeformer_weight,
)
from facefuse.stages.tensors import crops_to_nchw, nchw_to_crop
from facefuse.types import AlignedCrop
from tests import contract_models as cm


@pytest.fixture(scope="module")
def models(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("enhance-models")


@pytest.fixture(scope="module")
def gfpgan() -> Family:
    return load_manifest().families["gfpgan"]


@pytest.fixture(scope="module")
def codeformer() -> Family:
    return load_manifest().families["codeformer"]


@pytest.fixture(scope="module")
def crop() -> AlignedCrop:
    """A 512 px float32 BGR 0..255 crop of non-integer noise."""
    image = np.random.default_rng(0).uniform(0.0, 255.0, (512, 512, 3)).astype(np.float32)
    return AlignedCrop(image=image, frame_to_crop=np.eye(2, 3), template="ffhq_512", size_px=512)


# -- pre- and post-processing -----------------------------------------------------------------

def test_preprocess_is_rgb_in_minus_one_to_one(gfpgan: Family) -> None:
    image = np.zeros((512, 512, 3), np.float32)
    image[0, 0] = (0.0, 127.5, 255.0)  # B, G, R
    tensor = crops_to_nchw(image, gfpgan)
    assert tensor.shape == (1, 3, 512, 512) and tensor.dtype == np.float32
    np.testing.assert_allclose(tensor[0, :, 0, 0], [1.0, 0.0, -1.0])


def test_postprocess_clips_and_returns_bgr_0_255(gfpgan: Family) -> None:
    output = np.zeros((1, 3, 2, 2), np.float32)
    output[0, :, 0, 0] = (1.0, 0.0, -1.0)  # R, G, B
    output[0, :, 1, 1] = (3.0, -2.0, 0.5)
    pixels = nchw_to_crop(output, gfpgan)
    assert pixels.shape == (2, 2, 3) and pixels.dtype == np.float32
    np.testing.assert_allclose(pixels[0, 0], [0.0, 127.5, 255.0])
    np.testing.assert_allclose(pixels[1, 1], [191.25, 0.0, 255.0])


def test_pre_then_post_is_a_round_trip(crop: AlignedCrop, gfpgan: Family) -> None:
    back = nchw_to_crop(crops_to_nchw(crop.image, gfpgan), gfpgan)
    np.testing.assert_allclose(back, crop.image, atol=1e-3)


# -- FaceRestorer -----------------------------------------------------------------------------

@pytest.mark.parametrize("input_name", ["input", "input.1"])
def test_identity_restorer_returns_the_crop(models: Path, gfpgan: Family, crop: AlignedCrop,
                                            input_name: str) -> None:
    path = cm.identity_restorer(models / f"identity_{input_name}.onnx", input_name=input_name)
    restored = FaceRestorer(cm.cpu_session(path), gfpgan).enhance(crop)
    assert restored.shape == (512, 512, 3) and restored.dtype == np.float32
    np.testing.assert_allclose(restored, crop.image, atol=1e-3)


def test_a_crop_of_the_wrong_size_is_refused(models: Path, gfpgan: Family) -> None:
    restorer = FaceRestorer(cm.cpu_session(cm.identity_restorer(models / "id.onnx")), gfpgan)
    small = AlignedCrop(np.zeros((256, 256, 3), np.float32), np.eye(2, 3), "ffhq_512", 256)
    with pytest.raises(ValueError, match="512 px"):
        restorer.enhance(small)


# -- CodeFormer -------------------------------------------------------------------------------

@pytest.mark.parametrize("weight_shape", [(), (1,)], ids=["scalar", "rank1"])
def test_codeformer_fidelity_reaches_the_model(models: Path, codeformer: Family,
                                               crop: AlignedCrop,
                                               weight_shape: tuple[int, ...]) -> None:
    path = cm.codeformer_contract(models / f"codeformer_{len(weight_shape)}.onnx", weight_shape)
    session = cm.cpu_session(path)
    results = []
    for fidelity in (0.0, 0.25, 0.5, 1.0):
        restored = CodeFormerRestorer(session, codeformer, fidelity=fidelity).enhance(crop)
        # Contract: output = input * weight, so a pixel p comes back as 127.5 + (p - 127.5) * w.
        expected = 127.5 + (crop.image.astype(np.float64) - 127.5) * fidelity
        np.testing.assert_allclose(restored, expected, atol=1e-3)
        results.append(restored)
    assert np.abs(results[0] - results[-1]).max() > 100.0


def test_codeformer_default_fidelity_is_one_half(models: Path, codeformer: Family) -> None:
    session = cm.cpu_session(cm.codeformer_contract(models / "codeformer_default.onnx"))
    assert CodeFormerRestorer(session, codeformer).fidelity == 0.5


@pytest.mark.parametrize("weight_shape", [(), (1,)], ids=["scalar", "rank1"])
def test_codeformer_weight_follows_the_declared_rank_and_type(
        models: Path, weight_shape: tuple[int, ...]) -> None:
    path = cm.codeformer_contract(models / f"codeformer_w{len(weight_shape)}.onnx", weight_shape)
    node = cm.cpu_session(path).get_inputs()[1]
    weight = codeformer_weight(0.7, node)
    assert weight.shape == weight_shape and weight.dtype == np.float64
    assert float(weight.reshape(-1)[0]) == 0.7


@pytest.mark.parametrize("fidelity", [-0.1, 1.5])
def test_codeformer_fidelity_out_of_range_is_an_input_error(models: Path, codeformer: Family,
                                                            fidelity: float) -> None:
    session = cm.cpu_session(cm.codeformer_contract(models / "codeformer_range.onnx"))
    with pytest.raises(InputError, match="fidelity"):
        CodeFormerRestorer(session, codeformer, fidelity=fidelity)


def test_codeformer_needs_a_weight_input(models: Path, codeformer: Family) -> None:
    session = cm.cpu_session(cm.identity_restorer(models / "no_weight.onnx"))
    with pytest.raises(ModelContractError, match="'weight'"):
        CodeFormerRestorer(session, codeformer)
