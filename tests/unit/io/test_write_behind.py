"""io.write_behind: a file another descriptor writes is pushed to disk and dropped from the page
cache a chunk at a time, made durable by finish(), and never changed; a file system that
refuses the range syncs is written as before."""

from __future__ import annotations

import errno
import os
import sys
from pathlib import Path

import pytest

from facefuse.io import write_behind
from facefuse.io.write_behind import WriteBehind, release_written
from tests.page_cache import cached_bytes, linux_only

CHUNK = 1 << 20
PIECE = 256 << 10  # a quarter chunk: the size a muxer's writes come in


def _pieces(count: int) -> list[bytes]:
    return [os.urandom(PIECE) for _ in range(count)]


def _writer_and_behind(path: Path, chunk: int = CHUNK) -> tuple[int, WriteBehind]:
    """The library's descriptor (writing) and a WriteBehind on a descriptor of its own, as
    io.video.write opens them: the temporary is created first, then the library opens it."""
    behind = WriteBehind(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644), chunk)
    return os.open(path, os.O_WRONLY), behind


@linux_only
def test_at_most_two_chunks_stay_cached_while_the_file_grows(tmp_path: Path) -> None:
    path = tmp_path / "out.bin"
    writer, behind = _writer_and_behind(path)
    most = 0
    for piece in _pieces(40):  # 10 chunks
        os.write(writer, piece)
        behind.advance()
        most = max(most, cached_bytes(path))
    os.close(writer)
    behind.finish()
    assert os.path.getsize(path) == 40 * PIECE
    assert most <= 2 * CHUNK + PIECE, most  # the chunk waited on, the one started, one piece
    assert cached_bytes(path) == 0  # finish() drops what is left


def test_the_bytes_are_the_ones_written(tmp_path: Path) -> None:
    path = tmp_path / "out.bin"
    writer, behind = _writer_and_behind(path)
    pieces = _pieces(13)
    for i, piece in enumerate(pieces):
        os.write(writer, piece)
        behind.advance()
        if i == 9:  # a muxer going back to fill in a header the cache has already let go of
            if sys.platform.startswith("linux"):  # the first chunk was dropped at i == 7
                assert cached_bytes(path) <= (i + 1) * PIECE - CHUNK
            os.pwrite(writer, b"HEADER", 0)
    os.close(writer)
    behind.finish()
    expected = b"HEADER" + b"".join(pieces)[6:]
    assert path.read_bytes() == expected


def test_a_file_system_refusing_range_syncs_is_written_as_before(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    calls = []

    def refused(fd: int, offset: int, length: int, flags: int) -> None:
        calls.append(flags)
        raise OSError(errno.EINVAL, "Invalid argument")

    monkeypatch.setattr(write_behind, "_range_sync", lambda: refused)
    path = tmp_path / "out.bin"
    writer, behind = _writer_and_behind(path)
    pieces = _pieces(12)
    for piece in pieces:  # three chunks
        os.write(writer, piece)
        behind.advance()
    os.close(writer)
    behind.finish()
    assert path.read_bytes() == b"".join(pieces)
    assert len(calls) == 1  # refused once, not asked again for the later chunks


def test_a_failed_writeback_of_a_chunk_is_raised_not_swallowed(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def failing(fd: int, offset: int, length: int, flags: int) -> None:
        if flags & 4:  # the wait: the writeback's outcome
            raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(write_behind, "_range_sync", lambda: failing)
    path = tmp_path / "out.bin"
    writer, behind = _writer_and_behind(path)
    with pytest.raises(OSError) as raised:
        for piece in _pieces(12):
            os.write(writer, piece)
            behind.advance()
    assert raised.value.errno == errno.ENOSPC
    os.close(writer)
    behind.close()


def test_finish_reports_what_the_storage_refuses_and_closes_the_descriptor(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def full(fd: int) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    sync_name = "fdatasync" if hasattr(os, "fdatasync") else "fsync"
    path = tmp_path / "out.bin"
    writer, behind = _writer_and_behind(path)
    os.write(writer, b"frame")
    os.close(writer)
    open_before = len(os.listdir("/proc/self/fd")) if Path("/proc/self/fd").is_dir() else None
    monkeypatch.setattr(write_behind.os, sync_name, full)
    with pytest.raises(OSError) as raised:
        behind.finish()
    assert raised.value.errno == errno.ENOSPC
    if open_before is not None:
        assert len(os.listdir("/proc/self/fd")) == open_before - 1
    behind.close()  # a second close is nothing


@linux_only
def test_release_written_drops_a_synced_file(tmp_path: Path) -> None:
    path = tmp_path / "frame.tif"
    path.write_bytes(os.urandom(3 * CHUNK))
    with open(path, "rb") as handle:
        os.fsync(handle.fileno())
        release_written(handle.fileno())
    assert cached_bytes(path) == 0
