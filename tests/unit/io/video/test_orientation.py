"""io.video.orientation: a box, a mask and the pixels around a paste found in the other orientation
agree with np.rot90 of the whole frame, for all four turns and odd sizes and positions."""

from __future__ import annotations

import numpy as np
import pytest

from facefuse.io.video.orientation import (
    stored_parts,
    turned,
    turned_box,
    turned_paste,
    turned_size,
)
from facefuse.types import Pasted, Roi

SIZES = ((37, 23), (16, 16), (1, 9))  # (width, height), odd and square
TURNS = (0, 1, 2, 3, -1, 5)


def _numbered(width: int, height: int) -> np.ndarray:
    """(height, width) int array, every pixel its own number."""
    return np.arange(width * height).reshape(height, width)


def _boxes(width: int, height: int) -> list[Roi]:
    rng = np.random.default_rng(width * 100 + height)
    boxes = [Roi(0, 0, width, height), Roi(0, 0, 1, 1), Roi(width - 1, height - 1, width, height)]
    for _ in range(20):
        x0, x1 = sorted(rng.integers(0, width + 1, 2))
        y0, y1 = sorted(rng.integers(0, height + 1, 2))
        boxes.append(Roi(int(x0), int(y0), int(x1) + (x1 == x0 < width),
                         int(y1) + (y1 == y0 < height)))
    return [box for box in boxes if not box.empty]


@pytest.mark.parametrize("turns", TURNS)
@pytest.mark.parametrize(("width", "height"), SIZES)
def test_a_turned_box_holds_the_same_pixels_as_the_turned_frame(width: int, height: int,
                                                                turns: int) -> None:
    frame = _numbered(width, height)
    turned = np.rot90(frame, turns)
    assert turned_size(width, height, turns) == (turned.shape[1], turned.shape[0])
    for box in _boxes(width, height):
        got = turned_box(box, width, height, turns)
        np.testing.assert_array_equal(turned[got.slices()], np.rot90(frame[box.slices()], turns))
        # and back again
        back_size = turned_size(width, height, turns)
        assert turned_box(got, *back_size, -turns) == box


@pytest.mark.parametrize("turns", TURNS)
def test_a_turned_paste_turns_its_mask_with_its_box(turns: int) -> None:
    width, height = 41, 29
    rng = np.random.default_rng(turns % 4)
    roi = Roi(3, 5, 20, 26)
    mask = rng.random((roi.y1 - roi.y0, roi.x1 - roi.x0)).astype(np.float32)
    whole = np.zeros((height, width), np.float32)
    whole[roi.slices()] = mask
    paste = turned_paste(Pasted(roi, mask), width, height, turns)
    expected = np.zeros_like(np.rot90(whole, turns))
    expected[paste.roi.slices()] = paste.mask
    np.testing.assert_array_equal(expected, np.rot90(whole, turns))
    assert paste.mask.dtype == np.float32


@pytest.mark.parametrize("turns", (1, 2, 3))
@pytest.mark.parametrize("origin", ((0, 0), (6, 4)))
def test_stored_parts_are_the_stored_frame_around_each_paste(turns: int,
                                                             origin: tuple[int, int]) -> None:
    """Pixels of an upright frame (or of the part of it from `origin`) around each paste, turned
    back: the stored frame's pixels there, clipped to the frame and to the part."""
    width, height, reach = 45, 31, 5
    upright = np.dstack([_numbered(width, height)] * 3)
    stored = np.rot90(upright, -turns)
    ox, oy = origin
    part = upright[oy:, ox:]
    pastes = [Pasted(Roi(0, 0, 9, 7), np.ones((7, 9), np.float32)),
              Pasted(Roi(20, 11, 33, 30), np.ones((19, 13), np.float32)),
              Pasted(Roi(40, 27, 45, 31), np.ones((4, 5), np.float32))]
    found = list(stored_parts(part, pastes, origin, (width, height), turns, reach))
    assert len(found) == len(pastes)
    for (pixels, (sx, sy), paste), original in zip(found, pastes, strict=True):
        assert pixels.flags.c_contiguous
        np.testing.assert_array_equal(pixels, stored[sy:sy + pixels.shape[0],
                                                     sx:sx + pixels.shape[1]])
        assert paste.roi == turned_box(original.roi, width, height, -turns)
        held = turned_box(Roi(max(ox, original.roi.x0 - reach), max(oy, original.roi.y0 - reach),
                              min(width, original.roi.x1 + reach),
                              min(height, original.roi.y1 + reach)), width, height, -turns)
        assert (sx, sy, sx + pixels.shape[1], sy + pixels.shape[0]) == (
            held.x0, held.y0, held.x1, held.y1)


def test_no_turn_passes_everything_as_it_is() -> None:
    frame = np.zeros((8, 8, 3), np.uint8)
    paste = Pasted(Roi(1, 1, 3, 3), np.ones((2, 2), np.float32))
    [(pixels, origin, same)] = stored_parts(frame, [paste], (2, 3), (10, 11), 4, 48)
    assert pixels is frame and origin == (2, 3) and same is paste


@pytest.mark.parametrize("turns", TURNS)
@pytest.mark.parametrize(("dtype", "channels"), [(np.uint8, 3), (np.uint8, None),
                                                 (np.uint16, 4), (np.float32, 1),
                                                 (np.int32, 3), (np.uint8, 5)])
def test_turned_pixels_are_np_rot90s_in_a_contiguous_array(turns: int, dtype: type,
                                                           channels: int | None) -> None:
    rng = np.random.default_rng(7)
    shape = (23, 37) if channels is None else (23, 37, channels)
    whole = rng.integers(0, 200, shape).astype(dtype)
    for pixels in (whole, whole[3:20, 5:30]):  # a view with strides too
        got = turned(pixels, turns)
        assert got.flags.c_contiguous and got.dtype == pixels.dtype
        np.testing.assert_array_equal(got, np.rot90(pixels, turns))
        assert turns % 4 == 0 or not np.shares_memory(got, pixels)
