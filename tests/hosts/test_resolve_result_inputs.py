"""The Resolve result file never replaces a file the command reads (issue 34, class 1): a job
refused before its media are known (not JSON, another schema, no item, a negative duration, a
10000-deep JSON) writes no error result over the clip; a result path that is the clip by a
symlink, a hard link or a/../b is refused before anything runs; a FIFO there is refused
without blocking. An earlier result and an empty file (what a launcher may create first) are
still replaced, for `resolve render` and `resolve open` alike.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from addon.resolve import swaps as resolve_swaps
from facefuse.cli.main import main
from facefuse.errors import ExitCode
from tests.resolve_facts import job

pytestmark = pytest.mark.timeout(30)


@pytest.fixture()
def clip(tmp_path: Path) -> Path:
    path = tmp_path / "media" / "plate.mp4"
    path.parent.mkdir()
    path.write_bytes(b"a movie")
    return path


def _args(job_path: Path, result: Path, source: Path, models: Path,
          action: str = "render") -> list[str]:
    if action == "open":
        return ["resolve", "open", "--job", str(job_path), "--result", str(result)]
    return ["resolve", "render", "--job", str(job_path), "--result", str(result), "-s",
            str(source), "--models-dir", str(models), "--offline", "--providers", "cpu"]


def _refused_job(clip: Path, how: str) -> bytes:
    data = job(clip)
    if how == "not json":
        return b"{this is not json"
    if how == "deep json":
        return b"[" * 10_000 + b"]" * 10_000
    if how == "another schema":
        data["schema"] = "someone-elses-job"
    elif how == "no item":
        data["item"] = None
    elif how == "negative duration":
        data["item"]["duration"] = -5
    return json.dumps(data).encode()


@pytest.mark.parametrize("how", ["not json", "deep json", "another schema", "no item",
                                 "negative duration"])
def test_a_job_refused_before_its_media_are_known_writes_no_result_over_the_clip(
        clip: Path, tmp_path: Path, how: str, capsys: pytest.CaptureFixture[str]) -> None:
    source = tmp_path / "me.png"
    source.write_bytes(b"my photo")
    job_path = tmp_path / "job.json"
    job_path.write_bytes(_refused_job(clip, how))
    before = clip.read_bytes()
    assert main(_args(job_path, clip, source, tmp_path / "models")) == ExitCode.USAGE
    assert clip.read_bytes() == before
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--result" in err


@pytest.mark.parametrize("action", ["render", "open"])
@pytest.mark.parametrize("kind", ["symlink", "hardlink", "dotdot"])
def test_a_result_that_is_the_clip_by_another_name_is_refused(
        clip: Path, tmp_path: Path, kind: str, action: str,
        capsys: pytest.CaptureFixture[str]) -> None:
    source = tmp_path / "me.png"
    source.write_bytes(b"my photo")
    job_path = tmp_path / "job.json"
    job_path.write_text(json.dumps(job(clip)))
    result = tmp_path / "result.json"
    if kind == "symlink":
        result.symlink_to(clip)
    elif kind == "hardlink":
        os.link(clip, result)
    else:
        (tmp_path / "media" / "sub").mkdir()
        result = tmp_path / "media" / "sub" / ".." / "plate.mp4"
    before = clip.read_bytes()
    assert main(_args(job_path, result, source, tmp_path / "models", action)) == ExitCode.USAGE
    assert clip.read_bytes() == before
    assert "--result" in capsys.readouterr().err


@pytest.mark.skipif(os.name != "posix", reason="FIFOs are POSIX")
def test_a_fifo_as_the_result_is_refused_without_blocking(clip: Path, tmp_path: Path) -> None:
    job_path = tmp_path / "job.json"
    job_path.write_bytes(b"{this is not json")
    result = tmp_path / "result.json"
    os.mkfifo(result)
    assert main(_args(job_path, result, clip, tmp_path / "models")) == ExitCode.USAGE


@pytest.mark.parametrize("earlier", ["a result", "empty"])
def test_an_earlier_result_or_an_empty_file_is_replaced(clip: Path, tmp_path: Path,
                                                        earlier: str) -> None:
    job_path = tmp_path / "job.json"
    job_path.write_bytes(b"{this is not json")
    result = tmp_path / "result.json"
    if earlier == "a result":
        resolve_swaps.write_result(result, None, "an earlier run")
    else:
        result.write_bytes(b"")
    source = tmp_path / "me.png"
    source.write_bytes(b"my photo")
    assert main(_args(job_path, result, source, tmp_path / "models")) == ExitCode.USAGE
    placement, message = resolve_swaps.read_result(result)
    assert placement is None and "not JSON" in message
