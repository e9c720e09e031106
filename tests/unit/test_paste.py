import numpy as np
import pytest

from facefuse import geometry, paste
from facefuse.masks import box_mask

PEAK = {np.uint8: 255, np.uint16: 65535, np.float32: 1.0}


def _frame(dtype, channels, seed=0):
    rng = np.random.default_rng(seed)
    values = rng.uniform(0, 1, size=(300, 400, channels)) * PEAK[dtype]
    if dtype == np.float32:
        values[0, 0, 0] = 7.5  # HDR value outside the face must survive
        return values.astype(np.float32)
    return values.astype(dtype)


def _face_matrix():
    kps = geometry.template_points("arcface_128", 128) * 1.2 + [150.0, 90.0]
    return geometry.frame_to_crop_matrix(kps, "arcface_128", 128)


@pytest.mark.parametrize("dtype", [np.uint8, np.uint16, np.float32])
@pytest.mark.parametrize("channels", [3, 4])
def test_only_the_roi_changes_and_alpha_is_untouched(dtype, channels):
    frame = _frame(dtype, channels)
    original = frame.copy()
    matrix = _face_matrix()
    crop = np.full((128, 128, 3), (10.0, 200.0, 90.0), np.float32)
    out = paste.paste_back(frame, crop, box_mask(128), matrix)
    np.testing.assert_array_equal(frame, original)  # input untouched
    assert out.dtype == frame.dtype and out.shape == frame.shape
    roi = paste.crop_roi(frame.shape, 128, geometry.invert_affine(matrix))
    outside = np.ones(frame.shape[:2], bool)
    outside[roi.slices()] = False
    np.testing.assert_array_equal(out[outside], frame[outside])
    if channels == 4:
        np.testing.assert_array_equal(out[..., 3], frame[..., 3])
    # the centre of the face takes the crop colour, in the frame's own scale
    centre = geometry.transform_points([[64.0, 64.0]], geometry.invert_affine(matrix))[0]
    cx, cy = round(centre[0]), round(centre[1])
    expected = np.array([10.0, 200.0, 90.0]) * paste.frame_scale(np.dtype(dtype))
    np.testing.assert_allclose(out[cy, cx, :3].astype(float), expected,
                               atol=PEAK[dtype] / 255 * 0.51 + 1e-6)


@pytest.mark.parametrize("dtype", [np.uint8, np.uint16, np.float32])
def test_zero_mask_changes_nothing_at_all(dtype):
    frame = _frame(dtype, 3, seed=2)
    out = paste.paste_back(frame, np.full((128, 128, 3), 255, np.float32),
                           np.zeros((128, 128), np.float32), _face_matrix())
    np.testing.assert_array_equal(out, frame)


def test_roi_is_small_and_clipped_to_the_frame():
    matrix = _face_matrix()
    roi = paste.crop_roi((300, 400, 3), 128, geometry.invert_affine(matrix))
    assert 0 <= roi.x0 < roi.x1 <= 400 and 0 <= roi.y0 < roi.y1 <= 300
    assert (roi.x1 - roi.x0) * (roi.y1 - roi.y0) < 0.5 * 300 * 400
    off_frame = matrix.copy()
    off_frame[:, 2] += 5000  # the crop maps far outside the frame
    frame = _frame(np.uint8, 3)
    out = paste.paste_back(frame, np.zeros((128, 128, 3), np.float32), box_mask(128), off_frame)
    np.testing.assert_array_equal(out, frame)


def test_paste_into_returns_the_mask_it_used():
    frame = _frame(np.uint8, 3)
    roi, roi_mask = paste.paste_into(frame, np.zeros((128, 128, 3), np.float32), box_mask(128),
                                     _face_matrix())
    assert roi_mask.shape == (roi.y1 - roi.y0, roi.x1 - roi.x0)
    assert roi_mask.max() > 0.99 and roi_mask[0, 0] == 0
