"""Engine jobs in Blender: a worker thread per job, one bpy.app.timers callback that drains them.

The jobs themselves (facefuse.Job, facefuse.JobRunner) know nothing of Blender. This module
starts their threads and, from a timer on the main thread, delivers their progress and outcomes,
whose callbacks may write bpy data (bpy is not thread safe). With bpy as a module or `blender -b`
(bpy.app.background: timers never fire, nobody waits on a UI) `submit` runs the work on the
calling thread and delivers it at once, so the operator has its result before it returns.

The add-on's one JobRunner is made by register() and dropped by unregister().
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any

import bpy

from facefuse import Job, JobRunner, Message, Settings

if TYPE_CHECKING:
    from facefuse import Pipeline

RENDER, LOOK = "render", "look"
DRAIN_INTERVAL_S = 0.1
REDRAW_AREAS = frozenset({'SEQUENCE_EDITOR', 'IMAGE_EDITOR', 'STATUSBAR'})

_runner: JobRunner | None = None  # the add-on's one runner, between register() and unregister()


def current() -> JobRunner | None:
    """The runner, or None while the add-on is not registered."""
    return _runner


def runner() -> JobRunner:
    if _runner is None:
        raise RuntimeError("the facefuse add-on is not registered")
    return _runner


def runs_blocking() -> bool:
    """True where no timer fires and no UI waits: bpy as a module, `blender -b`."""
    return bool(bpy.app.background)


def submit(job: Job) -> Message | None:
    """Run `job`: now, returning its outcome (blocking mode), or on a worker (returns None).

    HostError when a job of the same kind is already running.
    """
    state = runner()
    state.add(job)
    if runs_blocking():
        job.run()
        return state.deliver(job)
    job.thread = threading.Thread(target=job.run, name=f"facefuse {job.label}", daemon=True)
    job.thread.start()
    if not bpy.app.timers.is_registered(drain):
        # persistent: keeps draining across file loads, so detached jobs are collected
        bpy.app.timers.register(drain, first_interval=DRAIN_INTERVAL_S, persistent=True)
    return None


def cancel(kind: str | None = None) -> int:
    """Ask running jobs (of `kind`, or all) to stop; the number asked."""
    return runner().cancel(kind)


def drain() -> float | None:
    """The timer callback: deliver progress and outcomes; None (stop the timer) when idle."""
    state = _runner
    if state is None:
        return None
    for job in list(state.jobs):
        state.deliver(job)
    _redraw()
    return DRAIN_INTERVAL_S if state.jobs else None


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
        job.detach()


def _make_pipeline(settings: Settings) -> Pipeline:
    # ONNX Runtime and OpenCV load with the first look job, not when the add-on is enabled.
    from facefuse import Pipeline

    return Pipeline(settings)


def register() -> None:
    global _runner
    _runner = JobRunner(_make_pipeline)
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
