"""swscale contexts kept for a stream's frames.

PyAV's ``VideoFrame.reformat`` builds a new swscale context for every frame it is called on, and
with FFmpeg's automatic threading every context starts (and ends) a thread pool of its own: a
pool of threads started and stopped for each frame, whose work no per-thread reading can see.
A ``Scalers`` keeps a ``VideoReformatter`` per thread and per set of options instead, so the
context and its threads live as long as the stream that uses them; swscale reconfigures a kept
context when a picture's size or format differs. The pictures are the same bits either way.
"""

from __future__ import annotations

import threading
from typing import Any

from av.video.reformatter import VideoReformatter


class Scalers:
    """swscale contexts (PyAV VideoReformatter) per thread and per kind of reformat: a writer
    that goes through 4:4:4 and then to its format keeps one context for each step rather
    than reconfiguring one back and forth every frame."""

    __slots__ = ("_local",)

    def __init__(self) -> None:
        self._local = threading.local()

    def reformat(self, picture: Any, **options: Any) -> Any:
        """`picture` reformatted as VideoFrame.reformat(**options) does, through this thread's
        kept context for these options."""
        kept: dict[tuple[tuple[str, str], ...], VideoReformatter] | None = getattr(
            self._local, "kept", None)
        if kept is None:
            kept = self._local.kept = {}
        key = tuple(sorted((name, str(value)) for name, value in options.items()))
        reformatter = kept.get(key)
        if reformatter is None:
            reformatter = kept[key] = VideoReformatter()
        return reformatter.reformat(picture, **options)
