"""Pixel boost's phase split and merge, and the swapper weight's identity blend: pure maths."""

from __future__ import annotations

import numpy as np
import pytest

from facefuse.errors import InputError, ModelContractError
from facefuse.stages.boost import boost_factor, merge_phases, split_phases
from facefuse.stages.swap import blend_identity


@pytest.mark.parametrize("k", [1, 2, 3, 4])
def test_sub_image_a_b_holds_the_pixels_i_k_plus_a_j_k_plus_b(k: int) -> None:
    image = np.random.default_rng(k).uniform(0, 255, (8 * k, 8 * k, 3)).astype(np.float32)
    tiles = split_phases(image, k)
    assert tiles.shape == (k * k, 8, 8, 3)
    for a in range(k):
        for b in range(k):
            np.testing.assert_array_equal(tiles[a * k + b], image[a::k, b::k])
    np.testing.assert_array_equal(merge_phases(tiles, k), image)


def test_merge_puts_each_tile_back_where_it_came_from() -> None:
    tiles = np.stack([np.full((4, 4, 1), v, np.float32) for v in range(4)])
    merged = merge_phases(tiles, 2)[..., 0]
    np.testing.assert_array_equal(merged[:2, :2], [[0, 1], [2, 3]])
    np.testing.assert_array_equal(merged[::2, 1::2], np.ones((4, 4)))


def test_a_crop_that_does_not_divide_is_refused() -> None:
    with pytest.raises(ValueError, match="cannot be split"):
        split_phases(np.zeros((10, 10, 3), np.float32), 3)
    with pytest.raises(ValueError, match="cannot be merged"):
        merge_phases(np.zeros((3, 4, 4, 3), np.float32), 2)


@pytest.mark.parametrize(("boost", "model", "k"), [(0, 128, 1), (128, 128, 1), (384, 128, 3),
                                                   (512, 256, 2), (1024, 256, 4)])
def test_boost_factor(boost: int, model: int, k: int) -> None:
    assert boost_factor(boost, model, "m") == k


@pytest.mark.parametrize(("boost", "model"), [(384, 256), (128, 256), (200, 128)])
def test_a_boost_that_is_not_a_multiple_is_a_usage_error(boost: int, model: int) -> None:
    with pytest.raises(InputError, match=f"pixel boost {boost} does not fit m, whose crops are "
                                         f"{model} px") as info:
        boost_factor(boost, model, "m")
    assert f"{model * 2}" in str(info.value) and info.value.exit_code == 2


def _unit(seed: int) -> np.ndarray:
    vector = np.random.default_rng(seed).standard_normal(512)
    return (vector / np.linalg.norm(vector)).astype(np.float32)


def test_weight_one_half_leaves_the_source_exactly() -> None:
    source = _unit(1)
    np.testing.assert_array_equal(blend_identity(source, 7.0 * _unit(2), 0.5), source)


@pytest.mark.parametrize(("weight", "k"), [(0.0, 0.35), (1.0, -0.35), (0.25, 0.175)])
def test_weight_mixes_the_normalised_target_in_or_out(weight: float, k: float) -> None:
    source, target = _unit(3), _unit(4)
    blended = blend_identity(source, 5.0 * target, weight)  # the target's scale does not matter
    np.testing.assert_allclose(blended, source * (1 - k) + target * k, atol=1e-6)
    toward = float(blended @ target) > float(source @ target)
    assert toward == (k > 0)


def test_weights_outside_0_1_and_mismatched_recognisers_are_refused() -> None:
    with pytest.raises(ValueError, match="0..1"):
        blend_identity(_unit(1), _unit(2), 1.5)
    with pytest.raises(ModelContractError, match="same recogniser"):
        blend_identity(_unit(1), np.ones(128, np.float32), 0.2)
