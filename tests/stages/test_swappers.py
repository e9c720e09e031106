"""HyperswapSwapper, swappers of any size of their family, and pixel boost in the stage, against
contract models (tests/contract_models.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from facefuse.errors import ModelContractError
from facefuse.models.manifest import Family, Manifest, load_manifest
from facefuse.stages.swap import HyperswapSwapper, InswapperSwapper
from facefuse.vectors import l2_normalise
from tests import contract_models as cm
from tests.stages.crops import random_crop


class CountingSession:
    """A real onnxruntime session that counts its runs and the batch each run was fed."""

    def __init__(self, session: Any) -> None:
        self.session = session
        self.batches: list[int] = []

    def get_inputs(self) -> Any:
        return self.session.get_inputs()

    def get_outputs(self) -> Any:
        return self.session.get_outputs()

    def run(self, names: Any, feeds: dict[str, np.ndarray]) -> Any:
        self.batches.append(len(feeds["target"]))
        return self.session.run(names, feeds)


@pytest.fixture(scope="module")
def manifest() -> Manifest:
    return load_manifest()


@pytest.fixture(scope="module")
def hyperswap(manifest: Manifest) -> Family:
    return manifest.families["hyperswap"]


@pytest.fixture(scope="module")
def models(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("swappers")


def embedding(seed: int) -> np.ndarray:
    return (np.random.default_rng(seed).standard_normal(512) * 3.0).astype(np.float32)


def test_hyperswap_identity_returns_the_crop(models: Path, hyperswap: Family) -> None:
    swapper = HyperswapSwapper(cm.cpu_session(cm.hyperswap_identity(models / "hs.onnx")),
                               hyperswap)
    assert (swapper.size_px, swapper.template) == (256, "arcface_128")
    target = random_crop(256)
    swapped = swapper.swap(target, swapper.latent(embedding(0)))
    assert swapped.shape == (256, 256, 3) and swapped.dtype == np.float32
    np.testing.assert_allclose(swapped, target.image, atol=1e-3)  # [-1, 1] in and out


def test_the_hyperswap_source_is_the_normalised_embedding(models: Path,
                                                          hyperswap: Family) -> None:
    swapper = HyperswapSwapper(cm.cpu_session(cm.hyperswap_colour(models / "hsc.onnx")),
                               hyperswap)
    raw = embedding(4)
    latent = swapper.latent(raw)
    np.testing.assert_allclose(latent[0], l2_normalise(raw), atol=1e-7)  # no emap
    swapped = swapper.swap(random_crop(256, 1), latent)
    expected_bgr = cm.expected_hyperswap_rgb(latent)[::-1]
    assert np.abs(swapped - expected_bgr).max() < 0.05


def test_hyperswap_refuses_an_embedding_of_another_width(models: Path,
                                                         hyperswap: Family) -> None:
    swapper = HyperswapSwapper(cm.cpu_session(cm.hyperswap_identity(models / "hs2.onnx")),
                               hyperswap)
    with pytest.raises(ModelContractError, match="128 values but the swapper takes 512"):
        swapper.latent(np.ones(128, np.float32))


@pytest.mark.parametrize("size_px", [256, 512])
def test_an_inswapper_style_model_takes_the_size_it_declares(models: Path, manifest: Manifest,
                                                             size_px: int) -> None:
    path = cm.identity_swapper(models / f"in{size_px}.onnx", size=size_px)
    swapper = InswapperSwapper(cm.cpu_session(path), manifest.families["inswapper"],
                               cm.random_orthogonal())
    assert swapper.size_px == size_px
    target = random_crop(size_px, 2)
    np.testing.assert_allclose(swapper.swap(target, swapper.latent(embedding(1))), target.image,
                               atol=1e-3)
    with pytest.raises(ValueError, match=f"takes {size_px} px crops or multiples"):
        swapper.swap(random_crop(size_px + size_px // 2), swapper.latent(embedding(1)))


@pytest.mark.parametrize(("batch", "runs"), [(1, [1, 1, 1, 1]), ("n", [4])])
def test_pixel_boost_runs_k_squared_sub_images_batched_when_the_model_allows(
        models: Path, hyperswap: Family, batch: int | str, runs: list[int]) -> None:
    path = cm.hyperswap_identity(models / f"hs_batch_{batch}.onnx", batch=batch)
    session = CountingSession(cm.cpu_session(path))
    swapper = HyperswapSwapper(session, hyperswap)
    assert swapper.batch_is_dynamic == (batch != 1)
    target = random_crop(512, 5)
    swapped = swapper.swap(target, swapper.latent(embedding(2)))
    assert session.batches == runs  # 2 x 2 sub-images: four runs, or one batch of four
    assert swapped.shape == (512, 512, 3)
    np.testing.assert_allclose(swapped, target.image, atol=1e-3)  # re-interleaved in place


def test_pixel_boost_gives_every_sub_image_the_same_identity(models: Path,
                                                             hyperswap: Family) -> None:
    swapper = HyperswapSwapper(cm.cpu_session(cm.hyperswap_colour(models / "hsc2.onnx")),
                               hyperswap)
    latent = swapper.latent(embedding(6))
    boosted = swapper.swap(random_crop(768, 3), latent)  # 3 x 3 sub-images
    expected_bgr = cm.expected_hyperswap_rgb(latent)[::-1]
    assert boosted.shape == (768, 768, 3)
    assert np.abs(boosted - expected_bgr).max() < 0.05
