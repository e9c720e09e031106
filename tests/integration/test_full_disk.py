"""A plate or image-sequence output on storage that refuses the bytes (full, over quota,
read-only) is exit 6 with one sentence naming the file, for every plate format and for the main,
matte and patch sequences, and leaves no temporary behind (issue 24, item 10).

The full disk is a real 64 KiB tmpfs (skipped where mounting is not allowed). OpenImageIO only
reports such failures as text and libjpeg ends the process on them, so the plate writes run in
a child process, where an exit shows up as a failed test rather than the end of the session.
Quota and read-only failures, which a tmpfs cannot give here, are made at the io layer: a
read-only remount under a write OpenImageIO could not finish, and EDQUOT from our own writes.

The shot (`media`) and `cli_cache` come from tests/integration/conftest.py, the models from
tests/conftest.py.
"""

from __future__ import annotations

import errno
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from facefuse.errors import ExitCode, InputError, OutputError
from facefuse.io import plates
from facefuse.io.plates import write as plate_write
from tests.integration.render_helpers import Media, one_line_error
from tests.render_media import cli_args

FORMATS = (".exr", ".png", ".tif", ".dpx", ".jpg")
CORE = str(Path(plates.__file__).resolve().parents[3])

# Writes one noisy 320x240 plate to argv[1]; prints what happened as JSON.
WRITE_ONE = """
import json, sys
from pathlib import Path
import numpy as np
from facefuse.io import plates
path = Path(sys.argv[1])
noise = np.random.default_rng(1).random((240, 320, 3))
frame = ((noise * 255).astype(np.uint8) if path.suffix in (".png", ".jpg")
         else noise.astype(np.float32))
try:
    plates.write_plate(path, frame, plates.plate_format_for(path, None, frame))
    print(json.dumps({"error": None}))
except Exception as exc:
    print(json.dumps({"error": type(exc).__name__, "code": int(getattr(exc, "exit_code", 1)),
                      "message": str(exc)}))
"""


def _mount_tmpfs(folder: Path, size: str) -> None:
    if os.geteuid() != 0 or shutil.which("mount") is None:
        pytest.skip("mounting a tmpfs needs root and mount(8)")
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(folder)],
                          capture_output=True, text=True, check=False)
    if done.returncode:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.strip()}")


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A 64 KiB tmpfs: room for a few small files, not for a 320x240 float plate."""
    folder = tmp_path / "disk"
    folder.mkdir()
    _mount_tmpfs(folder, "64k")
    yield folder
    subprocess.run(["umount", "-l", str(folder)], check=False, capture_output=True)


def _child_env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": os.pathsep.join([CORE, os.environ.get("PYTHONPATH", "")])}


def _write_in_child(path: Path) -> dict[str, Any]:
    done = subprocess.run([sys.executable, "-c", WRITE_ONE, str(path)], capture_output=True,
                          text=True, timeout=120, check=False, env=_child_env())
    assert done.returncode == 0, f"the writer process ended with {done.returncode}: " \
                                 f"{(done.stdout + done.stderr).strip()[-300:]}"
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("suffix", FORMATS)
def test_a_plate_on_a_full_disk_is_exit_6_naming_it(small_disk: Path, suffix: str) -> None:
    path = small_disk / f"plate.0001{suffix}"
    result = _write_in_child(path)
    assert result["error"] == "OutputError" and result["code"] == ExitCode.OUTPUT == 6, result
    assert result["message"] == f"cannot write {path}: the disk is full"
    assert list(small_disk.iterdir()) == []  # no temporary left
    small = small_disk / f"small{suffix}"  # the space is back: a small plate fits
    frame = np.zeros((8, 8, 3), np.uint8)
    plates.write_plate(small, frame, plates.plate_format_for(small, None, frame))
    assert [p.name for p in small_disk.iterdir()] == [small.name]


def _oiio_fails(message: str) -> Any:
    """An `_encode` that leaves a partial file and reports `message`, as OIIO does when its
    write fails."""
    def encode(writer: Any, target: str, spec: Any, pixels: np.ndarray) -> str:
        Path(target).write_bytes(b"partial")
        return message
    return encode


def test_a_read_only_remount_under_a_write_is_exit_6(tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    folder = tmp_path / "disk"
    folder.mkdir()
    _mount_tmpfs(folder, "1m")
    try:
        failing = _oiio_fails("Write error at position 7, could only write 0/8192 bytes")

        def encode_then_remount(writer: Any, target: str, spec: Any, pixels: np.ndarray) -> str:
            message = failing(writer, target, spec, pixels)
            subprocess.run(["mount", "-o", "remount,ro", str(folder)], check=True)
            return message

        monkeypatch.setattr(plate_write, "_encode", encode_then_remount)
        path = folder / "plate.0001.png"
        frame = np.zeros((16, 16, 3), np.uint8)
        with pytest.raises(OutputError) as info:
            plates.write_plate(path, frame, plates.plate_format_for(path, None, frame))
        assert info.value.exit_code == ExitCode.OUTPUT
        assert str(info.value) == f"cannot write {path}: the file system is read-only"
    finally:
        subprocess.run(["umount", "-l", str(folder)], check=False, capture_output=True)


@pytest.mark.parametrize("suffix", [".exr", ".jpg"])
def test_a_quota_reached_while_writing_is_exit_6(tmp_path: Path, suffix: str,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    def over_quota(out: Any, data: bytes) -> None:
        raise OSError(errno.EDQUOT, os.strerror(errno.EDQUOT))

    monkeypatch.setattr(plate_write, "_encode", _oiio_fails("Failed OpenEXR write"))
    monkeypatch.setattr(plate_write, "_write_all", over_quota)
    if suffix == ".jpg":  # the pipe path: the real encoder, our writes refused
        monkeypatch.undo()
        monkeypatch.setattr(plate_write, "_write_all", over_quota)
    path = tmp_path / f"plate.0001{suffix}"
    frame = np.zeros((16, 16, 3), np.float32)
    with pytest.raises(OutputError) as info:
        plates.write_plate(path, frame, plates.plate_format_for(path, None, frame))
    assert str(info.value) == f"cannot write {path}: the disk quota is exceeded"
    assert list(tmp_path.iterdir()) == []


def test_a_write_that_fails_once_with_room_left_is_tried_again(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Room freed between OIIO's failure and the probe (another writer's temporary removed):
    the second try writes the plate; a failure that repeats with room left is OIIO's own."""
    real, calls = plate_write._encode, []

    def once(writer: Any, target: str, spec: Any, pixels: np.ndarray) -> str | None:
        calls.append(target)
        if len(calls) == 1:
            return _oiio_fails("Write error at position 7")(writer, target, spec, pixels)
        return real(writer, target, spec, pixels)

    monkeypatch.setattr(plate_write, "_encode", once)
    path = tmp_path / "plate.0001.exr"
    frame = np.full((16, 16, 3), 0.5, np.float32)
    plates.write_plate(path, frame, plates.plate_format_for(path, None, frame))
    assert len(calls) == 2 and plates.read_plate(path)[0][0, 0, 0] == 0.5
    assert [p.name for p in tmp_path.iterdir()] == [path.name]

    monkeypatch.setattr(plate_write, "_encode", _oiio_fails("unsupported spec"))
    with pytest.raises(InputError) as info:
        plates.write_plate(path, frame, plates.plate_format_for(path, None, frame))
    assert str(info.value) == f"cannot write {path}: unsupported spec"
    assert [p.name for p in tmp_path.iterdir()] == [path.name]


