"""BGR -> YUV rounded once, for the writer: io.video.yuv's matrix inverted, the chroma subsampled
at the siting the reader reads (subsample_chroma), and pasted samples written into decoded
planes (paste_into_planes) as the whole-frame conversion would give them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import cv2
import numpy as np

from .yuv import (
    PLANAR,
    PLANAR_10BIT,
    RANGE_JPEG,
    STRIP_ROWS,
    WRITER_FORMATS,
    YuvMatrix,
    matrix_for,
    picture_planes,
)


def bgr_to_yuv444(bgr: np.ndarray, matrix: YuvMatrix, bits: int = 8,
                  out: Sequence[np.ndarray] | None = None) -> Sequence[np.ndarray]:
    """Three (H, W) planes Y, Cb, Cr of a BGR (H, W, 3) image, uint8 (0..255 is 0..1) or uint16
    (0..65535), each value the inverse formula rounded to the nearest level and clipped.
    bits: 8 gives uint8 planes; 10 gives uint16 planes of 10-bit levels (limited range: four
    times the 8-bit levels, Y 64..940). out: three planes to fill (e.g. views of a picture's
    buffers) instead of new ones. Converted in bands of rows, which stay in the CPU's cache."""
    coefficients = matrix.from_bgr()
    if bgr.dtype == np.uint16:
        coefficients[:, :3] /= 257.0
    if bits == 10:
        coefficients *= 4.0
    coefficients = coefficients.astype(np.float32)
    height, width = bgr.shape[:2]
    dtype = np.uint8 if bits == 8 else np.uint16
    planes = out if out is not None else [np.empty((height, width), dtype) for _ in range(3)]
    # No clipping is needed: from 0..1 BGR, Y, Cb and Cr land in 16..240 (limited range) or
    # 0.5..255.5 (full range), so only float noise can fall below 0 (convertScaleAbs takes the
    # absolute value, np.rint gives -0.0: both round it to 0) and 8-bit's 255.5 saturates.
    for top in range(0, height, STRIP_ROWS):
        rows = slice(top, top + STRIP_ROWS)
        strip = cv2.transform(bgr[rows].astype(np.float32), coefficients)
        levels = cv2.convertScaleAbs(strip) if bits == 8 else np.rint(strip, out=strip)
        for plane, values in zip(planes, cv2.split(levels), strict=True):
            np.copyto(plane[rows], values, casting="unsafe")
    return planes


def bgr_to_picture(bgr: np.ndarray, pixel_format: str, colorspace: int,
                   full_range: bool) -> Any | None:
    """An av.VideoFrame of ``pixel_format`` holding a BGR (H, W, 3) frame, converted with the
    matrix ``colorspace`` (AVColorSpace) names and tagged with it; chroma is subsampled at the
    MPEG-2 siting (subsample_chroma). 8-bit formats take uint8 frames, the 10-bit limited-range
    ones of WRITER_FORMATS uint16 frames and uint8 ones (an 8-bit clip written to ProRes). None
    for another format, matrix or frame."""
    import av

    bits, step = WRITER_FORMATS.get(pixel_format, (8, None))
    matrix = matrix_for(colorspace, RANGE_JPEG if full_range else 1, pixel_format)
    taken = (np.uint8,) if bits == 8 else (np.uint8, np.uint16)
    if (step is None or matrix is None or bgr.dtype not in taken or bgr.shape[2] != 3
            or (bits == 10 and full_range)):
        return None
    height, width = bgr.shape[:2]
    picture = av.VideoFrame(width, height, pixel_format)
    bgr_to_planes(bgr, matrix, bits, step, picture_planes(picture))
    # tagged as converted: a yuvj format is full range whatever full_range says
    picture.colorspace, picture.color_range = colorspace, RANGE_JPEG if matrix.full_range else 1
    return picture


