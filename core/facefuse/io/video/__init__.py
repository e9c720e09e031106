"""Video files in and out with PyAV: frame-accurate reads by frame number, faithful writes.

The public face of the video modules: ``video_read`` (``VideoSource``, ``VideoInfo``: the packet
index, seeking and variable-rate conforming), ``video_write`` (``VideoSink``: codecs, container
metadata and audio copy) and ``video_common`` (extensions, codec names, rate and timecode
helpers). Import from here; their module docstrings say how frames are numbered and converted,
and what survives in which container.
"""

from __future__ import annotations

from .common import (
    VIDEO_CODECS,
    VIDEO_EXTENSIONS,
    format_rate,
    is_video_path,
    offset_timecode,
)
from .index import STANDARD_RATES
from .read import DecodeFailure, VideoInfo, VideoSource
from .write import VideoSink

__all__ = [
    "STANDARD_RATES",
    "VIDEO_CODECS",
    "VIDEO_EXTENSIONS",
    "DecodeFailure",
    "VideoInfo",
    "VideoSink",
    "VideoSource",
    "format_rate",
    "is_video_path",
    "offset_timecode",
]
