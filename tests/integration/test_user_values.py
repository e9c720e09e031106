"""Values a user types, and a reader that goes away, on the real commands (issue 34, class 4):
each bad value is one sentence with exit 2 and nothing written, never exit 1 ("internal
error"); a closed pipe on stdout or stderr stops the lines, not the render.

- frame numbers: `--start-number` near 2**63 (and every command that takes it), `--frames`
  past LARGEST_FRAME, a video whose last frame would pass it;
- `--frames` lists: an item outside the shot is refused (docs/overrides.md), by render and
  review alike;
- names: `preview -o`, `review -o`, `render --report` over 255 bytes; `review -o ''` and `/`;
- `--assign PERSON=IMAGE` split at the first "=";
- `--progress json | head -2`, text progress and the summary into a closed pipe.

The shot (`media`) and `cli_cache` come from tests/integration/conftest.py, the models from
tests/conftest.py.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from facefuse.cli import main as cli  # imported here, while sys.stderr is pytest's own stream
from facefuse.errors import ExitCode
from facefuse.io.sequences import LARGEST_FRAME
from tests.integration.render_helpers import CLIP_FRAMES, Media, one_line_error
from tests.render_media import cli_args

LONG = "n" * 300  # a name no common file system takes (NAME_MAX 255 bytes)


def _refused(capsys: pytest.CaptureFixture[str], args: list[str], expected: str) -> str:
    code = cli.main(args)
    line = one_line_error(capsys.readouterr().err)
    assert code == ExitCode.USAGE, line
    assert expected in line, line
    return line


@pytest.mark.parametrize("command", ["render", "review", "preview"])
@pytest.mark.parametrize("number", [2**63 - 8, 2**63, 2**70, LARGEST_FRAME + 1])
def test_a_start_number_past_the_largest_frame_is_refused(
        command: str, number: int, media: Media, render_models: Path, cli_cache: Path,
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    args = cli_args(render_models, media.source, media.clip, tmp_path / "o.####.png",
                    "--start-number", str(number))
    args[0] = command
    if command == "review":
        args[args.index("-o") + 1] = str(tmp_path / "review")
    if command == "preview":
        args[args.index("-o") + 1] = str(tmp_path / "still.png")
        args += ["--frame", str(number + 1)]
    _refused(capsys, args, "past the largest frame number facefuse takes")
    assert list(tmp_path.iterdir()) == []


def test_a_video_whose_last_frame_passes_the_largest_is_refused(
        media: Media, render_models: Path, cli_cache: Path, tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    start = LARGEST_FRAME - CLIP_FRAMES + 2  # the first frame fits, the last does not
    _refused(capsys, cli_args(render_models, media.source, media.clip, tmp_path / "o.####.png",
                              "--start-number", str(start)),
             f"frame {LARGEST_FRAME + 1} is past the largest frame number")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("frames", ["1-3,100", "0-3,5", "1-3,10-20", "1,99999999999999999999"])
@pytest.mark.parametrize("command", ["render", "review"])
def test_a_frame_list_item_outside_the_shot_is_refused(
        frames: str, command: str, media: Media, render_models: Path, cli_cache: Path,
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "out"
    args = cli_args(render_models, media.source, media.clip, out / "o.####.png",
                    "--frames", frames)
    args[0] = command
    if command == "review":
        args[args.index("-o") + 1] = str(out)
    _refused(capsys, args, "of the list are outside" if "9999" not in frames
             else "past the largest frame number")
    assert not out.exists()


@pytest.mark.parametrize("command", ["preview -o", "preview -o folder", "review -o",
                                     "review -o folder", "render --report"])
def test_a_name_over_255_bytes_is_refused(command: str, media: Media, render_models: Path,
                                          cli_cache: Path, tmp_path: Path,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    args = cli_args(render_models, media.source, media.clip, tmp_path / "o.####.png")
    name = {"preview -o": f"{LONG}.png", "preview -o folder": f"{LONG}/still.png",
            "review -o": LONG, "review -o folder": f"{LONG}/review"}.get(command)
    if command.startswith("preview"):
        args[0] = "preview"
        args[args.index("-o") + 1] = str(tmp_path / str(name))
        args += ["--frame", "5"]
    elif command.startswith("review"):
        args[0] = "review"
        args[args.index("-o") + 1] = str(tmp_path / str(name))
    else:
        args += ["--report", str(tmp_path / LONG)]
    _refused(capsys, args, "bytes, and the file system takes names of at most 255 bytes")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("folder, expected", [("", "is an empty name"),
                                              (" ", "is an empty name")])
@pytest.mark.parametrize("option", ["review -o", "render --report"])
def test_a_report_folder_that_is_no_folder_of_its_own_is_refused(
        folder: str, expected: str, option: str, media: Media, render_models: Path,
        cli_cache: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """`review -o ''` wrote the report into the current folder (the root folder: see
    tests/unit/review/test_report_folder_names.py, which never lets old code write there)."""
    monkeypatch.chdir(tmp_path)
    args = cli_args(render_models, media.source, media.clip, tmp_path / "out" / "o.####.png")
    if option == "review -o":
        args[0] = "review"
        args[args.index("-o") + 1] = folder
    else:
        args += ["--report", folder]
    _refused(capsys, args, expected)
    assert list(tmp_path.iterdir()) == []


def test_assign_splits_at_the_first_equals_sign(media: Media, render_models: Path,
                                                cli_cache: Path, tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    """A person id holds no "="; the image may: p1 gets dir/a=b.jpg (the old split at the last
    "=" asked for a person 'p1=dir/a')."""
    folder = tmp_path / "dir"
    folder.mkdir()
    (folder / "a=b.jpg").write_bytes(media.source.read_bytes())
    args = cli_args(render_models, media.source, media.clip, tmp_path / "o.####.png",
                    "--assign", f"p1={folder / 'a=b.jpg'}", "--frames", "8-9")
    assert cli.main(args) == ExitCode.OK, capsys.readouterr().err
    assert sorted(p.name for p in tmp_path.glob("o.*.png")) == ["o.0008.png", "o.0009.png"]


def _closing_early(args: list[str], lines: int, stream: str, log: Path) -> int:
    """Run `python -m facefuse ARGS`, read `lines` lines of `stream` (stdout or stderr), then
    close it as `| head` does; the other stream goes to `log`. The exit status."""
    env = {**os.environ, "PYTHONPATH": str(Path(cli.__file__).resolve().parents[2])}
    with log.open("wb") as other:
        pipes = {"stdout": other, "stderr": other, stream: subprocess.PIPE}
        proc = subprocess.Popen([sys.executable, "-m", "facefuse", *args], env=env,
                                stdout=pipes["stdout"], stderr=pipes["stderr"])
        read = proc.stdout if stream == "stdout" else proc.stderr
        assert read is not None
        for _ in range(lines):
            read.readline()
        read.close()
        return proc.wait(timeout=300)


@pytest.mark.parametrize("progress, lines, stream", [
    ("json", 2, "stdout"),    # `| head -2`
    ("json", 0, "stdout"),    # `| true`
    ("openjd", 1, "stdout"),
    ("none", 0, "stdout"),    # the summary line into a closed pipe
    ("bar", 0, "stderr"),     # the bar into a closed terminal
])
def test_a_reader_that_goes_away_stops_the_progress_not_the_render(
        progress: str, lines: int, stream: str, media: Media, render_models: Path,
        cli_cache: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    args = cli_args(render_models, media.source, media.clip, out / "o.####.png",
                    "--progress", progress)
    log = tmp_path / "other-stream.txt"
    status = _closing_early(args, lines, stream, log)
    said = log.read_text(errors="replace")
    assert status == ExitCode.OK, said
    assert "Traceback" not in said and "BrokenPipe" not in said, said
    assert len(list(out.glob("o.*.png"))) == CLIP_FRAMES
