"""What a render tells the user: --fail-fast stops at the failed frame, faces found but not
swapped are told apart from frames without a face (and warned about), progress covers every
phase (analysis, swap, encode), outputs name files by name and hash unless --provenance full,
a frame range past the input's end is clipped to it, render --json, and no ONNX Runtime noise.

Whole renders on the real YuNet and the contract models (tests/conftest.py); the shot is the
shared `media` clip (tests/integration/conftest.py), a few frames at a time.
"""

from __future__ import annotations

import io
import json
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from facefuse.cli import main as cli
from facefuse.cli import render as cli_render
from facefuse.errors import ExitCode
from facefuse.runtime.sessions import create_session
from facefuse.shot.contract.request import FrameReport, FrameSpec, OutputSpec, PhaseProgress
from facefuse.shot.run.render import render
from tests.integration import farm_helpers
from tests.integration.render_helpers import CLIP_FRAMES, Media
from tests.render_media import cli_args, make_face_clip, read_plate_oiio, render_request

FACE_FRAMES = (5, 7)  # 1-based frames of `media` that show a face


def _json_lines(text: str) -> list[dict]:
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def _tags(path: Path) -> dict[str, str]:
    spec = read_plate_oiio(path)[1]
    return {p.name.removeprefix("facefuse:"): str(p.value) for p in spec.extra_attribs
            if p.name.startswith("facefuse:")}


# --- item 4: --fail-fast ------------------------------------------------------------------------

def test_fail_fast_writes_no_frame_after_the_failed_one(render_models: Path, testdata: Path,
                                                        tmp_path: Path) -> None:
    """Frames queued behind the failed one are neither swapped nor written; every frame before
    it is. (tests/integration/test_farm_failures.py allows up to 2 * QUEUE_DEPTH + 2 more.)"""
    clip = make_face_clip(tmp_path / "broken.mkv", frames=14, zeroed=(4,),
                          **farm_helpers.farm_clip(testdata))
    out = tmp_path / "out"
    out.mkdir()
    reports: list[FrameReport] = []
    summary = render(render_request(render_models, tmp_path / "cache",
                                    testdata / "media" / "obama.jpg", clip,
                                    out / "out.####.png", fail_fast=True), reports.append)
    assert [n for n, _ in summary.failed] == [5] and not summary.cancelled
    assert [r.frame for r in reports] == [1, 2, 3, 4, 5]
    assert sorted(farm_helpers.frame_files(out)) == [1, 2, 3, 4]
    assert [p.name for p in out.iterdir() if p.name.startswith(".")] == []


# --- item 17: found vs swapped -----------------------------------------------------------------

def test_faces_found_but_none_selected_are_reported_and_warned(
        media: Media, render_models: Path, cli_cache: Path, testdata: Path, tmp_path: Path,
        capsys: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture) -> None:
    out = tmp_path / "out"
    out.mkdir()
    first, last = FACE_FRAMES
    rc = cli.main(cli_args(render_models, media.source, media.clip, out / "o.####.png",
                           "--frames", f"{first}-{last}", "--progress", "json",
                           "--selector", "reference", "--similarity", "1.0",
                           "--reference", str(testdata / "media" / "biden.jpg")))
    captured = capsys.readouterr()
    assert rc == ExitCode.OK, captured.err
    lines = _json_lines(captured.out)
    frames = [line for line in lines if "frame" in line]
    assert [f["frame"] for f in frames] == list(range(first, last + 1))
    assert all((f["status"], f["faces"], f["found"], f["corrected"]) == ("unselected", 0, 1,
                                                                         False) for f in frames)
    summary = lines[-1]["summary"]
    assert (summary["swapped"], summary["no_face"], summary["unselected"],
            summary["corrected"], summary["done"]) == (0, 0, 3, 0, 3)
    assert len(summary["warnings"]) == 1 and "selector chose none" in summary["warnings"][0]
    # on stderr through logging (pytest's handler takes the place of main()'s stderr one)
    assert "faces were found in 3 frames but the selector chose none of them" in caplog.text


