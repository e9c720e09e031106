"""InswapperSwapper and its pure helpers, against contract models with analytic outputs."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from facefuse.errors import ModelContractError
from facefuse.models.manifest import Family, load_manifest
from facefuse.stages.swap import (
    InswapperSwapper,
    read_emap,
    source_latent,
)
from facefuse.stages.tensors import crops_to_nchw, nchw_to_crop
from facefuse.types import AlignedCrop
from tests import contract_models as cm


@pytest.fixture(scope="module")
def family() -> Family:
    return load_manifest().families["inswapper"]


@pytest.fixture(scope="module")
def models(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("swap-models")


@pytest.fixture(scope="module")
def emap() -> np.ndarray:
    return cm.random_orthogonal(512, seed=7)


@pytest.fixture(scope="module")
def identity_path(models: Path, emap: np.ndarray) -> Path:
    return cm.identity_swapper(models / "identity.onnx", emap=emap)


@pytest.fixture(scope="module")
def colour_path(models: Path, emap: np.ndarray) -> Path:
    return cm.colour_swapper(models / "colour.onnx", emap=emap)


def make_crop(seed: int = 0, size_px: int = 128) -> AlignedCrop:
    """A float32 BGR 0..255 crop of non-integer noise (so rounding errors would show)."""
    image = np.random.default_rng(seed).uniform(0.0, 255.0, (size_px, size_px, 3))
    return AlignedCrop(image=image.astype(np.float32), frame_to_crop=np.eye(2, 3),
                       template="arcface_128", size_px=size_px)


def embedding(seed: int) -> np.ndarray:
    """A deterministic un-normalised 512-d embedding."""
    return (np.random.default_rng(seed).standard_normal(512) * 3.0).astype(np.float32)


# -- read_emap --------------------------------------------------------------------------------

def test_read_emap_returns_the_last_initializer_exactly(identity_path: Path,
                                                        emap: np.ndarray) -> None:
    read = read_emap(identity_path)
    assert read.dtype == np.float32 and read.shape == (512, 512)
    assert np.array_equal(read, emap)


def test_read_emap_of_the_fp16_twin_is_float32(models: Path, emap: np.ndarray) -> None:
    path = cm.identity_swapper(models / "identity_fp16.onnx", emap=emap, dtype="float16")
    read = read_emap(path)
    assert read.dtype == np.float32
    assert np.array_equal(read, emap.astype(np.float16).astype(np.float32))


@pytest.mark.parametrize("shape", [(256, 256), (512, 256), (512,), (2, 512, 512)])
def test_a_wrong_shaped_emap_is_a_contract_error(models: Path, shape: tuple[int, ...]) -> None:
    path = cm.identity_swapper(models / f"bad_{'x'.join(map(str, shape))}.onnx",
                               emap=np.ones(shape, np.float32))
    with pytest.raises(ModelContractError, match="512x512"):
        read_emap(path)


def test_a_model_without_initializers_has_no_emap(models: Path) -> None:
    path = cm.identity_restorer(models / "restorer.onnx")
    with pytest.raises(ModelContractError, match="no initializers"):
        read_emap(path)


# -- source_latent ----------------------------------------------------------------------------

@pytest.mark.parametrize("normalise", [True, False])
def test_source_latent_matches_numpy(normalise: bool) -> None:
    # A non-orthogonal emap, so that normalising the latent changes it.
    matrix = np.random.default_rng(3).standard_normal((512, 512)).astype(np.float32) / 10.0
    raw = embedding(1)
    expected = (raw / np.linalg.norm(raw)) @ matrix.astype(np.float64)
    if normalise:
        expected = expected / np.linalg.norm(expected)
    latent = source_latent(raw, matrix, normalise=normalise)
    assert latent.shape == (1, 512) and latent.dtype == np.float32
    np.testing.assert_allclose(latent[0], expected, rtol=1e-5, atol=1e-6)
    assert np.isclose(np.linalg.norm(latent), 1.0, atol=1e-5) == normalise


def test_source_latent_rejects_an_embedding_of_the_wrong_size(emap: np.ndarray) -> None:
    with pytest.raises(ModelContractError, match="128 values"):
        source_latent(np.ones(128, np.float32), emap)


def test_the_swapper_latent_follows_its_normalise_flag(identity_path: Path, family: Family) -> None:
    matrix = np.random.default_rng(5).standard_normal((512, 512)).astype(np.float32)
    session = cm.cpu_session(identity_path)
    for flag in (True, False):
        swapper = InswapperSwapper(session, family, matrix, normalise_latent=flag)
        np.testing.assert_array_equal(swapper.latent(embedding(2)),
                                      source_latent(embedding(2), matrix, normalise=flag))


# -- pre- and post-processing -----------------------------------------------------------------

def test_preprocess_is_rgb_over_255(family: Family) -> None:
    image = np.zeros((128, 128, 3), np.float32)
    image[0, 0] = (10.0, 20.0, 30.0)  # B, G, R
    tensor = crops_to_nchw(image, family)
    assert tensor.shape == (1, 3, 128, 128) and tensor.dtype == np.float32
    np.testing.assert_allclose(tensor[0, :, 0, 0], np.array([30.0, 20.0, 10.0]) / 255.0)


def test_postprocess_is_bgr_times_255_clipped(family: Family) -> None:
    output = np.zeros((1, 3, 2, 2), np.float32)
    output[0, :, 0, 0] = (0.2, 0.4, 0.6)  # R, G, B
    output[0, :, 1, 1] = (1.5, -0.5, 1.0)
    pixels = nchw_to_crop(output, family)
    assert pixels.shape == (2, 2, 3) and pixels.dtype == np.float32
    np.testing.assert_allclose(pixels[0, 0], [153.0, 102.0, 51.0], rtol=1e-6)
    np.testing.assert_allclose(pixels[1, 1], [255.0, 0.0, 255.0])


# -- swap -------------------------------------------------------------------------------------

def test_identity_swapper_returns_the_crop(identity_path: Path, family: Family,
                                           emap: np.ndarray) -> None:
    swapper = InswapperSwapper(cm.cpu_session(identity_path), family, emap)
    crop = make_crop(0)
    swapped = swapper.swap(crop, swapper.latent(embedding(0)))
    assert swapped.shape == (128, 128, 3) and swapped.dtype == np.float32
    np.testing.assert_allclose(swapped, crop.image, atol=1e-3)
    assert np.array_equal(crop.image, make_crop(0).image), "the input crop must not change"


def test_colour_swapper_paints_the_latent_colour_in_bgr(colour_path: Path, family: Family,
                                                        emap: np.ndarray) -> None:
    swapper = InswapperSwapper(cm.cpu_session(colour_path), family, emap)
    latent = swapper.latent(embedding(0))
    swapped = swapper.swap(make_crop(1), latent)
    expected_bgr = cm.expected_colour_rgb(latent)[::-1] * 255.0
    assert swapped.shape == (128, 128, 3)
    assert np.abs(swapped - expected_bgr).max() < 0.5


def test_two_identities_give_clearly_different_colours(colour_path: Path, family: Family,
                                                       emap: np.ndarray) -> None:
    swapper = InswapperSwapper(cm.cpu_session(colour_path), family, emap)
    crop = make_crop(2)
    first = swapper.swap(crop, swapper.latent(embedding(10)))[0, 0]
    second = swapper.swap(crop, swapper.latent(embedding(11)))[0, 0]
    assert np.abs(first - second).max() > 20.0


def test_fp16_twin_is_fed_float16(models: Path, family: Family, emap: np.ndarray) -> None:
    path = cm.identity_swapper(models / "identity_fp16_swap.onnx", emap=emap, dtype="float16")
    session = cm.cpu_session(path)
    assert session.get_inputs()[0].type == "tensor(float16)"
    swapper = InswapperSwapper(session, family, read_emap(path))
    crop = make_crop(3)
    swapped = swapper.swap(crop, swapper.latent(embedding(3)))
    assert swapped.dtype == np.float32
    np.testing.assert_allclose(swapped, crop.image, atol=0.25)  # fp16 step at 1.0 is 2**-11


def test_a_model_without_target_and_source_is_rejected(models: Path, family: Family,
                                                       emap: np.ndarray) -> None:
    session = cm.cpu_session(cm.identity_restorer(models / "not_a_swapper.onnx"))
    with pytest.raises(ModelContractError, match="'target' and 'source'"):
        InswapperSwapper(session, family, emap)


def test_a_crop_of_the_wrong_size_is_refused(identity_path: Path, family: Family,
                                             emap: np.ndarray) -> None:
    swapper = InswapperSwapper(cm.cpu_session(identity_path), family, emap)
    with pytest.raises(ValueError, match="128 px"):
        swapper.swap(make_crop(0, size_px=112), swapper.latent(embedding(0)))
