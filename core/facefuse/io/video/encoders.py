"""What facefuse encodes video as: each VIDEO_CODECS name's encoder, pixel formats, containers and
options, and the checks a writer runs before its first frame (io.video.write)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType

import numpy as np

from ...errors import InputError
from .common import DEFAULT_CRF, VIDEO_CODECS
from .keep_yuv import check_kept_container
from .read import VideoInfo
from .yuv import PLANAR_8BIT, PLANAR_10BIT

CONTAINER_FORMATS = MappingProxyType({".mov": "mov", ".mp4": "mp4", ".mkv": "matroska"})
_VUI_DECODERS = frozenset({"h264", "hevc"})  # decoders whose pictures carry the stream's tags
# AVColorSpace -> swscale's name for it, for the frames io.video.yuv does not convert (alpha)
SWSCALE_COLORSPACES = MappingProxyType({1: "itu709", 2: "default", 4: "fcc", 5: "itu601",
                                         6: "itu601", 7: "smpte240m", 9: "bt2020"})


@dataclass(frozen=True, slots=True)
class CodecSpec:
    """How one VIDEO_CODECS name is encoded."""

    encoder: str
    pix_fmt: str
    containers: frozenset[str]
    pix_fmt_alpha: str | None = None
    pix_fmt_deep: str | None = None
    pix_fmt_deep_alpha: str | None = None
    options: tuple[tuple[str, str], ...] = ()
    quality_option: str | None = None
    default_quality: int = 0
    jpeg_range: bool = False
    rgb: bool = False  # stores RGB as it is: no YUV conversion, tagged RGB full range
    # the bitstream carries the colour tags (H.264 / HEVC VUI), so a source's own can be kept;
    # DNxHR's .mov has no colour atom from FFmpeg and reads back as BT.709
    keeps_source_tags: bool = False
    container_note: str = ""  # why the containers are limited, for the refusal


_ALL = frozenset(CONTAINER_FORMATS)
CODECS: Mapping[str, CodecSpec] = MappingProxyType({
    "h264": CodecSpec("libx264", "yuv420p", _ALL, quality_option="crf",
                       default_quality=DEFAULT_CRF["h264"], keeps_source_tags=True),
    "h265": CodecSpec("libx265", "yuv420p", _ALL, pix_fmt_deep="yuv420p10le",
                       options=(("x265-params", "log-level=error"),),
                       quality_option="crf", default_quality=DEFAULT_CRF["h265"],
                       keeps_source_tags=True),
    "prores_422": CodecSpec("prores_ks", "yuv422p10le", frozenset({".mov", ".mkv"}),
                             options=(("profile", "3"),)),
    "prores_4444": CodecSpec("prores_ks", "yuv444p10le", frozenset({".mov", ".mkv"}),
                              pix_fmt_alpha="yuva444p10le", options=(("profile", "4"),)),
    "dnxhr_hq": CodecSpec("dnxhd", "yuv422p", frozenset({".mov"}),
                           options=(("profile", "dnxhr_hq"),)),
    "dnxhr_444": CodecSpec("dnxhd", "yuv444p10le", frozenset({".mov"}),
                            options=(("profile", "dnxhr_444"),)),
    "mjpeg": CodecSpec("mjpeg", "yuvj444p", _ALL, quality_option="q", default_quality=3,
                        jpeg_range=True),
    "rawvideo": CodecSpec("rawvideo", "bgr24", frozenset({".mov"}), pix_fmt_alpha="bgra",
                           pix_fmt_deep="rgb48be", rgb=True,
                           container_note=" (Matroska has no native raw RGB; ffv1 in .mkv is "
                           "lossless too)"),
    "ffv1": CodecSpec("ffv1", "bgr0", frozenset({".mkv"}), pix_fmt_alpha="bgra",
                       pix_fmt_deep="gbrp16le", pix_fmt_deep_alpha="gbrap16le",
                       options=(("level", "3"), ("slicecrc", "1"), ("g", "1")),
                       rgb=True, container_note=" (FFmpeg's .mov muxer does not take FFV1)"),
})


def check_container(path: Path, codec: str, keep_yuv: bool = False) -> None:
    """InputError unless ``codec`` is one facefuse writes and ``path``'s container holds it
    (checked before a render starts; the frame size is checked when the first frame comes).
    keep_yuv: the stream keeps the source's planar YUV (io.video.keep_yuv)."""
    spec_for(Path(path), codec, keep_yuv)