def test_jpeg_plates_through_the_pipe_match_a_direct_write(tmp_path: Path,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    frame = (np.random.default_rng(2).random((64, 80, 3)) * 255).astype(np.uint8)
    piped, direct = tmp_path / "piped.jpg", tmp_path / "direct.jpg"
    fmt = plates.plate_format_for(piped, None, frame)
    plates.write_plate(piped, frame, fmt, {"fingerprint": "abc"})
    monkeypatch.setattr(plate_write, "STREAMED_FORMATS", frozenset())
    plates.write_plate(direct, frame, fmt, {"fingerprint": "abc"})
    assert piped.read_bytes() == direct.read_bytes()
    assert plates.read_metadata(piped)["fingerprint"] == "abc"


# --- renders: the main, matte and patch sequences ---------------------------------------------

def _render(media: Media, render_models: Path, output: Path, *extra: str) -> tuple[int, str]:
    done = subprocess.run([sys.executable, "-m", "facefuse",
                           *cli_args(render_models, media.source, media.clip, output, *extra)],
                          capture_output=True, text=True, timeout=300, check=False,
                          env=_child_env())
    return done.returncode, done.stderr


@pytest.mark.parametrize(("which", "suffix"), [("main", ".exr"), ("main", ".jpg"),
                                               ("matte", ".png"), ("patch", ".exr")])
def test_a_render_filling_the_disk_is_exit_6_naming_the_frame(
        media: Media, render_models: Path, cli_cache: Path, tmp_path: Path, small_disk: Path,
        which: str, suffix: str) -> None:
    on_disk = small_disk / f"{which}.####{suffix}"
    main = on_disk if which == "main" else tmp_path / "out" / "o.####.png"
    extra = () if which == "main" else (f"--{which}", str(on_disk))
    rc, err = _render(media, render_models, main, *extra)
    line = one_line_error(err)
    assert rc == ExitCode.OUTPUT, err
    assert "the disk is full" in line and f"{small_disk}/{which}." in line and suffix in line
    assert not [p for p in small_disk.iterdir() if p.name.startswith(".")]  # no temporaries
