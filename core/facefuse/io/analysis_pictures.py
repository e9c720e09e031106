"""Decoded pictures as shot analysis needs them: small for the detector, full size only where
faces are.

Converting a whole 4:2:0 picture to BGR at full resolution costs more than detecting faces in
it (about 20 ms a 1080p frame, 80 ms at 4K), yet the detector sees the picture shrunk to its
input size and the recogniser sees a 112 px crop around each face. An AnalysisPicture holds the
decoded picture and gives: `small`, the whole picture converted and shrunk (area filter) in one
swscale pass, and `frame_with(boxes)`, a full-size BGR frame in which only the given boxes are
converted (the rest is black), so crops inside those boxes are cut from real pixels.

Both differ slightly from the full-resolution conversion the swap pass uses (swscale's filter
phases depend on the sizes converted): docs/performance.md gives the measured effect on
detections and embeddings. Only 8-bit 4:2:0 pictures without rotation take this path; the
reader hands other pictures over as full frames.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

import numpy as np

FAST_FORMATS = ("yuv420p", "yuvj420p")
_FULL = MappingProxyType({"yuv420p": "yuv444p", "yuvj420p": "yuvj444p"})
Box = tuple[int, int, int, int]  # x0, y0, x1, y1 in frame pixels, x1/y1 exclusive


@dataclass(frozen=True, slots=True, eq=False)
class AnalysisPicture:
    """One decoded picture for analysis.

    small: BGR uint8 (h, w, 3), the whole picture with its long side at most the size asked
    for. scale: small pixels per frame pixel (<= 1). size_hw: the frame's (height, width).
    picture: the decoded av.VideoFrame (8-bit 4:2:0)."""

    small: np.ndarray
    scale: float
    size_hw: tuple[int, int]
    picture: Any

    def frame_with(self, boxes: Sequence[Box]) -> np.ndarray:
        """A BGR uint8 (H, W, 3) frame, black except inside `boxes` (clipped to the frame),
        which hold the picture converted at full resolution."""
        height, width = self.size_hw
        frame = np.zeros((height, width, 3), np.uint8)
        for box in boxes:
            x0, y0, x1, y1 = _even_box(box, width, height)
            if x1 > x0 and y1 > y0:
                frame[y0:y1, x0:x1] = self._region(x0, y0, x1, y1)
        return frame

    def _region(self, x0: int, y0: int, x1: int, y1: int) -> np.ndarray:
        """BGR uint8 of an even-aligned region, converted as the full picture would be."""
        import av

        luma, cb, cr = (np.frombuffer(p, np.uint8).reshape(p.height, p.line_size)[:, :p.width]
                        for p in self.picture.planes)
        w, h = x1 - x0, y1 - y0
        packed = np.concatenate([luma[y0:y1, x0:x1].reshape(-1),
                                 cb[y0 // 2:y1 // 2, x0 // 2:x1 // 2].reshape(-1),
                                 cr[y0 // 2:y1 // 2, x0 // 2:x1 // 2].reshape(-1)])
        name = self.picture.format.name
        region = av.VideoFrame.from_ndarray(packed.reshape(h * 3 // 2, w), format=name)
        region.colorspace, region.color_range = self.picture.colorspace, self.picture.color_range
        return region.reformat(format=_FULL[name]).to_ndarray(format="bgr24")


def _even_box(box: Box, width: int, height: int) -> Box:
    """The box grown to even edges (4:2:0 chroma pairs) and clipped to the frame."""
    x0, y0, x1, y1 = box
    return (max(0, x0) & ~1, max(0, y0) & ~1, min(width, (x1 + 1) & ~1),
            min(height, (y1 + 1) & ~1))


def analysis_picture(picture: Any, max_side_px: int) -> AnalysisPicture | None:
    """The picture for analysis, or None when it does not take this path (not 8-bit 4:2:0,
    odd-sized, or already small enough that the full conversion is as cheap)."""
    name = picture.format.name
    height, width = picture.height, picture.width
    scale = max_side_px / max(height, width)
    if name not in FAST_FORMATS or scale >= 1.0 or width % 2 or height % 2:
        return None
    size = (max(1, round(width * scale)), max(1, round(height * scale)))
    small = picture.reformat(format=_FULL[name], width=size[0], height=size[1],
                             interpolation="AREA").to_ndarray(format="bgr24")
    return AnalysisPicture(np.ascontiguousarray(small), float(size[0] / width),
                           (height, width), picture)
