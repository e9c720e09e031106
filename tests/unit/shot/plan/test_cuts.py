"""Cut detection on synthetic pictures (shot.plan.cuts): what is a cut and what is motion."""

from __future__ import annotations

import numpy as np
import pytest

from facefuse.shot.plan.cuts import (
    HISTOGRAM_CUT,
    PIXEL_CUT,
    find_cuts,
    frame_signature,
    is_cut,
    pack_signatures,
    shot_index,
    signature_change,
    signatures_problem,
    unpack_signatures,
)


def _scene(seed: int, shift_px: int = 0, size: tuple[int, int] = (320, 180)) -> np.ndarray:
    """A blocky random picture (BGR uint8) in a palette of its own (a base colour plus up to 80
    levels per channel); shift_px pans it to the right."""
    rng = np.random.default_rng(seed)
    blocks = (rng.integers(0, 176, 3) + rng.integers(0, 80, (9, 17, 3))).astype(np.uint8)
    picture = np.repeat(np.repeat(blocks, 20, axis=0), 20, axis=1)
    return np.ascontiguousarray(picture[:size[1], shift_px:shift_px + size[0]])


def test_another_scene_is_a_cut_and_the_same_scene_is_not():
    a, b = frame_signature(_scene(1)), frame_signature(_scene(2))
    histogram, pixels = signature_change(a, b)
    assert histogram >= HISTOGRAM_CUT and pixels >= PIXEL_CUT and is_cut(a, b)
    assert signature_change(a, a) == (0.0, 0.0) and not is_cut(a, a)


def test_a_fast_pan_is_not_a_cut():
    still, panned = frame_signature(_scene(3)), frame_signature(_scene(3, shift_px=20))
    histogram, pixels = signature_change(still, panned)
    assert pixels >= PIXEL_CUT  # the picture moved a whole block
    assert histogram < HISTOGRAM_CUT and not is_cut(still, panned)  # its colours did not


def test_a_global_colour_shift_in_place_is_not_a_cut():
    picture = _scene(4).astype(np.int16)
    brighter = np.clip(picture + 12, 0, 255).astype(np.uint8)
    a, b = frame_signature(picture.astype(np.uint8)), frame_signature(brighter)
    histogram, pixels = signature_change(a, b)
    assert histogram >= HISTOGRAM_CUT and pixels < PIXEL_CUT and not is_cut(a, b)


def test_cuts_are_frame_numbers_and_failed_frames_are_stepped_over():
    scenes = {10: 1, 11: 1, 12: 2, 13: 2, 15: 2, 16: 3}  # 14 failed to decode
    signatures = {n: frame_signature(_scene(seed)) for n, seed in scenes.items()}
    assert find_cuts(signatures) == (12, 16)
    assert find_cuts({}) == () and find_cuts({3: signatures[10]}) == ()
    assert [shot_index(n, (12, 16)) for n in (10, 11, 12, 15, 16, 40)] == [0, 0, 1, 1, 2, 2]


@pytest.mark.parametrize("dtype,scale", [(np.uint16, 257.0), (np.float32, 1 / 255.0)])
def test_deep_frames_have_the_signature_of_their_8_bit_picture(dtype, scale):
    picture = _scene(5)
    deep = (picture.astype(np.float64) * scale).astype(dtype)
    with_alpha = np.concatenate([deep, np.zeros((*deep.shape[:2], 1), dtype)], axis=2)
    ref, sig = frame_signature(picture), frame_signature(with_alpha)
    assert np.abs(sig.thumbnail.astype(int) - ref.thumbnail).max() <= 1
    assert signature_change(ref, sig)[0] < 0.02


def test_signatures_pack_and_unpack_and_are_checked():
    signatures = {n: frame_signature(_scene(n)) for n in (3, 1, 2)}
    arrays = pack_signatures(signatures)
    assert signatures_problem(arrays) is None
    back = unpack_signatures(arrays)
    assert list(back) == [1, 2, 3]
    for n, sig in signatures.items():
        np.testing.assert_array_equal(back[n].histogram, sig.histogram)
        np.testing.assert_array_equal(back[n].thumbnail, sig.thumbnail)
    assert sig.histogram.shape == (3, 16) and sig.thumbnail.shape == (18, 32, 3)
    empty = pack_signatures({})
    assert signatures_problem(empty) is None and unpack_signatures(empty) == {}
    assert "lacks" in str(signatures_problem({"histograms": arrays["histograms"]}))
