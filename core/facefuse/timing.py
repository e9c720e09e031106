"""Wall-clock timing, owned by whoever measures (no global state).

StageClock: milliseconds per stage name for one frame (or one job step). RenderTimings: what a
whole render measured, for `facefuse bench`: every frame's stage times per pass (so medians and
percentiles can be taken), one-off costs (session creation, tracking), when the first output
frame was settled, and the time spent inside ONNX Runtime's run(): summed over every run, and
as wall time with at least one run in progress (runs of pass 1 and pass 2 overlap, so the sum
can exceed the wall time). RenderTimings is written from several threads (the render's reader,
inference and writer threads) and locks itself.

CPU time per thread (ThreadCpu, Linux only): the CPU seconds of every thread of the process,
read from /proc/self/task/TID/stat when sampled, counted from the first sample (threads alive
then count from what they had used by then), and kept per thread after it ends (its last
sample counts, so the CPU a thread used after it was last sampled is missed). A thread is
grouped by its Python name (threading.Thread.name, a trailing "_N" of pool workers dropped);
a thread Python did not start by its name in the kernel (comm), which a thread inherits from
the thread that starts it: the threads ONNX Runtime starts while a session is created are
ONNX_RUNTIME (runtime.sessions names the creating thread ORT_THREAD_PREFIX... for that moment,
`threads_named`), the threads a video decoder or encoder starts when it opens are DECODER or
ENCODER (io.video names the opening thread so; FFmpeg's frame-threaded decoders name their
threads "av:CODEC:dfN" themselves), any other NATIVE (OpenCV's pool, ...). The CPU of ONNX
Runtime is then the calling threads' own CPU across each run() (time.thread_time, counted by
RenderTimings.inference) plus the ONNX_RUNTIME group's.
"""

from __future__ import annotations

import os
import re
import threading
import time
from array import array
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from types import MappingProxyType

import numpy as np

INFERENCE = "onnxruntime"  # the RenderTimings total for time inside session.run()
INFERENCE_BUSY = "onnxruntime_busy"  # wall time with at least one session.run() in progress
SESSIONS = "sessions"  # the RenderTimings total for session creation
INFERENCE_CPU = "onnxruntime_cpu"  # CPU ms of the calling threads inside session.run()
ORT_THREAD_PREFIX = "ffort-"  # kernel name of the threads ONNX Runtime starts (see above)
DECODER_THREAD_PREFIX = "ffdec-"  # ... of the threads a video decoder starts
ENCODER_THREAD_PREFIX = "ffenc-"  # ... of the threads a video encoder starts
ONNX_RUNTIME = "onnxruntime"  # ThreadCpu's group of those threads
DECODER = "decoder"
ENCODER = "encoder"
NATIVE = "native"  # ThreadCpu's group of other threads Python did not start
COMM_CHARS = 15  # a thread's kernel name holds at most 15 characters
_FFMPEG_DECODER_THREAD = re.compile(r"^av:.*:df\d+$")  # FFmpeg's frame-threaded decoders
_PROC_TASKS = "/proc/self/task"
_WORKER_SUFFIX = re.compile(r"_\d+$")  # concurrent.futures names its workers NAME_0, NAME_1


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
    summed costs in ms (INFERENCE, INFERENCE_CPU, SESSIONS, "track", ...); marks: seconds
    after the start at which something first happened ("first_output"). threads_cpu_ms: CPU
    ms per thread group (ThreadCpu) over the threads sampled; run_cpu_ms: per thread group,
    the part of it spent inside session.run() on that thread (empty where not measured)."""

    stages: Mapping[str, Mapping[str, StageStats]]
    totals_ms: Mapping[str, float]
    marks_s: Mapping[str, float]
    threads_cpu_ms: Mapping[str, float] = field(default_factory=lambda: MappingProxyType({}))
    run_cpu_ms: Mapping[str, float] = field(default_factory=lambda: MappingProxyType({}))


def thread_group(name: str) -> str:
    """The group a Python thread's CPU is counted in: its name without a worker's "_N"."""
    return _WORKER_SUFFIX.sub("", name)


def native_group(comm: str) -> str:
    """The group of a thread Python did not start, by its kernel name (see the module
    docstring)."""
    if comm.startswith(ORT_THREAD_PREFIX):
        return ONNX_RUNTIME
    if comm.startswith(DECODER_THREAD_PREFIX) or _FFMPEG_DECODER_THREAD.match(comm):
        return DECODER
    if comm.startswith(ENCODER_THREAD_PREFIX):
        return ENCODER
    return NATIVE


@contextmanager
def threads_named(name: str) -> Iterator[None]:
    """While the block runs, the calling thread's kernel name (comm) is `name` (cut to
    COMM_CHARS), so the threads started in it inherit that name; Linux only (elsewhere, or
    where the name cannot be set, nothing changes)."""
    path = f"{_PROC_TASKS}/{threading.get_native_id()}/comm"
    try:
        with open(path, encoding="utf-8") as comm:
            before: str | None = comm.read().rstrip("\n")
        _write_comm(path, name)
    except OSError:
        before = None
    try:
        yield
    finally:
        if before is not None:
            try:
                _write_comm(path, before)
            except OSError:
                pass


def _write_comm(path: str, name: str) -> None:
    fd = os.open(path, os.O_WRONLY)
    try:
        os.write(fd, name.encode("utf-8", "replace")[:COMM_CHARS])
    finally:
        os.close(fd)


class ThreadCpu:
    """CPU seconds per thread group, sampled from /proc/self/task (see the module docstring);
    `available` is False where the platform has no /proc (then nothing is counted)."""

    def __init__(self) -> None:
        self.available = os.path.isdir(_PROC_TASKS)
        self._tick_s = 1.0 / os.sysconf("SC_CLK_TCK") if self.available else 0.0
        self._lock = threading.Lock()
        self._seen: dict[tuple[int, int], tuple[str, float]] = {}  # (tid, start) -> group, s
        self._base: dict[tuple[int, int], float] | None = None  # the first sample's seconds

    def sample(self) -> None:
        """Read every live thread's CPU so far (a thread that ended keeps its last reading)."""
        if not self.available:
            return
        names = {t.native_id: thread_group(t.name) for t in threading.enumerate()}
        try:
            tids = os.listdir(_PROC_TASKS)
        except OSError:
            return
        readings = [r for r in (_read_task(tid, self._tick_s) for tid in tids) if r is not None]
        with self._lock:
            for tid, comm, start, seconds in readings:
                group = names[tid] if tid in names else native_group(comm)
                known = self._seen.get((tid, start))
                self._seen[(tid, start)] = (known[0] if known else group, seconds)
            if self._base is None:
                self._base = {key: seconds for key, (_, seconds) in self._seen.items()}

    def by_group(self) -> dict[str, float]:
        """CPU seconds per group over every thread sampled."""
        total: dict[str, float] = {}
        with self._lock:
            base = self._base or {}
            for key, (group, seconds) in self._seen.items():
                total[group] = total.get(group, 0.0) + seconds - base.get(key, 0.0)
        return total


