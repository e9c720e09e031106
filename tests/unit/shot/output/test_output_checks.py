"""Output paths: temporary names (owner, NAME_MAX, umask), the sweep of stale temporaries,
writable-folder checks, write errors in one sentence, outputs that alias inputs or each other
frame by frame, repeatable plate bytes, and image outputs that create their folder."""

from __future__ import annotations

import errno
import os
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import OpenImageIO as oiio
import pytest

from facefuse.errors import InputError, OutputError
from facefuse.io import files, images, plates
from facefuse.shot.contract.request import InputSpec, OutputSpec, RenderRequest
from facefuse.shot.output.output_checks import check_outputs
from facefuse.shot.output.writers import SequenceOutput


def _dead_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


# --- temporary names ---------------------------------------------------------------------------

@pytest.mark.parametrize("length", [1, 200, 245, 250, 255])
@pytest.mark.parametrize("keep_suffix", [False, True])
def test_temporary_names_fit_name_max(tmp_path: Path, length: int, keep_suffix: bool) -> None:
    name = "a" * (length - 4) + ".exr" if length > 4 else "a"
    tmp = files.temporary_path(tmp_path / name, keep_suffix)
    assert len(os.fsencode(tmp.name)) <= files.name_max(tmp_path)
    assert tmp.name.startswith(".") and f".{files.owner_tag()}." in tmp.name
    assert tmp.name.endswith(".tmp.exr" if keep_suffix and length > 4 else ".tmp")
    fd, made = files.create_temporary(tmp_path / name, keep_suffix)  # the system takes it
    os.close(fd)
    assert made.is_file()


def test_multibyte_names_are_cut_on_a_character(tmp_path: Path) -> None:
    name = "é" * 123 + ".png"  # 250 bytes
    tmp = files.temporary_path(tmp_path / name, keep_suffix=True)
    assert len(os.fsencode(tmp.name)) <= 255 and "~.tmp.png" in tmp.name
    tmp.name.encode("utf-8")  # no half character left


def test_temporaries_and_atomic_writes_follow_the_umask(tmp_path: Path) -> None:
    old = os.umask(0o027)
    try:
        fd, tmp = files.create_temporary(tmp_path / "v.mp4", keep_suffix=True)
        os.close(fd)
        files.atomic_write_bytes(tmp_path / ("b" * 255), b"data")
    finally:
        os.umask(old)
    assert tmp.stat().st_mode & 0o777 == 0o640
    assert (tmp_path / ("b" * 255)).stat().st_mode & 0o777 == 0o640


# --- the sweep ---------------------------------------------------------------------------------

def test_only_stale_temporaries_of_ones_own_outputs_are_swept(tmp_path: Path) -> None:
    host, dead, me = files.host_tag(), _dead_pid(), os.getpid()
    names = {"dead": f".o.0001.{dead}-{host}.00000001.tmp.png",
             "alive": f".o.0001.{me}-{host}.00000002.tmp.png",
             "foreign": f".o.0001.{dead}-0000beef.00000003.tmp.png",
             "other": f".x.0001.{dead}-{host}.00000004.tmp.png",
             "protected": f".o.0002.{dead}-{host}.00000005.tmp.png",
             "plain": "o.0001.png"}
    for name in names.values():
        (tmp_path / name).write_bytes(b"x")
    (tmp_path / f".o.0003.{dead}-{host}.00000006.tmp.png").symlink_to(tmp_path / "o.0001.png")
    st = (tmp_path / names["protected"]).stat()

    def belongs(part: str, cut: bool, ext: str) -> bool:
        return part.startswith("o.") and ext == ".png"

    removed = files.sweep_stale_temporaries(tmp_path, belongs,
                                            protect=frozenset({(st.st_dev, st.st_ino)}))
    assert [p.name for p in removed] == [names["dead"]]
    later = time.time() + files.FOREIGN_HOST_STALE_S + 60
    removed = files.sweep_stale_temporaries(tmp_path, belongs, now=later)
    assert sorted(p.name for p in removed) == sorted([names["foreign"], names["protected"]])
    assert (tmp_path / names["alive"]).exists() and (tmp_path / names["other"]).exists()
    assert files.sweep_stale_temporaries(tmp_path / "missing", belongs) == []


def test_a_sequence_output_owns_its_temporaries_also_when_cut(tmp_path: Path) -> None:
    long = SequenceOutput(str(tmp_path / ("s" * 246 + ".####.exr")), None)
    short = SequenceOutput(str(tmp_path / "shot.####_v2.exr"), None)
    for out in (long, short):
        tmp = files.temporary_path(out.path(1001), keep_suffix=True)
        match = files._TEMP.match(tmp.name)
        assert match is not None
        assert out.owns_temporary(match["part"], bool(match["cut"]), match["ext"])
    other = files.temporary_path(tmp_path / "shot.1001_v3.exr", keep_suffix=True)
    match = files._TEMP.match(other.name)
    assert match is not None
    assert not short.owns_temporary(match["part"], bool(match["cut"]), match["ext"])
    assert not short.owns_temporary("shot.1001_v2", False, ".png")


