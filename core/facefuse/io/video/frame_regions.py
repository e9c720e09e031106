"""Decoded pictures converted to BGR only where pass 2 swaps faces.

Where a video writer passes decoded pictures through to the encoder (io.passthrough), it reads
the BGR frame only around the pasted faces; converting the whole picture to BGR (io.yuv:
~14 ms a 1080p frame, ~54 ms at 4K; more for 10-bit pictures, to BGR uint16) is then wasted on
every other pixel. A PendingFrame is a
decoded picture not yet converted: pass 2 converts only the box its swap reads and writes, plus
what the writer reads around the pastes (`converted_box`), and hands the swapped box on as a
FrameRegion. io.yuv converts a box bit-identically to the same pixels of the whole conversion,
so the encoder gets the same planes. A picture stored sideways (a display rotation) converts
the stored picture's box and turns it upright, as the whole-frame reader does. A consumer
that needs the whole frame after all (a refused stream) gets it from FrameRegion.whole().
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...types import FramePart, Roi
from .orientation import turned, turned_box, turned_size, widened
from .yuv import YuvPlanes, yuv_to_bgr
from .yuv_write import PASTE_REACH_PX

# Pixels around the swap's footprint also converted: bilinear sampling's neighbour (crop_roi
# already adds one) with room to spare.
_SAMPLING_MARGIN_PX = 2


@dataclass(frozen=True, slots=True, eq=False)
class PendingFrame:
    """A decoded YUV picture (8-bit, or 10-bit: BGR uint16) that stands for its BGR frame
    (the reader's conversion,
    io.yuv.yuv_to_bgr, not yet run, then np.rot90 by `turns`: the display rotation that turns
    the stored picture upright, 0-3 counter-clockwise): planes are read-only views of the
    decoder's picture, in its stored orientation. Boxes, width and height are the upright
    frame's."""

    planes: YuvPlanes
    turns: int = 0

    @property
    def width(self) -> int:
        return self._upright_size[0]

    @property
    def height(self) -> int:
        return self._upright_size[1]

    @property
    def _upright_size(self) -> tuple[int, int]:
        height, width = self.planes.y.shape
        return turned_size(int(width), int(height), self.turns)

    @property
    def nbytes(self) -> int:
        """0: its planes are the frame's DecodedPicture's, which the queues count."""
        return 0

    def whole(self) -> np.ndarray:
        """The whole BGR (H, W, 3) frame, uint8 (10-bit planes: uint16), as the reader
        converts it (turned upright)."""
        return turned(yuv_to_bgr(self.planes), self.turns)

    def region(self, box: Roi) -> FrameRegion:
        """`box` (inside the upright frame) converted: the same pixels as the whole frame's
        there (the stored picture's box converted, then turned upright)."""
        stored = turned_box(box, self.width, self.height, -self.turns)
        pixels = yuv_to_bgr(self.planes, (stored.x0, stored.y0, stored.x1, stored.y1))
        return FrameRegion(turned(pixels, self.turns), box, self)

    def empty_region(self) -> FrameRegion:
        """The frame with nothing converted (a frame nothing is pasted into)."""
        dtype = np.uint16 if self.planes.bits == 10 else np.uint8
        return FrameRegion(np.zeros((0, 0, 3), dtype), Roi(0, 0, 0, 0), self)


@dataclass(frozen=True, slots=True, eq=False)
class FrameRegion:
    """A frame of which only `box` is converted to BGR: `pixels` (h, w, 3) uint8 (uint16 for
    10-bit planes), pass 2's to paste into; every other pixel is as `source` converts."""

    pixels: np.ndarray
    box: Roi
    source: PendingFrame

    @property
    def part(self) -> FramePart:
        """Where `pixels` lie in the frame."""
        return FramePart(self.box, self.source.width, self.source.height)

    @property
    def shape(self) -> tuple[int, int, int]:
        """The whole frame's shape."""
        return self.source.height, self.source.width, 3

    @property
    def nbytes(self) -> int:
        return int(self.pixels.nbytes)

    def whole(self) -> np.ndarray:
        """The whole frame: `source` converted, with `pixels` (as pasted into) at `box`."""
        frame = self.source.whole()
        if not self.box.empty:
            frame[self.box.slices()] = self.pixels
        return frame


def converted_box(footprint: Roi, width: int, height: int) -> Roi:
    """The box of a `width` x `height` frame to convert for a swap that reads and writes inside
    `footprint` (pipeline.Pipeline.swap_footprint): widened by the sampling margin and by what
    the writer reads around pasted pixels (io.yuv.PASTE_REACH_PX), clipped to the frame."""
    return widened(footprint, _SAMPLING_MARGIN_PX + PASTE_REACH_PX, width, height)
