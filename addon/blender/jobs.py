"""Engine work off Blender's UI thread: a worker thread per job, one timer that drains them.

A Job's `work(report, cancelled)` runs on a worker thread and never touches bpy: `report(x)`
queues progress, `cancelled()` says whether Cancel was pressed. `drain()`, the bpy.app.timers
callback, runs on the main thread: it hands queued progress to the job's `on_progress` and the
outcome to its `on_done`, which may write bpy data (bpy is not thread safe), and keeps the last
message for the panel. With bpy as a module or `blender -b` (bpy.app.background: timers never
fire, nobody waits on a UI) `submit` runs the work on the calling thread and drains it at once,
so the operator has its result before it returns.

One render job and one look job (previews, face checks) may run at a time. Look jobs share a
Pipeline kept here, so a second preview with the same settings does not load models again.
The state lives in one Runner made by register() and dropped by unregister().
"""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import bpy

from facefuse.errors import FacefuseError

from .convert import StripError

log = logging.getLogger(__name__)

RENDER, LOOK = "render", "look"
DRAIN_INTERVAL_S = 0.1
JOIN_TIMEOUT_S = 10.0
REDRAW_AREAS = frozenset({'SEQUENCE_EDITOR', 'IMAGE_EDITOR', 'STATUSBAR'})

Report = Callable[[Any], None]
Work = Callable[[Report, Callable[[], bool]], Any]


@dataclass(frozen=True, slots=True)
class Message:
    level: str  # 'INFO', 'WARNING' or 'ERROR' (as Operator.report takes them)
    text: str


@dataclass(eq=False)
class Job:
    """One piece of engine work. on_progress(job, item) and on_done(job, result) -> Message run
    on the main thread; `done`/`total`/`status` are what the panel and status bar show."""

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
        except (FacefuseError, StripError) as exc:
            self.events.put(("error", str(exc)))
        except Exception as exc:
            log.exception("facefuse: %s failed", self.label)
            self.events.put(("error", (f"{self.label} failed unexpectedly: {exc!r} "
                                       "(details in the system console)")))
        else:
            self.events.put(("done", result))


class Runner:
    """The running jobs, the last message, and the Pipeline look jobs share."""

    def __init__(self) -> None:
        self.jobs: list[Job] = []
        self.message: Message | None = None
        self._pipeline: Any = None
        self._pipeline_lock = threading.Lock()

    def running(self, kind: str) -> Job | None:
        return next((job for job in self.jobs if job.kind == kind), None)

    def pipeline(self, settings: Any) -> Any:
        """A Pipeline for `settings` (reused while they stay the same). Worker threads only."""
        from facefuse.pipeline import Pipeline

        with self._pipeline_lock:
            if self._pipeline is not None and self._pipeline.settings != settings:
                self._pipeline.close()
                self._pipeline = None
            if self._pipeline is None:
                self._pipeline = Pipeline(settings)
            return self._pipeline

    def close(self) -> None:
        for job in self.jobs:
            job.detached = True
            job.cancel_event.set()
        for job in self.jobs:
            if job.thread is not None:
                job.thread.join(JOIN_TIMEOUT_S)
        self.jobs.clear()
        with self._pipeline_lock:
            if self._pipeline is not None:
                self._pipeline.close()
                self._pipeline = None


_runner: Runner | None = None  # the add-on's one Runner, between register() and unregister()


def current() -> Runner | None:
    """The Runner, or None while the add-on is not registered."""
    return _runner


def runner() -> Runner:
    if _runner is None:
        raise RuntimeError("the facefuse add-on is not registered")
    return _runner


def runs_blocking() -> bool:
    """True where no timer fires and no UI waits: bpy as a module, `blender -b`."""
    return bool(bpy.app.background)


def submit(job: Job) -> Message | None:
    """Run `job`: now, returning its outcome (blocking mode), or on a worker (returns None).

    StripError when a job of the same kind is already running.
    """
    state = runner()
    busy = state.running(job.kind)
    if busy is not None:
        raise StripError(f"{busy.label} is still running: wait for it or press Cancel")
    state.jobs.append(job)
    if runs_blocking():
        job.run()
        return _drain_job(state, job)
    job.thread = threading.Thread(target=job.run, name=f"facefuse {job.label}", daemon=True)
    job.thread.start()
    if not bpy.app.timers.is_registered(drain):
        # persistent: keeps draining across file loads, so detached jobs are collected
        bpy.app.timers.register(drain, first_interval=DRAIN_INTERVAL_S, persistent=True)
    return None


def cancel(kind: str | None = None) -> int:
    """Ask running jobs (of `kind`, or all) to stop; the number asked."""
    jobs = [job for job in runner().jobs if kind is None or job.kind == kind]
    for job in jobs:
        job.cancel_event.set()
        job.status = "cancelling"
    return len(jobs)


def drain() -> float | None:
    """The timer callback: deliver progress and outcomes; None (stop the timer) when idle."""
    state = _runner
    if state is None:
        return None
    for job in list(state.jobs):
        _drain_job(state, job)
    _redraw()
    return DRAIN_INTERVAL_S if state.jobs else None


def _drain_job(state: Runner, job: Job) -> Message | None:
    while True:
        try:
            kind, item = job.events.get_nowait()
        except queue.Empty:
            return None
        if kind == "progress":
            if job.on_progress is not None and not job.detached:
                try:
                    job.on_progress(job, item)
                except Exception:
                    log.exception("facefuse: progress of %s", job.label)
            continue
        state.jobs.remove(job)
        message = _finish(job, kind, item)
        state.message = message
        log.info("facefuse: %s", message.text)
        return message


def _finish(job: Job, kind: str, item: Any) -> Message:
    if kind == "error":
        return Message('ERROR', item)
    if job.detached:
        return Message('WARNING', f"{job.label} stopped: the file was closed")
    try:
        return job.on_done(job, item)
    except (StripError, FacefuseError) as exc:
        return Message('ERROR', str(exc))
    except Exception as exc:
        log.exception("facefuse: finishing %s", job.label)
        return Message('ERROR', f"{job.label} could not finish: {exc!r} "
                                "(details in the system console)")


def _redraw() -> None:
    wm = getattr(bpy.context, "window_manager", None)
    for window in getattr(wm, "windows", ()):
        for area in window.screen.areas:
            if area.type in REDRAW_AREAS:
                area.tag_redraw()


@bpy.app.handlers.persistent
def _on_load_pre(*_args: Any) -> None:
    """A file is about to be loaded: the strips the jobs write to are going away."""
    if _runner is None:
        return
    for job in _runner.jobs:
        job.detached = True
        job.cancel_event.set()


def register() -> None:
    global _runner
    _runner = Runner()
    bpy.app.handlers.load_pre.append(_on_load_pre)


def unregister() -> None:
    global _runner
    if bpy.app.timers.is_registered(drain):
        bpy.app.timers.unregister(drain)
    if _on_load_pre in bpy.app.handlers.load_pre:
        bpy.app.handlers.load_pre.remove(_on_load_pre)
    if _runner is not None:
        _runner.close()
    _runner = None
