"""The colour tags a written video stream carries, and the matrix its frames are converted with.

A stream keeps the source's own tags where its frames go back in the encoding they came in: a
--keep-yuv stream always (its pictures are the source's), an h264 / h265 stream of a source of
the same depth whose matrix io.video.yuv reads (a yuvj source's range made explicit; 10-bit
full range excepted). Other streams are tagged for what they hold: RGB full range (rawvideo,
ffv1), BT.601 full range (mjpeg, as JPEG defines), else BT.709 limited range.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .encoders import CodecSpec, tags_travel
from .keep_yuv import KeptYuv
from .read import VideoInfo
from .yuv import PLANAR_10BIT, RANGE_JPEG, matrix_for

RGB, BT709, BT601 = 0, 1, 6  # AVColorSpace
RANGE_MPEG = 1  # AVColorRange: limited (the full range is yuv.RANGE_JPEG)


@dataclass(frozen=True, slots=True)
class StreamColour:
    """A stream's tags (AVColorSpace, AVColorRange; primaries and transfer, None: left
    unspecified) and the matrix its BGR frames are converted with (AVColorSpace, full range)."""

    colorspace: int
    color_range: int
    primaries: int | None
    trc: int | None
    matrix: tuple[int, bool]

    def tag(self, codec_context: Any) -> None:
        """Set the tags on a PyAV codec context."""
        codec_context.colorspace, codec_context.color_range = self.colorspace, self.color_range
        if self.primaries is not None:
            codec_context.color_primaries, codec_context.color_trc = self.primaries, self.trc


def stream_colour(spec: CodecSpec, info: VideoInfo, pix_fmt: str, rgb: bool,
                  kept: KeptYuv | None) -> StreamColour:
    """The colour of a `spec` stream in `pix_fmt` of the source `info` (see the module
    docstring); rgb: it stores RGB; kept: a --keep-yuv stream's description."""
    tags = source_tags(spec, info, pix_fmt, kept)
    if tags is not None:
        colorspace, color_range, primaries, trc = tags
        return StreamColour(colorspace, color_range, primaries, trc,
                            (colorspace, color_range == RANGE_JPEG))
    jpeg = spec.jpeg_range
    return StreamColour(RGB if rgb else BT601 if jpeg else BT709,
                        RANGE_JPEG if jpeg or rgb else RANGE_MPEG,
                        None if jpeg else BT709, None if jpeg else BT709,
                        (BT601 if jpeg else BT709, jpeg))


def source_tags(spec: CodecSpec, info: VideoInfo, pix_fmt: str, kept: KeptYuv | None
                ) -> tuple[int, int, int, int] | None:
    """The source's (colorspace, range, primaries, transfer) for this stream, range made
    explicit for a full-range (yuvj) source (a --keep-yuv stream: always), or None where the
    stream takes its own tags: a codec other than h264 / h265, an output and source not both
    8-bit YUV or both 10-bit YUV (tags_travel), a source whose matrix io.video.yuv does not
    read, or 10-bit full range."""
    if kept is not None:
        return kept.colorspace, kept.color_range, kept.primaries, kept.trc
    if not spec.keeps_source_tags or info.colour_tags is None or not tags_travel(pix_fmt, info):
        return None
    colorspace, color_range, primaries, trc = info.colour_tags
    matrix = matrix_for(colorspace, color_range, info.pixel_format)
    if matrix is None or (matrix.full_range and pix_fmt in PLANAR_10BIT):
        return None
    return colorspace, RANGE_JPEG if matrix.full_range else color_range, primaries, trc
