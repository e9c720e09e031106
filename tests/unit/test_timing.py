"""The timing recorders: StageClock per frame, RenderTimings for a whole render (threads)."""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest

from facefuse.timing import (
    INFERENCE,
    INFERENCE_BUSY,
    SESSIONS,
    RenderTimings,
    StageClock,
    StageStats,
    covered_seconds,
)


def test_stage_clock_adds_up_per_stage_and_take_starts_again() -> None:
    clock = StageClock()
    clock.add("decode", 1.5)
    clock.add("decode", 2.0)
    with clock.measure("swap"):
        time.sleep(0.01)
    first = clock.take()
    assert first["decode"] == pytest.approx(3.5)
    assert first["swap"] >= 9.0
    clock.add("paste", 1.0)
    assert dict(clock.take()) == {"paste": 1.0}
    assert dict(clock.snapshot()) == {}


def test_stage_stats_are_median_and_p95_of_the_samples() -> None:
    stats = StageStats.of([float(v) for v in range(1, 101)])
    assert stats.frames == 100
    assert stats.median_ms == pytest.approx(50.5)
    assert stats.p95_ms == pytest.approx(95.05)
    assert stats.total_ms == pytest.approx(5050.0)


def test_render_timings_keep_passes_apart_and_stages_only_where_they_ran() -> None:
    timings = RenderTimings()
    timings.frame("analysis", {"decode": 2.0, "detect": 10.0})
    timings.frame("analysis", {"decode": 4.0, "detect": 30.0})
    timings.frame("swap", {"decode": 1.0, "encode": 5.0})
    report = timings.report()
    assert report.stages["analysis"]["detect"].median_ms == pytest.approx(20.0)
    assert report.stages["analysis"]["decode"].frames == 2
    assert report.stages["swap"]["encode"].frames == 1
    assert "swap" not in report.stages["analysis"] and "detect" not in report.stages["swap"]


def test_render_timings_totals_and_first_marks() -> None:
    timings = RenderTimings(started=time.perf_counter() - 1.0)
    timings.session_created(12.0)
    timings.session_created(3.0)
    timings.inference(100.0, 100.007)
    with timings.measure("track"):
        time.sleep(0.005)
    timings.mark("first_output")
    time.sleep(0.02)
    timings.mark("first_output")  # later marks of the same name do not move it
    report = timings.report()
    assert report.totals_ms[SESSIONS] == pytest.approx(15.0)
    assert report.totals_ms[INFERENCE] == pytest.approx(7.0)
    assert report.totals_ms[INFERENCE_BUSY] == pytest.approx(7.0)
    assert report.totals_ms["track"] >= 4.0
    assert 1.0 <= report.marks_s["first_output"] < 1.015


def test_render_timings_take_samples_from_many_threads() -> None:
    timings = RenderTimings()

    def work() -> None:
        for _ in range(500):
            timings.frame("swap", {"paste": 1.0})
            timings.inference(50.0, 50.001)  # the four threads' runs coincide

    threads = [threading.Thread(target=work) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    report = timings.report()
    assert report.stages["swap"]["paste"].frames == 2000
    assert report.totals_ms[INFERENCE] == pytest.approx(2000.0)
    assert report.totals_ms[INFERENCE_BUSY] == pytest.approx(1.0)


@pytest.mark.parametrize("intervals, covered", [
    ([], 0.0),
    ([(0.0, 1.0)], 1.0),
    ([(0.0, 1.0), (2.0, 3.0)], 2.0),
    ([(0.0, 2.0), (1.0, 3.0)], 3.0),  # overlapping
    ([(0.0, 10.0), (1.0, 2.0), (3.0, 4.0)], 10.0),  # nested
    ([(5.0, 6.0), (0.0, 1.0), (0.5, 5.5)], 6.0),  # out of order, chained
    ([(0.0, 1.0), (1.0, 2.0)], 2.0),  # touching
])
def test_covered_seconds_counts_overlaps_once(intervals, covered) -> None:
    runs = np.array(intervals, np.float64).reshape(-1, 2)
    assert covered_seconds(runs) == pytest.approx(covered)


def test_covered_seconds_matches_a_fine_grid() -> None:
    rng = np.random.default_rng(3)
    starts = rng.uniform(0, 100, 200)
    runs = np.stack([starts, starts + rng.uniform(0, 3, 200)], axis=1)
    grid = np.arange(0, 104, 0.001) + 0.0005
    busy = np.zeros(grid.size, bool)
    for start, end in runs:
        busy |= (grid >= start) & (grid < end)
    assert covered_seconds(runs) == pytest.approx(busy.sum() * 0.001, abs=0.01)
