"""One decoded frame, from decode to encode: the picture as decoded, converted lazily and once
per need.

A render's frame is a `DecodedFrame` from the moment it is read to the moment it is written:
io.video.read.VideoSource.read delivers one per frame number (a frame that cannot be decoded
comes as a DecodeFailure instead), shot.contract.inputs' image sequences deliver one around the
plate they read, the pipeline pastes into it, and io.video.write.VideoSink takes it back. It holds
the decoded picture itself (its native planes, stored orientation, chroma siting, bit depth)
and converts it, in the shape of PyAV's ``VideoFrame.to_ndarray(format=...)`` and imageio v3's
one object with conversions as methods, only when asked, and each conversion once (it is kept
on the object, so asking twice converts once):

    to_ndarray()          the whole upright engine frame, BGR(A) uint8 (uint16 deeper), as
                          the reader converts it (io.video.yuv where it reads the picture,
                          else swscale); writable, the same array every time. A region
                          converted before (and pasted into) shows in it, and only the
                          rest of the picture is converted around it.
    region(box)           the BGR pixels of one box of the upright frame (a FrameRegion),
                          bit-identical to the same box of to_ndarray(); converted from the
                          decoded planes alone while the whole frame is not (io.video.yuv
                          converts any box as the whole picture there), else a view of it.
    pixels_for(footprint) what a swap reading and writing inside `footprint` pastes into:
                          the region converted_box widens it to, for a picture io.video.yuv
                          converts by parts, else the whole frame (pipeline.Pipeline.swap_frame).
    small(max_side_px)    the small picture for the detector (a SmallPicture: the whole
                          picture shrunk by swscale straight from its planes, with its scale),
                          or None where shrinking the whole conversion is as cheap.
    planes()              the native planes (a passthrough.DecodedPicture) for a writer that
                          encodes them with only the pasted samples converted, or None.
    converted()           the pixels converted so far (the whole frame, or the region that
                          was), where the pastes are: what a passthrough writer converts from.
    for_another_pass()    a new frame of the same decoded picture, nothing of its own
                          converted yet (pass 1 hands its frames on to pass 2 this way:
                          shot.run.held_frames).
    drop_planes()         lets the decoded picture go once the whole frame is converted (it
                          converts it first): a writer that converts the whole frame calls it
                          as it takes the frame, so what is kept after (the writer's stand-in
                          for a failed frame, a patch output's source) holds the conversion
                          alone; planes() and small() give None after.

Who calls what: pass 1 (shot.run.pass_one) asks small() and region() per face (or to_ndarray()
for colour-managed shots and pictures without a small path); pass 2 hands the frame to
pipeline.Pipeline.swap_frame, which asks pixels_for() (to_ndarray() when colour-managed); the
writer (io.video.write.VideoSink) asks planes() and converted() where the stream passes the
decoded planes through, else drop_planes() and to_ndarray() (as does shot.output.outputs' video
writer for a colour-managed frame); sequence, matte and patch outputs ask to_ndarray() and
converted(). The reader converts a picture io.video.yuv does not read by parts at once (every
use of it needs the whole frame), so only pictures that gain from it stay lazy.

The seam: shot code and the pipeline use a frame through the `Frame` Protocol below (its size,
sample type, and the conversions), never through the decoded buffers, and none of its methods
takes a numpy array. A frame whose pixels live elsewhere (decoded on a GPU, crops cut there) is
another class with these methods; only what crosses back to the host (to_ndarray, a region's
pixels) is a numpy array.

Orientation: a picture stored sideways (a display rotation) is converted in its stored
orientation and turned upright (io.video.orientation); boxes, sizes and every conversion are
the upright frame's, as to_ndarray() turns it.
"""

from __future__ import annotations

from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Protocol

import numpy as np

from ...types import FramePart, Roi
from .common import SUBSAMPLED_8BIT
from .orientation import turned, turned_box, turned_size, widened
from .passthrough import DecodedPicture, decoded_picture
from .scaling import Scalers
from .yuv import FAST_FORMATS, PLANAR_10BIT, YuvPlanes, yuv_planes, yuv_to_bgr
from .yuv_write import PASTE_REACH_PX

