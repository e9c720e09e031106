"""Decoded pictures as shot analysis needs them: small for the detector, full size only where
faces are.

The detector sees the picture shrunk to its input size and the recogniser a 112 px crop around
each face, so converting a whole 8-bit YUV picture to BGR (most of 10-15 ms a 1080p frame, 50-80
at 4K) is wasted on analysis. An AnalysisPicture keeps the decoded picture itself (4:2:0 as
decoded: half the bytes of a 4:4:4 copy) and gives `small`, the whole picture shrunk (area
filter) and converted to BGR in one swscale pass straight from the decoded planes, and
`region(box)`, only the given box converted to BGR (with where it lies in the frame). Regions go
through io.yuv's conversion from the decoded planes (its own chroma upsampling and matrix, both
pixel-local), so a region is bit-identical to the same box of the reader's full conversion;
for tags io.yuv does not take, the picture is converted whole by swscale, as the reader does,
and cut. 10-bit limited-range planar pictures (ProRes 422, DNxHR 444, HEVC Main10) that io.yuv
reads take this path too: `small` is 8-bit BGR shrunk by swscale from the 10-bit planes, and
regions are BGR uint16, the reader's io.yuv conversion there (other 10-bit, 12-bit and alpha
pictures are converted whole by the reader). Shot analysis cuts its recogniser crops from
`region`s, so no full-size BGR frame is made for a picture with faces. `small` differs
slightly from shrinking the full conversion (docs/performance.md has the measured effect on
detections).

A picture stored sideways (a display rotation: the reader turns frames upright) is shrunk in
its stored orientation and `small` turned upright; a region's box is found in the stored
picture, converted there and turned upright (io.orientation), so boxes, `small` and the
regions are all the upright frame's, as the reader's full conversion turns it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ...types import Roi
from .common import SUBSAMPLED_8BIT
from .orientation import turned, turned_box, turned_size
from .yuv import FAST_FORMATS, PLANAR_10BIT, Box, yuv_planes, yuv_to_bgr

# swscale flags for `small`: the area filter, with chroma interpolated to full width and
# accurate rounding (without them swscale truncates and reads about half a level dark).
_SMALL_FLAGS = 0x20 | 0x2000 | 0x40000  # SWS_AREA | SWS_FULL_CHR_H_INT | SWS_ACCURATE_RND


@dataclass(frozen=True, slots=True, eq=False)
class AnalysisPicture:
    """One decoded picture for analysis.

    small: BGR uint8 (h, w, 3), the whole picture with its long side at most the size asked
    for. scale_xy: small pixels per frame pixel (< 1), across and down (the small size is
    rounded, so the two differ slightly unless the aspect divides exactly). picture: the
    decoded 8-bit (or 10-bit limited-range planar) YUV av.VideoFrame (its format and colour
    tags decide the conversion).
    centred: its chroma siting (io.yuv.chroma_centred of the stream's codec). turns: the
    quarter turns (counter-clockwise) that bring the stored picture upright; `small`,
    `scale_xy` and the regions are the upright frame's."""

    small: np.ndarray
    scale_xy: tuple[float, float]
    picture: Any
    centred: bool = False
    turns: int = 0

    @property
    def nbytes(self) -> int:
        """The bytes this picture holds (the decoded planes and `small`), for queue budgets."""
        return int(sum(p.buffer_size for p in self.picture.planes)) + int(self.small.nbytes)

    def region(self, box: Box) -> tuple[np.ndarray, tuple[int, int]] | None:
        """The BGR (h, w, 3) pixels of `box` clipped to the frame (uint8; uint16 for a 10-bit
        picture), exactly as the full conversion holds them there, and the frame pixel (x, y) of
        their top-left corner; None when the box lies outside the frame. (Upright frame
        pixels: see `turns`.)"""
        width, height = turned_size(self.picture.width, self.picture.height, self.turns)
        x0, y0 = max(0, box[0]), max(0, box[1])
        x1, y1 = min(width, box[2]), min(height, box[3])
        if x1 <= x0 or y1 <= y0:
            return None
        stored = turned_box(Roi(x0, y0, x1, y1), width, height, -self.turns)
        return turned(self._stored_region(stored), self.turns), (x0, y0)

    def _stored_region(self, box: Roi) -> np.ndarray:
        """BGR of `box` of the stored picture, as the reader converts it there."""
        planes = yuv_planes(self.picture, self.centred)
        if planes is not None:  # as the reader converts (io.yuv), pixel by pixel
            return yuv_to_bgr(planes, (box.x0, box.y0, box.x1, box.y1))
        name = self.picture.format.name  # swscale's whole conversion, as the reader's
        whole = self.picture.reformat(format=SUBSAMPLED_8BIT.get(name, name))
        return whole.to_ndarray(format="bgr24")[box.slices()]


def analysis_picture(picture: Any, max_side_px: int, centred: bool = False, turns: int = 0
                     ) -> AnalysisPicture | None:
    """The picture for analysis (centred: its chroma siting, see io.yuv.chroma_centred;
    turns: the reader's turns that bring it upright), or None when it does not take this path:
    not 8-bit YUV (4:2:0, 4:2:2 or 4:4:4) nor 10-bit planar YUV io.yuv reads, or no larger
    than the detector (then the full conversion is as cheap)."""
    scale = max_side_px / max(picture.height, picture.width)
    name = picture.format.name
    if scale >= 1.0 or not (name in FAST_FORMATS
                            or (name in PLANAR_10BIT and yuv_planes(picture) is not None)):
        return None
    size = (max(1, round(picture.width * scale)), max(1, round(picture.height * scale)))
    small = picture.reformat(format="bgr24", width=size[0], height=size[1],
                             interpolation=_SMALL_FLAGS).to_ndarray()
    scale_xy = (float(size[0] / picture.width), float(size[1] / picture.height))
    if turns % 2:
        scale_xy = scale_xy[::-1]
    return AnalysisPicture(turned(small, turns), scale_xy, picture, centred, turns % 4)
