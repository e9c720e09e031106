"""Wall-clock timing, owned by whoever measures (no global state).

StageClock: milliseconds per stage name for one frame (or one job step). RenderTimings: what a
whole render measured, for `facefuse bench`: every frame's stage times per pass (so medians and
percentiles can be taken), one-off costs (session creation, tracking), when the first output
frame was settled, and the time spent inside ONNX Runtime's run(): summed over every run, and
as wall time with at least one run in progress (runs of pass 1 and pass 2 overlap, so the sum
can exceed the wall time). RenderTimings is written from several threads (the render's reader,
inference and writer threads) and locks itself.
"""

from __future__ import annotations

import threading
import time
from array import array
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from types import MappingProxyType

import numpy as np

INFERENCE = "onnxruntime"  # the RenderTimings total for time inside session.run()
INFERENCE_BUSY = "onnxruntime_busy"  # wall time with at least one session.run() in progress
SESSIONS = "sessions"  # the RenderTimings total for session creation


class StageClock:
    """Accumulates milliseconds per stage name."""

    def __init__(self) -> None:
        self._totals_ms: dict[str, float] = {}

    @contextmanager
    def measure(self, stage: str) -> Iterator[None]:
        start = time.perf_counter()
        try:
            yield
        finally:
            self.add(stage, (time.perf_counter() - start) * 1000.0)

    def add(self, stage: str, ms: float) -> None:
        """Count `ms` milliseconds more for `stage`."""
        self._totals_ms[stage] = self._totals_ms.get(stage, 0.0) + ms

    def snapshot(self) -> Mapping[str, float]:
        return MappingProxyType({k: round(v, 3) for k, v in self._totals_ms.items()})

    def take(self) -> Mapping[str, float]:
        """The snapshot, and start again from nothing (one clock reused frame after frame)."""
        snapshot = self.snapshot()
        self._totals_ms.clear()
        return snapshot


@dataclass(frozen=True, slots=True)
class StageStats:
    """One stage of one pass over the frames that ran it: milliseconds per frame."""

    frames: int
    median_ms: float
    p95_ms: float
    total_ms: float

    @classmethod
    def of(cls, samples_ms: list[float]) -> StageStats:
        values = np.asarray(samples_ms, np.float64)
        return cls(int(values.size), round(float(np.median(values)), 3),
                   round(float(np.percentile(values, 95)), 3), round(float(values.sum()), 3))


@dataclass(frozen=True, slots=True)
class TimingReport:
    """What RenderTimings measured. stages: pass -> stage -> StageStats; totals: one-off or
    summed costs in ms (INFERENCE, SESSIONS, "track", ...); marks: seconds after the start at
    which something first happened ("first_output")."""

    stages: Mapping[str, Mapping[str, StageStats]]
    totals_ms: Mapping[str, float]
    marks_s: Mapping[str, float]


class RenderTimings:
    """Timings of one render, from every thread that does its work (see the module docstring).

    started: the perf_counter() value marks are measured from (default: when it was made)."""

    def __init__(self, started: float | None = None) -> None:
        self.started = time.perf_counter() if started is None else started
        self._lock = threading.Lock()
        self._samples: dict[str, dict[str, list[float]]] = {}
        self._totals_ms: dict[str, float] = {}
        self._marks_s: dict[str, float] = {}
        self._runs = array("d")  # start, end (perf_counter s) of every run, flat

    def frame(self, pass_name: str, ms: Mapping[str, float]) -> None:
        """One frame's milliseconds per stage in pass `pass_name` ("analysis" or "swap")."""
        with self._lock:
            stages = self._samples.setdefault(pass_name, {})
            for stage, value in ms.items():
                stages.setdefault(stage, []).append(float(value))

    def add(self, name: str, ms: float) -> None:
        """Count `ms` more for the one-off or summed cost `name`."""
        with self._lock:
            self._totals_ms[name] = self._totals_ms.get(name, 0.0) + float(ms)

    @contextmanager
    def measure(self, name: str) -> Iterator[None]:
        """Time a block and add it to the total `name`."""
        start = time.perf_counter()
        try:
            yield
        finally:
            self.add(name, (time.perf_counter() - start) * 1000.0)

    def mark(self, name: str) -> None:
        """Remember when `name` first happened (later marks of the same name are ignored)."""
        at = time.perf_counter() - self.started
        with self._lock:
            self._marks_s.setdefault(name, at)

    def inference(self, start: float, end: float) -> None:
        """One session.run(), from `start` to `end` (time.perf_counter() seconds)."""
        self.add(INFERENCE, (end - start) * 1000.0)
        with self._lock:
            self._runs.extend((start, end))

    def session_created(self, ms: float) -> None:
        """Time spent creating one ONNX Runtime session."""
        self.add(SESSIONS, ms)

    def report(self) -> TimingReport:
        with self._lock:
            stages = {p: MappingProxyType({s: StageStats.of(v) for s, v in stages.items()})
                      for p, stages in self._samples.items()}
            totals = {k: round(v, 3) for k, v in self._totals_ms.items()}
            marks = {k: round(v, 4) for k, v in self._marks_s.items()}
            runs = np.frombuffer(self._runs, np.float64).reshape(-1, 2).copy()
        totals[INFERENCE_BUSY] = round(covered_seconds(runs) * 1000.0, 3)
        return TimingReport(MappingProxyType(stages), MappingProxyType(totals),
                            MappingProxyType(marks))


def covered_seconds(intervals: np.ndarray) -> float:
    """The length of the union of (N, 2) [start, end] intervals (overlaps counted once)."""
    if not len(intervals):
        return 0.0
    ordered = intervals[np.argsort(intervals[:, 0], kind="stable")]
    reach = np.maximum.accumulate(ordered[:, 1])
    # each interval adds what it reaches beyond everything that started before it
    before = np.concatenate([[ordered[0, 0]], reach[:-1]])
    return float(np.sum(np.maximum(ordered[:, 1], before) - np.maximum(ordered[:, 0], before)))


class PhaseRate:
    """Frames per second and time left within one phase of a render (frames done before it
    started, e.g. cached analysis, do not count towards the rate). Hosts keep one per phase."""

    def __init__(self, done: int) -> None:
        self.start, self.first = time.monotonic(), done

    def fps_eta(self, done: int, total: int) -> tuple[float, float | None]:
        """(frames per second so far, seconds left or None before the first frame)."""
        elapsed = time.monotonic() - self.start
        fps = (done - self.first) / elapsed if elapsed > 0 and done > self.first else 0.0
        return fps, ((total - done) / fps if fps > 0 else None)
