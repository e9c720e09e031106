"""A shot on Dask distributed: chunks of frames as tasks, one Pipeline per worker process.

The client (`run_job`) splits the range into chunks (farm.chunks), turns each into the
`facefuse render` arguments a user would type (shot.contract.commandline) and submits them. A worker
runs a chunk with `render_chunk`: the arguments are read back with the command line's own
parser and go through the same `render()` the command line calls, with the Pipeline that the
worker's PipelinePlugin built the first time and keeps, so sessions load once per worker
process, not once per chunk. Results are the files; each task returns what it did (ChunkResult).

A worker that dies (kill -9, a lost node) loses its task to the scheduler, which runs it again
elsewhere (up to `distributed.scheduler.allowed-failures` times, 3 by default); the re-run
skips the frames already written. An error a user can fix (a missing model, a bad path) is not
retried: the job stops and the client reports it.

This module imports `distributed` (the farm extra) when it is loaded: the command line loads
it only when `facefuse farm dask` runs.
"""

from __future__ import annotations

import logging
import os
import shlex
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, cast

from distributed import Client, LocalCluster, WorkerPlugin, as_completed, get_worker

from ..config import Settings
from ..errors import FacefuseError, InputError
from ..pipeline import Pipeline
from ..shot.contract.commandline import output_root_of, render_args, request_from_args
from ..shot.contract.frames import within
from ..shot.contract.render_options import OUTPUT_ROOT
from ..shot.contract.request import FrameReport, RenderRequest
from ..shot.run.render import render
from .chunks import chunk_ranges, shot_frames
from .paths import check_inside

log = logging.getLogger(__name__)

PLUGIN_NAME = "facefuse-pipelines"
CONNECT_TIMEOUT_S = 10  # a scheduler that does not answer within this is unreachable


@dataclass(frozen=True, slots=True)
class ChunkResult:
    """What one task did: its frames, how they ended, and the worker that ran it.

    first_frame_s: from the task's start to its first settled frame (None: none rendered).
    pipelines / sessions: how many Pipelines and ONNX Runtime sessions that worker process had
    created so far (1 and one per model when it keeps them)."""

    chunk: tuple[int, int]
    frames: int
    swapped: int
    no_face: int
    skipped: int
    failed: tuple[tuple[int, str], ...]
    seconds: float
    first_frame_s: float | None
    worker: str
    pid: int
    pipelines: int
    sessions: int


class PipelinePlugin(WorkerPlugin):
    """Keeps one Pipeline in a worker process, built on first use (again only when a chunk
    brings other settings) and closed when the worker shuts down; renders one chunk at a time
    (a Pipeline is not shared between threads: run workers with `--nthreads 1`)."""

    name = PLUGIN_NAME

    def __init__(self) -> None:
        self._pipeline: Pipeline | None = None
        self._lock = threading.Lock()
        self.created = 0
        self.address = ""

    def __reduce__(self) -> tuple[type[PipelinePlugin], tuple[()]]:
        return PipelinePlugin, ()  # each worker starts with its own, empty

    def setup(self, worker: Any) -> None:
        """Called by the worker when the plugin is registered."""
        self.address = worker.address

    def teardown(self, worker: Any) -> None:
        """Called by the worker when it closes: the sessions are freed."""
        if self._pipeline is not None:
            self._pipeline.close()
            self._pipeline = None

    def sessions(self) -> int:
        """ONNX Runtime sessions the kept Pipeline holds."""
        return len(self._pipeline.models.sessions) if self._pipeline is not None else 0

    def pipeline(self, settings: Settings) -> Pipeline:
        """The kept Pipeline, built (and an older one closed) when `settings` differ."""
        if self._pipeline is None or self._pipeline.settings != settings:
            self.teardown(None)
            self._pipeline = Pipeline(settings)
            self.created += 1
            log.info("worker %s: pipeline %d built", os.getpid(), self.created)
        return self._pipeline

    def run(self, args: Sequence[str]) -> ChunkResult:
        """Render the chunk `facefuse render ARGS` describes with this worker's Pipeline."""
        request = request_from_args(args)
        root = output_root_of(args)
        if root is not None:
            check_inside(root, (request.output.path, request.output.matte, request.output.patch))
        with self._lock:
            started = time.perf_counter()
            first: list[float] = []

            def settled(report: FrameReport) -> None:
                if not first and report.status != "skipped":
                    first.append(time.perf_counter() - started)

            summary = render(request, on_progress=settled,
                             pipeline=self.pipeline(request.settings))
            sessions = self.sessions()
        chunk = request.frames.chunk_frames or request.frames.range or (0, 0)
        return ChunkResult(chunk, summary.frames, summary.swapped, summary.no_face,
                           summary.skipped, summary.failed, summary.seconds,
                           first[0] if first else None, self.address, os.getpid(),
                           self.created, sessions)


