"""The render job of the panel: the host's request with the user's people choices and range,
its progress on the render bar, and what its end shows (the result beside the original).

A render that finds every frame finished by an earlier render of the same request says so
("already rendered"), not that frames were left unswapped.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from facefuse import (
    MODEL_ROLES,
    FacefuseError,
    FrameReport,
    HostError,
    Job,
    Message,
    PhaseProgress,
    PhaseRate,
    RenderSummary,
    is_frame_pattern,
)

from .frames import show_frame
from .host import only_frames
from .worker import render_job

if TYPE_CHECKING:
    from .actions import Actions

RENDER = "render"


@dataclass(frozen=True, slots=True)
class Result:
    """A finished render: its output (sequence pattern or movie) and the clip frames in it."""

    output: str
    first: int
    last: int

    @property
    def folder(self) -> Path:
        return Path(self.output).parent

    def frame_of(self, frame: int) -> int | None:
        """The output's number for clip frame `frame` (a movie counts from 1), or None."""
        if not self.first <= frame <= self.last:
            return None
        return frame if is_frame_pattern(self.output) else frame - self.first + 1


def start_render(act: Actions, ranges: tuple[tuple[int, int], ...] | None,
                 force: bool) -> None:
    w, ui = act.w, act.ui
    clip = w.host.clip
    if clip is None or w.jobs.busy(RENDER):
        return
    if not ui.sources.paths() and not w.assigned:
        ui.log.say("Add a source photo first (Sources > Add…)", "ERROR")
        return
    w.remember()
    try:
        request, plan = w.host.build_render(clip, tuple(ui.sources.paths()), act.settings(),
                                            ui.output.currentData(), Path(ui.folder.text()))
        request = replace(request, **w.people_choices())
        if ranges:
            request = only_frames(request, ranges, force)
    except (FacefuseError, HostError) as exc:
        ui.log.say(str(exc), "ERROR")
        return
    span = ranges or ((request.frames or (w.review.first, w.review.last)),)
    first, last = min(a for a, _ in span), max(b for _, b in span)
    generation = act.generation

    def start() -> None:
        w.last_request = request
        act.rates.pop(RENDER, None)
        act.render_steps = {}
        job = render_job(request, lambda j, item: _progress(act, j, item),
                         lambda _job, summary: _done(act, plan, summary, request.output,
                                                     (first, last), generation))
        try:
            w.jobs.start(job)
        except (FacefuseError, HostError) as exc:
            ui.log.say(str(exc), "ERROR")
            return
        ui.progress.setValue(0)
        ui.render_button.setEnabled(False)
        ui.rerender_button.setEnabled(False)
        ui.cancel_button.setEnabled(True)
        ui.status.setText("Starting the render…")
        ui.log.say(f"Rendering frames {first}-{last} to {request.output}")
    w.last_request = request
    act.with_models(request.settings, MODEL_ROLES, start)


def _progress(act: Actions, job: Job, item: Any) -> None:
    ui = act.ui
    if isinstance(item, PhaseProgress) and item.phase == "encode":
        ui.status.setText("Finishing the output…")
    elif isinstance(item, PhaseProgress):
        rates = act.rates
        rate = rates.setdefault(f"render-{item.phase}", PhaseRate(item.done))
        act.render_steps[item.phase] = item
        # pass 1 may run beside pass 2 (selector many): the bar follows the swap then
        shown = act.render_steps.get("swap", item)
        job.total, job.done, job.status = shown.total, shown.done, shown.phase
        ui.progress.setMaximum(max(1, shown.total))
        ui.progress.setValue(shown.done)
        text = progress_text(shown, rates.get(f"render-{shown.phase}", rate))
        analysis = act.render_steps.get("analysis")
        if shown.phase == "swap" and analysis is not None and analysis.done < analysis.total:
            text += f" · analysis {analysis.done}/{analysis.total}"
        ui.status.setText(text)
    elif isinstance(item, FrameReport) and item.status == "failed":
        ui.log.say(f"frame {item.frame}: {item.error}", "WARNING")


def _done(act: Actions, plan: Any, summary: RenderSummary, output: str,
          span: tuple[int, int], generation: int) -> Message:
    """The host's sentence for the render; the result to step through (unless another clip
    was opened meanwhile)."""
    ui, (first, last) = act.ui, span
    for warning in summary.warnings:
        ui.log.say(warning, "WARNING")
    message = act.w.host.rendered(plan, summary)
    done = summary.swapped > 0 or summary.skipped > 0
    ok = not summary.cancelled and not summary.failed and done
    if summary.done and generation == act.generation:
        old = act.result
        if old is not None and old.output == output:
            first, last = min(first, old.first), max(last, old.last)
        act.result = Result(output, first, last)
        ui.show_result.setEnabled(True)
        ui.open_folder.setEnabled(True)
        ui.show_result.setChecked(True)
    return Message("INFO" if ok else "WARNING", message)


def render_finished(act: Actions, message: Message) -> None:
    ui, w = act.ui, act.w
    ui.render_button.setEnabled(w.host.clip is not None)
    ui.rerender_button.setEnabled(bool(w.review.flagged) and act.result is not None)
    ui.cancel_button.setEnabled(False)
    ui.status.setText(message.text)
    show_frame(act)


def progress_text(step: PhaseProgress, rate: PhaseRate) -> str:
    fps, left = rate.fps_eta(step.done, step.total)
    eta = "" if left is None else f" · {int(left) // 60}:{int(left) % 60:02d} left"
    speed = f" · {fps:.1f} fps" if fps else ""
    return f"{step.phase}: {step.done}/{step.total} frames{speed}{eta}"
