"""Engine work off the UI thread: facefuse's Jobs run on QThreads, drained by a timer.

`Jobs.start(job)` takes a facefuse.Job (one of each kind at a time, as JobRunner rules) and
runs `job.run()` on a QThread; a QTimer on the UI thread calls JobRunner.deliver, which hands
progress to the job's on_progress and the outcome to its on_done on the UI thread, and the
outcome's Message is emitted as `finished`. Look jobs (thumbnails, faces, previews) share the
runner's Pipeline. The render job is a Job whose work is facefuse.render(request,
on_progress, cancel): its progress is the render's FrameReports and PhaseProgress.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from PySide6.QtCore import QObject, QThread, QTimer, Signal

from facefuse import Job, JobRunner, Message, Pipeline, RenderRequest, Settings, render

DRAIN_MS = 30
STOP_WAIT_MS = 10000


class _Thread(QThread):
    def __init__(self, job: Job) -> None:
        super().__init__()
        self.job = job

    def run(self) -> None:
        self.job.run()


class Jobs(QObject):
    """The panel's running jobs; `finished(kind, Message)` when one ends."""

    finished = Signal(str, object)

    def __init__(self, make_pipeline: Callable[[Settings], Pipeline] = Pipeline,
                 parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.runner = JobRunner(make_pipeline)
        self.threads: dict[int, _Thread] = {}
        self.timer = QTimer(self)
        self.timer.setInterval(DRAIN_MS)
        self.timer.timeout.connect(self.drain)

    def start(self, job: Job) -> None:
        """Run `job` on its own thread; HostError when one of its kind is running."""
        self.runner.add(job)
        thread = _Thread(job)
        self.threads[id(job)] = thread
        thread.start()
        self.timer.start()

    def busy(self, kind: str) -> bool:
        return self.runner.running(kind) is not None

    def cancel(self, kind: str | None = None) -> int:
        return self.runner.cancel(kind)

    def drain(self) -> None:
        """Deliver progress and outcomes (UI thread)."""
        for job in list(self.runner.jobs):
            message = self.runner.deliver(job)
            if message is not None:
                thread = self.threads.pop(id(job))
                thread.wait()
                self.finished.emit(job.kind, message)
        if not self.runner.jobs:
            self.timer.stop()

    def wait(self, kind: str, timeout_ms: int) -> bool:
        """Wait for the running job of `kind` to end, delivering its outcome; False on timeout."""
        job = self.runner.running(kind)
        if job is None:
            return True
        finished = self.threads[id(job)].wait(timeout_ms)
        self.drain()
        return finished

    def close(self) -> None:
        """Stop every job, wait for their threads, free the shared Pipeline."""
        for job in self.runner.jobs:
            job.detach()
        for thread in self.threads.values():
            thread.wait(STOP_WAIT_MS)
        self.threads.clear()
        self.timer.stop()
        self.runner.close()


def render_job(request: RenderRequest, on_progress: Callable[[Job, Any], None],
               on_done: Callable[[Job, Any], Message]) -> Job:
    """A Job that renders `request`; its progress items are FrameReports and PhaseProgress."""
    def work(report: Callable[[Any], None], cancelled: Callable[[], bool]) -> Any:
        return render(request, report, cancelled, report)
    return Job(kind="render", label="Render", work=work, on_done=on_done,
               on_progress=on_progress)


Look = Callable[[Pipeline, Callable[[Any], None], Callable[[], bool]], Any]


def look_job(kind: str, label: str, runner: JobRunner, settings: Settings | None, look: Look,
             on_done: Callable[[Job, Any], Message],
             on_progress: Callable[[Job, Any], None] | None = None) -> Job:
    """A Job that calls look(pipeline, report, cancelled) with the runner's shared Pipeline for
    `settings` (settings None: no Pipeline, look gets None: work that needs no model). A look
    that fails once cancelled (PlanCancelled, ...) ends with None instead of an error."""
    def work(report: Callable[[Any], None], cancelled: Callable[[], bool]) -> Any:
        pipeline = runner.pipeline(settings) if settings is not None else None
        try:
            return look(pipeline, report, cancelled)  # type: ignore[arg-type]
        except Exception:
            if cancelled():  # stopped on purpose (another clip was opened): no outcome
                return None
            raise
    return Job(kind=kind, label=label, work=work, on_done=on_done, on_progress=on_progress)
