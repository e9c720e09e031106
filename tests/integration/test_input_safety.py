"""Nothing a user names is destroyed, and bad input is one sentence with its code (issue 24):
- item 1: `-o`, `--matte` or `--patch` over a `-s` or `--reference` image (same path, symlink,
  hard link, relative path) is refused with exit 2 by `render`, `bench` and `farm openjd`, and
  the image is left as it was;
- item 3: `facefuse cache clear` leaves what facefuse did not write and says so;
- item 6: `--smooth-min-cutoff inf` and friends are exit 2 before anything is written;
- item 11: output names over 255 bytes and paths over 4096 are exit 2 naming the limit;
- item 15: `-s` on a FIFO or /dev/zero is exit 2 (run in a child process with a timeout).

The shot (`media`) and `cli_cache` come from tests/integration/conftest.py, the models from
tests/conftest.py.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from facefuse.cli import main as cli  # imported here, while sys.stderr is pytest's own stream
from facefuse.errors import ExitCode
from tests.integration.render_helpers import Media, one_line_error
from tests.render_media import cli_args

KINDS = ("same", "symlink", "hardlink", "relative")


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _aliased(photo: Path, folder: Path, name: str, kind: str,
             monkeypatch: pytest.MonkeyPatch) -> tuple[Path, str]:
    """(the protected photo, the path to give for it) such that folder/name is the photo."""
    folder.mkdir(parents=True, exist_ok=True)
    target = folder / name
    if kind in ("same", "relative"):
        shutil.copy(photo, target)
        if kind == "same":
            return target, str(target)
        (folder / "cwd").mkdir()
        monkeypatch.chdir(folder / "cwd")
        return target, f"../{name}"
    real = folder / "photo.jpg"
    shutil.copy(photo, real)
    if kind == "symlink":
        target.symlink_to(real)
    else:
        os.link(real, target)
    return real, str(real)


def _outputs(folder: Path, option: str) -> tuple[str, list[str], str]:
    """(-o value, extra args, the file name of frame 1 of the option under test)."""
    if option == "video":
        return str(folder / "x.mp4"), ["--overwrite"], "x.mp4"
    if option == "-o":
        return str(folder / "x.####.png"), [], "x.0001.png"
    return str(folder / "o.####.exr"), [option, str(folder / "x.####.png")], "x.0001.png"


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("option", ["-o", "--matte", "--patch", "video"])
@pytest.mark.parametrize("role", ["source", "reference"])
def test_render_refuses_an_output_over_a_source_or_reference(
        media: Media, render_models: Path, cli_cache: Path, tmp_path: Path,
        capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
        role: str, option: str, kind: str) -> None:
    output, extra, name = _outputs(tmp_path, option)
    protected, given = _aliased(media.source, tmp_path, name, kind, monkeypatch)
    before = _sha(protected)
    source = given if role == "source" else str(media.source)
    if role == "reference":
        extra += ["--selector", "reference", "--reference", given]
    rc = cli.main(cli_args(render_models, Path(source), media.clip, output, *extra,
                           "--frames", "1-2"))
    line = one_line_error(capsys.readouterr().err)
    assert rc == ExitCode.USAGE
    assert "would overwrite the input file" in line or "is an input" in line
    assert _sha(protected) == before


@pytest.mark.parametrize("kind", ["same", "hardlink"])
def test_bench_refuses_an_output_over_its_source(
        media: Media, render_models: Path, cli_cache: Path, tmp_path: Path,
        capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, kind: str) -> None:
    protected, given = _aliased(media.source, tmp_path, "x.0001.png", kind, monkeypatch)
    before = _sha(protected)
    args = cli_args(render_models, Path(given), media.clip, tmp_path / "x.####.png")
    rc = cli.main(["bench", *args[1:], "--frames", "2"])
    line = one_line_error(capsys.readouterr().err)
    assert rc == ExitCode.USAGE and "would overwrite the input file" in line
    assert _sha(protected) == before


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("option", ["-o", "--matte"])
def test_farm_openjd_refuses_a_bundle_writing_over_its_source(
        media: Media, render_models: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch, option: str, kind: str) -> None:
    pytest.importorskip("openjd.model")
    output, extra, name = _outputs(tmp_path, option)
    _, given = _aliased(media.source, tmp_path, name, kind, monkeypatch)
    rc = cli.main(["farm", "openjd", "-s", given, "-i", str(media.clip), "-o", output, *extra,
                   "--frames", "1-4", "--bundle", str(tmp_path / "bundle"),
                   "--models-dir", str(render_models)])
    line = one_line_error(capsys.readouterr().err)
    assert rc == ExitCode.USAGE and "would overwrite the input file" in line
    assert not (tmp_path / "bundle").exists()


@pytest.mark.parametrize(("flag", "value"), [
    ("--smooth-min-cutoff", "inf"), ("--smooth-min-cutoff", "nan"),
    ("--smooth-min-cutoff", "1e308"), ("--smooth-beta", "inf"), ("--smooth-beta", "nan"),
    ("--smooth-beta", "1e308"), ("--swapper-weight", "nan"), ("--mask-blur", "inf")])
def test_non_finite_float_options_are_refused_before_rendering(
        media: Media, render_models: Path, cli_cache: Path, tmp_path: Path,
        capsys: pytest.CaptureFixture[str], flag: str, value: str) -> None:
    rc = cli.main(cli_args(render_models, media.source, media.clip, tmp_path / "o.####.png",
                           flag, value, "--frames", "1-2"))
    one_line_error(capsys.readouterr().err)
    assert rc == ExitCode.USAGE and list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(("output", "extra", "limit"), [
    ("n" * 260 + ".####.png", (), "255"),
    ("n" * 260 + ".mp4", (), "255"),
    ("o.####.png", ("--matte", "m" * 300 + ".####.exr"), "255"),
    ("n" * 300 + "/o.####.png", (), "255"),
    ("/".join(["p" * 200] * 21) + "/o.####.png", (), "4095"),
])
def test_names_and_paths_too_long_are_refused_naming_the_limit(
        media: Media, render_models: Path, cli_cache: Path, tmp_path: Path,
        capsys: pytest.CaptureFixture[str], output: str, extra: tuple[str, ...],
        limit: str) -> None:
    extra = tuple(str(tmp_path / e) if e.endswith(".exr") else e for e in extra)
    rc = cli.main(cli_args(render_models, media.source, media.clip, tmp_path / output, *extra,
                           "--frames", "1-2"))
    line = one_line_error(capsys.readouterr().err)
    assert rc == ExitCode.USAGE and f"at most {limit} bytes" in line


@pytest.mark.skipif(os.name != "posix", reason="FIFOs and /dev/zero are POSIX")
@pytest.mark.parametrize("option", ["-s", "--reference"])
@pytest.mark.parametrize("which", ["fifo", "/dev/zero"])
def test_a_fifo_or_device_as_an_image_is_refused_without_reading(
        media: Media, render_models: Path, cli_cache: Path, tmp_path: Path,
        option: str, which: str) -> None:
    path = tmp_path / "face.jpg"
    if which == "fifo":
        os.mkfifo(path)
    else:
        path = Path("/dev/zero")
    source = path if option == "-s" else media.source
    extra = ["--selector", "reference", "--reference", str(path)] if option != "-s" else []
    args = cli_args(render_models, source, media.clip, tmp_path / "o.####.png", *extra,
                    "--frames", "1-2")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    done = subprocess.run([sys.executable, "-m", "facefuse", *args], capture_output=True,
                          text=True, timeout=120, env=env, check=False,
                          preexec_fn=_limit_memory)  # a regression must not eat the machine
    line = one_line_error(done.stderr)
    assert done.returncode == ExitCode.USAGE and "not a regular file" in line


def _limit_memory() -> None:
    import resource
    resource.setrlimit(resource.RLIMIT_AS, (6 << 30, 6 << 30))


def test_cache_clear_leaves_what_it_did_not_write(tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    root, outside = tmp_path / "cache", tmp_path / "outside"
    (root / "embeddings").mkdir(parents=True)
    outside.mkdir()
    (root / "embeddings" / f"{'ab' * 32}.npy").write_bytes(b"cached")
    (root / "embeddings" / "notes.txt").write_text("mine")
    (outside / f"{'cd' * 32}.npz").write_text("also mine")
    (root / "analysis").symlink_to(outside, target_is_directory=True)
    assert cli.main(["cache", "clear", "--cache-dir", str(root)]) == ExitCode.OK
    out = capsys.readouterr().out
    assert out.startswith(f"removed 1 cached files from {root}; left 2 entries")
    assert "notes.txt" in out and str(root / "analysis") in out
    assert (root / "embeddings" / "notes.txt").exists()
    assert (outside / f"{'cd' * 32}.npz").exists()
    assert not (root / "embeddings" / f"{'ab' * 32}.npy").exists()
