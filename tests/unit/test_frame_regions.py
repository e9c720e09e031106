"""io.frame_regions: a region of a pending (unconverted) frame holds the whole conversion's
pixels, its whole() is the whole frame with the region's pastes; converted_box covers what
the writer reads around the pastes (io.yuv_write.PASTE_REACH_PX, checked against the writer's own
box arithmetic), and paste_into_planes from a region gives the planes it gives from the whole
frame."""

from __future__ import annotations

import av
import numpy as np
import pytest

from facefuse.io.video import yuv_write
from facefuse.io.video.frame_regions import PendingFrame, converted_box
from facefuse.io.video.yuv import matrix_for, picture_planes, yuv_planes
from facefuse.io.video.yuv_write import paste_into_planes
from facefuse.types import Roi

_BT709, _LIMITED = 1, 1
WIDTH, HEIGHT = 200, 150


def _picture(seed: int = 0) -> av.VideoFrame:
    rng = np.random.default_rng(seed)
    picture = av.VideoFrame(WIDTH, HEIGHT, "yuv420p")
    for plane in picture_planes(picture):
        plane[...] = rng.integers(16, 236, plane.shape, dtype=np.uint8)
    picture.colorspace, picture.color_range = _BT709, _LIMITED
    return picture


def _pending(picture: av.VideoFrame) -> PendingFrame:
    planes = yuv_planes(picture)
    assert planes is not None
    return PendingFrame(planes)


@pytest.mark.parametrize("box", [Roi(0, 0, WIDTH, HEIGHT), Roi(3, 7, 61, 90),
                                 Roi(150, 101, WIDTH, HEIGHT), Roi(0, 33, 17, 34)])
def test_a_region_holds_the_whole_conversion_and_whole_puts_it_back(box: Roi) -> None:
    pending = _pending(_picture())
    whole = pending.whole()
    region = pending.region(box)
    np.testing.assert_array_equal(region.pixels, whole[box.slices()])
    assert region.shape == whole.shape and region.part.origin_xy == (box.x0, box.y0)
    region.pixels[...] = 7  # a paste
    again = region.whole()
    assert (again[box.slices()] == 7).all()
    outside = np.ones((HEIGHT, WIDTH), bool)
    outside[box.slices()] = False
    np.testing.assert_array_equal(again[outside], whole[outside])


@pytest.mark.parametrize("turns", [1, 2, 3])
@pytest.mark.parametrize("box", [Roi(0, 0, 9, 5), Roi(3, 7, 61, 90), Roi(101, 119, 150, 200)])
def test_a_turned_frame_converts_the_stored_box_and_turns_it_upright(turns: int,
                                                                     box: Roi) -> None:
    """A picture stored sideways: the frame is the whole conversion turned upright (as the
    reader's), and a region of the upright frame the same pixels, from the stored box alone."""
    planes = yuv_planes(_picture(turns))
    assert planes is not None
    pending = PendingFrame(planes, turns)
    whole = pending.whole()
    np.testing.assert_array_equal(whole, np.rot90(PendingFrame(planes).whole(), turns))
    assert (pending.width, pending.height) == (whole.shape[1], whole.shape[0])
    inside = Roi(box.x0, box.y0, min(box.x1, pending.width), min(box.y1, pending.height))
    region = pending.region(inside)
    assert region.pixels.flags.c_contiguous and region.shape == whole.shape
    np.testing.assert_array_equal(region.pixels, whole[inside.slices()])
    region.pixels[...] = 3
    again = region.whole()
    assert (again[inside.slices()] == 3).all()
    again[inside.slices()] = whole[inside.slices()]
    np.testing.assert_array_equal(again, whole)


def test_an_empty_region_converts_nothing_and_counts_no_planes() -> None:
    pending = _pending(_picture())
    region = pending.empty_region()
    assert region.pixels.size == 0 and region.box.empty and pending.nbytes == 0
    np.testing.assert_array_equal(region.whole(), pending.whole())


def test_the_writer_reads_no_further_than_paste_reach() -> None:
    reach = 0
    for step in (1, 2):
        for size in range(10 * step, 160, step):
            for start in range(0, size, 3):
                for stop in range(start + 1, size + 1, 2):
                    low, high = yuv_write._box_span(start, stop, step, size)
                    reach = max(reach, start - low, high - stop)
    assert 0 < reach <= yuv_write.PASTE_REACH_PX


def test_converted_box_widens_by_the_reach_within_the_frame() -> None:
    reach = yuv_write.PASTE_REACH_PX
    inside = converted_box(Roi(60, 60, 120, 90), WIDTH, HEIGHT)
    assert inside.x0 <= 60 - reach and inside.y0 <= 60 - reach
    assert inside.x1 >= 120 + reach and inside.y1 >= 90 + reach
    assert converted_box(Roi(reach, reach, WIDTH - reach, HEIGHT - reach), WIDTH,
                         HEIGHT) == Roi(0, 0, WIDTH, HEIGHT)


def test_pasting_from_a_region_writes_the_planes_the_whole_frame_does() -> None:
    picture = _picture(1)
    pending = _pending(picture)
    matrix = matrix_for(_BT709, _LIMITED, "yuv420p")
    assert matrix is not None
    changed = np.zeros((40, 30), bool)
    changed[5:33, 3:27] = True
    x0, y0 = 151, 3  # a paste near the right edge
    footprint = Roi(x0, y0, x0 + 30, y0 + 40)
    region = pending.region(converted_box(footprint, WIDTH, HEIGHT))
    whole = pending.whole()
    for frame in (whole, region.pixels):  # the same paste into both
        rows = slice(y0 - (0 if frame is whole else region.box.y0), None)
        cols = slice(x0 - (0 if frame is whole else region.box.x0), None)
        frame[rows, cols][:40, :30][changed] = (250, 10, 120)
    planes = {}
    for name, frame, origin in (("whole", whole, (0, 0)),
                                ("region", region.pixels, region.part.origin_xy)):
        planes[name] = [p.copy() for p in picture_planes(picture)]
        paste_into_planes(planes[name], frame, x0, y0, changed, "yuv420p", matrix,
                          origin_xy=origin)
    for got, want, source in zip(planes["region"], planes["whole"], picture_planes(picture)):
        np.testing.assert_array_equal(got, want)
        assert (got != source).any()
    short = region.pixels[:, :x0 + 27 - region.box.x0]  # ends at the changed pixels
    with pytest.raises(ValueError, match="does not hold"):
        paste_into_planes(planes["region"], short, x0, y0, changed, "yuv420p", matrix,
                          origin_xy=region.part.origin_xy)


def test_enclosing_bounds_the_non_empty_boxes() -> None:
    from facefuse.types import Roi, enclosing

    assert enclosing([]) is None and enclosing([Roi(5, 5, 5, 9)]) is None
    assert enclosing([Roi(10, 20, 30, 40), Roi(0, 25, 12, 50), Roi(99, 99, 99, 99)]) == Roi(
        0, 20, 30, 50)