def _read_task(tid: str, tick_s: float) -> tuple[int, str, int, float] | None:
    """(tid, comm, start time in ticks, user + system CPU seconds) of one thread, or None when
    it ended before it could be read."""
    try:
        with open(f"{_PROC_TASKS}/{tid}/stat", "rb") as stat:
            text = stat.read().decode("utf-8", "replace")
    except OSError:
        return None
    # "tid (comm) state ..."; comm may hold spaces and parentheses: split at the last ")"
    head, _, rest = text.rpartition(")")
    fields = rest.split()
    comm = head.partition("(")[2]
    # after comm: utime, stime are fields 14 and 15 of stat(5), starttime 22
    return int(tid), comm, int(fields[19]), (int(fields[11]) + int(fields[12])) * tick_s


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
        self._run_cpu_s: dict[str, float] = {}  # thread group -> CPU s inside its runs
        self.threads = ThreadCpu()

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

    def inference(self, start: float, end: float, cpu_s: float = 0.0) -> None:
        """One session.run(), from `start` to `end` (time.perf_counter() seconds), in which
        the calling thread used `cpu_s` CPU seconds (time.thread_time())."""
        group = thread_group(threading.current_thread().name)
        with self._lock:
            self._totals_ms[INFERENCE] = (self._totals_ms.get(INFERENCE, 0.0)
                                          + (end - start) * 1000.0)
            self._totals_ms[INFERENCE_CPU] = (self._totals_ms.get(INFERENCE_CPU, 0.0)
                                              + cpu_s * 1000.0)
            self._run_cpu_s[group] = self._run_cpu_s.get(group, 0.0) + cpu_s
            self._runs.extend((start, end))

    def sample_threads(self) -> None:
        """Read every live thread's CPU (ThreadCpu.sample): called by whoever measures, and
        before sessions are freed (their ONNX Runtime threads end with them)."""
        self.threads.sample()

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
            run_cpu = {k: round(v * 1000.0, 3) for k, v in self._run_cpu_s.items()}
        totals[INFERENCE_BUSY] = round(covered_seconds(runs) * 1000.0, 3)
        threads = {k: round(v * 1000.0, 3) for k, v in self.threads.by_group().items()}
        return TimingReport(MappingProxyType(stages), MappingProxyType(totals),
                            MappingProxyType(marks), MappingProxyType(threads),
                            MappingProxyType(run_cpu))


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
