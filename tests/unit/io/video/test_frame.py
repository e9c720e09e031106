"""io.video.frame: a region of an unconverted frame holds the whole conversion's pixels, and
to_ndarray() is the whole frame with the region's pastes; each conversion is made once;
pixels_for covers what the writer reads around the pastes (io.video.yuv_write.PASTE_REACH_PX,
checked against the writer's own box arithmetic), and paste_into_planes from a region gives
the planes it gives from the whole frame."""

from __future__ import annotations

import av
import numpy as np
import pytest

from facefuse.io.video import DecodedFrame, yuv_write
from facefuse.io.video.yuv import matrix_for, picture_planes
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


def _pending(picture: av.VideoFrame, turns: int = 0) -> DecodedFrame:
    frame = DecodedFrame.of_picture(picture, "bgr24", turns)
    assert frame.by_parts
    return frame


def _whole(picture: av.VideoFrame, turns: int = 0) -> np.ndarray:
    """The whole conversion, by a frame of its own (a frame's regions then come from it)."""
    return DecodedFrame.of_picture(picture, "bgr24", turns).to_ndarray()


@pytest.mark.parametrize("box", [Roi(0, 0, WIDTH, HEIGHT), Roi(3, 7, 61, 90),
                                 Roi(150, 101, WIDTH, HEIGHT), Roi(0, 33, 17, 34)])
def test_a_region_holds_the_whole_conversion_and_whole_puts_it_back(box: Roi) -> None:
    pending = _pending(_picture())
    whole = _whole(_picture())
    region = pending.region(box)
    assert region is not None
    np.testing.assert_array_equal(region.pixels, whole[box.slices()])
    assert pending.shape == whole.shape and region.part.origin_xy == (box.x0, box.y0)
    region.pixels[...] = 7  # a paste
    again = pending.to_ndarray()
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
    picture = _picture(turns)
    pending = _pending(picture, turns)
    whole = _whole(picture, turns)
    np.testing.assert_array_equal(whole, np.rot90(_whole(picture), turns))
    assert (pending.width, pending.height) == (whole.shape[1], whole.shape[0])
    inside = Roi(box.x0, box.y0, min(box.x1, pending.width), min(box.y1, pending.height))
    region = pending.region(inside)
    assert region is not None
    assert region.pixels.flags.c_contiguous and pending.shape == whole.shape
    np.testing.assert_array_equal(region.pixels, whole[inside.slices()])
    region.pixels[...] = 3
    again = pending.to_ndarray()
    assert (again[inside.slices()] == 3).all()
    again[inside.slices()] = whole[inside.slices()]
    np.testing.assert_array_equal(again, whole)


def test_a_frame_not_asked_converts_nothing_and_counts_its_planes() -> None:
    picture = _picture()
    pending = _pending(picture)
    assert pending.converted() is None
    assert pending.nbytes == sum(p.buffer_size for p in picture.planes)
    np.testing.assert_array_equal(pending.to_ndarray(), _whole(picture))


def test_each_conversion_is_made_once() -> None:
    big = av.VideoFrame(1280, 720, "yuv420p")
    big.colorspace, big.color_range = _BT709, _LIMITED
    frame = DecodedFrame.of_picture(big, "bgr24")
    small = frame.small(640)
    assert small is not None and frame.small(640) is small
    assert frame.planes() is frame.planes() and frame.planes() is not None
    box = Roi(10, 20, 90, 70)
    region = frame.region(box)
    assert region is not None and frame.region(box) is region and frame.converted() is region
    whole = frame.to_ndarray()
    assert frame.to_ndarray() is whole and not frame.by_parts
    view = frame.region(box)  # the whole frame converted: a region is a view of it
    assert view is not None and np.shares_memory(view.pixels, whole)
    kept = frame.converted()
    assert kept is not None and kept.whole and kept.pixels is whole