# Pixels around the swap's footprint also converted: bilinear sampling's neighbour (crop_roi
# already adds one) with room to spare.
_SAMPLING_MARGIN_PX = 2
# swscale flags for `small`: the area filter, with chroma interpolated to full width and
# accurate rounding (without them swscale truncates and reads about half a level dark).
_SMALL_FLAGS = 0x20 | 0x2000 | 0x40000  # SWS_AREA | SWS_FULL_CHR_H_INT | SWS_ACCURATE_RND
# The bit depth of the pictures io.video.yuv converts for each array format.
_YUV_BITS = MappingProxyType({"bgr24": 8, "bgr48le": 10})
_DEEP_FORMATS = frozenset({"bgr48le", "bgra64le"})
_ALPHA_FORMATS = frozenset({"bgra", "bgra64le"})


@dataclass(frozen=True, slots=True, eq=False)
class FrameRegion:
    """The BGR pixels of `box` of a frame `width` x `height` (upright frame pixels): (h, w, 3|4)
    uint8 or uint16, exactly as the whole frame's conversion holds them there; writable (pass
    2 pastes into them, and the frame they came from keeps them)."""

    pixels: np.ndarray
    box: Roi
    width: int
    height: int

    @property
    def part(self) -> FramePart:
        """Where `pixels` lie in the frame."""
        return FramePart(self.box, self.width, self.height)

    @property
    def whole(self) -> bool:
        """Whether the region is the whole frame."""
        return self.box == Roi(0, 0, self.width, self.height)

    @property
    def nbytes(self) -> int:
        return int(self.pixels.nbytes)


@dataclass(frozen=True, slots=True, eq=False)
class SmallPicture:
    """The whole frame shrunk for a detector: `pixels` BGR uint8 (h, w, 3) with its long side at
    most the size asked for; `scale_xy` small pixels per frame pixel (< 1), across and down (the
    small size is rounded, so the two differ slightly unless the aspect divides exactly).
    It differs slightly from shrinking the full conversion (docs/performance.md has the
    measured effect on detections)."""

    pixels: np.ndarray
    scale_xy: tuple[float, float]


class Frame(Protocol):
    """What shot code and the pipeline use of a frame (see the module docstring)."""

    @property
    def width(self) -> int: ...

    @property
    def height(self) -> int: ...

    @property
    def shape(self) -> tuple[int, int, int]: ...

    @property
    def dtype(self) -> np.dtype[Any]: ...

    @property
    def nbytes(self) -> int: ...

    def to_ndarray(self) -> np.ndarray: ...

    def region(self, box: Roi) -> FrameRegion | None: ...

    def pixels_for(self, footprint: Roi) -> FrameRegion: ...

    def small(self, max_side_px: int) -> SmallPicture | None: ...

    def planes(self) -> DecodedPicture | None: ...

    def converted(self) -> FrameRegion | None: ...

    def drop_planes(self) -> None: ...

    def for_another_pass(self) -> Frame: ...