@pytest.mark.parametrize("correction", ["skip", "overrides"])
def test_frames_left_by_the_users_corrections_are_no_failure(
        correction: str, media: Media, render_models: Path, cli_cache: Path, tmp_path: Path,
        capsys: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture) -> None:
    """A frame whose faces the user's own corrections leave (--skip, an override) is reported
    "unselected" and corrected, counted apart from frames without a face, and warned of nowhere:
    "3 left as they are by your corrections", not "0 of 3 swapped"."""
    first, last = FACE_FRAMES
    extra = ["--skip", "p1"]
    if correction == "overrides":
        fix = tmp_path / "fix.json"
        fix.write_text(json.dumps({"schema": "facefuse.overrides/1", "overrides": [
            {"frames": f"{first}-{last}", "action": "keep"}]}))
        extra = ["--overrides", str(fix)]
    rc = cli.main(cli_args(render_models, media.source, media.clip,
                           tmp_path / "out" / "o.####.png", "--frames", f"{first - 2}-{last}",
                           "--progress", "json", *extra))
    captured = capsys.readouterr()
    assert rc == ExitCode.OK, captured.err
    lines = _json_lines(captured.out)
    status = {f["frame"]: (f["status"], f.get("corrected")) for f in lines if "frame" in f}
    assert status == {first - 2: ("no_face", None), first - 1: ("no_face", None),
                      **{n: ("unselected", True) for n in range(first, last + 1)}}
    summary = lines[-1]["summary"]
    assert (summary["no_face"], summary["unselected"], summary["corrected"],
            summary["warnings"]) == (2, 3, 3, [])
    assert "WARNING" not in caplog.text.upper()
    rc = cli.main(cli_args(render_models, media.source, media.clip,
                           tmp_path / "line" / "o.####.png", "--frames", f"{first - 2}-{last}",
                           *extra))
    assert ("5 frames: 0 swapped, 2 without a face, 3 left as they are by your corrections"
            in capsys.readouterr().out)


def test_swapped_frames_report_faces_found_and_swapped(media: Media, render_models: Path,
                                                       render_cache: Path,
                                                       tmp_path: Path) -> None:
    reports: list[FrameReport] = []
    summary = render(render_request(render_models, render_cache, media.source, media.clip,
                                    tmp_path / "o.####.png", frames=FrameSpec(range=(3, 6))),
                     reports.append)
    assert [(r.frame, r.status, r.faces, r.found) for r in reports] == [
        (3, "no_face", 0, 0), (4, "no_face", 0, 0), (5, "swapped", 1, 1), (6, "swapped", 1, 1)]
    assert (summary.unselected, summary.warnings) == (0, ())


# --- item 18: progress of every phase ----------------------------------------------------------

def test_progress_covers_analysis_swap_and_encode(media: Media, render_models: Path,
                                                  tmp_path: Path) -> None:
    phases: list[PhaseProgress] = []
    reports: list[FrameReport] = []
    render(render_request(render_models, tmp_path / "fresh" / "embeddings", media.source,
                          media.clip, tmp_path / "o.####.png",
                          frames=FrameSpec(range=(5, 8), chunk=(1, 2))),
           reports.append, on_phase=phases.append)
    analysis = [(p.done, p.total) for p in phases if p.phase == "analysis"]
    assert analysis == [(0, 4), (1, 4), (2, 4), (3, 4), (4, 4)], "pass 1 analyses frames 5-8"
    assert [(p.done, p.total) for p in phases if p.phase == "swap"] == [(1, 2), (2, 2)]
    assert [(p.done, p.total) for p in phases if p.phase == "encode"] == [(0, 1), (1, 1)]
    assert phases[0].phase == "analysis" and phases[-1].phase == "encode"
    assert [r.frame for r in reports] == [5, 6]

    again: list[PhaseProgress] = []  # analysis cached now: one report, already complete
    render(render_request(render_models, tmp_path / "fresh" / "embeddings", media.source,
                          media.clip, tmp_path / "o.####.png",
                          frames=FrameSpec(range=(5, 8), chunk=(2, 2))),
           on_phase=again.append)
    assert [(p.done, p.total) for p in again if p.phase == "analysis"] == [(4, 4)]


