"""The reader's YUV -> BGR conversion as io.video.yuv computed it one float32 step at a time,
strip by strip (chroma upsampled to luma resolution, then the matrix): the reference that
io.video.yuv's conversion is held bit-identical to (test_yuv_exact)."""

from __future__ import annotations

import cv2
import numpy as np

from facefuse.io.video.yuv import Box, YuvPlanes, _centred_weights

STRIP_ROWS = 64


def reference_bgr(planes: YuvPlanes, box: Box | None = None,
                  out: np.ndarray | None = None) -> np.ndarray:
    """io.video.yuv.yuv_to_bgr(planes, box, out), one float32 step at a time."""
    height, width = planes.y.shape
    x0, y0, x1, y1 = box if box is not None else (0, 0, width, height)
    left, top = x0 - x0 % planes.across, y0 - y0 % planes.down
    deep = planes.bits == 10
    if out is not None and (left, top) != (x0, y0):
        raise ValueError(f"a box converted into `out` starts on the chroma grid, not at {x0, y0}")
    if out is None:
        out = np.empty((y1 - top, x1 - left, 3), np.uint16 if deep else np.uint8)
    weights = _centred_weights(planes.matrix, planes.bits)
    for first in range(top, y1, STRIP_ROWS):
        last = min(first + STRIP_ROWS, y1)
        luma, band = planes.y[first:last, left:x1], out[first - top:last - top]
        cb, cr = (_upsampled(plane, planes, (left, first, x1, last))
                  for plane in (planes.cb, planes.cr))
        _matrix_into(luma, cb, cr, weights, band)
    return out[y0 - top:, x0 - left:]


def _upsampled(plane: np.ndarray, planes: YuvPlanes, box: Box) -> np.ndarray:
    """The chroma `plane` less its zero (128; 10-bit 512) at luma resolution over `box` (whose
    x0, y0 lie on the chroma grid): float32, exact (4:4:4: the plane's box itself)."""
    x0, y0, x1, y1 = box
    zero = 512 if planes.bits == 10 else 128
    if planes.across == 1:  # 4:4:4 (the only layout without horizontal subsampling here)
        return np.subtract(plane[y0:y1, x0:x1], zero, dtype=np.float32)
    rows = ((y0 // 2 - 1, (y1 + 1) // 2 + 1) if planes.down == 2 else (y0, y1))
    window = np.subtract(_window(plane, rows, (x0 // 2 - 1, (x1 + 1) // 2 + 1)), zero,
                         dtype=np.float32)
    tall = _doubled_rows(window) if planes.down == 2 else window
    return _doubled_columns(tall, planes.centred)[:y1 - y0, :x1 - x0]


def _window(plane: np.ndarray, rows: tuple[int, int], columns: tuple[int, int]) -> np.ndarray:
    """plane[rows, columns], the rows and columns beyond the plane (one at most each side)
    repeating its edge."""
    height, width = plane.shape
    (r0, r1), (c0, c1) = rows, columns
    view = plane[max(r0, 0):min(r1, height), max(c0, 0):min(c1, width)]
    borders = (max(0, -r0), max(0, r1 - height), max(0, -c0), max(0, c1 - width))
    return cv2.copyMakeBorder(view, *borders, cv2.BORDER_REPLICATE) if any(borders) else view


def _doubled_rows(window: np.ndarray) -> np.ndarray:
    """float32 (2n, w) from float32 (n + 2, w) rows with a margin row each side: chroma sited
    midway between two luma rows gives them 3/4 of its own value and 1/4 of the nearer
    neighbour's."""
    inner = window[1:-1]
    tall = np.empty((2 * inner.shape[0], window.shape[1]), np.float32)
    cv2.addWeighted(inner, 0.75, window[:-2], 0.25, 0.0, dst=tall[0::2])
    cv2.addWeighted(inner, 0.75, window[2:], 0.25, 0.0, dst=tall[1::2])
    return tall


def _doubled_columns(rows: np.ndarray, centred: bool) -> np.ndarray:
    """float32 (h, 2m) from float32 (h, m + 2) with a margin column each side. Co-sited
    (MPEG-2): even columns take the sample, odd ones the mean of it and the next; centred
    (JPEG): each column 3/4 of its sample and 1/4 of the nearer neighbour."""
    inner = rows[:, 1:-1]
    near, far = (0.75, 0.25) if centred else (0.5, 0.5)
    even = cv2.addWeighted(inner, near, rows[:, :-2], far, 0.0) if centred else inner
    odd = cv2.addWeighted(inner, near, rows[:, 2:], far, 0.0)
    return cv2.merge([even, odd]).reshape(rows.shape[0], -1)


def _matrix_into(luma: np.ndarray, cb: np.ndarray, cr: np.ndarray,
                         weights: tuple[np.float32, ...], out: np.ndarray) -> None:
    """_matrix_into for float32 chroma less its zero (128, 10-bit 512; upsampled or not),
    `weights` from _centred_weights: luma (Y - 16) * 255/219 (limited range; full range: Y;
    10-bit: (Y - 64) * 65535/876) plus each chroma product, one IEEE operation at a time
    (numpy's products, OpenCV's sums to `out`'s uint8 or uint16, exact to the last bit on
    every build), so no OpenCV build's fused multiply-adds make a band's ragged end differ."""
    y_scale, y_zero, bu, gu, gv, rv = weights
    depth = cv2.CV_16U if out.dtype == np.uint16 else cv2.CV_8U
    scaled = np.subtract(luma, y_zero, dtype=np.float32)
    if y_scale != 1.0:
        scaled *= y_scale
    green = np.multiply(cb, gu)
    green += np.multiply(cr, gv)
    cv2.merge([cv2.add(scaled, term, dtype=depth)
               for term in (np.multiply(cb, bu), green, np.multiply(cr, rv))], dst=out)
