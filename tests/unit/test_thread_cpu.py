"""CPU time per thread (timing.ThreadCpu) and ONNX Runtime's share of a process's CPU: the
calling threads' CPU inside run() plus the threads ONNX Runtime starts, which are named so
while a session is created (timing.threads_named). Linux only."""

from __future__ import annotations

import os
import sys
import threading
from pathlib import Path

import numpy as np
import pytest

from facefuse.runtime import sessions
from facefuse.timing import (
    DECODER,
    ENCODER,
    INFERENCE_CPU,
    NATIVE,
    ONNX_RUNTIME,
    ORT_THREAD_PREFIX,
    RenderTimings,
    ThreadCpu,
    native_group,
    thread_group,
)
from tests.contract_models import matmul_chain

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")


def _comm(tid: int) -> str:
    with open(f"/proc/self/task/{tid}/comm", encoding="utf-8") as comm:
        return comm.read().strip()


def test_onnxruntime_cpu_is_nearly_all_of_a_process_that_only_runs_a_model(
        tmp_path: Path) -> None:
    before = _comm(threading.get_native_id())
    alive = set(os.listdir("/proc/self/task"))
    timings = RenderTimings()
    pool = sessions.SessionPool(["CPUExecutionProvider"], timer=timings, threads=2)
    session = pool.get(matmul_chain(tmp_path / "heavy.onnx", scale=0.5))
    assert _comm(threading.get_native_id()) == before  # the creating thread's name is back
    named = [t for t in set(os.listdir("/proc/self/task")) - alive
             if _comm(int(t)).startswith(ORT_THREAD_PREFIX)]
    assert len(named) == 1  # two intra-op threads: the caller and one of ONNX Runtime's
    x = np.random.default_rng(0).random((256, 256), np.float32)
    timings.sample_threads()
    start = os.times()
    # about half a second of work: the few ticks a session's start and end cost beside it
    # (whole 10 ms ticks, counted per thread) stay well under the share asserted
    for _ in range(200):
        session.run(None, {"x": x})
    pool.close()  # samples the threads before the session (and its pool thread) ends
    used_ms = (os.times().user + os.times().system - start.user - start.system) * 1000.0
    report = timings.report()
    ort_ms = report.totals_ms[INFERENCE_CPU] + report.threads_cpu_ms[ONNX_RUNTIME]
    assert report.threads_cpu_ms[ONNX_RUNTIME] > 0  # its own thread did part of the work
    here = thread_group(threading.current_thread().name)
    assert report.run_cpu_ms[here] == pytest.approx(report.totals_ms[INFERENCE_CPU])
    tick_ms = 1000.0 / os.sysconf("SC_CLK_TCK")  # /proc counts whole ticks per thread
    assert 0.85 * used_ms <= ort_ms <= used_ms + 3 * tick_ms
    assert used_ms - ort_ms < 0.15 * used_ms  # the host's share: the loop around run()


def test_thread_cpu_groups_python_threads_by_name_and_counts_from_the_first_sample() -> None:
    cpu = ThreadCpu()
    cpu.sample()
    done = threading.Event()

    def spin() -> None:
        while not done.is_set():
            sum(range(10_000))

    workers = [threading.Thread(target=spin, name=f"facefuse-spin_{i}") for i in range(2)]
    for worker in workers:
        worker.start()
    while cpu.by_group().get("facefuse-spin", 0.0) < 0.05:
        cpu.sample()
    done.set()
    for worker in workers:
        worker.join()
    groups = cpu.by_group()
    assert groups["facefuse-spin"] >= 0.05  # both workers, "_N" dropped, kept after they end
    assert groups.get(NATIVE, 0.0) >= 0.0
    here = thread_group(threading.current_thread().name)
    assert groups.get(here, 0.0) < 5.0  # not the CPU it used before the first sample


def test_threads_python_did_not_start_are_grouped_by_their_kernel_name() -> None:
    assert native_group("ffort-yunet") == ONNX_RUNTIME
    assert native_group("ffdec-prores") == native_group("av:h264:df3") == DECODER
    assert native_group("ffenc-libx264") == ENCODER
    assert native_group("python") == native_group("av:h264:sw0") == NATIVE


def test_a_video_decoder_and_encoder_count_their_threads_as_theirs(testdata: Path,
                                                                  tmp_path: Path) -> None:
    """The threads FFmpeg's h264 decoder and libx264 start are DECODER and ENCODER, and the
    Python threads that opened them keep their own names."""
    from facefuse.io.video import VideoSink, VideoSource

    cpu = ThreadCpu()
    cpu.sample()
    alive = set(os.listdir("/proc/self/task"))
    before = _comm(threading.get_native_id())
    with VideoSource(testdata / "media" / "asl_yes.mp4", decode_threads=2) as clip, \
            VideoSink(tmp_path / "o.mp4", clip.info, threads=2, preset="veryfast") as sink:
        for _, frame in clip.read(range(1, 41)):
            sink.write(frame)
            cpu.sample()
        assert _comm(threading.get_native_id()) == before
        started = {_comm(int(t)) for t in set(os.listdir("/proc/self/task")) - alive}
        cpu.sample()
    assert {native_group(name) for name in started} >= {DECODER, ENCODER}
    groups = cpu.by_group()
    assert groups[DECODER] > 0 and groups[ENCODER] > 0
    assert groups[thread_group(threading.current_thread().name)] > 0
