"""Records that travel between the pipeline stages, and the frame convention.

Frame convention (stated once, converted only at the edges):
    A *frame* is a numpy array of shape (H, W, C) with C in {3, 4}, channel order BGR(A) as OpenCV
    reads it, dtype uint8, uint16 or float32. uint8/uint16 use their full integer range; float32 is
    display-referred with 1.0 as white. Alpha, when present, is never altered by the engine.
    A *model crop* is float32 BGR (H, W, 3) scaled to 0..255 whatever the frame dtype was;
    ``facefuse.paste`` converts back to the frame's own dtype.
    Coordinates are frame pixels, x right, y down, origin at the top-left pixel's corner.
    Matrices are 2x3 affine maps named by direction: ``frame_to_crop`` maps frame points into the
crop.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

import numpy as np


@dataclass(frozen=True, slots=True, eq=False)
class Face:
    """One detected face.

    bbox_xyxy: float32 (4,) frame pixels. kps5: float32 (5, 2) frame pixels in the order
    left eye, right eye, nose tip, left mouth corner, right mouth corner (as seen in the image).
    score: detector confidence in [0, 1]. embedding: L2-normalised float32 (D,) or None.
    """

    bbox_xyxy: np.ndarray
    kps5: np.ndarray
    score: float
    embedding: np.ndarray | None = None

    @property
    def area_px(self) -> float:
        x1, y1, x2, y2 = (float(v) for v in self.bbox_xyxy)
        return max(0.0, x2 - x1) * max(0.0, y2 - y1)


@dataclass(frozen=True, slots=True, eq=False)
class AlignedCrop:
    """A face warped onto a template.

    image: float32 (size_px, size_px, 3) BGR in 0..255 (the model crop convention).
    frame_to_crop: float64 (2, 3) affine matrix from frame pixels to crop pixels.
    """

    image: np.ndarray
    frame_to_crop: np.ndarray
    template: str
    size_px: int


@dataclass(frozen=True, slots=True)
class Roi:
    """A frame rectangle, x0/y0 inclusive and x1/y1 exclusive, in frame pixels."""

    x0: int
    y0: int
    x1: int
    y1: int

    @property
    def empty(self) -> bool:
        return self.x1 <= self.x0 or self.y1 <= self.y0

    def slices(self) -> tuple[slice, slice]:
        return slice(self.y0, self.y1), slice(self.x0, self.x1)


@dataclass(frozen=True, slots=True)
class FramePart:
    """Where an array that holds only part of a frame lies in it: `box`, in the whole frame's
    pixels, of a frame `width` x `height` (pass 2 swaps such parts: see shot.run.render)."""

    box: Roi
    width: int
    height: int

    @property
    def origin_xy(self) -> tuple[int, int]:
        """The frame pixel of the part's top-left pixel."""
        return self.box.x0, self.box.y0


def enclosing(rois: Iterable[Roi]) -> Roi | None:
    """The smallest Roi holding every non-empty one of `rois`; None when there is none."""
    boxes = [roi for roi in rois if not roi.empty]
    if not boxes:
        return None
    return Roi(min(b.x0 for b in boxes), min(b.y0 for b in boxes),
               max(b.x1 for b in boxes), max(b.y1 for b in boxes))


@dataclass(frozen=True, slots=True, eq=False)
class Pasted:
    """Where one paste (a swapped or an enhanced face) wrote into a frame.

    roi: the frame rectangle it read and wrote. mask: float32 (roi height, roi width) blend
    weight in [0, 1]; only pixels where it is > 0 were written, every other pixel of the frame
    kept its exact value.
    """

    roi: Roi
    mask: np.ndarray


@dataclass(frozen=True, slots=True, eq=False)
class FrameResult:
    """What processing one frame produced.

    frame: the output frame (same shape and dtype as the input frame).
    faces: every face the detector found. swapped: the faces that were replaced.
    matte: float32 (H, W) blend mask in [0, 1] (the union of the pasted masks), or None if nothing
    was pasted. timings_ms: wall time per stage for this frame. pasted: every paste in the
    order it was made (swaps and, with an enhancer, restorations; ROI-sized masks, no
    full-frame array), so a writer can tell which pixels changed.
    """

    frame: np.ndarray
    faces: tuple[Face, ...]
    swapped: tuple[Face, ...]
    matte: np.ndarray | None
    timings_ms: Mapping[str, float] = field(default_factory=lambda: MappingProxyType({}))
    pasted: tuple[Pasted, ...] = ()


@dataclass(frozen=True, slots=True, eq=False)
class SourceIdentity:
    """The identity to put into target faces: the normalised mean of the source embeddings.

    embedding: float32 (D,) L2-normalised. source_sha256: sha256 of each source image's bytes.
    """

    embedding: np.ndarray
    source_sha256: tuple[str, ...]

    @property
    def digest(self) -> str:
        """A short content hash of the identity (for provenance and logs)."""
        return hashlib.sha256(np.ascontiguousarray(self.embedding).tobytes()).hexdigest()[:16]
