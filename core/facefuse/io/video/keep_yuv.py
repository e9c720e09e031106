"""--keep-yuv: a lossless video (ffv1, rawvideo) of the source's own planar YUV pictures.

Without it rawvideo and ffv1 store RGB, so every frame is converted whole from the decoded YUV.
With it the stream takes the source's layout, bit depth and colour tags (a yuvj source's yuv twin,
tagged full range), and every frame goes to the encoder through io.video.passthrough: a copy of
the decoded planes with only the pasted samples converted, so every sample outside the pasted
masks is the input's, bit for bit, at half the bytes of RGB for 4:2:0 (ffv1 compresses that
further). A source stored sideways keeps its stored pictures and its display rotation.

What FFmpeg 8 holds (PyAV 18): ffv1 in .mkv takes every 8-bit and 10-bit planar layout
(yuv420p, yuv422p, yuv444p and their 10-bit forms), though not yuvj420p, so a full-range source
is written as yuv420p tagged full range; rawvideo in .mkv takes 8-bit 4:2:0 and 4:2:2 only (the
others fail to open), and .mov has no tag for planar YUV raw video (4:2:0 fails, 4:2:2 and 4:4:4
read back as RGB garbage). .nut holds them all but keeps neither the colour tags nor the display
rotation, so facefuse does not write it.

`kept_yuv` is the one check of a source against these (InputError, one sentence: why not, and
what to do instead); it asks io.video.passthrough.refusal about a stand-in of the source's
pictures, so the reasons are the ones a writer would log.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType

import numpy as np

from ...errors import InputError
from .orientation import turned_size
from .passthrough import DecodedPicture, EncoderTarget, refusal
from .read import VideoInfo
from .yuv import PLANAR, PLANAR_10BIT, RANGE_JPEG, chroma_centred


@dataclass(frozen=True, slots=True)
class KeptCodec:
    """Where one lossless codec keeps planar YUV: its containers, the layouts it takes there,
    and why the others are refused (for the refusal)."""

    containers: frozenset[str]
    layouts: frozenset[str]
    container_note: str
    layout_note: str = ""


_ALL_LAYOUTS = frozenset(name for name in PLANAR if not name.startswith("yuvj"))
KEPT_CODECS: Mapping[str, KeptCodec] = MappingProxyType({
    "ffv1": KeptCodec(frozenset({".mkv"}), _ALL_LAYOUTS,
                      " (FFmpeg's .mov muxer does not take FFV1)"),
    "rawvideo": KeptCodec(frozenset({".mkv"}), frozenset({"yuv420p", "yuv422p"}),
                          " (FFmpeg's .mov has no tag for planar YUV raw video)",
                          "Matroska's raw video holds 8-bit 4:2:0 and 4:2:2 YUV only"),
})


@dataclass(frozen=True, slots=True)
class KeptYuv:
    """A --keep-yuv stream: its pixel format and colour tags (AVColorSpace, AVColorRange,
    AVColorPrimaries, AVColorTransferCharacteristic), the source's."""

    pixel_format: str
    colorspace: int
    color_range: int
    primaries: int
    trc: int


def check_kept_container(path: Path, codec: str) -> None:
    """InputError unless `codec` keeps planar YUV and `path`'s container holds it."""
    if codec not in KEPT_CODECS:
        raise InputError(f"--keep-yuv applies to the lossless codecs ffv1 and rawvideo, and the "
                         f"codec is {codec}; choose --codec ffv1 or leave --keep-yuv out")
    kept, suffix = KEPT_CODECS[codec], Path(path).suffix.lower()
    if suffix not in kept.containers:
        raise InputError(f"--keep-yuv writes {codec} in {' or '.join(sorted(kept.containers))} "
                         f"only, and the output is {suffix or 'without an extension'}"
                         f"{kept.container_note}; name the output .mkv")