class DecodedFrame:
    """One frame (see the module docstring). Made by `of_picture` (a decoded av.VideoFrame)
    or `of_array` (an engine frame already converted: an image-sequence plate)."""

    __slots__ = ("_centred", "_format", "_picture", "_planes", "_region", "_scalers", "_shape",
                 "_small", "_turns", "_whole", "_yuv")

    def __init__(self, picture: Any, array_format: str, turns: int, centred: bool,
                 whole: np.ndarray | None = None, scalers: Scalers | None = None) -> None:
        self._picture, self._format, self._turns, self._centred = (
            picture, array_format, turns % 4, centred)
        self._scalers = scalers if scalers is not None or picture is None else Scalers()
        self._whole = whole
        self._region: FrameRegion | None = None
        self._small: dict[int, SmallPicture | None] = {}
        self._planes: tuple[DecodedPicture | None] | None = None
        self._yuv = self._yuv_planes() if picture is not None else None
        if whole is not None:
            height, width = whole.shape[:2]
            self._shape = (height, width, whole.shape[2] if whole.ndim == 3 else 1)
        else:
            width, height = turned_size(picture.width, picture.height, self._turns)
            self._shape = (height, width, 4 if array_format in _ALPHA_FORMATS else 3)

    @classmethod
    def of_picture(cls, picture: Any, array_format: str, turns: int = 0,
                   centred: bool = False, scalers: Scalers | None = None) -> DecodedFrame:
        """The frame of a decoded av.VideoFrame: converted to `array_format` (PyAV's bgr24,
        bgra, bgr48le or bgra64le), turned upright by `turns` (quarter turns
        counter-clockwise); centred: its decoder sites 4:2:x chroma midway between luma
        columns (io.video.yuv.chroma_centred of the codec); swscale's work goes through
        `scalers` (the stream's, io.video.scaling), else through contexts of its own."""
        return cls(picture, array_format, turns, centred, scalers=scalers)

    @classmethod
    def of_array(cls, array: np.ndarray) -> DecodedFrame:
        """The frame of an engine frame already converted (upright, BGR(A)); to_ndarray()
        gives `array` itself."""
        return cls(None, "", 0, False, array)

    def for_another_pass(self) -> DecodedFrame:
        """A frame of its own of the same decoded picture (and of the whole conversion, where
        the reader made it at once), without this one's region and small pictures: what a
        later pass pastes into instead of decoding the frame again. Only for a frame nothing
        was pasted into (pass 1's)."""
        if self._picture is None:
            return DecodedFrame.of_array(self.to_ndarray())
        return DecodedFrame(self._picture, self._format, self._turns, self._centred,
                            whole=None if self._yuv is not None else self.to_ndarray(),
                            scalers=self._scalers)

    # -- what it is -------------------------------------------------------------------------
    @property
    def width(self) -> int:
        return self._shape[1]

    @property
    def height(self) -> int:
        return self._shape[0]

    @property
    def shape(self) -> tuple[int, int, int]:
        """(height, width, channels) of the whole frame."""
        return self._shape

    @property
    def dtype(self) -> np.dtype[Any]:
        """The sample type of its conversions: uint8, or uint16 for deep pictures (or the
        array's own)."""
        if self._whole is not None:
            return self._whole.dtype
        return np.dtype(np.uint16 if self._format in _DEEP_FORMATS else np.uint8)

    @property
    def by_parts(self) -> bool:
        """Whether boxes of it convert on their own (io.video.yuv reads the picture) while
        the whole frame is not converted."""
        return self._whole is None and self._yuv is not None

    @property
    def nbytes(self) -> int:
        """The bytes it holds (decoded planes and conversions), for queue budgets."""
        held = 0 if self._picture is None else sum(int(p.buffer_size)
                                                   for p in self._picture.planes)
        for part in (self._whole, self._region):
            held += 0 if part is None else int(part.nbytes)
        return held + sum(s.pixels.nbytes for s in self._small.values() if s is not None)

    # -- conversions ------------------------------------------------------------------------
    def to_ndarray(self) -> np.ndarray:
        """The whole upright frame, BGR(A) uint8 / uint16, C-contiguous (see the module
        docstring); the same writable array every time."""
        if self._whole is None:
            planes, region = self._yuv, self._region
            if planes is not None and region is not None:
                whole = turned(self._around(planes, region), self._turns)
            else:
                array = yuv_to_bgr(planes) if planes is not None else self._swscale_array()
                whole = turned(array, self._turns)
            self._whole, self._region = whole, None
        return self._whole

    def region(self, box: Roi) -> FrameRegion | None:
        """`box` clipped to the frame, converted (see the module docstring); None when it lies
        outside the frame. Converted from the planes, it is kept: the frame's converted()."""
        width, height = self.width, self.height
        clipped = Roi(max(0, box.x0), max(0, box.y0), min(width, box.x1), min(height, box.y1))
        if clipped.empty:
            return None
        if self._region is not None and self._region.box == clipped:
            return self._region
        if not self.by_parts:
            return FrameRegion(self.to_ndarray()[clipped.slices()], clipped, width, height)
        assert self._yuv is not None
        stored = turned_box(clipped, width, height, -self._turns)
        pixels = yuv_to_bgr(self._yuv, (stored.x0, stored.y0, stored.x1, stored.y1))
        self._region = FrameRegion(turned(pixels, self._turns), clipped, width, height)
        return self._region

    def pixels_for(self, footprint: Roi) -> FrameRegion:
        """The pixels a swap that reads and writes inside `footprint` pastes into: where boxes
        convert on their own, the footprint widened by the sampling margin and by what a
        passthrough writer reads around pasted pixels (PASTE_REACH_PX), clipped to the frame;
        else the whole frame."""
        width, height = self.width, self.height
        if self.by_parts:
            box = widened(footprint, _SAMPLING_MARGIN_PX + PASTE_REACH_PX, width, height)
            region = self.region(box)
            if region is not None:
                return region
        return FrameRegion(self.to_ndarray(), Roi(0, 0, width, height), width, height)

    def small(self, max_side_px: int) -> SmallPicture | None:
        """The frame shrunk to a long side of at most `max_side_px` (see SmallPicture), or None
        where it does not take this path: an array, a picture neither 8-bit YUV (4:2:0, 4:2:2,
        4:4:4) nor 10-bit planar YUV io.video.yuv reads, or one no larger than that (then
        the full conversion is as cheap)."""
        if max_side_px not in self._small:
            self._small[max_side_px] = self._shrunk(max_side_px)
        return self._small[max_side_px]

    def planes(self) -> DecodedPicture | None:
        """The decoded planes (read-only views, stored orientation; see
        io.video.passthrough), or None for an array and for pictures that are not 8-bit or
        10-bit planar YUV."""
        if self._planes is None:
            self._planes = (None if self._picture is None else
                            decoded_picture(self._picture, self._turns, self._centred),)
        return self._planes[0]

    def converted(self) -> FrameRegion | None:
        """What is converted so far: the whole frame, or the one region converted from the
        planes (where pastes went); None when nothing is."""
        if self._whole is not None:
            return FrameRegion(self._whole, Roi(0, 0, self.width, self.height), self.width,
                               self.height)
        return self._region

    def drop_planes(self) -> None:
        """Convert the whole frame (if it is not yet) and let the decoded picture go (see the
        module docstring): nbytes counts the conversion alone after."""
        self.to_ndarray()
        self._picture = self._yuv = None
        self._planes = (None,)
        self._small.clear()

    # -- the conversions' own steps ---------------------------------------------------------
    def _around(self, planes: YuvPlanes, region: FrameRegion) -> np.ndarray:
        """The whole stored picture: the region converted before (with what was pasted into
        it) and the rest converted around it, so each pixel is converted once (the parts
        start on the chroma grid and may reach a pixel into the region, which its own pixels
        then cover)."""
        height, width = planes.y.shape
        box = turned_box(region.box, self.width, self.height, -self._turns)
        x1 = box.x1 - box.x1 % planes.across
        top, bottom = box.y0 - box.y0 % planes.down, box.y1 - box.y1 % planes.down
        stored = np.empty((height, width, 3), region.pixels.dtype)
        for part in (Roi(0, 0, width, box.y0), Roi(0, top, box.x0, box.y1),
                     Roi(x1, top, width, box.y1), Roi(0, bottom, width, height)):
            if not part.empty:
                yuv_to_bgr(planes, (part.x0, part.y0, part.x1, part.y1),
                           stored[part.slices()])
        stored[box.slices()] = turned(region.pixels, -self._turns)
        return stored

    def _yuv_planes(self) -> YuvPlanes | None:
        """The planes io.video.yuv converts the picture from, when its depth is the array
        format's (8-bit pictures of a bgr24 frame, 10-bit ones of a bgr48le one), else None."""
        bits = _YUV_BITS.get(self._format)
        planes = yuv_planes(self._picture, self._centred) if bits is not None else None
        return planes if planes is not None and planes.bits == bits else None

    def _swscale_array(self) -> np.ndarray:
        """swscale's conversion (through 4:4:4 for 8-bit subsampled pictures)."""
        picture, scalers = self._picture, self._scalers
        assert scalers is not None  # every frame of a picture has them
        if picture.format.name in SUBSAMPLED_8BIT:
            picture = scalers.reformat(picture, format=SUBSAMPLED_8BIT[picture.format.name])
        return scalers.reformat(picture, format=self._format).to_ndarray()

    def _shrunk(self, max_side_px: int) -> SmallPicture | None:
        picture = self._picture
        if picture is None:
            return None
        scale = max_side_px / max(picture.height, picture.width)
        name = picture.format.name
        if scale >= 1.0 or not (name in FAST_FORMATS
                                or (name in PLANAR_10BIT and yuv_planes(picture) is not None)):
            return None
        size = (max(1, round(picture.width * scale)), max(1, round(picture.height * scale)))
        assert self._scalers is not None  # every frame of a picture has them
        small = self._scalers.reformat(picture, format="bgr24", width=size[0], height=size[1],
                                       interpolation=_SMALL_FLAGS).to_ndarray()
        scale_xy = (float(size[0] / picture.width), float(size[1] / picture.height))
        if self._turns % 2:
            scale_xy = scale_xy[::-1]
        return SmallPicture(turned(small, self._turns), scale_xy)