def test_progress_json_lines_for_phases_keep_the_frame_lines(
        media: Media, render_models: Path, cli_cache: Path, tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    rc = cli.main(cli_args(render_models, media.source, media.clip, tmp_path / "o.####.png",
                           "--frames", "5-6", "--progress", "json"))
    out = capsys.readouterr().out
    assert rc == ExitCode.OK
    lines = _json_lines(out)
    phases = [line for line in lines if "phase" in line]
    assert {line["phase"] for line in phases} == {"analysis", "swap", "encode"}
    for line in phases:
        assert set(line) == {"phase", "done", "total", "percent", "fps", "eta_s"}
        assert 0 <= line["done"] <= line["total"] and 0 <= line["percent"] <= 100
    assert [line["done"] for line in phases if line["phase"] == "swap"] == [1, 2]
    frames = [line for line in lines if "frame" in line]
    assert [line["frame"] for line in frames] == [5, 6]
    assert all(set(line) == {"frame", "status", "faces", "found", "ms"} for line in frames)
    assert "summary" in lines[-1]


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_bar_shows_done_total_percent_fps_and_time_left() -> None:
    stream = _Terminal()
    progress = cli_render.Progress("auto", stream)
    assert progress.mode == "bar"
    progress.phase(PhaseProgress("analysis", 0, 40))
    progress.phase(PhaseProgress("analysis", 10, 40))
    text = stream.getvalue().split("\r")[-1]
    assert text.startswith("analysis [######") and "10/40" in text and "25%" in text
    assert "fps" in text and "ETA " in text
    progress(FrameReport(1001, "swapped", 1, found=1))
    assert "frame 1001 swapped" in stream.getvalue().split("\r")[-1]


# --- item 21: provenance -----------------------------------------------------------------------

def test_outputs_name_files_without_local_paths_unless_asked(media: Media, render_models: Path,
                                                             render_cache: Path,
                                                             tmp_path: Path) -> None:
    for mode in ("names", "full"):
        out = tmp_path / mode / "o.####.png"
        out.parent.mkdir()
        render(render_request(render_models, render_cache, media.source, media.clip,
                              OutputSpec(str(out), provenance=mode),
                              frames=FrameSpec(range=(5, 5))))
        tags = _tags(out.parent / "o.0005.png")
        everything = json.dumps(tags)
        models = json.loads(tags["models"])
        settings = json.loads(tags["settings"])
        assert models["swapper"]["model"] == "identity_swapper.onnx"
        assert len(models["swapper"]["sha256"]) == 64
        if mode == "names":
            assert tags["input"] == media.clip.name
            assert settings["swapper"] == "identity_swapper.onnx"
            assert str(render_models) not in everything and str(media.root) not in everything
            assert "path" not in models["swapper"]
        else:
            assert tags["input"] == str(media.clip)
            assert settings["swapper"] == str(render_models / "identity_swapper.onnx")
            assert models["swapper"]["path"] == str(render_models / "identity_swapper.onnx")


# --- item 8: a range past the input's end; render --json (item 23) ----------------------------

def test_a_range_past_the_end_is_clipped_and_json_prints_one_summary_line(
        media: Media, render_models: Path, cli_cache: Path, tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    rc = cli.main(cli_args(render_models, media.source, media.clip, tmp_path / "o.####.png",
                           "--frames", f"{CLIP_FRAMES - 1}-999999999", "--json",
                           "--progress", "none"))
    captured = capsys.readouterr()
    assert rc == ExitCode.OK, captured.err
    lines = captured.out.strip().splitlines()
    assert len(lines) == 1
    summary = json.loads(lines[0])["summary"]
    assert (summary["frames"], summary["swapped"]) == (2, 2)
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        f"o.{n:04d}.png" for n in (CLIP_FRAMES - 1, CLIP_FRAMES)]


# --- item 23: no ONNX Runtime warning about unused initializers --------------------------------

def test_creating_a_session_prints_no_onnxruntime_warnings(
        tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    """inswapper carries an 'emap' initializer no node uses; ONNX Runtime warned about removing
    it (on the C++ side, fd 2) every time a session was created."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])
    graph = helper.make_graph([helper.make_node("Identity", ["x"], ["y"])], "unused", [x], [y],
                              initializer=[numpy_helper.from_array(np.zeros((4, 4), np.float32),
                                                                   "emap")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    path = tmp_path / "unused_emap.onnx"
    onnx.save(model, str(path))
    capfd.readouterr()
    session = create_session(path, ["CPUExecutionProvider"])
    assert session.run(None, {"x": np.ones((1, 4), np.float32)})[0].tolist() == [[1.0] * 4]
    captured = capfd.readouterr()
    assert "emap" not in captured.err and "onnxruntime" not in captured.err, captured.err
