"""Boxes, masks and pixels between a video's stored orientation and the upright one.

A phone clip stores its pictures sideways and asks players to turn them (a display rotation):
a frame converts to ``np.rot90(stored, turns)`` (io.video.frame) and a video writer stores
``np.rot90(upright, -turns)`` again (io.video.write). Where only part of a frame is converted
(a face box: io.video.frame, io.video.passthrough), the part is found in the other orientation
with these functions, which agree with np.rot90 of the whole frame pixel for pixel.

Convention: `turns` counts quarter turns counter-clockwise, as np.rot90's `k` (any integer;
taken modulo 4); a box lies in a frame `width` x `height` pixels before the turn.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from types import MappingProxyType

import cv2
import numpy as np

from ...types import Pasted, Roi

# np.rot90's counter-clockwise quarter turns as OpenCV's rotations
_CV_ROTATIONS = MappingProxyType({1: cv2.ROTATE_90_COUNTERCLOCKWISE, 2: cv2.ROTATE_180,
                                  3: cv2.ROTATE_90_CLOCKWISE})
_CV_DTYPES = frozenset({np.dtype(np.uint8), np.dtype(np.uint16), np.dtype(np.float32)})


def turned(pixels: np.ndarray, turns: int) -> np.ndarray:
    """``np.rot90(pixels, turns)`` as a C-contiguous array ((h, w) or (h, w, c), any dtype; a
    new one unless `turns` is a whole turn and `pixels` already is one): OpenCV's rotation
    (the same values, about 5x faster than copying numpy's strided view of a 1080p BGR
    frame), numpy's where OpenCV takes no such array."""
    k = turns % 4
    if k == 0:
        return np.ascontiguousarray(pixels)
    if pixels.dtype in _CV_DTYPES and (pixels.ndim == 2 or (pixels.ndim == 3
                                                            and pixels.shape[2] in (3, 4))):
        return cv2.rotate(pixels, _CV_ROTATIONS[k])
    return np.ascontiguousarray(np.rot90(pixels, k))


def turned_size(width: int, height: int, turns: int) -> tuple[int, int]:
    """(width, height) of a `width` x `height` frame after `turns` quarter turns."""
    return (height, width) if turns % 2 else (width, height)


def turned_box(box: Roi, width: int, height: int, turns: int) -> Roi:
    """Where `box` of a `width` x `height` frame lies in ``np.rot90(frame, turns)``: the
    same pixels, in the turned frame's coordinates (x1/y1 exclusive, as Roi's)."""
    k = turns % 4
    if k == 1:  # counter-clockwise: column x becomes row width - 1 - x
        return Roi(box.y0, width - box.x1, box.y1, width - box.x0)
    if k == 2:
        return Roi(width - box.x1, height - box.y1, width - box.x0, height - box.y0)
    if k == 3:  # clockwise: row y becomes column height - 1 - y
        return Roi(height - box.y1, box.x0, height - box.y0, box.x1)
    return box


def turned_paste(paste: Pasted, width: int, height: int, turns: int) -> Pasted:
    """`paste` (of a `width` x `height` frame) as it lies in ``np.rot90(frame, turns)``:
    its box turned (turned_box) and its float32 mask np.rot90'd (a view)."""
    if turns % 4 == 0:
        return paste
    return Pasted(turned_box(paste.roi, width, height, turns), np.rot90(paste.mask, turns))


def widened(box: Roi, margin_px: int, width: int, height: int) -> Roi:
    """`box` widened by `margin_px` each side, clipped to a `width` x `height` frame."""
    return Roi(max(0, box.x0 - margin_px), max(0, box.y0 - margin_px),
               min(width, box.x1 + margin_px), min(height, box.y1 + margin_px))


def stored_parts(pixels: np.ndarray, pasted: Sequence[Pasted], origin_xy: tuple[int, int],
                 size: tuple[int, int], turns: int, reach_px: int
                 ) -> Iterator[tuple[np.ndarray, tuple[int, int], Pasted]]:
    """For each paste of an upright frame of `size` (width, height), the pixels around it and
    the paste itself in the stored orientation (the frame turned by -`turns`):
    (stored BGR part (h, w, 3) C-contiguous, the stored frame pixel where it starts, the
    stored paste). pixels: the upright frame, or the part of it from frame pixel `origin_xy`;
    each part is the paste's box widened by `reach_px` (what a writer reads around it),
    clipped to the frame and to what `pixels` holds. turns 0: `pixels`, `origin_xy` and
    each paste as they are."""
    if turns % 4 == 0:
        for paste in pasted:
            yield pixels, origin_xy, paste
        return
    width, height = size
    ox, oy = origin_xy
    held = Roi(ox, oy, ox + pixels.shape[1], oy + pixels.shape[0])
    for paste in pasted:
        wide = widened(paste.roi, reach_px, width, height)
        box = Roi(max(wide.x0, held.x0), max(wide.y0, held.y0),
                  min(wide.x1, held.x1), min(wide.y1, held.y1))
        part = pixels[box.y0 - oy:box.y1 - oy, box.x0 - ox:box.x1 - ox]
        stored = turned_box(box, width, height, -turns)
        yield (turned(part, -turns), (stored.x0, stored.y0),
               turned_paste(paste, width, height, -turns))
