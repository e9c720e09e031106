"""Dask distributed: `facefuse farm dask` against a real scheduler and two real worker
processes on 127.0.0.1 (started and stopped here), one of them killed with SIGKILL mid-task;
two workers given the same chunk at once; a missing model on a local cluster.

Every run must leave exactly the files one `facefuse render` of the range writes, byte for
byte (the `shot` fixture's reference, tests/hosts/farm/conftest.py), and each worker process
must have built one Pipeline and one session per model however many chunks it ran.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from distributed import Client

from facefuse.farm.chunks import chunk_ranges
from facefuse.farm.dask_jobs import PLUGIN_NAME, PipelinePlugin, chunk_args, connect, render_chunk
from facefuse.shot.contract.commandline import request_from_args
from tests.hosts.farm.conftest import SHOT_FRAMES, farm_env
from tests.integration.farm_helpers import (
    Farm,
    assert_identical_to,
    assert_only_outputs,
    frame_files,
)

DASK = Path(sys.executable).with_name("dask")
MODELS_PER_PIPELINE = 3  # detector, recogniser, swapper
CHUNK = 9
RANGES = chunk_ranges(range(1, SHOT_FRAMES + 1), CHUNK)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _start(command: list[str], log: Path) -> subprocess.Popen[bytes]:
    with open(log, "wb") as out:
        return subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, env=farm_env())


@contextmanager
def dask_cluster(folder: Path, workers: int = 2
                 ) -> Iterator[tuple[str, Client, dict[int, subprocess.Popen[bytes]]]]:
    """`dask scheduler` and `workers` x `dask worker --nthreads 1 --no-nanny` processes, a
    client of the scheduler for the test to watch with, and the worker processes by pid;
    every process is killed afterwards."""
    port = free_port()
    address = f"tcp://127.0.0.1:{port}"
    procs = [_start([str(DASK), "scheduler", "--host", "127.0.0.1", "--port", str(port),
                     "--no-dashboard"], folder / "scheduler.log")]
    try:
        procs += [_start([str(DASK), "worker", address, "--nthreads", "1", "--no-nanny",
                          "--no-dashboard", "--name", f"w{i}"], folder / f"worker{i}.log")
                  for i in range(workers)]
        with Client(address, timeout=60) as client:
            client.wait_for_workers(workers, timeout=60)
            yield address, client, {proc.pid: proc for proc in procs[1:]}
    finally:
        for proc in procs:
            proc.kill()
            proc.wait()


def shot_args(shot: Farm, out: Path, cache: Path) -> list[str]:
    return ["-s", str(shot.source), "-i", str(shot.clip), "-o", str(out / "out.####.png"),
            "--detector", str(shot.detector), "--recogniser", str(shot.recogniser),
            "--swapper", str(shot.swapper), "--providers", "cpu", "--models-dir",
            str(shot.models), "--offline", "--cache-dir", str(cache)]


def farm_dask(shot: Farm, folder: Path, *extra: str) -> list[str]:
    return [sys.executable, "-m", "facefuse", "farm", "dask",
            *shot_args(shot, folder / "out", folder / "cache"), "--json", *extra]


def chunk_of_key(key: str) -> tuple[int, int]:
    """The frames of the job's task `facefuse-JOB-chunk-N` (dask_jobs.run_job names them)."""
    return RANGES[int(str(key).rsplit("-", 1)[1]) - 1]


