"""io.plates.pixels.pick_channels: the channel mixer gives exactly what numpy's indexing gives."""

import numpy as np
import pytest

from facefuse.io.plates.pixels import frame_to_pixels, pick_channels, pixels_to_frame


@pytest.mark.parametrize("dtype", [np.uint8, np.uint16, np.float32])
@pytest.mark.parametrize("channels, order", [(3, (2, 1, 0)), (4, (2, 1, 0, 3)), (1, (0, 0, 0)),
                                             (2, (0, 0, 0, 1)), (6, (5, 3, 1, 0))])
def test_pick_channels_equals_indexing(dtype, channels, order):
    rng = np.random.default_rng(channels)
    pixels = (rng.random((37, 53, channels)) * 60000).astype(dtype)
    picked = pick_channels(pixels, order)
    assert picked.dtype == pixels.dtype and picked.flags.c_contiguous
    np.testing.assert_array_equal(picked, pixels[..., list(order)])


def test_pick_channels_takes_a_strided_view_and_leaves_it_alone():
    frame = np.arange(2 * 40 * 30 * 3, dtype=np.uint16).reshape(80, 30, 3)[::2]
    before = frame.copy()
    np.testing.assert_array_equal(pick_channels(frame, (2, 1, 0)), frame[..., ::-1])
    np.testing.assert_array_equal(frame, before)


def test_plate_round_trip_reorders_both_ways():
    frame = np.random.default_rng(1).integers(0, 256, (9, 11, 4), dtype=np.uint8)
    pixels = frame_to_pixels(frame, grey=False, alpha=True, pixel_type="uint8", bits=8)
    np.testing.assert_array_equal(pixels, frame[..., [2, 1, 0, 3]])
    back = pixels_to_frame(pixels, ("R", "G", "B", "A"), 3)
    np.testing.assert_array_equal(back, frame)
    grey = pixels_to_frame(pixels[..., 0], ("Y",), -1)
    np.testing.assert_array_equal(grey, np.repeat(pixels[..., :1], 3, axis=2))
