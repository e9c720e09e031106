"""`facefuse render` never destroys or silently replaces a file: outputs that would overwrite
an input (through another frame padding, a symlinked folder or a hard link) or each other are
refused before anything is written; missing output folders are made only once nothing is
refused; stale hidden temporaries of a killed render are swept; unwritable folders and full
disks get one sentence with the path; long legal names, the umask and repeated renders behave.

The shot (`media`) and `cli_cache` come from tests/integration/conftest.py, the models and the
session's analysis cache from tests/conftest.py.
"""

from __future__ import annotations

import errno
import hashlib
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from facefuse.cli import main as cli  # imported here, while sys.stderr is pytest's own stream
from facefuse.errors import ExitCode
from facefuse.io import files, plates
from facefuse.io.video import write as video_write
from tests.integration.render_helpers import Media, one_line_error
from tests.media_factory import read_marker
from tests.render_media import cli_args, decode_video, face_frame, write_plate_oiio


def _digests(folder: Path) -> dict[str, str]:
    """Every file below `folder` (relative name -> sha256), links followed."""
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


def _plates(folder: Path, name: str, numbers: range) -> Path:
    """Small faceless plates folder/name.NNNN.png (the pattern name.####.png)."""
    folder.mkdir(parents=True, exist_ok=True)
    for n in numbers:
        write_plate_oiio(folder / f"{name}.{n:04d}.png",
                         face_frame(n, None)[..., ::-1].copy(), "uint8")
    return folder


@pytest.fixture()
def refused(media: Media, render_models: Path, cli_cache: Path,
            capsys: pytest.CaptureFixture[str]):
    """run(input, output, *extra, code=2) -> the one error line of a render that must exit
    with `code` (2, usage, unless told otherwise)."""
    def run(input: str | Path, output: str | Path, *extra: str,
            code: ExitCode = ExitCode.USAGE) -> str:
        rc = cli.main(cli_args(render_models, media.source, input, output, *extra))
        captured = capsys.readouterr()
        assert rc == code, captured.err
        return one_line_error(captured.err)
    return run


@pytest.fixture()
def rendered(media: Media, render_models: Path, cli_cache: Path,
             capsys: pytest.CaptureFixture[str]):
    """run(output, *extra, swapper=...) renders the clip; asserts exit 0, returns stderr."""
    def run(output: str | Path, *extra: str, swapper: str = "identity") -> str:
        rc = cli.main(cli_args(render_models, media.source, media.clip, output, *extra,
                               swapper=swapper))
        captured = capsys.readouterr()
        assert rc == ExitCode.OK, captured.err
        return captured.err
    return run


# --- 1: outputs that are inputs ---------------------------------------------------------------

def test_another_padding_of_the_input_is_refused(refused, tmp_path: Path) -> None:
    """in.####.png frames 995-1003 and -o in.###.png: frames 1000-1003 are the same files."""
    shot = _plates(tmp_path / "plates", "in", range(995, 1004))
    before = _digests(shot)
    line = refused(shot / "in.####.png", shot / "in.###.png", "--overwrite")
    assert "overwrite the input" in line and "in.1000.png" in line
    assert _digests(shot) == before


def test_a_matte_or_patch_on_an_input_frame_is_refused(refused, tmp_path: Path) -> None:
    shot = _plates(tmp_path / "plates", "in", range(998, 1002))
    out = tmp_path / "out"
    out.mkdir()
    before = _digests(shot)
    for option in ("--matte", "--patch"):
        line = refused(shot / "in.####.png", out / "o.####.png", option, str(shot / "in.#.png"))
        assert "overwrite the input" in line and option in line
    assert _digests(shot) == before
    assert list(out.iterdir()) == []


def test_an_output_through_a_symlinked_folder_or_a_hard_link_is_refused(
        refused, tmp_path: Path) -> None:
    shot = _plates(tmp_path / "plates", "in", range(1, 4))
    before = _digests(shot)
    alias = tmp_path / "alias"
    alias.symlink_to(shot, target_is_directory=True)
    line = refused(shot / "in.####.png", alias / "in.####.png", "--overwrite")
    assert "overwrite the input" in line
    linked = tmp_path / "linked"
    linked.mkdir()
    os.link(shot / "in.0002.png", linked / "o.0002.png")
    line = refused(shot / "in.####.png", linked / "o.####.png", "--overwrite")
    assert "overwrite the input" in line and "o.0002.png" in line
    (linked / "o.0002.png").unlink()
    (linked / "o.0003.png").symlink_to(shot / "in.0003.png")
    line = refused(shot / "in.####.png", linked / "o.####.png", "--overwrite")
    assert "overwrite the input" in line and "o.0003.png" in line
    assert _digests(shot) == before