def wait_until_mid_chunk(client: Client, out: Path, proc: subprocess.Popen[bytes],
                         timeout: float = 120) -> tuple[str, tuple[int, int]]:
    """A worker whose chunk in progress has some but not all of its frames written."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert proc.poll() is None, "the job ended before a worker could be killed mid-chunk"
        written = set(frame_files(out)) if out.is_dir() else set()
        for worker, keys in sorted(client.processing().items()):
            for first, last in map(chunk_of_key, keys):
                done = len(written & set(range(first, last + 1)))
                if 0 < done < last - first + 1:
                    return worker, (first, last)
        time.sleep(0.005)
    raise AssertionError(f"no worker was seen in the middle of a chunk within {timeout} s")


def test_two_real_workers_one_killed_mid_task(shot: Farm, tmp_path: Path) -> None:
    """4 chunks of 9 frames on two workers; one worker is killed (SIGKILL) while it renders a
    chunk, some of whose frames are written. The job completes, that chunk is re-run on the
    other worker, no frame is missing or damaged, and every worker built one Pipeline and three
    sessions."""
    out = tmp_path / "out"
    with dask_cluster(tmp_path) as (address, watcher, processes):
        pids = watcher.run(os.getpid)
        with open(tmp_path / "job.out", "wb") as stdout, open(tmp_path / "job.err", "wb") as err:
            proc = subprocess.Popen(farm_dask(shot, tmp_path, "--scheduler", address,
                                              "--chunk-size", str(CHUNK)),
                                    stdout=stdout, stderr=err, env=farm_env())
        try:
            victim, lost = wait_until_mid_chunk(watcher, out, proc)
            os.kill(pids[victim], signal.SIGKILL)
            processes[pids[victim]].wait()  # reaped, as a node's init or nanny would
            killed_at = len(frame_files(out))
            proc.wait(timeout=180)
        finally:
            if proc.poll() is None:
                proc.kill()
    lines = [json.loads(line) for line in (tmp_path / "job.out").read_text().splitlines()]
    assert proc.returncode == 0, (tmp_path / "job.err").read_text()[-3000:]
    chunks = [line["chunk"] for line in lines if "chunk" in line]
    summary = lines[-1]["summary"]
    assert sorted(tuple(c["chunk"]) for c in chunks) == RANGES, "every chunk once"
    for chunk in chunks:
        if tuple(chunk["chunk"]) == lost:
            assert chunk["worker"] != victim, "the killed worker's chunk ran elsewhere"
            assert chunk["skipped"] > 0, "the re-run skips the frames written before the kill"
        assert chunk["pipelines"] == 1 and chunk["sessions"] == MODELS_PER_PIPELINE, chunk
    assert summary["swapped"] + summary["skipped"] == SHOT_FRAMES and summary["failed"] == 0
    files = assert_only_outputs(out, "png", max_temps=0)  # the re-run swept the killed one's
    assert list(files) == list(range(1, SHOT_FRAMES + 1))
    assert_identical_to(files, shot.reference)
    survivors = {w: s for w, s in summary["workers"].items() if w != victim}
    print(f"\nkilled {victim} in chunk {lost} with {killed_at} frames written; chunks per worker: "
          f"{ {w: s['chunks'] for w, s in summary['workers'].items()} }, survivors "
          f"{ {w: (s['pipelines'], s['sessions']) for w, s in survivors.items()} } "
          "(pipelines, sessions)")


def test_two_workers_given_the_same_chunk_at_once(shot: Farm, tmp_path: Path) -> None:
    """The same chunk submitted to both workers of a local cluster at the same moment, with
    an empty cache: both finish, the files equal the reference, the shot is analysed once
    (one cache entry)."""
    out, cache = tmp_path / "out", tmp_path / "cache"
    request = request_from_args(shot_args(shot, out, cache) + ["--frames", f"1-{SHOT_FRAMES}"])
    first = chunk_args(request, 12, out)[0]
    with connect(None, 2) as client:
        client.register_plugin(PipelinePlugin(), name=PLUGIN_NAME)
        workers = sorted(client.scheduler_info()["workers"])
        futures = [client.submit(render_chunk, first, key=f"same-chunk-{i}", workers=[w],
                                 allow_other_workers=False, pure=False)
                   for i, w in enumerate(workers)]
        results = client.gather(futures)
    assert {r.worker for r in results} == set(workers) and len({r.pid for r in results}) == 2
    for result in results:
        assert result.chunk == (1, 12) and not result.failed
        assert result.swapped + result.skipped == 12
    assert len(list((cache / "analysis").glob("*.npz"))) == 1, "one cache entry"
    files = assert_only_outputs(out, "png", max_temps=0)
    assert list(files) == list(range(1, 13))
    assert_identical_to(files, shot.reference)


def test_a_missing_model_fails_the_job_in_seconds(shot: Farm, tmp_path: Path) -> None:
    gone = shot.models / "missing_swapper.onnx"
    command = farm_dask(shot, tmp_path, "--local", "1", "--swapper", str(gone))
    started = time.monotonic()
    run = subprocess.run(command, capture_output=True, text=True, env=farm_env(), timeout=120,
                         check=False)
    elapsed = time.monotonic() - started
    assert run.returncode == 4, run.stderr[-3000:]
    assert "missing_swapper.onnx does not exist" in run.stderr
    assert "Traceback" not in run.stderr, "a worker's traceback is for --debug"
    assert elapsed < 30, f"{elapsed:.1f} s"
    assert not frame_files(tmp_path / "out") if (tmp_path / "out").exists() else True


def test_an_unreachable_scheduler_is_one_sentence(shot: Farm, tmp_path: Path) -> None:
    address = f"tcp://127.0.0.1:{free_port()}"
    run = subprocess.run(farm_dask(shot, tmp_path, "--scheduler", address,
                                   "--connect-timeout", "2"),
                         capture_output=True, text=True, env=farm_env(), timeout=60, check=False)
    assert run.returncode == 2, run.stderr[-2000:]
    assert f"cannot reach a Dask scheduler at {address}" in run.stderr
    assert "Traceback" not in run.stderr


def test_an_address_where_something_else_answers_is_one_sentence(shot: Farm,
                                                                 tmp_path: Path) -> None:
    """A web server where the scheduler should be: its reply read as a Dask frame length asked
    for a 3 EiB array (MemoryError, exit 1) before this was caught."""
    server = socket.create_server(("127.0.0.1", 0))
    address = f"tcp://127.0.0.1:{server.getsockname()[1]}"

    def answer() -> None:
        with server:
            while True:
                try:
                    peer, _ = server.accept()
                except OSError:
                    return
                with peer:
                    peer.recv(64)
                    peer.sendall(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n")

    threading.Thread(target=answer, daemon=True).start()
    try:
        run = subprocess.run(farm_dask(shot, tmp_path, "--scheduler", address),
                             capture_output=True, text=True, env=farm_env(), timeout=60,
                             check=False)
    finally:
        server.close()
    assert run.returncode == 2, run.stderr[-2000:]
    assert (f"cannot reach a Dask scheduler at {address} (something else answers there)"
            in run.stderr)
    assert "Traceback" not in run.stderr and "MemoryError" not in run.stderr
