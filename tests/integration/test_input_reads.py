"""What a command reads, from the command line (issue 34, classes 1 and 3):
- the --overrides file is an input no output replaces: `render -o d/ov.####.png --overrides
  d/ov.0001.png` (the same name, or a hard link) and `preview --overrides d/ov.png -o d/ov.png
  --overwrite` are exit 2 with the file as it was;
- --overrides, --frames flagged:REPORT and FACEFUSE_MANIFEST on a FIFO, /dev/zero or a
  10000-deep JSON are one sentence at once (exit 2; the manifest exit 4), never a read that
  blocks or fills the memory (each test has a timeout).

The shot (`media`) and `cli_cache` come from tests/integration/conftest.py, the models from
tests/conftest.py.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import pytest

from facefuse.cli import main as cli  # imported here, while sys.stderr is pytest's own stream
from facefuse.errors import ExitCode
from tests.integration.render_helpers import Media, one_line_error
from tests.render_media import YUNET_NAME, cli_args

pytestmark = pytest.mark.timeout(60)


def _overrides(path: Path) -> Path:
    path.write_text(json.dumps({"schema": "facefuse.overrides/1", "overrides": []}))
    return path


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.mark.parametrize("kind", ["same", "hardlink"])
def test_render_never_writes_a_frame_over_its_overrides_file(
        media: Media, render_models: Path, cli_cache: Path, tmp_path: Path,
        capsys: pytest.CaptureFixture[str], kind: str) -> None:
    named = tmp_path / "ov.0001.png"
    given = _overrides(named if kind == "same" else tmp_path / "ov.json")
    if kind == "hardlink":
        os.link(given, named)
    before = _sha(given)
    rc = cli.main(cli_args(render_models, media.source, media.clip, tmp_path / "ov.####.png",
                           "--overrides", str(given), "--frames", "1-2"))
    line = one_line_error(capsys.readouterr().err)
    assert rc == ExitCode.USAGE and "would overwrite the input file" in line
    assert _sha(given) == before and not (tmp_path / "ov.0002.png").exists()


def test_preview_never_writes_its_still_over_its_overrides_file(
        media: Media, render_models: Path, cli_cache: Path, tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    still = _overrides(tmp_path / "ov.png")
    before = _sha(still)
    rc = cli.main(["preview", "-i", str(media.clip), "-o", str(still), "-s", str(media.source),
                   "--detector", YUNET_NAME, "--recogniser",
                   str(render_models / "recogniser_512.onnx"), "--swapper",
                   str(render_models / "identity_swapper.onnx"), "--providers", "cpu",
                   "--models-dir", str(render_models), "--offline", "--overrides", str(still),
                   "--overwrite", "--frame", "5"])
    line = one_line_error(capsys.readouterr().err)
    assert rc == ExitCode.USAGE and "which this command reads" in line
    assert _sha(still) == before


def _odd_file(tmp_path: Path, which: str) -> Path:
    if which == "/dev/zero":
        return Path("/dev/zero")
    path = tmp_path / "odd.json"
    if which == "fifo":
        os.mkfifo(path)
    else:
        path.write_bytes(b"[" * 10_000 + b"]" * 10_000)
    return path


@pytest.mark.skipif(os.name != "posix", reason="FIFOs and /dev/zero are POSIX")
@pytest.mark.parametrize("which", ["fifo", "/dev/zero", "deep"])
@pytest.mark.parametrize("where", ["--overrides", "flagged", "FACEFUSE_MANIFEST"])
def test_a_small_file_that_is_no_file_is_one_sentence_at_once(
        media: Media, render_models: Path, cli_cache: Path, tmp_path: Path,
        capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
        where: str, which: str) -> None:
    odd = _odd_file(tmp_path, which)
    if which == "deep" and where == "FACEFUSE_MANIFEST":  # TOML
        odd.write_bytes(b"a = " + odd.read_bytes() + b"\n")
    extra = {"--overrides": ["--overrides", str(odd)], "flagged": ["--frames", f"flagged:{odd}"],
             "FACEFUSE_MANIFEST": []}[where]
    if where == "FACEFUSE_MANIFEST":
        monkeypatch.setenv("FACEFUSE_MANIFEST", str(odd))
    rc = cli.main(cli_args(render_models, media.source, media.clip, tmp_path / "o.####.png",
                           *extra))
    line = one_line_error(capsys.readouterr().err)
    words = "nested deeper than 64" if which == "deep" else "not a regular file"
    assert words in line
    assert rc == (ExitCode.MODEL if where == "FACEFUSE_MANIFEST" else ExitCode.USAGE)
    assert not list(tmp_path.glob("o.*"))
