"""`facefuse bench` on a short real clip with the contract models, and the per-frame stage
times `render --progress json` reports (every stage, cold or warm said)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from facefuse.cli.bench import PASS_STAGES
from facefuse.cli.main import main
from tests.render_media import cli_args

FRAMES = 6
ROOT = Path(__file__).resolve().parents[2]


def _bench(capsys: pytest.CaptureFixture[str], args: list[str]) -> dict:
    assert main(args) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 1
    return json.loads(lines[0])["bench"]


def _bench_args(render_models: Path, testdata: Path, output: Path, *extra: str) -> list[str]:
    clip = testdata / "media" / "asl_yes.mp4"
    args = cli_args(render_models, testdata / "media" / "obama.jpg", clip, output, *extra)
    return ["bench", *args[1:], "--frames", str(FRAMES), "--json"]


def test_cold_bench_times_every_stage_of_both_passes(capsys: pytest.CaptureFixture[str],
                                                     render_models: Path, testdata: Path,
                                                     tmp_path: Path) -> None:
    out = tmp_path / "bench.mp4"
    figures = _bench(capsys, _bench_args(render_models, testdata, out))
    assert figures["cache"] == "cold" and figures["analysis_cached"] == 0
    assert figures["frames"] == FRAMES and figures["failed"] == 0
    assert out.is_file() and out.stat().st_size > 0
    for name, stages in PASS_STAGES.items():
        assert set(figures["stages"][name]) == set(stages)
    ran = {name: {stage for stage, stats in stages.items() if stats}
           for name, stages in figures["stages"].items()}
    assert ran["analysis"] == {"decode", "colour", "detect", "embed"}
    assert ran["swap"] == {"decode", "colour", "swap", "paste", "encode"}  # no enhancer
    # pass 2 decoded nothing: it took every frame as pass 1 decoded it (shot.run.held_frames)
    assert figures["decoded_once"] == FRAMES and 0 < figures["held_mib"] < 8
    assert figures["stages"]["swap"]["decode"]["p95_ms"] == 0.0
    for stages in figures["stages"].values():
        for stats in filter(None, stages.values()):
            assert stats["frames"] == FRAMES
            if stats is not figures["stages"]["swap"]["decode"]:
                assert 0 < stats["median_ms"] <= stats["p95_ms"]
    assert figures["fps"] > 0 and figures["cpu_s_per_frame"] > 0
    assert 0 < figures["first_output_s"] < figures["seconds"]
    assert figures["sessions_ms"] > 0 and figures["onnxruntime_ms_per_frame"] > 0
    assert 0 < figures["outside_onnxruntime"] < 1
    assert figures["peak_rss_mib"] > 50 and figures["track_ms_per_frame"] >= 0
    assert figures["providers"] == ["CPUExecutionProvider"]
    assert (figures["swap_workers"], figures["detector_sessions"]) == (1, 1)  # the CPU's
    # CPU split: ONNX Runtime's and the host's add up to the process's (less the bench's own)
    ort, host = figures["onnxruntime_cpu_ms_per_frame"], figures["host_cpu_ms_per_frame"]
    assert ort > 0 and host > 0
    assert ort + host <= figures["cpu_s_per_frame"] * 1000.0 + 1.0
    threads = figures["threads_cpu_ms_per_frame"]
    # a thread shorter-lived than one sample period (a 6-frame render's reader) may be missing
    assert "unsampled" in threads and len(threads) >= 2
    for row in threads.values():
        assert row["cpu"] == pytest.approx(row["onnxruntime"] + row["host"], abs=0.01)
    assert sum(row["onnxruntime"] for row in threads.values()) == pytest.approx(ort, abs=0.05)


def test_a_bench_without_frame_memory_decodes_every_frame_twice(
        capsys: pytest.CaptureFixture[str], render_models: Path, testdata: Path,
        tmp_path: Path) -> None:
    figures = _bench(capsys, _bench_args(render_models, testdata, tmp_path / "b.mp4",
                                         "--frame-memory", "0"))
    assert (figures["decoded_once"], figures["held_mib"]) == (0, 0.0)
    for name in ("analysis", "swap"):
        decode = figures["stages"][name]["decode"]
        assert decode["frames"] == FRAMES and 0 < decode["median_ms"] <= decode["p95_ms"]


def test_warm_bench_says_so_and_skips_the_analysis(capsys: pytest.CaptureFixture[str],
                                                   render_models: Path, testdata: Path,
                                                   tmp_path: Path) -> None:
    figures = _bench(capsys, _bench_args(render_models, testdata, tmp_path / "b.mp4", "--warm",
                                         "--swap-workers", "2"))
    assert figures["cache"] == "warm" and figures["analysis_cached"] == FRAMES
    assert figures["swap_workers"] == 2 and figures["frames"] == FRAMES
    assert figures["decoded_once"] == 0  # pass 1 decoded nothing to hand on
    assert all(stats is None for stats in figures["stages"]["analysis"].values())
    assert figures["stages"]["swap"]["swap"]["frames"] == FRAMES


def test_bench_table_names_every_stage(capsys: pytest.CaptureFixture[str], render_models: Path,
                                       testdata: Path, tmp_path: Path) -> None:
    args = [a for a in _bench_args(render_models, testdata, tmp_path / "t.mp4") if a != "--json"]
    assert main([*args[:-2], "--frames", "3-4"]) == 0  # a range, as render takes it
    table = capsys.readouterr().out
    assert table.startswith("2 frames of ")
    assert "(cold, analysis cached for 0)" in table and "frames/s end to end" in table
    for stage in ("decode", "colour", "detect", "embed", "swap", "enhance", "paste", "encode"):
        assert f" {stage} " in table


def test_progress_json_times_every_stage_and_says_when_analysis_was_cached(
        capsys: pytest.CaptureFixture[str], render_models: Path, testdata: Path,
        tmp_path: Path) -> None:
    clip = testdata / "media" / "asl_yes.mp4"
    args = [*cli_args(render_models, testdata / "media" / "obama.jpg", clip,
                      tmp_path / "o.#.png", "--frames", "1-3", "--progress", "json",
                      "--cache-dir", str(tmp_path / "cache"))]
    runs = []
    for _ in range(2):
        assert main([*args, "--overwrite"]) == 0
        lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
        runs.append(([x for x in lines if "frame" in x], lines[-1]["summary"]))
    (cold, cold_summary), (warm, warm_summary) = runs
    assert cold_summary["analysis_cached"] == 0 and warm_summary["analysis_cached"] == 3
    for line in cold:
        assert {"analysis.decode", "analysis.colour", "detect", "embed", "decode", "colour",
                "swap", "paste", "encode"} <= set(line["ms"])
        assert all(v >= 0 for v in line["ms"].values())
    for line in warm:  # nothing was analysed this time, and the lines show it
        assert {"decode", "colour", "swap", "paste", "encode"} <= set(line["ms"])
        assert not {"detect", "embed", "analysis.decode"} & set(line["ms"])


@pytest.mark.parametrize(("signum", "code"), [(signal.SIGTERM, 143), (signal.SIGINT, 130)])
def test_sigterm_stops_the_bench_and_removes_its_folder(render_models: Path, testdata: Path,
                                                       tmp_path: Path, signum: int,
                                                       code: int) -> None:
    """A bench stopped by SIGTERM (a farm cancel, a terminal's kill) or Ctrl-C exits 143 / 130
    and leaves no temporary folder behind."""
    temp = tmp_path / "tmp"
    temp.mkdir()
    args = _bench_args(render_models, testdata, tmp_path / "b.mp4")
    env = {**os.environ, "TMPDIR": str(temp),
           "PYTHONPATH": os.pathsep.join([str(ROOT / "core"), str(ROOT)])}
    signal.signal(signal.SIGINT, signal.default_int_handler)  # the child gets it, not SIG_IGN
    bench = subprocess.Popen([sys.executable, "-m", "facefuse", *args], env=env,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    while not list(temp.glob(".facefuse-bench.*")) and time.monotonic() < deadline:
        time.sleep(0.01)
    bench.send_signal(signum)
    _, err = bench.communicate(timeout=60)
    assert bench.returncode == code, err[-2000:]
    assert f"stopped by {signal.Signals(signum).name}" in err and not list(temp.iterdir())
