import numpy as np
import pytest

from facefuse import masks


def test_box_mask_is_zero_at_the_border_and_one_in_the_middle():
    m = masks.box_mask(128, blur=0.3)
    assert m.dtype == np.float32 and m.shape == (128, 128)
    assert m[0].max() == 0 and m[:, 0].max() == 0 and m[-1].max() == 0 and m[:, -1].max() == 0
    assert m[64, 64] > 0.999
    # monotone from the edge to the centre along the middle row
    assert np.all(np.diff(m[64, :64]) >= -1e-6)


def test_box_mask_without_blur_is_a_hard_box():
    m = masks.box_mask(64, blur=0.0)
    assert set(np.unique(m).tolist()) == {0.0, 1.0}
    assert m[1:-1, 1:-1].min() == 1.0


def test_padding_cuts_the_named_side():
    m = masks.box_mask(100, blur=0.0, padding=(0.0, 0.0, 0.5, 0.0))
    assert m[60:, :].max() == 0.0 and m[10:45, 10:90].min() == 1.0


def test_landmark_hull_covers_the_features_not_the_corners():
    from facefuse.geometry import template_points

    kps = template_points("arcface_128", 128)
    m = masks.landmark_hull_mask(kps, 128)
    for x, y in kps.astype(int):
        assert m[y, x] > 0.9
    assert m[0, 0] == 0 and m[127, 127] == 0 and m[127, 0] == 0


def test_combine_is_the_per_pixel_minimum():
    a = np.array([[0.2, 0.9]], np.float32)
    b = np.array([[0.5, 0.1]], np.float32)
    np.testing.assert_array_equal(masks.combine_masks(a, b), np.array([[0.2, 0.1]], np.float32))


# -- the mask models' post-processing (issue 12) -------------------------------------------

def test_a_softened_model_mask_keeps_the_region_and_is_exactly_zero_outside() -> None:
    raw = np.zeros((128, 128), np.float32)
    raw[30:90, 40:100] = 1.0
    soft = masks.soften_model_mask(raw)
    assert soft.dtype == np.float32 and soft.min() == 0.0
    assert soft[60, 70] == pytest.approx(1.0, abs=1e-4)  # well inside: 1
    outside = np.ones_like(raw, bool)
    outside[30:90, 40:100] = False
    assert soft[outside].max() == 0.0  # the blur crosses 0.5 on the edge: nothing grows
    assert 0.0 < soft[31, 70] < 1.0  # a soft inside edge
    kept = masks.keep_out(raw)  # 0 over the region (corners soften)
    assert kept[35:85, 45:95].max() == 0.0 and kept[5, 5] == pytest.approx(1.0, abs=1e-4)
    assert 0.0 < kept[28, 70] < 1.0  # the soft edge lies outside the region
    np.testing.assert_array_equal(masks.soften_model_mask(np.ones((64, 64), np.float32)), 1.0)
