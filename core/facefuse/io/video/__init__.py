"""Video files in and out with PyAV: frame-accurate reads by frame number, faithful writes.

The public face of the video modules. A read gives one ``frame.DecodedFrame`` per frame number,
which converts lazily (the whole picture, a box, the detector's small picture, the native planes)
and which the writer takes back. ``read`` (``VideoSource``, ``VideoInfo``) over ``index`` (the
packet index, seeking and variable-rate conforming); ``write`` (``VideoSink``) with ``encoders``
(the codec table and its checks), ``keep_yuv`` (--keep-yuv's lossless YUV outputs) and
``audio`` (packet copy); ``passthrough`` (when decoded planes go to the encoder); ``yuv`` /
``yuv_write`` (the once-rounded YUV <-> BGR maths); ``orientation`` (display rotations);
``common`` (extensions, codec names; rates and timecode: ``facefuse.timebase``). Import from
here; the module docstrings say how frames are numbered and converted, and what survives in
which container.

The names below load their module on first use (PEP 562), so importing one light module of the
package (``io.video.common``: the command line's codec names) loads neither PyAV nor OpenCV.
"""

from __future__ import annotations

import importlib
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .common import (
        VIDEO_CODECS,
        VIDEO_EXTENSIONS,
        container_tags,
        is_video_path,
    )
    from .frame import DecodedFrame, Frame, FrameRegion, SmallPicture
    from .index import STANDARD_RATES
    from .read import DecodeFailure, VideoInfo, VideoSource
    from .write import VideoSink

_HOMES = MappingProxyType({
    "VIDEO_CODECS": "common", "VIDEO_EXTENSIONS": "common", 
    "is_video_path": "common", "container_tags": "common",
    "DecodedFrame": "frame",
    "Frame": "frame", "FrameRegion": "frame", "SmallPicture": "frame",
    "STANDARD_RATES": "index", "DecodeFailure": "read", "VideoInfo": "read",
    "VideoSource": "read", "VideoSink": "write",
})

__all__ = [
    "STANDARD_RATES",
    "VIDEO_CODECS",
    "VIDEO_EXTENSIONS",
    "DecodeFailure",
    "DecodedFrame",
    "Frame",
    "FrameRegion",
    "SmallPicture",
    "VideoInfo",
    "VideoSink",
    "VideoSource",
    "container_tags",
    "is_video_path",
]


def __getattr__(name: str) -> Any:
    """A public name, from the module that defines it (imported on first use)."""
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{home}"), name)