def spec_for(path: Path, codec: str, keep_yuv: bool = False) -> CodecSpec:
    suffix = path.suffix.lower()
    if codec not in CODECS:
        raise InputError(f"unknown video codec {codec!r}; choose one of {', '.join(VIDEO_CODECS)}")
    if suffix not in CONTAINER_FORMATS:
        raise InputError(f"{path}: cannot write {suffix or 'files without an extension'} videos; "
                         f"use one of {', '.join(sorted(CONTAINER_FORMATS))}")
    spec = CODECS[codec]
    if keep_yuv:
        check_kept_container(path, codec)
        return spec
    if suffix not in spec.containers:
        raise InputError(f"{codec} cannot be stored in {suffix}{spec.container_note}; "
                         f"use {' or '.join(sorted(spec.containers))}")
    return spec


def check_output(path: Path, codec: str, width: int, height: int,
                 keep_yuv: bool = False) -> CodecSpec:
    """InputError unless ``codec`` can be written to ``path`` at this size (keep_yuv: see
    check_container; the source's layout decides the size it takes)."""
    spec = spec_for(path, codec, keep_yuv)
    if not keep_yuv and spec.pix_fmt.startswith("yuv420") and (width % 2 or height % 2):
        raise InputError(f"{codec} needs an even width and height, and the frames are "
                         f"{width}x{height}; choose prores_4444 or mjpeg")
    if spec.encoder == "prores_ks" and spec.pix_fmt.startswith("yuv422") and width % 2:
        # FFmpeg's ProRes encoder garbles the last chroma column of an odd width (green)
        raise InputError(f"{codec} needs an even width, and the frames are {width}x{height}; "
                         f"choose prores_4444 or mjpeg")
    if spec.encoder == "dnxhd" and (width < 256 or height < 120):
        raise InputError(f"{codec} needs frames of at least 256x120, and these are "
                         f"{width}x{height}; choose prores_422 or prores_4444")
    if not path.parent.is_dir():
        raise InputError(f"the output folder {path.parent} does not exist")
    if path.is_dir():
        raise InputError(f"{path} is a folder, not a file name")
    return spec


def as_writable(frame: np.ndarray, deep: bool) -> tuple[np.ndarray, str]:
    """An engine frame as (C-contiguous array, PyAV packed format): uint8 for 8-bit codecs,
    uint16 (little-endian) for deeper ones; float32 (1.0 = white) is scaled and rounded."""
    if frame.ndim != 3 or frame.shape[2] not in (3, 4):
        raise ValueError(f"a frame must be (H, W, 3|4), got {frame.shape}")
    if frame.dtype == np.float32:
        scale = 65535.0 if deep else 255.0
        frame = np.clip(np.rint(frame * scale), 0, scale).astype(np.uint16 if deep else np.uint8)
    elif frame.dtype == np.uint16 and not deep:
        frame = np.rint(frame / 257.0).astype(np.uint8)
    elif frame.dtype not in (np.uint8, np.uint16):
        raise ValueError(f"frames must be uint8, uint16 or float32, got {frame.dtype}")
    alpha = frame.shape[2] == 4
    if frame.dtype == np.uint8:
        return np.ascontiguousarray(frame), "bgra" if alpha else "bgr24"
    return np.ascontiguousarray(frame, dtype="<u2"), "bgra64le" if alpha else "bgr48le"


def tags_travel(pixel_format: str, info: VideoInfo) -> bool:
    """Whether a stream of `pixel_format` may keep the colour tags of `info`'s source: both
    8-bit planar YUV, or both 10-bit with the source decoded from H.264 / HEVC, whose
    pictures carry the four tags of the stream (FFmpeg's DNxHR decoder gives BT.709 pictures
    whatever its .mov says, and ProRes primaries and transfer read back unspecified)."""
    if pixel_format in PLANAR_8BIT:
        return info.pixel_format in PLANAR_8BIT
    return (pixel_format in PLANAR_10BIT and info.pixel_format in PLANAR_10BIT
            and info.codec in _VUI_DECODERS)


def encoder_options(spec: CodecSpec, preset: str, quality: int, short_side_px: int
                    ) -> dict[str, str]:
    """The encoder's options for a stream of `spec`: the codec's own, x264 / x265's `preset`,
    the crf `quality` where the codec takes one, and FFV1's slices (16, 4x4, for its threads;
    frames too small to cut so far take fewer)."""
    options = dict(spec.options)
    if spec.encoder in ("libx264", "libx265"):
        options["preset"] = preset
    if spec.quality_option == "crf":
        options["crf"] = str(quality)
    if spec.encoder == "ffv1":
        options["slices"] = "16" if short_side_px >= 8 else "4" if short_side_px >= 2 else "1"
    return options
