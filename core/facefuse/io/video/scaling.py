"""swscale contexts kept for a stream's frames.

PyAV's ``VideoFrame.reformat`` builds a new swscale context for every frame it is called on, and
with FFmpeg's automatic threading every context starts (and ends) a thread pool of its own: a
pool of threads started and stopped for each frame, whose work no per-thread reading can see.
A ``Scalers`` keeps one ``VideoReformatter`` per thread instead, so the context and its threads
live as long as the stream that uses them; swscale reconfigures a kept context when a frame's
size or format differs. The pictures are the same bits either way.
"""

from __future__ import annotations

import threading
from typing import Any

from av.video.reformatter import VideoReformatter


class Scalers:
    """One swscale context (PyAV VideoReformatter) per thread that reformats through it."""

    __slots__ = ("_local",)

    def __init__(self) -> None:
        self._local = threading.local()

    def reformat(self, picture: Any, **options: Any) -> Any:
        """`picture` reformatted as VideoFrame.reformat(**options) does, through this thread's
        kept context."""
        reformatter = getattr(self._local, "reformatter", None)
        if reformatter is None:
            reformatter = self._local.reformatter = VideoReformatter()
        return reformatter.reformat(picture, **options)