def test_dropping_the_planes_keeps_the_conversion_with_its_pastes_alone() -> None:
    picture = _picture()
    frame = _pending(picture)
    region = frame.region(Roi(3, 7, 61, 90))
    assert region is not None and frame.planes() is not None
    region.pixels[...] = 5  # a paste
    frame.drop_planes()
    whole = frame.to_ndarray()
    assert (whole[region.box.slices()] == 5).all()
    assert frame.planes() is None and frame.small(50) is None and not frame.by_parts
    assert frame.nbytes == whole.nbytes
    kept = frame.converted()
    assert kept is not None and kept.whole and kept.pixels is whole


def test_an_array_frame_is_its_array() -> None:
    array = np.arange(6 * 8 * 3, dtype=np.uint8).reshape(6, 8, 3)
    frame = DecodedFrame.of_array(array)
    assert frame.to_ndarray() is array and frame.shape == (6, 8, 3) and frame.dtype == np.uint8
    assert frame.planes() is None and frame.small(4) is None and not frame.by_parts
    whole = frame.pixels_for(Roi(1, 1, 3, 3))
    assert whole.whole and whole.pixels is array
    assert frame.nbytes == array.nbytes


def test_the_writer_reads_no_further_than_paste_reach() -> None:
    reach = 0
    for step in (1, 2):
        for size in range(10 * step, 160, step):
            for start in range(0, size, 3):
                for stop in range(start + 1, size + 1, 2):
                    low, high = yuv_write._box_span(start, stop, step, size)
                    reach = max(reach, start - low, high - stop)
    assert 0 < reach <= yuv_write.PASTE_REACH_PX


def test_pixels_for_widens_by_the_reach_within_the_frame() -> None:
    reach = yuv_write.PASTE_REACH_PX
    inside = _pending(_picture()).pixels_for(Roi(60, 60, 120, 90)).box
    assert inside.x0 <= 60 - reach and inside.y0 <= 60 - reach
    assert inside.x1 >= 120 + reach and inside.y1 >= 90 + reach
    full = _pending(_picture()).pixels_for(Roi(reach, reach, WIDTH - reach, HEIGHT - reach))
    assert full.box == Roi(0, 0, WIDTH, HEIGHT)


def test_pasting_from_a_region_writes_the_planes_the_whole_frame_does() -> None:
    picture = _picture(1)
    pending = _pending(picture)
    matrix = matrix_for(_BT709, _LIMITED, "yuv420p")
    assert matrix is not None
    changed = np.zeros((40, 30), bool)
    changed[5:33, 3:27] = True
    x0, y0 = 151, 3  # a paste near the right edge
    footprint = Roi(x0, y0, x0 + 30, y0 + 40)
    region = pending.pixels_for(footprint)
    whole = _whole(picture)
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


@pytest.mark.parametrize("fmt", ["yuv420p", "yuv422p", "yuv444p", "yuv420p10le", "yuv422p10le"])
@pytest.mark.parametrize("turns", [0, 1, 2, 3])
def test_the_whole_frame_after_a_region_is_the_whole_conversion(fmt: str, turns: int) -> None:
    """to_ndarray() after a region converts only the rest around it (each pixel once): the
    same frame as converting the whole picture, for boxes at odd and even coordinates."""
    rng = np.random.default_rng(turns)
    picture = av.VideoFrame(WIDTH, HEIGHT, fmt)
    deep = fmt.endswith("10le")
    for plane in picture_planes(picture):
        plane[...] = rng.integers(64 if deep else 16, 941 if deep else 236, plane.shape)
    picture.colorspace, picture.color_range = _BT709, _LIMITED
    array_format = "bgr48le" if deep else "bgr24"
    whole = DecodedFrame.of_picture(picture, array_format, turns).to_ndarray()
    height, width = whole.shape[:2]
    for box in (Roi(0, 0, width, height), Roi(3, 7, 61, 90), Roi(0, 0, 1, 1),
                Roi(width - 5, height - 3, width, height), Roi(1, 1, width - 1, height - 1)):
        frame = DecodedFrame.of_picture(picture, array_format, turns)
        assert frame.region(box) is not None
        np.testing.assert_array_equal(frame.to_ndarray(), whole, err_msg=f"{box}")
