"""`facefuse render` on bad or damaged input: damaged frames reported while the others render;
bad inputs, patterns and options refused with one clear line, the documented exit code and
nothing written; the progress bar and the real `python -m facefuse` process.

The shot (`media`: a 23.976 fps h264 clip with a face in all but its first frames) and
`cli_cache` come from tests/integration/conftest.py, the models and the session's analysis cache
from tests/conftest.py; frames carry their index as a burned-in marker and a real face
(tests/render_media.py), and pixels are compared with the input decoded independently.
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from facefuse.cli import main as cli  # imported here, while sys.stderr is pytest's own stream
from facefuse.cli import render as cli_render
from facefuse.errors import ExitCode
from facefuse.shot.contract.request import FrameReport, FrameSpec
from tests.integration.render_helpers import CLIP_FRAMES, Media, one_line_error, read_bgr
from tests.media_factory import make_vfr_clip, read_marker
from tests.render_media import (
    cli_args,
    decode_video,
    face_frame,
    make_face_clip,
    render_request,
    run_render,
    write_plate_oiio,
)

# --- damaged frames ----------------------------------------------------------------------------

@pytest.fixture()
def damaged_plates(media: Media, tmp_path: Path) -> Path:
    """p.1..6.png with p.3.png cut in half (it exists, so it is not a gap)."""
    plates = tmp_path / "damaged"
    plates.mkdir()
    for n in range(1, 7):
        write_plate_oiio(plates / f"p.{n}.png", face_frame(n, media.face)[..., ::-1].copy(),
                         "uint8")
    data = (plates / "p.3.png").read_bytes()
    (plates / "p.3.png").write_bytes(data[:len(data) // 2])
    return plates


def test_damaged_frame_is_reported_and_the_others_rendered(
        damaged_plates: Path, media: Media, render_models: Path, cli_cache: Path,
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "out"
    out.mkdir()
    rc = cli.main(cli_args(render_models, media.source, damaged_plates / "p.#.png",
                           out / "o.#.png", "--progress", "json"))
    captured = capsys.readouterr()
    assert rc == ExitCode.FRAMES_FAILED == 5
    assert "Traceback" not in captured.err
    lines = [json.loads(line) for line in captured.out.splitlines()]
    failed = [line for line in lines if line.get("status") == "failed"]
    assert [f["frame"] for f in failed] == [3] and "p.3.png" in failed[0]["error"]
    summary = lines[-1]["summary"]
    assert (summary["frames"], summary["swapped"]) == (6, 5)
    assert [f["frame"] for f in summary["failed"]] == [3]
    assert sorted(p.name for p in out.iterdir()) == [f"o.{n}.png" for n in (1, 2, 4, 5, 6)]
    assert [read_marker(read_bgr(out / f"o.{n}.png")) for n in (1, 2, 4, 5, 6)] == [1, 2, 4,
                                                                                   5, 6]


def test_damaged_frame_in_a_video_output(damaged_plates: Path, media: Media,
                                         render_models: Path, render_cache: Path,
                                         tmp_path: Path) -> None:
    """The previous frame stands in (timing kept), the run reports the failure; with fail_fast
    the video is abandoned and nothing is left behind."""
    out = tmp_path / "out"
    out.mkdir()
    summary, _ = run_render(render_request(render_models, render_cache, media.source,
                                           damaged_plates / "p.#.png", out / "v.mov"))
    assert [n for n, _ in summary.failed] == [3] and summary.swapped == 5
    assert [read_marker(f) for f in decode_video(out / "v.mov")] == [1, 2, 2, 4, 5, 6]
    fast, _ = run_render(render_request(render_models, render_cache, media.source,
                                        damaged_plates / "p.#.png", out / "w.mov",
                                        fail_fast=True))
    assert [n for n, _ in fast.failed] == [3]
    assert sorted(p.name for p in out.iterdir()) == ["v.mov"]


@pytest.mark.parametrize("odd", ["size", "channels"])
def test_a_frame_of_another_size_or_layout_fails_by_name(media: Media, render_models: Path,
                                                         render_cache: Path, tmp_path: Path,
                                                         odd: str) -> None:
    """A shot has one frame size: a sequence frame of another size or channel count fails like
    a damaged one, named with its size, in a sequence output and in a video output alike."""
    plates, out = tmp_path / "mixed", tmp_path / "out"
    plates.mkdir(), out.mkdir()
    for n in range(1, 5):
        picture = face_frame(n, media.face)[..., ::-1].copy()
        if n == 3 and odd == "size":
            picture = np.ascontiguousarray(picture[:-2, :-4])
        elif n == 3:
            picture = np.dstack([picture, np.full(picture.shape[:2], 255, np.uint8)])
        write_plate_oiio(plates / f"p.{n}.png", picture, "uint8")
    sequence, _ = run_render(render_request(render_models, render_cache, media.source,
                                            plates / "p.#.png", out / "o.#.png"))
    assert [n for n, _ in sequence.failed] == [3]
    reason = sequence.failed[0][1]
    assert "p.3.png is " in reason and "like the sequence's first frame" in reason
    assert sorted(p.name for p in out.iterdir()) == [f"o.{n}.png" for n in (1, 2, 4)]
    video, _ = run_render(render_request(render_models, render_cache, media.source,
                                         plates / "p.#.png", out / "v.mov"))
    assert [n for n, _ in video.failed] == [3]
    assert [read_marker(f) for f in decode_video(out / "v.mov")] == [1, 2, 2, 4]


# --- bad inputs: one clear line, the right exit code, nothing written --------------------------

@pytest.fixture()
def bad(media: Media, render_models: Path, cli_cache: Path, tmp_path: Path,
        capsys: pytest.CaptureFixture[str]):
    """run(input, output, *extra) -> (exit code, the one error line); checks no traceback."""
    def run(input: str | Path, output: str | Path, *extra: str,
            code: int = 2) -> str:
        rc = cli.main(cli_args(render_models, media.source, input, output, *extra))
        captured = capsys.readouterr()
        assert rc == code, captured.err
        assert captured.out == ""
        return one_line_error(captured.err)
    return run


@pytest.fixture()
def out_dir(tmp_path: Path) -> Path:
    folder = tmp_path / "out"
    folder.mkdir()
    return folder


def test_missing_input_file(bad, tmp_path: Path, out_dir: Path) -> None:
    line = bad(tmp_path / "nope.mov", out_dir / "f.####.png")
    assert "nope.mov does not exist" in line
    assert list(out_dir.iterdir()) == []


def test_truncated_mp4_is_refused(bad, media: Media, tmp_path: Path, out_dir: Path) -> None:
    data = media.clip.read_bytes()
    broken = tmp_path / "cut.mp4"
    broken.write_bytes(data[:len(data) // 2])  # the index (moov) is at the end: gone
    line = bad(broken, out_dir / "f.####.png")
    assert "cut.mp4" in line and "read" in line
    assert list(out_dir.iterdir()) == []


@pytest.mark.parametrize("codec, keep", [("mjpeg", 0.5), ("h264", 0.9)],
                         ids=["mjpeg-half", "h264-90pc"])
def test_truncated_mkv_is_refused_or_its_missing_frames_fail(
        media: Media, render_models: Path, cli_cache: Path, tmp_path: Path,
        capsys: pytest.CaptureFixture[str], codec: str, keep: float) -> None:
    clip = make_face_clip(tmp_path / "whole.mkv", media.face, frames=12, codec=codec,
                          audio=None)
    data = clip.read_bytes()
    broken = tmp_path / "cut.mkv"
    broken.write_bytes(data[:int(len(data) * keep)])
    out = tmp_path / "out"
    out.mkdir()
    rc = cli.main(cli_args(render_models, media.source, broken, out / "f.####.png"))
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err
    assert rc in (2, 5), f"exit {rc}: {captured.out.strip()}"
    if rc == 2:  # refused: say why (not "variable frame rate", which invites --conform-vfr)
        assert "truncat" in captured.err or "damaged" in captured.err, captured.err
        assert list(out.iterdir()) == []


def test_sequence_with_a_gap_inside_the_range(bad, media: Media, render_models: Path,
                                              render_cache: Path, tmp_path: Path,
                                              out_dir: Path) -> None:
    plates = tmp_path / "plates"
    plates.mkdir()
    for n in (1, 2, 3, 5, 6):
        write_plate_oiio(plates / f"p.{n:04d}.png", face_frame(n, None)[..., ::-1].copy(),
                         "uint8")
    line = bad(plates / "p.####.png", out_dir / "o.####.png")
    assert "gap" in line and "frame 4 missing" in line
    line = bad(plates / "p.####.png", out_dir / "o.####.png", "--frames", "2-5")
    assert "frame 4 missing" in line
    assert list(out_dir.iterdir()) == []
    # the ranges on either side of the gap render
    summary, _ = run_render(render_request(render_models, render_cache, media.source,
                                           plates / "p.####.png", out_dir / "o.####.png",
                                           frames=FrameSpec(range=(5, 9))))
    assert (summary.frames, summary.no_face) == (2, 2)
    assert sorted(p.name for p in out_dir.iterdir()) == ["o.0005.png", "o.0006.png"]


def test_patterns_that_match_nothing_or_are_not_patterns(bad, tmp_path: Path,
                                                         out_dir: Path) -> None:
    assert "no frames match" in bad(tmp_path / "none.####.exr", out_dir / "o.####.exr")
    assert "2 frame tokens" in bad(tmp_path / "a.##.%04d.exr", out_dir / "o.####.exr")
    notes = tmp_path / "notes.txt"
    notes.write_text("not a shot")
    assert "neither a video" in bad(notes, out_dir / "o.####.exr")
    assert list(out_dir.iterdir()) == []


def test_image_output_without_a_frame_token(bad, media: Media, out_dir: Path) -> None:
    line = bad(media.clip, out_dir / "frame.png")
    assert "frame token" in line
    assert list(out_dir.iterdir()) == []


def test_chunk_with_a_video_output(bad, media: Media, out_dir: Path) -> None:
    line = bad(media.clip, out_dir / "out.mov", "--chunk", "1/2")
    assert "--chunk" in line and "sequence" in line
    assert list(out_dir.iterdir()) == []


def test_output_that_is_the_input(bad, media: Media, tmp_path: Path) -> None:
    copy = tmp_path / "shot.mp4"
    copy.write_bytes(media.clip.read_bytes())
    line = bad(copy, copy, "--overwrite")
    assert "is the input" in line
    assert copy.read_bytes() == media.clip.read_bytes()
    plates = tmp_path / "plates"
    plates.mkdir()
    for n in (1, 2):
        write_plate_oiio(plates / f"p.{n}.png", face_frame(n, None)[..., ::-1].copy(), "uint8")
    before = {p.name: p.read_bytes() for p in plates.iterdir()}
    line = bad(plates / "p.#.png", plates / "p.%d.png", "--overwrite")
    assert "overwrite the input" in line
    assert {p.name: p.read_bytes() for p in plates.iterdir()} == before


def test_existing_video_output_needs_overwrite(bad, media: Media, render_models: Path,
                                               out_dir: Path) -> None:
    existing = out_dir / "out.mov"
    existing.write_bytes(b"keep me")
    line = bad(media.clip, existing)
    assert "already exists" in line and "--overwrite" in line
    assert existing.read_bytes() == b"keep me"
    assert [p.name for p in out_dir.iterdir()] == ["out.mov"]
    assert cli.main(cli_args(render_models, media.source, media.clip, existing,
                             "--overwrite")) == 0
    assert [read_marker(f) for f in decode_video(existing)] == list(range(CLIP_FRAMES))
    assert [p.name for p in out_dir.iterdir()] == ["out.mov"]


def test_variable_frame_rate_needs_conform(bad, tmp_path: Path, out_dir: Path) -> None:
    vfr = make_vfr_clip(tmp_path / "vfr.mkv")
    line = bad(vfr, out_dir / "o.####.png")
    assert "variable frame rate" in line and "--conform-vfr" in line
    assert list(out_dir.iterdir()) == []


def test_frame_range_outside_the_input(bad, media: Media, out_dir: Path) -> None:
    line = bad(media.clip, out_dir / "o.####.png", "--frames", "100-120")
    assert f"frames 1-{CLIP_FRAMES}" in line
    assert list(out_dir.iterdir()) == []


def test_source_without_a_face_exits_3(media: Media, render_models: Path, cli_cache: Path,
                                       tmp_path: Path, out_dir: Path,
                                       capsys: pytest.CaptureFixture[str]) -> None:
    blank = tmp_path / "blank.png"
    write_plate_oiio(blank, np.full((200, 200, 3), 128, np.uint8), "uint8")
    rc = cli.main(cli_args(render_models, blank, media.clip, out_dir / "o.####.png"))
    line = one_line_error(capsys.readouterr().err)
    assert rc == 3 and "blank.png" in line
    assert list(out_dir.iterdir()) == []


def test_an_unknown_colorspace_is_refused_and_creates_nothing(bad, media: Media,
                                                              tmp_path: Path,
                                                              out_dir: Path) -> None:
    line = bad(media.clip, out_dir / "o.####.png", "--colorspace", "Linear Rec709")
    assert "no colour space 'Linear Rec709'" in line and "Linear Rec.709 (sRGB)" in line
    line = bad(media.clip, tmp_path / "nowhere" / "o.####.png", "--colorspace", "Linear Rec709")
    assert "no colour space" in line
    assert list(out_dir.iterdir()) == []
    assert not (tmp_path / "nowhere").exists(), "a refused render creates no output folder"


# --- the CLI process ---------------------------------------------------------------------------

def test_progress_bar_writes_to_the_current_stderr(monkeypatch: pytest.MonkeyPatch) -> None:
    stream = io.StringIO()
    monkeypatch.setattr(sys, "stderr", stream)
    progress = cli_render.Progress("bar")
    progress(FrameReport(1001, "swapped", 1))
    assert "frame 1001" in stream.getvalue()


def test_cli_subprocess_exit_code_and_stderr(media: Media, render_models: Path,
                                             tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    env = {**os.environ, "PYTHONPATH": str(Path(cli.__file__).resolve().parents[2])}
    done = subprocess.run([sys.executable, "-m", "facefuse",
                           *cli_args(render_models, media.source, tmp_path / "missing.mp4",
                                     out / "f.####.png")],
                          check=False, capture_output=True, text=True, timeout=120,
                          env=env)
    assert done.returncode == 2
    assert done.stdout == ""
    assert done.stderr.strip().splitlines() == [
        f"facefuse: error: {tmp_path / 'missing.mp4'} does not exist"]
    assert list(out.iterdir()) == []


def test_a_pixel_boost_that_does_not_fit_is_refused_before_any_frame(bad, media: Media,
                                                                     out_dir: Path) -> None:
    """The clip's first frames have no face, so a check made at the first swap would come after
    those frames were written: the boost is checked against the swapper before pass 2."""
    line = bad(media.clip, out_dir / "f.####.png", "--pixel-boost", "200")
    assert "pixel boost 200" in line
    assert list(out_dir.iterdir()) == []
