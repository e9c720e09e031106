"""Outputs pushed to disk while they are written, and let go of by the page cache.

A render writes far more than it will read back: 3.1 MB a frame of 1080p lossless YUV (4.5 GB
a minute at 24 frames/s), 12 MB a 4K rawvideo frame, 6 MB a 1080p TIFF. Left to the kernel, all
of it stays in the page cache, dirty until the kernel's own writeback comes round, so:
- every page written is a fresh page, which the kernel must find, zero and map;
- the artist's own cache (the plates they are scrubbing, the edit) is pushed out by a file
  nobody reads;
- what is still dirty at the end is written back then.

Writing a new 180 MB file cost 0.38-0.54 s of system CPU on the 2-core test machine (a VM:
each fresh page costs the host a fault too); written behind, 0.06-0.07 s, sync included
(docs/performance.md).

`WriteBehind` follows a file that a library writes through its own descriptor (FFmpeg's
muxer). Each time another CHUNK_BYTES has been written, it starts the writeback of that chunk
(sync_file_range), waits for the chunk before it, and drops that one from the cache
(posix_fadvise DONTNEED). So little more than two chunks are in memory at once, and the next
writes get the same pages back. `finish()` makes the whole file durable (fdatasync) before
the caller renames it into place. `sync_and_release(fd)` does the same for a file written
whole, as the image sequence writers do for each frame.

On Linux all of it works. On macOS, without sync_file_range and posix_fadvise, only the sync
at the end remains; on Windows nothing. The cache is a hint: a file system that refuses it
(some network ones) is written as before, and the refusal is logged at debug. Bytes are never
changed by any of this.
"""

from __future__ import annotations

import ctypes
import errno
import logging
import os
import sys
from collections.abc import Callable

log = logging.getLogger(__name__)

CHUNK_BYTES = 32 << 20  # 32 MiB: a few 1080p frames, under three 4K rawvideo ones
_START = 2  # SYNC_FILE_RANGE_WRITE: start writing back the range's dirty pages
_WAIT = 1 | 2 | 4  # ..._WAIT_BEFORE | ..._WRITE | ..._WAIT_AFTER: the range is on disk on return

# what a file system without range syncs answers (the others are the storage's own failures)
_UNSUPPORTED = frozenset({errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP, errno.ENOTSUP,
                          errno.ESPIPE})

RangeSync = Callable[[int, int, int, int], None]


def _range_sync() -> RangeSync | None:
    """Linux's sync_file_range(fd, offset, length, flags), raising OSError; None elsewhere."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        call = ctypes.CDLL(None, use_errno=True).sync_file_range
    except (OSError, AttributeError):
        return None
    call.argtypes = (ctypes.c_int, ctypes.c_int64, ctypes.c_int64, ctypes.c_uint)
    call.restype = ctypes.c_int

    def sync(fd: int, offset: int, length: int, flags: int) -> None:
        if call(fd, offset, length, flags) != 0:
            number = ctypes.get_errno()
            raise OSError(number, os.strerror(number))

    return sync


def release_written(fd: int, offset: int = 0, length: int = 0) -> None:
    """Drop the clean cached pages of `fd`'s file from `offset` (length 0: to its end), where
    the system can; a hint, so a refusal is only logged."""
    if not hasattr(os, "posix_fadvise"):
        return
    try:
        os.posix_fadvise(fd, offset, length, os.POSIX_FADV_DONTNEED)
    except OSError as exc:
        log.debug("the page cache kept a written file: %s", exc)


def sync_and_release(fd: int) -> None:
    """`fd`'s file on disk (fdatasync, fsync where there is none; OSError as the storage
    reports it, a full disk included), then out of the page cache."""
    if hasattr(os, "fdatasync"):
        os.fdatasync(fd)
    else:  # macOS, Windows
        os.fsync(fd)
    release_written(fd)


class WriteBehind:
    """The file of descriptor `fd` (which it owns and closes), while a library writes it
    through a descriptor of its own, pushed to disk and dropped from the cache CHUNK_BYTES at
    a time (see the module docstring). advance() after each frame written; finish() once the
    library has closed the file; close() to let go without syncing (an aborted write)."""

    def __init__(self, fd: int, chunk_bytes: int = CHUNK_BYTES) -> None:
        self._fd: int | None = fd
        if os.name == "nt":  # two writers' descriptors on one file: left to the library alone
            self.close()
        self._chunk = chunk_bytes
        self._sync = _range_sync()
        self._started = 0  # bytes whose writeback has been started
        self._dropped = 0  # bytes on disk and out of the cache

    def advance(self) -> None:
        """Start the writeback of what was written since the last chunk once it is a chunk,
        after waiting for the chunk before it and dropping it. OSError when the storage fails
        that chunk's writeback (a full disk, an I/O error)."""
        if self._fd is None or self._sync is None:
            return
        size = os.fstat(self._fd).st_size
        if size - self._started < self._chunk:
            return
        try:
            if self._started > self._dropped:
                self._sync(self._fd, self._dropped, self._started - self._dropped, _WAIT)
                release_written(self._fd, self._dropped, self._started - self._dropped)
                self._dropped = self._started
            self._sync(self._fd, self._started, size - self._started, _START)
            self._started = size
        except OSError as exc:
            # A failed writeback is reported once per descriptor: raised here, or lost.
            if exc.errno not in _UNSUPPORTED:
                raise
            log.debug("no write-behind for this file: %s", exc)  # written as before from here
            self._sync = None

    def finish(self) -> None:
        """The whole file on disk (fdatasync; OSError as the storage reports it, a full disk
        included) and out of the cache, and the descriptor closed."""
        if self._fd is None:
            return
        try:
            sync_and_release(self._fd)
        finally:
            self.close()

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
