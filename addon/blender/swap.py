"""The swap of a strip: its Job, what it says while it runs, and what it means when it ends.

The job's work renders the strip's request off the main thread; its on_done, on the main thread,
remembers the render on the strip, adds the result strip and says what happened, or, when the
render would replace finished frames made with other choices, asks first (ask_to_replace).
"""

from __future__ import annotations

import logging
from typing import Any

import bpy

from facefuse import Job, Message, PhaseProgress, Replacement, Report

from . import result
from .frames import StripSwap
from .jobs import RENDER, runs_blocking
from .settings import in_blender
from .strips import StripError
from .words import frame_counts, frame_outcome, phase_line

KEPT_RENDERS = 16  # request fingerprints a strip remembers of its own swaps (rendered_by)
log = logging.getLogger(__name__)


def swap_job(plan: StripSwap, ask: bool = True, accepted: str = "") -> Job:
    """Render the plan; when it is complete, put the result strip above the source.

    ask: first find the finished frames the render would replace because they were made with
    other choices (facefuse.replaced_frames); unless the strip's own swaps made them (its
    rendered_by: the user changed their own choices) or that is what the user `accepted` (the
    replacement's message), stop before writing anything and ask (ask_to_replace).
    """
    own = own_renders(plan)

    def work(report: Report, cancelled: Any) -> Any:
        from facefuse import Pipeline, render, replaced_frames

        with Pipeline(plan.request.settings) as pipeline:  # one model load for both
            if ask:
                try:
                    replacement = replaced_frames(plan.request, pipeline, on_phase=report,
                                                  cancel=cancelled)
                except Exception:
                    if cancelled():  # the plan stopped for Cancel: nothing was written
                        return None
                    raise
                if replacement and replacement.message != accepted and \
                        not set(replacement.made_by) <= own:
                    return replacement
            return render(plan.request, on_progress=report, cancel=cancelled,
                          on_phase=report, pipeline=pipeline)

    # the last frame's line, and those of an unfinished analysis or finishing (the swap
    # phase's progress is the frames the bar counts)
    lines = {"frame": "", "analysis": "", "encode": ""}

    def on_progress(job: Job, report: Any) -> None:
        if isinstance(report, PhaseProgress):
            if report.phase in lines:
                lines[report.phase] = phase_line(report)
        else:
            job.done += 1
            lines["frame"] = f"frame {report.frame} {frame_outcome(report)}"
        job.status = " · ".join(line for line in lines.values() if line) or job.status

    def on_done(_job: Job, outcome: Any) -> Message:
        if outcome is None:
            return Message('WARNING', f"Face swap of '{plan.strip}' cancelled before any "
                                      "frame was written")
        if isinstance(outcome, Replacement):
            return ask_to_replace(plan, outcome.message)
        return swap_outcome(plan, outcome)

    return Job(RENDER, f"Face swap of '{plan.strip}'", work, on_done, on_progress,
               total=len(plan.todo()), status="analysing the shot")


def own_renders(plan: StripSwap) -> set[str]:
    """The request fingerprints of the plan's strip's own swaps (none when it is gone)."""
    try:
        _, strip = result.strip_named(plan.scene, plan.strip)
    except StripError:
        return set()
    return set(strip.facefuse.rendered_by.split())


def remember_render(source: Any, summary: Any) -> None:
    """Add a swap's request fingerprint to its strip's own (the latest KEPT_RENDERS)."""
    if summary.request_fingerprint:
        kept = [f for f in source.facefuse.rendered_by.split() if f != summary.request_fingerprint]
        source.facefuse.rendered_by = " ".join([*kept, summary.request_fingerprint]
                                               [-KEPT_RENDERS:])


def ask_to_replace(plan: StripSwap, message: str) -> Message:
    """A swap stopped before replacing finished frames made with other choices: the strip
    remembers the question (the panel shows it with a Replace button) and, in the UI, a
    confirm dialog asks it (facefuse.replace_frames)."""
    _, strip = result.find_strip(plan)
    strip.facefuse.replace_asked = message
    _confirm_in_window(plan, message)
    return Message('WARNING', f"Face swap of '{plan.strip}' stopped before writing: "
                              f"{message[:1].upper()}{message[1:]}; replace them with Replace "
                              "Finished Frames, or undo what changed")


def _confirm_in_window(plan: StripSwap, message: str) -> None:
    windows = getattr(getattr(bpy.context, "window_manager", None), "windows", ())
    if runs_blocking() or not windows:
        return
    try:
        with bpy.context.temp_override(window=windows[0]):
            bpy.ops.facefuse.replace_frames('INVOKE_DEFAULT', scene=plan.scene,
                                            strip=plan.strip, accepted=message)
    except RuntimeError:  # no dialog now: the panel's button asks again
        log.exception("facefuse: the replace dialog could not open")


def swap_outcome(plan: StripSwap, summary: Any) -> Message:
    """What a finished render means for the user (and the result strip when it is complete)."""
    kept = f"finished frames are kept in {plan.output_dir}"
    try:
        _, source = result.find_strip(plan)
        remember_render(source, summary)
    except StripError:
        pass  # gone meanwhile: said below when the result strip cannot be added
    if summary.cancelled:
        return Message('WARNING', f"Face swap of '{plan.strip}' cancelled after {summary.done} "
                                  f"frame(s); {kept}: Swap Strip resumes")
    if summary.failed:
        shown = "; ".join(f"frame {n}: {why}" for n, why in summary.failed[:3])
        return Message('ERROR', f"{len(summary.failed)} frame(s) of '{plan.strip}' failed "
                                f"({shown}); {kept}")
    _, source = result.find_strip(plan)
    source.facefuse.replace_asked = ""
    counts = frame_counts(summary)
    if summary.replaced:
        counts += f"; {summary.replaced} made with other choices replaced"
    strip = result.add_result_strip(plan)
    done = f"Face swap of '{plan.strip}' done ({counts}) in {summary.seconds:.1f} s: strip " \
           f"'{strip.name}' on channel {strip.channel}"
    warnings = [in_blender(warning) for warning in summary.warnings]
    if len(source.modifiers):
        warnings.append(f"without the {len(source.modifiers)} modifier(s) of '{plan.strip}' "
                        "(move them to an Adjustment Layer above both to grade the swap too)")
    text = "; ".join([done, *summary.notes, *warnings])
    return Message('WARNING' if warnings else 'INFO', text)
