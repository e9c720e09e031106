"""Replicas of one model's session (runtime.sessions.SessionReplicas) and the thread budget
they share (runtime.threads): runs from many threads at once give, output for output, the bits
one session gives; replicas never exceed the budget's threads; pass 2's swap workers get a
session each of a batch-1 model and share one of a free-batch model."""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest

from facefuse.runtime import sessions
from facefuse.runtime.threads import (
    ThreadGate,
    detector_sessions,
    replica_threads,
    swap_workers,
)
from tests import contract_models
from tests.conftest import YUNET_FILE

CPU = ("CPUExecutionProvider",)
FRAMES = 6


def _inputs(session, count: int) -> list[dict[str, np.ndarray]]:
    """`count` different feeds for the session's one input (640 x 640 where it is free)."""
    node = session.get_inputs()[0]
    shape = [d if isinstance(d, int) else 640 for d in node.shape]
    shape[0] = 1
    rng = np.random.default_rng(7)
    return [{node.name: (rng.random(shape, np.float32) * 255).astype(np.float32)}
            for _ in range(count)]


def _outputs_one_by_one(path: Path, threads: int, feeds) -> list[list[np.ndarray]]:
    session = sessions.SessionPool(CPU, threads=threads).get(path)
    return [[np.array(v) for v in session.run(None, feed)] for feed in feeds]


def _models(testdata: Path, tmp_path: Path) -> list[Path]:
    return [testdata / "models" / YUNET_FILE, testdata / "models" / "det_500m.onnx",
            contract_models.contract_recogniser(tmp_path / "recogniser.onnx", dim=512)]


@pytest.mark.parametrize("threads, replicas", [(0, 3), (2, 2), (4, 2)])
def test_replicas_run_side_by_side_and_give_one_sessions_bits(testdata: Path, tmp_path: Path,
                                                              threads: int,
                                                              replicas: int) -> None:
    for path in _models(testdata, tmp_path):
        pool = sessions.SessionPool(CPU, threads=threads)
        session = pool.get(path, replicas=replicas)
        assert isinstance(session, sessions.SessionReplicas) and len(session) == replicas
        assert pool.get(path, replicas=replicas) is session  # created once
        feeds = _inputs(session, FRAMES)
        expected = _outputs_one_by_one(path, threads, feeds)
        with ThreadPoolExecutor(replicas + 1) as workers:  # one thread more than replicas
            got = list(workers.map(lambda f, s=session: [np.array(v) for v in s.run(None, f)],
                                   feeds * 2))
        for index, outputs in enumerate(got):
            for value, want in zip(outputs, expected[index % FRAMES], strict=True):
                np.testing.assert_array_equal(value, want)  # bit for bit, in feed order


def test_a_budget_caps_the_replicas_and_splits_its_threads(tmp_path: Path) -> None:
    path = contract_models.contract_recogniser(tmp_path / "r.onnx", dim=512)
    assert not isinstance(sessions.SessionPool(CPU, threads=1).get(path, replicas=4),
                          sessions.SessionReplicas)  # one thread: one session
    assert len(sessions.SessionPool(CPU, threads=3).get(path, replicas=4)) == 3
    assert replica_threads(8, 2) == 4 and replica_threads(3, 2) == 1
    assert replica_threads(0, 4, cores=16) == 4 and replica_threads(1, 4) == 1
    assert detector_sessions(0, CPU) == 1  # the CPU's default
    assert detector_sessions(4, CPU) == 4 and detector_sessions(4, CPU, threads=2) == 2
    assert detector_sessions(0, ("CUDAExecutionProvider", *CPU)) >= 1


def test_the_thread_gate_holds_at_most_its_threads_first_come_first_served() -> None:
    gate = ThreadGate(4)
    busy, peak, order = [0], [0], []
    lock = threading.Lock()

    def run(name: str, threads: int) -> None:
        with gate.hold(threads):
            with lock:
                busy[0] += min(threads, 4)
                peak[0] = max(peak[0], busy[0])
                order.append(name)
            time.sleep(0.05)
            with lock:
                busy[0] -= min(threads, 4)

    workers = [threading.Thread(target=run, args=(f"small{i}", 2)) for i in range(6)]
    workers.insert(2, threading.Thread(target=run, args=("whole", 8)))  # clamped to 4
    for count, worker in enumerate(workers, 1):
        worker.start()
        while len(order) + len(gate._queue) < count:  # in this order at the gate
            time.sleep(0.001)
    for worker in workers:
        worker.join()
    assert peak[0] <= 4
    assert order.index("whole") == 2  # not overtaken by the smaller runs queued after it
    with pytest.raises(ValueError):
        ThreadGate(0)


def test_swap_workers_default_per_provider_and_keep_to_a_budget() -> None:
    assert swap_workers(0, CPU) == 1  # the CPU's default: today's one inference thread
    assert swap_workers(0, ("CUDAExecutionProvider", *CPU)) == 4
    assert swap_workers(0, ("TensorrtExecutionProvider", "CUDAExecutionProvider", *CPU)) == 4
    assert swap_workers(0, ("CoreMLExecutionProvider", *CPU)) == 1
    assert swap_workers(3, CPU) == 3 and swap_workers(4, CPU, threads=2) == 2
    assert swap_workers(0, ("CUDAExecutionProvider", *CPU), threads=1) == 1


def test_fixed_batch_models_get_a_replica_per_worker_and_free_batch_ones_share_one(
        tmp_path: Path) -> None:
    fixed = contract_models.identity_swapper(tmp_path / "fixed.onnx", batch=1)
    free = contract_models.identity_swapper(tmp_path / "free.onnx", batch="n")
    restorer = contract_models.identity_restorer(tmp_path / "restorer.onnx")
    codeformer = contract_models.codeformer_contract(tmp_path / "codeformer.onnx")
    pool = sessions.SessionPool(CPU, threads=4)
    for path in (fixed, restorer, codeformer):
        session = pool.get(path, replicas=3, fixed_batch_only=True)
        assert isinstance(session, sessions.SessionReplicas) and len(session) == 3
        assert not sessions.batch_is_free(session)
    shared = pool.get(free, replicas=3, fixed_batch_only=True)
    assert not isinstance(shared, sessions.SessionReplicas) and sessions.batch_is_free(shared)
    assert pool.get(free, replicas=3, fixed_batch_only=True) is shared  # created once
    assert isinstance(pool.get(free, replicas=3), sessions.SessionReplicas)  # the detector's way