def test_a_video_output_that_is_a_link_to_the_input_is_refused(refused, media: Media,
                                                               tmp_path: Path) -> None:
    copy = tmp_path / "shot.mp4"
    copy.write_bytes(media.clip.read_bytes())
    os.link(copy, tmp_path / "same.mp4")
    line = refused(copy, tmp_path / "same.mp4", "--overwrite")
    assert "is the input" in line
    assert copy.read_bytes() == media.clip.read_bytes()


# --- 2: outputs that are each other -----------------------------------------------------------

@pytest.mark.parametrize("output,matte,patch", [
    ("o.####.png", "o.####.png", None),
    ("o.####.exr", None, "o.%04d.exr"),
    ("o.####.png", "m.####.exr", "m.####.exr"),
    ("o.####.png", "o.#.png", None),  # frames 1000+ are the same files
])
def test_outputs_naming_the_same_file_are_refused(refused, tmp_path: Path, output: str,
                                                  matte: str | None, patch: str | None) -> None:
    shot = _plates(tmp_path / "plates", "in", range(999, 1002))
    for out in (tmp_path / "out", tmp_path / "missing" / "new"):
        (tmp_path / "out").mkdir(exist_ok=True)
        extra = [*(["--matte", str(out / matte)] if matte else []),
                 *(["--patch", str(out / patch)] if patch else [])]
        line = refused(shot / "in.####.png", out / output, *extra)
        assert "would both write" in line
    assert list((tmp_path / "out").iterdir()) == []
    assert not (tmp_path / "missing").exists()


# --- 6: stale temporaries ---------------------------------------------------------------------