def bgr_to_planes(bgr: np.ndarray, matrix: YuvMatrix, bits: int, step: tuple[int, int],
                  out: Sequence[np.ndarray]) -> None:
    """Fill ``out`` (Y, Cb, Cr planes: uint8 for 8 bits, uint16 for 10) with BGR (H, W, 3):
    bgr_to_yuv444's values, the chroma then subsampled by ``step`` (across, down) with
    subsample_chroma (an odd size takes ceil(W / across) x ceil(H / down) chroma samples).
    Converted in bands of STRIP_ROWS rows, so the full-resolution chroma never exists whole
    (it stays in the CPU's cache)."""
    if step == (1, 1):
        bgr_to_yuv444(bgr, matrix, bits, out=out)
        return
    dtype = np.uint8 if bits == 8 else np.uint16
    band = [np.empty((min(STRIP_ROWS, bgr.shape[0]), bgr.shape[1]), dtype) for _ in range(2)]
    down = step[1]
    for top in range(0, bgr.shape[0], STRIP_ROWS):
        rows = bgr[top:top + STRIP_ROWS]
        chroma = [plane[:rows.shape[0]] for plane in band]
        bgr_to_yuv444(rows, matrix, bits, out=[out[0][top:top + STRIP_ROWS], *chroma])
        for full, plane in zip(chroma, out[1:], strict=True):
            subsample_chroma(full, step, plane[top // down:-(-(top + rows.shape[0]) // down)])


def subsample_chroma(plane: np.ndarray, step: tuple[int, int], out: np.ndarray) -> None:
    """A full-resolution Cb or Cr plane (H, W; uint8, or uint16 of 10-bit levels) subsampled
    2:1 across and, for step (2, 2), 2:1 down into ``out``, at the siting H.264, HEVC, ProRes and
    DNxHR mean (and the reader reads them with): across, on the even luma columns, [1 2 1] / 4
    (the column left of the first repeats it); down, midway between rows 2j and 2j + 1,
    [1 1] / 2; an odd last column or row repeats itself too. Rounded once, halves up. A read
    (linear upsampling at the same siting) and write cycle then filters chroma by [1 6 1] / 8
    each way and never moves it; swscale, which PyAV cannot tell the siting, averages column
    pairs, a quarter sample to the right each write. Each sample depends on luma columns
    2i - 1 .. 2i + 1 only, so a box with a column of margin left of its first sample converts
    as the whole frame does there."""
    across, down = step
    if across != 2 or down not in (1, 2):
        raise ValueError(f"chroma subsampling {across}x{down} is not 4:2:0 or 4:2:2")
    height, width = plane.shape
    if width % 2 or (down == 2 and height % 2):
        plane = cv2.copyMakeBorder(plane, 0, height % 2 if down == 2 else 0, 0, width % 2,
                                   cv2.BORDER_REPLICATE)
    # rows 2j and 2j + 1 summed (OpenCV takes row strides without a copy; column strides not)
    rows = cv2.add(plane[0::2], plane[1::2], dtype=cv2.CV_16U) if down == 2 else plane
    # the even and odd columns, as the two channels of the rows (strided numpy passes are slow)
    even, odd = cv2.split(np.ascontiguousarray(rows).reshape(rows.shape[0], -1, 2))
    left = np.empty_like(odd)  # column 2i - 1, the first column repeating itself
    left[:, 0], left[:, 1:] = even[:, 0], odd[:, :-1]
    sums: np.ndarray = cv2.add(cv2.add(even, even, dtype=cv2.CV_16U),
                               cv2.add(odd, left, dtype=cv2.CV_16U))
    shift = down + 1  # the weights sum to 8 (4:2:0) or 4 (4:2:2); 10-bit sums stay < 2**14
    sums += np.uint16(1 << (shift - 1))
    sums >>= shift
    np.copyto(out, sums, casting="unsafe")


# Pasting into decoded planes ---------------------------------------------------------------------
# Luma pixels of frame around a changed box that its conversion also reads: subsample_chroma
# reads one column left of a sample's footprint, so 8 is ample.
_BOX_MARGIN_PX = 8
# Boxes are converted in whole steps of this many pixels: a chroma footprint (2) at least.
_BOX_STEP_PX = 2
# How far from the changed pixels paste_into_planes may read `bgr`: the margin, then the box
# rounded up to whole steps (which, at the frame's far edge, moves the box back): at most
# 2 * margin + step (tests/unit/io/video/test_frame.py checks _box_span against it).
PASTE_REACH_PX = 2 * _BOX_MARGIN_PX + _BOX_STEP_PX


def paste_into_planes(planes: Sequence[np.ndarray], bgr: np.ndarray, x0: int, y0: int,
                      changed: np.ndarray, pixel_format: str, matrix: YuvMatrix,
                      origin_xy: tuple[int, int] = (0, 0)) -> None:
    """Write into ``planes`` (writable Y, Cb, Cr of a ``pixel_format`` picture of PLANAR the
    size of ``bgr``: uint8, or uint16 levels for a 10-bit format) the samples that ``changed``
    (bool (h, w), the frame pixels from (x0, y0) that a paste wrote) touches: luma where
    ``changed``, chroma where the sample's footprint (its 2x2, 2x1 or 1x1 luma pixels) holds a
    changed pixel. The values are those bgr_to_picture gives for the whole BGR frame ``bgr``
    (uint8; uint16 for a 10-bit format) with ``matrix``: the matrix rounded once, then
    subsample_chroma, run over the changed box widened by a margin the filter does not see past
    (so the samples equal the whole frame's conversion exactly). origin_xy: the frame pixel where
    ``bgr`` starts when it holds only part of the frame (then it must hold every pixel within
    PASTE_REACH_PX of the changed ones, or up to the frame's edge: ValueError otherwise)."""
    rows, cols = np.flatnonzero(changed.any(axis=1)), np.flatnonzero(changed.any(axis=0))
    if rows.size == 0:
        return
    top, left = y0 + int(rows[0]), x0 + int(cols[0])  # the changed pixels' box
    bottom, right = y0 + int(rows[-1]) + 1, x0 + int(cols[-1]) + 1
    sx, sy = PLANAR[pixel_format]
    height, width = planes[0].shape[:2]
    bx0, bx1 = _box_span(left, right, sx, width)
    by0, by1 = _box_span(top, bottom, sy, height)
    ox, oy = origin_xy
    if bx0 < ox or by0 < oy or bx1 > ox + bgr.shape[1] or by1 > oy + bgr.shape[0]:
        raise ValueError(f"the BGR part at {origin_xy} does not hold the box "
                         f"({bx0}, {by0})-({bx1}, {by1}) a paste converts")
    box = _subsampled(np.ascontiguousarray(bgr[by0 - oy:by1 - oy, bx0 - ox:bx1 - ox]),
                      (sx, sy), matrix, 10 if pixel_format in PLANAR_10BIT else 8)
    where = np.zeros((by1 - by0, bx1 - bx0), bool)
    where[top - by0:bottom - by0, left - bx0:right - bx0] = changed[
        rows[0]:rows[-1] + 1, cols[0]:cols[-1] + 1]
    np.copyto(planes[0][by0:by1, bx0:bx1], box[0], where=where)
    footprint = where.reshape(where.shape[0] // sy, sy, where.shape[1] // sx, sx).any(axis=(1, 3))
    chroma = slice(by0 // sy, by1 // sy), slice(bx0 // sx, bx1 // sx)
    for plane, values in zip(planes[1:], box[1:], strict=True):
        np.copyto(plane[chroma], values, where=footprint)


def _box_span(start: int, stop: int, step: int, size: int) -> tuple[int, int]:
    """[start, stop) widened to whole chroma footprints (`step` luma pixels), the margin and a
    whole number of _BOX_STEP_PX, within 0..size (a multiple of `step`)."""
    low = max(0, start // step * step - _BOX_MARGIN_PX)
    length = -(-(-(-stop // step) * step + _BOX_MARGIN_PX - low) // _BOX_STEP_PX) * _BOX_STEP_PX
    high = min(size, low + length)
    return max(0, high - length), high


def _subsampled(bgr: np.ndarray, step: tuple[int, int], matrix: YuvMatrix,
                bits: int) -> list[np.ndarray]:
    """The Y, Cb, Cr planes of BGR (h, w, 3; uint8 for 8 bits, uint16 for 10) with chroma
    subsampling `step`, as bgr_to_picture makes them."""
    height, width = bgr.shape[:2]
    across, down = step
    dtype = np.uint8 if bits == 8 else np.uint16
    planes = [np.empty((height, width), dtype)] + [
        np.empty((height // down, width // across), dtype) for _ in range(2)]
    bgr_to_planes(bgr, matrix, bits, step, planes)
    return planes