# --- folders and write errors ------------------------------------------------------------------

def test_writable_folder_checks_create_nothing(tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    files.check_folder_writable(tmp_path / "a" / "b")
    assert list(tmp_path.iterdir()) == []
    (tmp_path / "file").write_bytes(b"")
    with pytest.raises(InputError, match="is a file"):
        files.check_folder_writable(tmp_path / "file" / "sub")

    def refuse(path: Path, keep_suffix: bool = False) -> tuple[int, Path]:
        raise PermissionError(errno.EACCES, "Permission denied", str(path))

    monkeypatch.setattr(files, "create_temporary", refuse)
    with pytest.raises(OutputError, match=f"{tmp_path} is not writable: permission denied"):
        files.check_folder_writable(tmp_path / "new")


@pytest.mark.parametrize("code,reason", [(errno.ENOSPC, "the disk is full"),
                                         (errno.EDQUOT, "quota"),
                                         (errno.EROFS, "read-only"),
                                         (errno.EACCES, "permission denied")])
def test_write_errors_are_one_sentence_with_the_path(code: int, reason: str) -> None:
    message = str(files.write_error(Path("/out/o.0001.exr"), OSError(code, os.strerror(code))))
    assert message.startswith("cannot write /out/o.0001.exr: ") and reason in message
    assert "\n" not in message


def test_image_outputs_create_their_folder_only_when_written(tmp_path: Path) -> None:
    path = tmp_path / "new" / "deeper" / "o.png"
    images.check_writable_path(path)
    assert not (tmp_path / "new").exists()
    frame = np.arange(48, dtype=np.uint8).reshape(4, 4, 3)
    images.write_image(path, frame)
    np.testing.assert_array_equal(images.read_image(path), frame)


def test_a_sequence_output_creates_its_folder_on_the_first_write(tmp_path: Path) -> None:
    out = SequenceOutput(str(tmp_path / "new" / "m.####.exr"), None, channels=("Y",))
    assert not (tmp_path / "new").exists()
    matte = np.linspace(0, 1, 48, dtype=np.float32).reshape(4, 4, 3)
    matte[..., 1] = matte[..., 2] = matte[..., 0]
    out.write(1, matte, {"facefuse:fingerprint": "f"})
    assert out.finished(1, "f")
    pixels, _ = plates.read_plate(tmp_path / "new" / "m.0001.exr")
    np.testing.assert_allclose(pixels[..., 0], matte[..., 0], atol=1e-3)


# --- aliasing, frame by frame ------------------------------------------------------------------

class _Shot:
    """The part of a ShotInput the output checks read."""

    def __init__(self, paths: dict[int, Path]) -> None:
        self.paths = paths
        self.frame_numbers = tuple(paths)

    def files(self, numbers: Sequence[int]) -> tuple[Path, ...]:
        return tuple(self.paths[n] for n in numbers)


def _check(tmp_path: Path, main: str, matte: str, numbers: Sequence[int]) -> None:
    named = [(f"-o {main}", SequenceOutput(str(tmp_path / main), None)),
             (f"--matte {matte}", SequenceOutput(str(tmp_path / matte), None))]
    inputs = tmp_path / "in"
    inputs.mkdir(exist_ok=True)
    shot = _Shot({n: inputs / f"i.{n}.png" for n in numbers})
    for path in shot.paths.values():
        path.write_bytes(b"plate")
    request = RenderRequest(sources=(), input=InputSpec(str(inputs / "i.#.png")),
                            output=OutputSpec(main))
    check_outputs(named, None, shot, numbers, request)  # type: ignore[arg-type]


def test_paddings_alias_only_where_the_names_meet(tmp_path: Path) -> None:
    _check(tmp_path, "a.####.exr", "a.#.exr", range(990, 1000))  # a.0990.exr, a.990.exr
    with pytest.raises(InputError, match="would both write .*a.1000.exr"):
        _check(tmp_path, "a.####.exr", "a.#.exr", range(995, 1005))
    with pytest.raises(InputError, match="would both write"):
        _check(tmp_path, "a.%04d.exr", "a.####.exr", range(1, 3))


# --- repeatable bytes --------------------------------------------------------------------------

@pytest.mark.parametrize("suffix", [".tif", ".exr"])
def test_plates_carry_no_clock_time(tmp_path: Path, suffix: str) -> None:
    frame = np.full((8, 8, 3), 0.25, np.float32)
    first, second = tmp_path / f"a{suffix}", tmp_path / f"b{suffix}"
    plates.write_plate(first, frame, plates.plate_format_for(first, None, frame))
    time.sleep(1.1)
    plates.write_plate(second, frame, plates.plate_format_for(second, None, frame))
    assert first.read_bytes() == second.read_bytes()
    image = oiio.ImageInput.open(str(first))
    try:
        assert "DateTime" not in {attr.name for attr in image.spec().extra_attribs}
    finally:
        image.close()
