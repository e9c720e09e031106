"""The one CPU thread budget (`Settings.threads`, `--threads N`) and how it sizes each pool.

A render runs three kinds of thread pools: ONNX Runtime's intra-op workers (inference), the
decoder's (FFmpeg frame/slice threads) and the encoder's (FFmpeg's, or the image-sequence writer
pool). Pass 2 runs them side by side on a frame each, and idle ONNX Runtime workers sleep rather
than spin (runtime.sessions), so each pool may use the whole budget when its turn comes; what the
budget bounds is how many threads any one pool starts. 0 means every core of the machine. A farm
that packs several renders onto one machine gives each its share (`--threads 4` on 16 cores, four
tasks); `--threads 1` keeps every pool single-threaded. With `--selector many` pass 1 runs
beside pass 2 (shot.run.pass_one); under a budget their CPU sessions take turns (ThreadGate: a
run holds its session's threads of the budget, runtime.sessions.SessionPool), so inference
never keeps more than the budget's threads busy, while pass 1's decoder still works beside
pass 2's. The replicas of one model (pass 1's detector sessions, pass 2's swap workers'
sessions, runtime.sessions) share the inference threads between them (replica_threads), so
several of them run at once within it. numpy's BLAS pool is kept to one thread for the length
of a render or a plan (blas_on_one_thread).
"""

from __future__ import annotations

import os
import threading
from collections import deque
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from types import MappingProxyType

DECODE_THREADS_MAX = 4  # more frame threads only add latency and frames in flight
SEQUENCE_WRITERS_MAX = 3  # image-sequence files written at once (EXR compression is the cost)
# Each x264 frame thread holds frames of its own: peak RSS of a 4K medium encode is 1.5 GiB at
# 4 threads, 2.1 at 16, 3.1 at 64 (docs/performance.md), while pass 2 feeds the encoder one frame
# at a time at inference pace, so past this an encoder would mostly buy memory.
ENCODE_THREADS_MAX = 16
# Pass 1's detector sessions by default, per first provider (`--detector-sessions 0`): see
# docs/performance.md for the figures they were chosen from.
DETECTOR_SESSIONS = MappingProxyType({"CPUExecutionProvider": 1})
DETECTOR_SESSIONS_ELSEWHERE = 1
# Pass 2's swap workers by default, per first provider (`--swap-workers 0`): one on the CPU,
# where the inference already takes every core; on a GPU, enough that the host work of a frame
# (region conversion, crop warps, tensors, paste: ~12 ms at 1080p on one thread) keeps the GPU
# fed (bench/gpu.sh stage 2 runs 1, 2 and 4).
SWAP_WORKERS = MappingProxyType({"CPUExecutionProvider": 1, "CUDAExecutionProvider": 4,
                                 "TensorrtExecutionProvider": 4})
SWAP_WORKERS_ELSEWHERE = 1


@dataclass(frozen=True, slots=True)
class ThreadBudget:
    """Threads each pool starts: inference (ONNX Runtime intra-op), decode, encode (FFmpeg's
    thread_count), sequence_writers (image-sequence files written at once)."""

    inference: int
    decode: int
    encode: int
    sequence_writers: int


def machine_cores() -> int:
    """The cores this process may run on (its affinity mask where the OS has one)."""
    if hasattr(os, "sched_getaffinity"):
        return max(1, len(os.sched_getaffinity(0)))
    return max(1, os.cpu_count() or 1)


def thread_budget(threads: int, cores: int | None = None) -> ThreadBudget:
    """The pools' sizes for a budget of `threads`. 0: ONNX Runtime keeps its own default (one
    thread per physical core, usually faster than one per logical core) and the other pools
    use all `cores` (default machine_cores()). Decode, encode and the sequence writers are
    capped (DECODE_THREADS_MAX, ENCODE_THREADS_MAX, SEQUENCE_WRITERS_MAX) whatever the budget."""
    if threads < 0:
        raise ValueError(f"threads must be 0 (all cores) or more, not {threads}")
    total = threads or (cores if cores is not None else machine_cores())
    return ThreadBudget(inference=threads, decode=min(total, DECODE_THREADS_MAX),
                        encode=min(total, ENCODE_THREADS_MAX),
                        sequence_writers=min(total, SEQUENCE_WRITERS_MAX))