def kept_yuv(info: VideoInfo | None, codec: str, label: str,
             colour_transform: bool = False) -> KeptYuv:
    """The stream a --keep-yuv `codec` output of the source `info` describes (None: an image
    sequence, `label`) is written as; InputError saying why it cannot be (see the module
    docstring). colour_transform: the frames' colours are transformed for the video."""
    if info is None:
        raise InputError(f"--keep-yuv keeps a video input's own YUV pictures, and {label} is an "
                         "image sequence; leave --keep-yuv out (ffv1 and rawvideo then store "
                         "RGB)")
    fmt = info.pixel_format
    if fmt not in PLANAR:
        raise InputError(f"--keep-yuv keeps 8-bit and 10-bit planar YUV pictures, and {label} "
                         f"is {fmt}{_format_note(info)}; leave --keep-yuv out (ffv1 and "
                         "rawvideo then store RGB)")
    layout = fmt.replace("yuvj", "yuv", 1)
    kept = KEPT_CODECS[codec]
    if layout not in kept.layouts:
        raise InputError(f"{codec} cannot keep {label}'s {fmt} ({kept.layout_note}); choose "
                         "--codec ffv1 for --keep-yuv")
    tags = _source_tags(info, layout)
    reason = refusal(_stand_in(info), _target(info, tags), _frame_like(info), colour_transform)
    if reason is not None:
        raise InputError(f"--keep-yuv cannot keep {label}'s pictures as decoded: {reason}; "
                         f"{_remedy(colour_transform)}")
    return tags


def _format_note(info: VideoInfo) -> str:
    if info.has_alpha:
        return " (with alpha)"
    if info.bit_depth > 10:
        return f" ({info.bit_depth}-bit)"
    if info.pixel_format.startswith(("rgb", "bgr", "gbr")):
        return " (RGB)"
    return ""


def _remedy(colour_transform: bool) -> str:
    if colour_transform:
        return "give --colorspace none, or leave --keep-yuv out"
    return "leave --keep-yuv out (ffv1 and rawvideo then store RGB)"


def _source_tags(info: VideoInfo, layout: str) -> KeptYuv:
    """The stream: the source's layout and tags, range made explicit for a yuvj source."""
    colorspace, color_range, primaries, trc = info.colour_tags or (2, 0, 2, 2)
    if info.pixel_format.startswith("yuvj"):
        color_range = RANGE_JPEG
    return KeptYuv(layout, colorspace, color_range, primaries, trc)


def _stand_in(info: VideoInfo) -> DecodedPicture:
    """A picture shaped as the source's decoded ones (stored orientation; no real samples)."""
    fmt, turns = info.pixel_format, info.rotation_deg // 90 % 4
    width, height = turned_size(info.width, info.height, turns)  # stored: upright turned back
    across, down = PLANAR[fmt]
    dtype = np.uint16 if fmt in PLANAR_10BIT else np.uint8
    luma = np.broadcast_to(np.zeros((), dtype), (height, width))
    chroma = np.broadcast_to(np.zeros((), dtype), (-(-height // down), -(-width // across)))
    colorspace, color_range = (info.colour_tags or (2, 0))[:2]
    return DecodedPicture((luma, chroma, chroma), fmt, colorspace, color_range, turns,
                          chroma_centred(info.codec))


def _target(info: VideoInfo, kept: KeptYuv) -> EncoderTarget:
    turns = info.rotation_deg // 90 % 4
    width, height = turned_size(info.width, info.height, turns)
    return EncoderTarget(kept.pixel_format, width, height, kept.colorspace, kept.color_range,
                         turns)


def _frame_like(info: VideoInfo) -> np.ndarray:
    """The engine frames the reader makes of the source: upright BGR, uint16 for 10 bits."""
    dtype = np.uint16 if info.pixel_format in PLANAR_10BIT else np.uint8
    return np.broadcast_to(np.zeros((), dtype), (info.height, info.width, 3))

