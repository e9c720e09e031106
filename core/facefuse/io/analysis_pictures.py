"""Decoded pictures as shot analysis needs them: small for the detector, full size only where
faces are.

The reader turns an 8-bit subsampled picture into BGR in two swscale steps: upsampling to 4:4:4
(cheap), then the YUV to BGR matrix (the costly part: most of 20 ms a 1080p frame, 80 ms at 4K),
yet the detector sees the picture shrunk to its input size and the recogniser sees a 112 px
crop around each face. An AnalysisPicture keeps the 4:4:4 planes of the first step and gives:
`small`, the whole picture shrunk (area filter) and converted to BGR in one swscale pass, and
`region(box)`, only the given box converted to BGR (with where it lies in the frame), with the
reader's matrix (io.yuv, or swscale for tags io.yuv does not take). The matrix step works pixel
by pixel, so a region is bit-identical to the full conversion there. Shot analysis cuts its
recogniser crops from `region`s, so no full-size BGR frame is made for a picture with faces. `small` differs slightly
from shrinking the full conversion (docs/performance.md has the measured effect on detections).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from .yuv import FAST_FORMATS, matrix_of, picture_planes, yuv444_to_bgr

Box = tuple[int, int, int, int]  # x0, y0, x1, y1 in frame pixels, x1/y1 exclusive


@dataclass(frozen=True, slots=True, eq=False)
class AnalysisPicture:
    """One decoded picture for analysis.

    small: BGR uint8 (h, w, 3), the whole picture with its long side at most the size asked
    for. scale_xy: small pixels per frame pixel (< 1), across and down (the small size is
    rounded, so the two differ slightly unless the aspect divides exactly). picture: the 4:4:4 av.VideoFrame at full
    resolution (its format and colour tags decide the conversion)."""

    small: np.ndarray
    scale_xy: tuple[float, float]
    picture: Any

    @property
    def nbytes(self) -> int:
        """The bytes this picture holds (its 4:4:4 planes and `small`), for queue budgets."""
        return int(sum(p.buffer_size for p in self.picture.planes)) + int(self.small.nbytes)

    def region(self, box: Box) -> tuple[np.ndarray, tuple[int, int]] | None:
        """The BGR uint8 (h, w, 3) pixels of `box` clipped to the frame, exactly as the full
        conversion holds them there, and the frame pixel (x, y) of their top-left corner;
        None when the box lies outside the frame."""
        x0, y0 = max(0, box[0]), max(0, box[1])
        x1, y1 = min(self.picture.width, box[2]), min(self.picture.height, box[3])
        if x1 <= x0 or y1 <= y0:
            return None
        return self._region(x0, y0, x1, y1), (x0, y0)

    def _region(self, x0: int, y0: int, x1: int, y1: int) -> np.ndarray:
        import av

        views = [plane[y0:y1, x0:x1] for plane in picture_planes(self.picture)]
        matrix = matrix_of(self.picture)
        if matrix is not None:  # as the reader converts (io.yuv), pixel by pixel
            return yuv444_to_bgr(views[0], views[1], views[2], matrix)
        region = av.VideoFrame.from_ndarray(np.stack(views), format=self.picture.format.name)
        region.colorspace, region.color_range = self.picture.colorspace, self.picture.color_range
        return region.to_ndarray(format="bgr24")


def analysis_picture(picture: Any, max_side_px: int) -> AnalysisPicture | None:
    """The picture for analysis, or None when it does not take this path: not 8-bit YUV
    (4:2:0, 4:2:2 or 4:4:4), or no larger than the detector (then the full conversion is as
    cheap)."""
    name = picture.format.name
    scale = max_side_px / max(picture.height, picture.width)
    if scale >= 1.0 or name not in FAST_FORMATS:
        return None
    full = picture if FAST_FORMATS[name] == name else picture.reformat(format=FAST_FORMATS[name])
    size = (max(1, round(picture.width * scale)), max(1, round(picture.height * scale)))
    small = full.reformat(format="bgr24", width=size[0], height=size[1],
                          interpolation="AREA").to_ndarray()
    scale_xy = (float(size[0] / picture.width), float(size[1] / picture.height))
    return AnalysisPicture(np.ascontiguousarray(small), scale_xy, full)
