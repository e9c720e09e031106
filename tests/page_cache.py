"""How much of a file the page cache holds (Linux mincore(2)), for the tests of io.write_behind."""

from __future__ import annotations

import ctypes
import mmap
import os
import sys
from pathlib import Path

import pytest

linux_only = pytest.mark.skipif(not sys.platform.startswith("linux"),
                                reason="sync_file_range and mincore are Linux's")


def cached_bytes(path: Path) -> int:
    """The bytes of `path` the page cache holds, in whole pages. The file is mapped private
    and never touched, so the mapping shows the cache's pages and reads nothing in."""
    size = os.path.getsize(path)
    if size == 0:
        return 0
    pages = (size + mmap.PAGESIZE - 1) // mmap.PAGESIZE
    libc = ctypes.CDLL(None, use_errno=True)
    libc.mincore.argtypes = (ctypes.c_void_p, ctypes.c_size_t, ctypes.c_char_p)
    vector = ctypes.create_string_buffer(pages)
    with open(path, "rb") as handle, mmap.mmap(handle.fileno(), size,
                                               access=mmap.ACCESS_COPY) as mapped:
        start = ctypes.c_char.from_buffer(mapped)  # the mapping's first byte, not read
        failed = libc.mincore(ctypes.addressof(start), size, vector)
        del start  # the mapping cannot close while a ctypes object points into it
    if failed:
        raise OSError(ctypes.get_errno(), "mincore failed")
    return sum(byte & 1 for byte in vector.raw) * mmap.PAGESIZE
