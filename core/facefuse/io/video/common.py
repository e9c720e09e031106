"""What video reading and writing share: the file extensions and codec names facefuse knows and
opening a media file for reading (see video_read and video_write)."""

from __future__ import annotations

from pathlib import Path
from types import MappingProxyType
from typing import Any

from ...errors import InputError

VIDEO_EXTENSIONS = frozenset({".mov", ".mp4", ".mkv", ".avi", ".mxf", ".webm", ".m4v"})
VIDEO_CODECS = ("h264", "h265", "prores_422", "prores_4444", "dnxhr_hq", "dnxhr_444", "mjpeg",
                "rawvideo", "ffv1")
# The codecs whose rate control --crf and --preset set (x264 / x265), with today's defaults.
CRF_CODECS = frozenset({"h264", "h265"})
CRF_RANGE = (0, 51)  # libx264 (8-bit) and libx265 both take 0 (lossless) .. 51 (worst)
DEFAULT_CRF = MappingProxyType({"h264": 16, "h265": 18})
DEFAULT_PRESET = "medium"
PRESETS = ("ultrafast", "superfast", "veryfast", "faster", "fast", "medium", "slow", "slower",
           "veryslow", "placebo")  # what libx264 and libx265 both accept


def is_video_path(path: Path | str) -> bool:
    """True when the file name ends in an extension facefuse writes video containers as. Inputs
    are not limited to these: any file FFmpeg decodes a video stream from (GIF, WebM, AVI,
    ...) is read (see video_read)."""
    return Path(path).suffix.lower() in VIDEO_EXTENSIONS


def open_input(path: Path, what: str = "video") -> Any:
    """av.open for reading, with InputError for a missing, unreadable or non-media file."""
    if not path.exists():
        raise InputError(f"{path} does not exist")
    if not path.is_file():
        raise InputError(f"{path} is not a file")
    import av  # here, not at the top: the command line's start-up does not load FFmpeg

    try:
        return av.open(str(path), "r")
    except (av.FFmpegError, OSError) as exc:
        kind = f"a {path.suffix.lower()} file" if path.suffix else "a file without an extension"
        raise InputError(f"{path} is not a {what} file facefuse can read (FFmpeg finds neither "
                         f"a video nor an image in {kind}: {exc}); convert it to an H.264 .mp4 "
                         "or a PNG image sequence (name.####.png)") from exc


def container_tags(path: Path) -> dict[str, str]:
    """A media file's container metadata (key -> value, as the demuxer reads it back: Matroska
    upper-cases keys); InputError as open_input."""
    container = open_input(path)
    try:
        return {str(key): str(value) for key, value in container.metadata.items()}
    finally:
        container.close()


def check_encoder_options(codec: str, crf: int | None, preset: str | None) -> None:
    """InputError unless ``crf`` and ``preset`` (None: the codec's default) suit ``codec``: both
    are for h264 and h265 only, crf within CRF_RANGE and preset one of PRESETS."""
    for name, value in (("--crf", crf), ("--preset", preset)):
        if value is not None and codec not in CRF_CODECS:
            raise InputError(f"{name} applies to h264 and h265 only, and the codec is {codec}; "
                             f"leave {name} out (the {codec} settings are fixed)")
    low, high = CRF_RANGE
    if crf is not None and not low <= crf <= high:
        raise InputError(f"--crf {crf} is outside {low}..{high} for {codec} (0 is lossless, "
                         f"{DEFAULT_CRF.get(codec, low)} the default, higher is smaller)")
    if preset is not None and preset not in PRESETS:
        raise InputError(f"--preset {preset!r} is not an x264/x265 preset; choose one of "
                         f"{', '.join(PRESETS)}")


# 8-bit chroma-subsampled pixel formats and the 4:4:4 format to convert through (both ways:
# swscale's direct RGB <-> 4:2:0 conversions truncate where the two-step ones round).
SUBSAMPLED_8BIT = MappingProxyType({
    "yuv420p": "yuv444p", "yuv422p": "yuv444p", "nv12": "yuv444p",
    "yuvj420p": "yuvj444p", "yuvj422p": "yuvj444p",
})
