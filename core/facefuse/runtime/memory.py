"""Memory a render freed goes back to the system while it runs, so its peak stays flat.

A render allocates and frees a few buffers of frame size every frame (decoded pictures, their
4:4:4 and BGR conversions, pasted frames, encoder input), on three threads (reader, inference,
writer). glibc's malloc keeps what is freed in its heaps, one arena per thread that allocates,
and buffers of several sizes freed by other threads than the one that allocated them fragment
those heaps: the memory held grows over hundreds of frames although the frames in flight stay
the same few. Measured at 4K (CHANGELOG.md, 2026-12-01): 240 frames peaked at 877 MiB
against 521 MiB at the end of the analysis pass, the same render with the freed memory handed
back once a second at 635 MiB. Fixing malloc's mmap threshold instead (a mapping per frame
buffer, unmapped when freed) holds it flat too but costs 60 % more CPU a frame at 1080p (page
faults and unmapping in a threaded process).

`returning_freed_memory()` runs one thread for the length of a `with` block that calls glibc's
malloc_trim every `interval_s`: free pages go back to the system, what is in use stays. Elsewhere
(not glibc, e.g. macOS or musl) it does nothing.
"""

from __future__ import annotations

import ctypes
import logging
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from ..periodic import every

log = logging.getLogger(__name__)

RETURN_INTERVAL_S = 1.0


def malloc_trim() -> Callable[[], bool] | None:
    """A function handing the C library's free memory back to the system (True when some was),
    or None where the C library has no malloc_trim (it is glibc's)."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        trim = ctypes.CDLL("libc.so.6").malloc_trim
    except (OSError, AttributeError):
        return None
    trim.argtypes, trim.restype = (ctypes.c_size_t,), ctypes.c_int
    return lambda: bool(trim(0))


@contextmanager
def returning_freed_memory(interval_s: float = RETURN_INTERVAL_S) -> Iterator[None]:
    """For the length of the block, hand freed memory back to the system every `interval_s`
    seconds from a thread of its own (and once more at the end); nothing where malloc_trim is
    missing."""
    trim = malloc_trim()
    if trim is None:
        yield
        return
    with every(interval_s, trim, "facefuse-memory"):
        yield
    log.debug("freed memory handed back to the system")