def replica_threads(threads: int, replicas: int, cores: int | None = None) -> int:
    """Intra-op threads of each of `replicas` sessions of one model that together keep to a
    budget of `threads` (0: all `cores`, default machine_cores()); at least 1."""
    total = threads or (cores if cores is not None else machine_cores())
    return max(1, total // max(1, replicas))


class ThreadGate:
    """At most `capacity` inference threads busy in the runs that pass through it: a run
    holds as many as its session's intra-op threads (at most `capacity`), and runs are let in
    first come, first served, so a session with the whole budget is not kept waiting by a
    stream of smaller ones (the replicas of a session pool beside pass 2's sessions)."""

    def __init__(self, capacity: int) -> None:
        if capacity < 1:
            raise ValueError(f"a thread gate holds at least 1 thread, not {capacity}")
        self.capacity = capacity
        self._free = capacity
        self._queue: deque[object] = deque()
        self._changed = threading.Condition()

    @contextmanager
    def hold(self, threads: int) -> Iterator[None]:
        """Hold `threads` of the gate (clamped to 1..capacity) while the block runs."""
        weight = min(max(1, threads), self.capacity)
        ticket = object()
        with self._changed:
            self._queue.append(ticket)
            self._changed.wait_for(lambda: self._queue[0] is ticket and self._free >= weight)
            self._queue.popleft()
            self._free -= weight
            self._changed.notify_all()
        try:
            yield
        finally:
            with self._changed:
                self._free += weight
                self._changed.notify_all()


def detector_sessions(setting: int, providers: Sequence[str], threads: int = 0) -> int:
    """Pass 1's detector sessions: `setting` (Settings.detector_sessions), or for 0 the
    default of the first provider (DETECTOR_SESSIONS); never more than a budget of `threads`
    (> 0) has threads to share among them."""
    first = providers[0] if providers else "CPUExecutionProvider"
    count = setting if setting > 0 else DETECTOR_SESSIONS.get(first, DETECTOR_SESSIONS_ELSEWHERE)
    return min(count, threads) if threads > 0 else count


def swap_workers(setting: int, providers: Sequence[str], threads: int = 0) -> int:
    """Pass 2's swap workers (frames processed at once): `setting` (Settings.swap_workers),
    or for 0 the default of the first provider (SWAP_WORKERS); never more than a budget of
    `threads` (> 0) has threads to share among their sessions."""
    first = providers[0] if providers else "CPUExecutionProvider"
    count = setting if setting > 0 else SWAP_WORKERS.get(first, SWAP_WORKERS_ELSEWHERE)
    return min(count, threads) if threads > 0 else count


@contextmanager
def blas_on_one_thread() -> Iterator[None]:
    """numpy's BLAS (OpenBLAS, MKL, ...) on one thread for the length of the block, then as it
    was before (threadpoolctl). The engine's matrix products are small: a 512-wide embedding
    through the swapper's 512 x 512 matrix, the similarities of a frame's faces to the shot's
    people. A BLAS that splits one of them over threads leaves every worker but the caller
    spinning for about 100 ms afterwards: 100 ms of CPU a call on 2 cores (docs/performance.md),
    and a worker more for each core more. The limit is the process's; a block inside another,
    or beside one on another thread, puts back what it found when it ends."""
    # imported here: the sessions import this module, and bench/gpu.sh's models-only stage
    # runs them where only onnxruntime, numpy and onnx are installed
    from threadpoolctl import threadpool_limits

    with threadpool_limits(limits=1, user_api="blas"):
        yield
