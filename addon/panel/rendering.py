"""The render job of the panel: the host's request with the user's people choices and range,
its progress on the render bar, and what its end shows (the result beside the original).

A render that finds every frame finished by an earlier render of the same request says so
("already rendered"), not that frames were left unswapped. A render that would replace finished
frames made with other choices (another casting, corrections, settings: facefuse's
replaced_frames, checked as a look first) asks before it starts, saying which frames and what
differs; Cancel keeps them. Re-render flagged, asked for by name, does not ask.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from PySide6.QtWidgets import QMessageBox, QPushButton, QWidget

from facefuse import (
    MODEL_ROLES,
    FacefuseError,
    FrameReport,
    HostError,
    Job,
    Message,
    PhaseProgress,
    PhaseRate,
    RenderRequest,
    RenderSummary,
    Replacement,
    replaced_frames,
)

from .consent import policy_choices
from .frames import show_frame
from .host import OPEN_HINT, only_frames, render_went_well
from .looks import look
from .roles import Controller, Result
from .worker import render_job

RENDER = "render"
KEPT_RENDERS = 16  # the render fingerprints a shot's result remembers (Result.made_by)


def render_request(act: Controller, ranges: tuple[tuple[int, int], ...] | None = None,
                   force: bool = False) -> tuple[RenderRequest, Any]:
    """The request Render sends for the shown clip (the host's, with the user's people
    choices and consent records; only `ranges` when given) and the host's plan of it. Raises
    the engine's and the host's errors."""
    w, ui = act.w, act.ui
    if w.host.clip is None:
        raise HostError(OPEN_HINT)
    request, plan = w.host.build_render(w.host.clip, tuple(ui.sources.paths()), act.settings(),
                                        ui.output.currentData(), Path(ui.folder.text()))
    request = replace(request, plan=w.people_choices(), policy=policy_choices(w))
    return (only_frames(request, ranges, force) if ranges else request), plan


def start_render(act: Controller, ranges: tuple[tuple[int, int], ...] | None,
                 force: bool) -> None:
    w, ui = act.w, act.ui
    clip = w.host.clip
    if clip is None or w.jobs.busy(RENDER):
        return
    problem = act.casting_problem()
    if problem is not None:
        ui.log.say(problem, "ERROR")
        return
    w.remember()
    try:
        request, plan = render_request(act, ranges, force)
    except (FacefuseError, HostError) as exc:
        ui.log.say(str(exc), "ERROR")
        return
    span = ranges or ((request.frames.range or (w.review.first, w.review.last)),)
    first, last = min(a for a, _ in span), max(b for _, b in span)
    generation = act.generation

    def start() -> None:
        w.last_request = request
        act.rates.pop(RENDER, None)
        act.render_steps = {}
        job = render_job(request, lambda j, item: _progress(act, j, item),
                         lambda _job, summary: _done(act, plan, summary, request.output.path,
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
        ui.log.say(f"Rendering frames {first}-{last} to {request.output.path}")
    w.last_request = request

    def checked(replacement: Replacement) -> Message:
        if not replacement or force:  # nothing made otherwise, or a re-render asked for
            start()
            return Message("DEBUG", "no finished frames made with other choices")
        if own_work(act.result, replacement):  # the user changed their own render's choices
            start()
            return Message("INFO", f"{replacement.message[:1].upper()}"
                                   f"{replacement.message[1:]}")
        _confirm(act, replacement, start, generation)  # the job is delivered: no re-entry
        return Message("DEBUG", replacement.message)
    look(act, "replaces", "Checking the finished frames",
         lambda p, report, cancelled: replaced_frames(request, p, report, cancelled),
         checked, request.settings, MODEL_ROLES, progress=True)


def own_work(result: Result | None, replacement: Replacement) -> bool:
    """Whether every frame `replacement` replaces was made by this shot's own renders."""
    return (result is not None and result.output == replacement.output
            and bool(replacement.made_by) and set(replacement.made_by) <= set(result.made_by))


def replace_box(parent: QWidget, replacement: Replacement) -> tuple[QMessageBox, QPushButton]:
    """The question asked before a render replaces finished frames made with other choices:
    which frames, what differs; Replace or Cancel (the default: the result is kept)."""
    box = QMessageBox(QMessageBox.Icon.Question, "Replace finished frames?",
                      f"{replacement.message[:1].upper()}{replacement.message[1:]}.", parent=parent)
    box.setInformativeText("Replace them with this render? Cancel keeps the finished result.")
    if replacement.differences:
        box.setDetailedText("What differs:\n" + "\n".join(replacement.differences))
    replace_button = box.addButton("Replace", QMessageBox.ButtonRole.AcceptRole)
    box.setDefaultButton(box.addButton(QMessageBox.StandardButton.Cancel))
    return box, replace_button


def ask_replace(parent: QWidget, replacement: Replacement) -> bool:
    """Whether the user lets the render replace the finished frames (replace_box)."""
    box, replace_button = replace_box(parent, replacement)
    box.exec()
    return box.clickedButton() is replace_button


def _confirm(act: Controller, replacement: Replacement, start: Callable[[], None],
             generation: int) -> None:
    if generation != act.generation:
        return  # another clip was opened meanwhile
    if ask_replace(act.ui.view.window(), replacement):  # the panel window
        start()
    else:
        act.ui.log.say(f"Render not started: the finished frames of {replacement.output} are "
                       "kept")


def _progress(act: Controller, job: Job, item: Any) -> None:
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


def _done(act: Controller, plan: Any, summary: RenderSummary, output: str,
          span: tuple[int, int], generation: int) -> Message:
    """The host's sentence for the render; the result to step through (unless another clip
    was opened meanwhile)."""
    ui, (first, last) = act.ui, span
    for warning in summary.warnings:
        ui.log.say(warning, "WARNING")
    message = act.w.host.rendered(plan, summary)
    ok = render_went_well(summary)
    if summary.done and generation == act.generation:
        old = act.result
        made_by: tuple[str, ...] = (summary.request_fingerprint,)
        if old is not None and old.output == output:
            first, last = min(first, old.first), max(last, old.last)
            made_by = (*[f for f in old.made_by if f != made_by[0]], *made_by)
        act.result = Result(output, first, last, tuple(filter(None, made_by))[-KEPT_RENDERS:])
        ui.show_result.setEnabled(True)
        ui.open_folder.setEnabled(True)
        ui.show_result.setChecked(True)
    return Message("INFO" if ok else "WARNING", message)


def render_finished(act: Controller, message: Message) -> None:
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
