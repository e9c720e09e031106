"""Renders write their outputs behind (io.write_behind): a finished video or image sequence is on
disk and not left in the page cache, a video's last sync failing (a full disk at writeback) is
the one sentence of a full disk with nothing left behind, and the bytes are the same as a render
that leaves the cache alone. The real render code through the CLI."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest

from facefuse.cli import main as cli  # imported here, while sys.stderr is pytest's own stream
from facefuse.errors import ExitCode
from facefuse.io import write_behind
from tests.integration.render_helpers import Media, one_line_error
from tests.page_cache import cached_bytes, linux_only
from tests.render_media import cli_args


def _render(media: Media, render_models: Path, output: Path, *extra: str) -> int:
    return cli.main(cli_args(render_models, media.source, media.clip, output, *extra))


@linux_only
@pytest.mark.parametrize("name, extra", [("v.mov", ("--codec", "rawvideo")),
                                         ("v.mkv", ("--codec", "ffv1")),
                                         ("o.####.tif", ())])
def test_a_finished_output_is_not_left_in_the_page_cache(
        media: Media, render_models: Path, cli_cache: Path, tmp_path: Path, name: str,
        extra: tuple[str, ...]) -> None:
    assert _render(media, render_models, tmp_path / name, *extra) == ExitCode.OK
    written = sorted(p for p in tmp_path.iterdir() if p.is_file())
    assert written and all(not p.name.startswith(".") for p in written)
    assert sum(p.stat().st_size for p in written) > 256 << 10
    assert [cached_bytes(p) for p in written] == [0] * len(written)


def test_the_same_bytes_as_a_render_that_leaves_the_cache_alone(
        media: Media, render_models: Path, cli_cache: Path, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    assert _render(media, render_models, tmp_path / "behind.mov",
                   "--codec", "rawvideo") == ExitCode.OK
    monkeypatch.setattr(write_behind, "_range_sync", lambda: None)
    monkeypatch.setattr(write_behind, "release_written", lambda *args: None)
    assert _render(media, render_models, tmp_path / "cached.mov",
                   "--codec", "rawvideo") == ExitCode.OK
    assert (tmp_path / "behind.mov").read_bytes() == (tmp_path / "cached.mov").read_bytes()


def test_a_full_disk_at_the_last_sync_is_one_sentence_and_leaves_nothing(
        media: Media, render_models: Path, cli_cache: Path, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    def full(fd: int) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(write_behind.os, "fdatasync" if hasattr(os, "fdatasync") else "fsync",
                        full)
    out = tmp_path / "out"
    out.mkdir()
    rc = _render(media, render_models, out / "v.mov", "--codec", "mjpeg")
    line = one_line_error(capsys.readouterr().err)
    assert rc == ExitCode.OUTPUT
    assert "disk is full" in line and str(out / "v.mov") in line
    assert list(out.iterdir()) == []