def render_chunk(args: Sequence[str]) -> ChunkResult:
    """The task: `facefuse render ARGS` on this worker, with its kept Pipeline."""
    plugin = cast(PipelinePlugin, get_worker().plugins[PLUGIN_NAME])
    return plugin.run(args)


def chunk_args(request: RenderRequest, chunk_size: int, output_root: Path) -> list[list[str]]:
    """The `facefuse render` arguments of every chunk of the request's range."""
    frames = shot_frames(request)
    whole = replace(request.frames, range=(frames[0], frames[-1]), chunk=None, chunk_frames=None)
    return [[*render_args(replace(request, frames=replace(whole, chunk_frames=c))),
             OUTPUT_ROOT, str(output_root)]
            for c in chunk_ranges(within(frames, request.frames.only), chunk_size)]


@contextmanager
def connect(scheduler: str | None, local: int | None, worker_tracebacks: bool = False,
            timeout_s: float | None = None) -> Iterator[Client]:
    """A client of the scheduler at `scheduler`, or of a local cluster of `local` worker
    processes (one thread each) that ends with the block. worker_tracebacks: let the local
    workers log a failed task's traceback (--debug); otherwise run_job's one sentence says it.
    timeout_s: how long `scheduler` has to answer (None: CONNECT_TIMEOUT_S).
    InputError when `scheduler` cannot be reached or is not a Dask scheduler."""
    if scheduler is not None:
        try:
            client = Client(scheduler, timeout=timeout_s or CONNECT_TIMEOUT_S)
        except (OSError, ValueError, MemoryError) as exc:
            # refused or timed out; not an address; something else answering there, whose
            # first bytes a Dask client reads as a frame length (a 3 EiB allocation)
            raise InputError(_unreachable(scheduler, exc)) from exc
        with client:
            yield client
        return
    quiet = logging.WARNING if worker_tracebacks else logging.CRITICAL
    with LocalCluster(n_workers=local or 1, threads_per_worker=1, processes=True,
                      dashboard_address=None, silence_logs=quiet) as cluster, \
            Client(cluster) as client:
        yield client


def _unreachable(scheduler: str, exc: BaseException) -> str:
    why = ("something else answers there" if isinstance(exc, MemoryError)
           else str(exc).rstrip("."))
    return (f"cannot reach a Dask scheduler at {scheduler} ({why}); start one with "
            "`dask scheduler` or use --local N")


def run_job(client: Client, chunks: Sequence[Sequence[str]],
            on_result: Callable[[ChunkResult, int], None]) -> list[ChunkResult]:
    """Submit every chunk, call on_result(result, done) as each completes; the results in
    completion order. A task's FacefuseError cancels the rest and is raised."""
    client.register_plugin(PipelinePlugin(), name=PLUGIN_NAME)
    job = uuid.uuid4().hex[:8]
    futures = [client.submit(render_chunk, list(args), key=f"facefuse-{job}-chunk-{i}",
                             pure=False) for i, args in enumerate(chunks, 1)]
    results: list[ChunkResult] = []
    try:
        for future in as_completed(futures):
            if future.status == "error":
                raise _task_error(future.exception(), chunks[futures.index(future)])
            results.append(future.result())
            on_result(results[-1], len(results))
    finally:
        client.cancel([f for f in futures if not f.done()])
    return results


def _task_error(exc: BaseException | None, args: Sequence[str]) -> BaseException:
    """A user's error as it is; anything else (a worker lost too often: KilledWorker) as a
    FacefuseError naming the chunk's command, so it can be run by hand."""
    if isinstance(exc, FacefuseError):
        return exc
    command = shlex.join(["facefuse", "render", *args])
    return FacefuseError(f"a task failed ({type(exc).__name__}: {exc}); run its command by "
                         f"hand to see why: {command}")