def _dead_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def test_stale_temporaries_of_these_outputs_are_swept(rendered, tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    host, dead = files.host_tag(), _dead_pid()
    stale = [f".o.0001.{dead}-{host}.0badc0de.tmp.png",
             f".m.0002.{dead}-{host}.0badc0de.tmp.exr",
             # not one of these outputs: what a killed run of another command left here
             f".other.0001.{dead}-{host}.0badc0de.tmp.png"]
    kept = [f".o.0001.{os.getpid()}-{host}.0badc0de.tmp.png",  # a writer still alive
            f".o.0001.{dead}-0000beef.0badc0de.tmp.png",  # another host, recent
            ".o.0001.0badc0de.tmp.png"]  # no owner recorded
    for name in stale + kept:
        (out / name).write_bytes(b"partial")
    rendered(out / "o.####.png", "--frames", "1-2", "--matte", str(out / "m.####.exr"))
    hidden = sorted(p.name for p in out.iterdir() if p.name.startswith("."))
    assert hidden == sorted(kept)
    assert (out / "o.0001.png").is_file() and (out / "m.0002.exr").is_file()


# --- 10: unwritable folders, full disks -------------------------------------------------------

def test_an_unwritable_output_folder_is_refused_before_the_analysis(
        refused, media: Media, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    locked = tmp_path / "locked"
    locked.mkdir()
    real = files.create_temporary

    def read_only(path: Path, keep_suffix: bool = False) -> tuple[int, Path]:
        if Path(path).parent == locked:
            raise PermissionError(errno.EROFS, "Read-only file system", str(path))
        return real(path, keep_suffix)

    monkeypatch.setattr(files, "create_temporary", read_only)
    fresh = tmp_path / "fresh-cache"
    monkeypatch.setenv("FACEFUSE_CACHE", str(fresh))
    for output, extra in ((locked / "o.####.png", ()), (locked / "v.mp4", ()),
                          (tmp_path / "o.####.png", ("--matte", str(locked / "m.####.exr"))),
                          (locked / "sub" / "o.####.png", ())):
        line = refused(media.clip, output, *extra, code=ExitCode.OUTPUT)
        assert "not writable" in line and str(locked) in line and "read-only" in line
    assert list(locked.iterdir()) == []
    assert not (fresh / "analysis").exists()  # refused before pass 1


def test_a_full_disk_while_writing_frames_is_one_sentence(
        media: Media, render_models: Path, cli_cache: Path, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    def full(path: Path, spec: Any, pixels: np.ndarray) -> None:
        Path(path).write_bytes(b"part")
        raise OSError(errno.ENOSPC, "No space left on device", str(path))

    monkeypatch.setattr(plates.write, "_write_file", full)
    out = tmp_path / "out"
    rc = cli.main(cli_args(render_models, media.source, media.clip, out / "o.####.png",
                           "--frames", "1-2"))
    line = one_line_error(capsys.readouterr().err)
    assert rc == ExitCode.OUTPUT == 6
    assert "disk is full" in line and str(out / "o.0001.png") in line
    assert [p.name for p in out.iterdir()] == []


class _FullDisk:
    """A PyAV output container whose muxing fails after the first packets: a disk filling up."""

    def __init__(self, container: Any) -> None:
        self._container, self._calls = container, 0

    def mux(self, packets: Any) -> None:
        self._calls += 1
        if self._calls > 2:
            raise OSError(errno.ENOSPC, "No space left on device")
        self._container.mux(packets)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._container, name)


def test_a_full_disk_while_writing_a_video_is_one_sentence(
        media: Media, render_models: Path, cli_cache: Path, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    real = video_write.VideoSink._open_output
    monkeypatch.setattr(video_write.VideoSink, "_open_output",
                        lambda self, metadata: _FullDisk(real(self, metadata)))
    out = tmp_path / "out"
    out.mkdir()
    rc = cli.main(cli_args(render_models, media.source, media.clip, out / "v.mov",
                           "--codec", "mjpeg"))
    line = one_line_error(capsys.readouterr().err)
    assert rc == ExitCode.OUTPUT
    assert "disk is full" in line and str(out / "v.mov") in line
    assert list(out.iterdir()) == []


# --- 11: long names ---------------------------------------------------------------------------

def test_names_of_up_to_255_bytes_render(rendered, tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    long_stem = "x" * 246  # x...x.1001.png is 255 bytes
    rendered(out / f"{long_stem}.####.png", "--frames", "1-2",
             "--matte", str(out / f"{'m' * 246}.####.exr"))
    names = sorted(p.name for p in out.iterdir())
    assert [len(os.fsencode(n)) for n in names] == [255] * 4
    assert not [n for n in names if n.startswith(".")]
    video = out / f"{'v' * 251}.mov"  # 255 bytes
    rendered(video, "--frames", "1-3", "--codec", "mjpeg")
    assert [read_marker(f) for f in decode_video(video)] == [0, 1, 2]


# --- 15, 16: modes and repeatable output ------------------------------------------------------

def test_outputs_follow_the_umask(rendered, tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    old = os.umask(0o027)
    try:
        rendered(out / "v.mp4", "--frames", "1-2")
        rendered(out / "o.####.png", "--frames", "1-2", "--matte", str(out / "m.####.exr"))
    finally:
        os.umask(old)
    modes = {p.name: p.stat().st_mode & 0o777 for p in out.iterdir()}
    assert set(modes.values()) == {0o640}, modes


def _render_twice(rendered, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                  *renders: tuple[str, ...]) -> tuple[Path, Path]:
    """Each of `renders` (output name, options; "{folder}" in an option names the folder) into
    two folders with one fresh cache: the first analyses the shot, the second finds it
    cached."""
    first, second = tmp_path / "first", tmp_path / "second"
    monkeypatch.setenv("FACEFUSE_CACHE", str(tmp_path / "fresh-cache"))
    for folder in (first, second):
        folder.mkdir()
        for name, *options in renders:
            rendered(folder / name, *(o.replace("{folder}", str(folder)) for o in options),
                     swapper="colour")
        if folder == first:
            time.sleep(1.1)  # a clock-time attribute would now differ
    return first, second


def test_repeated_renders_are_identical(rendered, tmp_path: Path,
                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """The same render twice writes the same bytes (TIFF and EXR carry no clock time, ProRes is
    intra-only, Matroska is muxed bitexact: no random segment id, no date) and the same video
    pictures."""
    first, second = _render_twice(
        rendered, tmp_path, monkeypatch,
        ("o.####.tif", "--frames", "1-3", "--matte", "{folder}/m.####.exr"),
        ("v.mov", "--frames", "1-6", "--codec", "prores_422"),
        ("v.mkv", "--frames", "1-6", "--codec", "ffv1"))
    assert _digests(first) == _digests(second)
    a, b = decode_video(first / "v.mov"), decode_video(second / "v.mov")
    assert len(a) == len(b) == 6
    assert all(np.array_equal(x, y) for x, y in zip(a, b))


@pytest.mark.xfail(strict=False, reason=(
    "open defect: repeated h264 renders in one process sometimes differ (about half of the "
    "renders after the first few, on this code and on 0ec7c2d alike) although the planes "
    "handed to libx264 hash the same every time and a plain PyAV encode of them repeats; "
    "see CHANGELOG.md, Known issues"))
def test_repeated_h264_renders_are_identical(rendered, tmp_path: Path,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    first, second = _render_twice(rendered, tmp_path, monkeypatch, ("v.mp4", "--frames", "1-6"))
    assert _digests(first) == _digests(second)


# --- 20: output folders are created ------------------------------------------------------------

def test_missing_output_folders_are_created(rendered, tmp_path: Path) -> None:
    out = tmp_path / "out" / "shot"
    rendered(out / "o.####.png", "--frames", "1-2", "--matte", str(tmp_path / "m" / "m.####.exr"),
             "--patch", str(tmp_path / "p" / "deep" / "p.####.exr"))
    assert sorted(p.name for p in out.iterdir()) == ["o.0001.png", "o.0002.png"]
    assert (tmp_path / "m" / "m.0002.exr").is_file()
    assert (tmp_path / "p" / "deep" / "p.0001.exr").is_file()
    rendered(tmp_path / "v" / "deeper" / "v.mov", "--frames", "1-2", "--codec", "mjpeg")
    assert (tmp_path / "v" / "deeper" / "v.mov").is_file()


def test_a_refused_render_creates_no_folder(
        media: Media, render_models: Path, cli_cache: Path, tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    missing_source = tmp_path / "nobody.jpg"
    rc = cli.main(cli_args(render_models, missing_source, media.clip,
                           tmp_path / "new" / "o.####.png", "--frames", "1-2"))
    assert rc == ExitCode.USAGE, capsys.readouterr().err
    capsys.readouterr()
    blank = tmp_path / "blank.png"
    write_plate_oiio(blank, np.full((200, 200, 3), 128, np.uint8), "uint8")
    rc = cli.main(cli_args(render_models, blank, media.clip, tmp_path / "new" / "o.####.png",
                           "--frames", "1-2"))
    assert rc == ExitCode.NO_FACE, capsys.readouterr().err
    assert not (tmp_path / "new").exists()


def test_swap_creates_its_output_folder(contract_dir: Path, testdata: Path, tmp_path: Path,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    media = testdata / "media"
    target = tmp_path / "target.png"
    target.write_bytes((media / "astronaut.png").read_bytes())
    models = ["--detector", str(testdata / "models" / "face_detection_yunet_2023mar.onnx"),
              "--recogniser", str(contract_dir / "recogniser_512.onnx"),
              "--swapper", str(contract_dir / "identity_swapper.onnx"),
              "--providers", "cpu", "--models-dir", str(tmp_path / "models"), "--offline"]
    output = tmp_path / "new" / "folder" / "o.png"
    rc = cli.main(["swap", "-s", str(tmp_path / "nobody.jpg"), "-t", str(target), "-o",
                   str(output), *models])
    assert rc == ExitCode.USAGE and not (tmp_path / "new").exists()
    capsys.readouterr()
    rc = cli.main(["swap", "-s", str(media / "obama.jpg"), "-t", str(target), "-o", str(output),
                   *models])
    assert rc == ExitCode.OK, capsys.readouterr().err
    umask = os.umask(0o022)
    os.umask(umask)
    assert output.is_file() and (output.stat().st_mode & 0o777) == 0o666 & ~umask
