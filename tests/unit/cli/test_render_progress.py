"""The CLI's progress when pass 1 runs beside pass 2 (selector many): analysis and swap steps
arrive interleaved; OpenJD progress only grows, the bar stays on the swap and shows the
analysis alongside, JSON lines keep each phase's own rate."""

from __future__ import annotations

import io
import json
from contextlib import redirect_stdout

from facefuse.cli.render import Progress
from facefuse.shot.contract.request import PhaseProgress

TOTAL = 40


def _interleaved() -> list[PhaseProgress]:
    """Analysis runs 16 frames ahead of the swap, then both finish and the output is encoded."""
    steps = [PhaseProgress("analysis", 0, TOTAL)]
    for done in range(1, TOTAL + 1):
        steps.append(PhaseProgress("analysis", done, TOTAL))
        if done > 16:
            steps.append(PhaseProgress("swap", done - 16, TOTAL))
    steps += [PhaseProgress("swap", done, TOTAL) for done in range(TOTAL - 15, TOTAL + 1)]
    return [*steps, PhaseProgress("encode", 0, 1), PhaseProgress("encode", 1, 1)]


def _run(mode: str, stream: io.StringIO | None = None) -> str:
    progress = Progress(mode, stream if stream is not None else io.StringIO())
    out = io.StringIO()
    with redirect_stdout(out):
        for step in _interleaved():
            progress.phase(step)
    return out.getvalue()


def test_openjd_progress_only_grows_while_the_analysis_runs_alongside() -> None:
    lines = _run("openjd").splitlines()
    percents = [int(line.split(": ")[1]) for line in lines if line.startswith("openjd_progress")]
    assert percents == sorted(percents) and percents[-1] == 100 and len(percents) == TOTAL
    assert lines.count(f"openjd_status: swapping {TOTAL} frames") == 1


def test_the_bar_follows_the_swap_and_shows_the_analysis_beside_it() -> None:
    stream = io.StringIO()
    _run("bar", stream)
    lines = [line.strip() for line in stream.getvalue().split("\r") if line.strip()]
    alongside = [line for line in lines if "(analysis" in line]
    assert alongside and all(line.startswith("swap") for line in alongside)
    assert f"(analysis {TOTAL - 1}/{TOTAL})" in alongside[-1]
    after_swap = lines[lines.index(alongside[0]):]
    assert not any(line.startswith("analysis") for line in after_swap)


def test_json_lines_count_each_phase_on_its_own() -> None:
    records = [json.loads(line) for line in _run("json").splitlines()]
    for phase in ("analysis", "swap"):
        done = [r["done"] for r in records if r["phase"] == phase]
        assert done == sorted(done) and done[-1] == TOTAL
