"""Engine work off a host's UI thread: jobs, their progress queue, and the runner that holds them.

A Job's `work(report, cancelled)` runs on a worker thread and never touches the host: `report(x)`
queues progress, `cancelled()` says whether Cancel was pressed. The host's main thread calls
`JobRunner.deliver(job)` from its own timer or event loop: it hands queued progress to the
job's `on_progress` and the outcome to its `on_done` (which may change host data, since it runs
on the main thread) and keeps the last message for the UI. How the worker starts and when
deliver runs is the host's choice (Blender: a thread and a bpy.app.timers drain).

One job of each kind may run at a time. Jobs that only look (previews, face checks) share one
Pipeline kept by the runner, so a second preview with the same settings loads no model again.
The runner is given the function that makes that Pipeline, so a host can load the engine's
heavy libraries (ONNX Runtime, OpenCV) with its first job rather than when it starts.
"""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..config import Settings
from ..errors import FacefuseError

if TYPE_CHECKING:
    from ..pipeline import Pipeline

log = logging.getLogger(__name__)

JOIN_TIMEOUT_S = 10.0

Report = Callable[[Any], None]
Work = Callable[[Report, Callable[[], bool]], Any]
PipelineFactory = Callable[[Settings], "Pipeline"]


class HostError(Exception):
    """A host's own objects or settings stop a job; the message tells the user why."""


@dataclass(frozen=True, slots=True)
class Message:
    level: str  # 'INFO', 'WARNING' or 'ERROR'
    text: str


@dataclass(eq=False)
class Job:
    """One piece of engine work. on_progress(job, item) and on_done(job, result) -> Message run
    on the host's main thread; `done`/`total`/`status` are what a UI shows."""

    kind: str
    label: str
    work: Work
    on_done: Callable[[Job, Any], Message]
    on_progress: Callable[[Job, Any], None] | None = None
    total: int = 0
    done: int = 0
    status: str = ""
    cancel_event: threading.Event = field(default_factory=threading.Event)
    events: queue.SimpleQueue[tuple[str, Any]] = field(default_factory=queue.SimpleQueue)
    thread: threading.Thread | None = None
    detached: bool = False

    @property
    def fraction(self) -> float:
        return min(1.0, self.done / self.total) if self.total else 0.0

    def run(self) -> None:
        """The worker's body: the outcome goes on the queue, never raised."""
        try:
            result = self.work(lambda item: self.events.put(("progress", item)),
                               self.cancel_event.is_set)
        except (FacefuseError, HostError) as exc:
            self.events.put(("error", str(exc)))
        except Exception as exc:
            log.exception("facefuse: %s failed", self.label)
            self.events.put(("error", (f"{self.label} failed unexpectedly: {exc!r} "
                                       "(details in the system console)")))
        else:
            self.events.put(("done", result))

    def detach(self) -> None:
        """Stop the job and drop its outcome (the host objects it would write to are gone)."""
        self.detached = True
        self.cancel_event.set()


class JobRunner:
    """The running jobs, the last message, and the Pipeline look jobs share.

    make_pipeline: builds a Pipeline from Settings (facefuse.pipeline.Pipeline itself will do).
    """

    def __init__(self, make_pipeline: PipelineFactory) -> None:
        self.jobs: list[Job] = []
        self.message: Message | None = None
        self._make_pipeline = make_pipeline
        self._pipeline: Pipeline | None = None
        self._pipeline_lock = threading.Lock()

    def running(self, kind: str) -> Job | None:
        return next((job for job in self.jobs if job.kind == kind), None)

    def add(self, job: Job) -> None:
        """Take `job` on; HostError when a job of its kind is already running."""
        busy = self.running(job.kind)
        if busy is not None:
            raise HostError(f"{busy.label} is still running: wait for it or press Cancel")
        self.jobs.append(job)

    def cancel(self, kind: str | None = None) -> int:
        """Ask running jobs (of `kind`, or all) to stop; the number asked."""
        jobs = [job for job in self.jobs if kind is None or job.kind == kind]
        for job in jobs:
            job.cancel_event.set()
            job.status = "cancelling"
        return len(jobs)

    def deliver(self, job: Job) -> Message | None:
        """Hand the job's queued progress on and, once it has ended, its outcome; main thread
        only. Returns the outcome's message when the job ended (it is then no longer held)."""
        while True:
            try:
                kind, item = job.events.get_nowait()
            except queue.Empty:
                return None
            if kind == "progress":
                self._progress(job, item)
                continue
            self.jobs.remove(job)
            message = _outcome(job, kind, item)
            self.message = message
            log.info("facefuse: %s", message.text)
            return message

    @property
    def shared_pipeline(self) -> Pipeline | None:
        """The Pipeline look jobs share now, if one has been made."""
        return self._pipeline

    def pipeline(self, settings: Settings) -> Pipeline:
        """A Pipeline for `settings` (reused while they stay the same). Worker threads only."""
        with self._pipeline_lock:
            if self._pipeline is not None and self._pipeline.settings != settings:
                self._pipeline.close()
                self._pipeline = None
            if self._pipeline is None:
                self._pipeline = self._make_pipeline(settings)
            return self._pipeline

    def close(self) -> None:
        """Detach and stop every job, wait for their threads, free the shared Pipeline."""
        for job in self.jobs:
            job.detach()
        for job in self.jobs:
            if job.thread is not None:
                job.thread.join(JOIN_TIMEOUT_S)
        self.jobs.clear()
        with self._pipeline_lock:
            if self._pipeline is not None:
                self._pipeline.close()
                self._pipeline = None

    @staticmethod
    def _progress(job: Job, item: Any) -> None:
        if job.on_progress is None or job.detached:
            return
        try:
            job.on_progress(job, item)
        except Exception:
            log.exception("facefuse: progress of %s", job.label)


def _outcome(job: Job, kind: str, item: Any) -> Message:
    if kind == "error":
        return Message('ERROR', item)
    if job.detached:
        return Message('WARNING', f"{job.label} stopped: the file was closed")
    try:
        return job.on_done(job, item)
    except (HostError, FacefuseError) as exc:
        return Message('ERROR', str(exc))
    except Exception as exc:
        log.exception("facefuse: finishing %s", job.label)
        return Message('ERROR', f"{job.label} could not finish: {exc!r} "
                                "(details in the system console)")
