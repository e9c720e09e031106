"""Decoded pictures passed through to the encoder, with only the pasted faces written in.

A video writer normally converts every whole BGR frame back to YUV
(io.video.yuv_write.bgr_to_picture). When the encoder takes the very format the decoder gave (8-bit
or 10-bit planar YUV of the same size and bit depth, read and written with the same matrix and
range), that is wasted work and a lossy round trip for every pixel the swap did not touch. Then the
writer starts from a copy of the decoded planes (never the decoder's own buffers: they may be
reference frames) and replaces only the samples a paste changed
(io.video.yuv_write.paste_into_planes): everything else leaves the encoder's input exactly as it was
decoded, and a frame without a swapped face is the decoded picture as it is.

`refusal` is the one place that says whether a decoded picture may pass through to a writer's
stream, and why not: a colour transform, a display rotation the writer does not turn back as
the reader turned it, alpha, another pixel format, bit depth, size or matrix than the
encoder's. Then the writer converts the whole frame.

A picture the reader turned upright (a phone clip's display rotation) passes through like any
other: the pastes lie in the upright frame, so each is turned back to the stored orientation
with the pixels around it (io.video.orientation) before its samples are converted, and the samples
equal those of the upright frame turned back and converted whole.

10-bit pictures (yuv420p10le, yuv422p10le, yuv444p10le: HEVC Main10, ProRes 422, DNxHR 444)
pass through as 8-bit ones do: their planes are little-endian uint16 views, the engine frame
made from them is BGR uint16 (io.video.yuv's 10-bit reader: whole, or only around the faces as
io.video.frame converts it), and the pasted samples are io.video.yuv's 10-bit conversion of it, as
bgr_to_picture's whole-frame one. Only limited range: io.video.yuv leaves 10-bit full range to
swscale both ways.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ...types import Pasted
from .orientation import stored_parts, turned_size
from .yuv import PLANAR, PLANAR_10BIT, RANGE_JPEG, matrix_for, picture_planes
from .yuv_write import PASTE_REACH_PX, paste_into_planes


@dataclass(frozen=True, slots=True, eq=False)
class DecodedPicture:
    """One decoded planar YUV picture (io.video.yuv.PLANAR: 8-bit or 10-bit) as the decoder gave it
    (stored orientation).

    planes: read-only views of Y, Cb, Cr, uint8 (uint16 levels for a 10-bit format): Y
    (height, width), chroma subsampled as ``pixel_format`` says; they keep the decoder's
    picture alive and must never be written.
    colorspace, color_range: its AVColorSpace / AVColorRange tags. turns: the quarter turns the
    reader gave the frame made from it (0: the frame is the picture's own orientation).
    centred: its codec sites 4:2:x chroma midway between luma columns (the JPEG family,
    io.video.yuv.chroma_centred) rather than on the even ones, as every subsampled writer does.
    """

    planes: tuple[np.ndarray, ...]
    pixel_format: str
    colorspace: int
    color_range: int
    turns: int = 0
    centred: bool = False

    @property
    def width(self) -> int:
        return int(self.planes[0].shape[1])

    @property
    def height(self) -> int:
        return int(self.planes[0].shape[0])

    @property
    def nbytes(self) -> int:
        """The bytes of its planes (what a byte-bounded queue counts)."""
        return sum(int(plane.nbytes) for plane in self.planes)


@dataclass(frozen=True, slots=True)
class EncoderTarget:
    """What a video stream encodes: pixel format, stored size, colour tags, and the quarter
    turns its writer gives frames back (to the source's stored orientation)."""

    pixel_format: str
    width: int
    height: int
    colorspace: int
    color_range: int
    turns: int = 0


def decoded_picture(frame: Any, turns: int = 0, centred: bool = False) -> DecodedPicture | None:
    """The record of a decoded av.VideoFrame (views, no copy), or None when it is not 8-bit or
    10-bit planar YUV (io.video.yuv.PLANAR) with top-down rows. turns, centred: see
    DecodedPicture."""
    name = frame.format.name
    if name not in PLANAR or any(p.line_size < 0 for p in frame.planes):
        return None
    planes = picture_planes(frame)
    for plane in planes:
        plane.flags.writeable = False
    return DecodedPicture(tuple(planes), name, int(frame.colorspace), int(frame.color_range),
                          turns, centred)


def refusal(picture: DecodedPicture | None, target: EncoderTarget, frame: np.ndarray,
            colour_transform: bool = False) -> str | None:
    """None when `frame` (the engine frame made from `picture`, with faces pasted in) may be
    encoded as `picture`'s planes with the pasted samples replaced (see the module docstring);
    otherwise why not, in a few words for the log. colour_transform: the frame's colours were
    transformed on the way to the writer (a colour-managed input)."""
    if colour_transform:
        return "the frames are colour-transformed for the video"
    if picture is None:
        return "the frames do not come with a decoded planar YUV picture"
    if picture.turns % 4 != target.turns % 4:
        return _turns_refusal(picture, target)
    depth = _depth_refusal(picture, frame)
    if depth is not None:
        return depth
    if _layout(picture.pixel_format) != _layout(target.pixel_format):
        return f"the decoded {picture.pixel_format} is not the encoder's {target.pixel_format}"
    if picture.centred and PLANAR[picture.pixel_format] != (1, 1):
        # copied as they are, its chroma samples would be shown a quarter sample off
        return ("the decoded chroma sits midway between luma columns (JPEG), the encoder's on "
                "the even ones")
    return _geometry_refusal(picture, target, frame) or _matrix_refusal(picture, target)


def _depth_refusal(picture: DecodedPicture, frame: np.ndarray) -> str | None:
    """Why the frame's samples do not suit the picture's bit depth: BGR uint8 frames go with
    8-bit pictures, uint16 ones (the reader's 16-bit conversion) with 10-bit limited-range
    ones."""
    deep = picture.pixel_format in PLANAR_10BIT
    if frame.ndim != 3 or frame.shape[2] != 3 or frame.dtype != (np.uint16 if deep else np.uint8):
        return ("the frames are not 16-bit BGR (alpha or 8-bit)" if deep
                else "the frames are not 8-bit BGR (alpha or deep)")
    if deep and picture.color_range == RANGE_JPEG:
        return "10-bit full-range pictures are converted by swscale"
    return None


def _layout(pixel_format: str) -> str:
    """The planes' layout of a pixel format: a yuvj format is its yuv twin tagged full range
    (the range itself is compared with the matrix)."""
    return pixel_format.replace("yuvj", "yuv", 1)


def _turns_refusal(picture: DecodedPicture, target: EncoderTarget) -> str:
    return (f"the reader turned the pictures by {picture.turns % 4} quarter turns (display "
            f"rotation) and the writer turns them back by {target.turns % 4}")


def _geometry_refusal(picture: DecodedPicture, target: EncoderTarget,
                      frame: np.ndarray) -> str | None:
    size = (picture.width, picture.height)
    if size != (target.width, target.height):
        return (f"the decoded {size[0]}x{size[1]} is not the encoder's "
                f"{target.width}x{target.height}")
    upright = turned_size(*size, picture.turns)  # the frame's: the picture turned upright
    if frame.shape[:2] != upright[::-1]:
        return (f"the frame's {frame.shape[1]}x{frame.shape[0]} is not the decoded picture's "
                f"{upright[0]}x{upright[1]} (upright)")
    sx, sy = PLANAR[picture.pixel_format]
    if size[0] % sx or size[1] % sy:
        return f"{picture.pixel_format} of an odd size ({size[0]}x{size[1]})"
    return None


def _matrix_refusal(picture: DecodedPicture, target: EncoderTarget) -> str | None:
    read = matrix_for(picture.colorspace, picture.color_range, picture.pixel_format)
    written = matrix_for(target.colorspace, target.color_range, target.pixel_format)
    if read is None or read != written:
        return (f"the decoded colour tags (colorspace {picture.colorspace}, range "
                f"{picture.color_range}) are read with another matrix than the encoder's "
                f"(colorspace {target.colorspace}, range {target.color_range})")
    return None


def compose(picture: DecodedPicture, frame: np.ndarray, pasted: Sequence[Pasted],
            target: EncoderTarget, origin_xy: tuple[int, int] = (0, 0)) -> Any:
    """A new av.VideoFrame of the target's format and tags: a copy of `picture`'s planes with
    the samples every paste of `pasted` changed (mask > 0) converted from `frame` (BGR uint8,
    uint16 for a 10-bit picture; the faces pasted in) as the whole-frame conversion would.
    Only for a `picture` that `refusal` lets through to `target`. origin_xy: where `frame`
    starts when it holds only the part of the frame around the pastes
    (io.video.frame.FrameRegion). `frame` and `pasted` are upright (`picture` turned by its
    turns); the planes are stored."""
    import av

    # the target's format: a yuvj picture goes to a full-range yuv stream with its planes as
    # they are (handing the encoder a yuvj frame would have swscale squeeze its range)
    out = av.VideoFrame(picture.width, picture.height, target.pixel_format)
    planes = picture_planes(out)  # writable views of the new picture's buffers
    for plane, decoded in zip(planes, picture.planes, strict=True):
        np.copyto(plane, decoded)
    matrix = matrix_for(target.colorspace, target.color_range, target.pixel_format)
    assert matrix is not None  # refusal checked it
    for bgr, origin, paste in _stored(picture, frame, pasted, origin_xy):
        paste_into_planes(planes, bgr, paste.roi.x0, paste.roi.y0, paste.mask > 0,
                          target.pixel_format, matrix, origin)
    out.colorspace, out.color_range = target.colorspace, target.color_range
    return out


def _stored(picture: DecodedPicture, frame: np.ndarray, pasted: Sequence[Pasted],
            origin_xy: tuple[int, int]
            ) -> Iterator[tuple[np.ndarray, tuple[int, int], Pasted]]:
    """Each paste with the BGR it is converted from, in `picture`'s stored orientation: for a
    picture the reader turned upright, the pixels around the paste (as far as
    paste_into_planes reads) turned back and the paste's box and mask turned with them
    (io.video.orientation); otherwise (`frame`, `origin_xy`, paste) as they are."""
    upright = turned_size(picture.width, picture.height, picture.turns)
    return stored_parts(frame, pasted, origin_xy, upright, picture.turns, PASTE_REACH_PX)
