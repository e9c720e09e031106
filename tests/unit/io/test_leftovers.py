"""io.files: one sweep rule for what killed runs leave (files and scratch folders named as
temporaries, their writer gone), and scratch folders that follow it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from facefuse.io import files


@pytest.fixture(scope="module")
def dead_pid() -> int:
    ended = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                           capture_output=True, text=True, check=True)
    return int(ended.stdout)


def as_written_by(path: Path, pid: int) -> Path:
    """`path` (a temporary name of this process) renamed as written by process `pid`."""
    owner = files.owner_tag()
    return path.with_name(path.name.replace(owner, f"{pid}-{owner.split('-')[1]}-x"))


def test_everything_a_dead_writer_left_goes_and_nothing_else(tmp_path: Path,
                                                             dead_pid: int) -> None:
    stale_file = as_written_by(files.temporary_path(tmp_path / "A001.v001.mov", True), dead_pid)
    stale_file.write_bytes(b"half a movie")
    stale_folder = as_written_by(files.temporary_path(tmp_path / "report"), dead_pid)
    (stale_folder / "samples").mkdir(parents=True)
    (stale_folder / "samples" / "000001-after.jpg").write_bytes(b"jpeg")
    live = files.temporary_path(tmp_path / "still.png")
    live.write_bytes(b"being written")
    protected = as_written_by(files.temporary_path(tmp_path / "input.png"), dead_pid)
    protected.write_bytes(b"a user's file that happens to be named so")
    link = as_written_by(files.temporary_path(tmp_path / "link"), dead_pid)
    link.symlink_to(stale_folder)
    others = [tmp_path / ".hidden", tmp_path / "frame.0001.png", tmp_path / ".x.123.tmp"]
    for other in others:
        other.write_bytes(b"not ours")
    st = protected.stat()
    removed = files.sweep_leftovers(tmp_path, frozenset({(st.st_dev, st.st_ino)}))
    assert sorted(removed) == sorted([stale_file, stale_folder])
    assert sorted(tmp_path.iterdir()) == sorted([live, protected, link, *others])


def test_a_scratch_folder_goes_however_the_block_ends_and_sweeps_a_dead_ones(
        tmp_path: Path, dead_pid: int) -> None:
    left = as_written_by(files.temporary_path(tmp_path / "stills"), dead_pid)
    left.mkdir()
    with pytest.raises(RuntimeError), files.scratch_folder(tmp_path, "stills") as scratch:
        assert scratch.is_dir() and scratch.name.startswith(".stills.")
        assert not left.exists(), "the dead run's scratch is swept first"
        (scratch / "a.png").write_bytes(b"x")
        raise RuntimeError
    assert list(tmp_path.iterdir()) == []
