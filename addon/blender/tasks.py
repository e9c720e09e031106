"""The add-on's jobs: swap a strip, preview a frame, check sources, look at and pick faces.

Each builder reads bpy data on the main thread and returns a Job whose work calls the
engine (facefuse.render and its previews) with plain values only; its on_done writes the
outcome back into bpy data, again on the main thread, and says what happened.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import bpy

from facefuse import (
    LOOK_ROLES,
    FacefuseError,
    Job,
    Message,
    PhaseProgress,
    Replacement,
    Report,
    absent_models,
    fetch_models,
    missing_models,
)

from . import result, review
from .frames import StripSwap
from .jobs import LOOK, RENDER, runner, runs_blocking
from .settings import engine_settings, in_blender
from .strips import StripError, require_swappable

PREVIEW_IMAGE = "facefuse preview"
FACES_IMAGE = "facefuse faces"
REFERENCE_FOLDER = "reference"
KEPT_RENDERS = 16  # request fingerprints a strip remembers of its own swaps (rendered_by)
log = logging.getLogger(__name__)


# -- swap ----------------------------------------------------------------------------------------

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


def phase_line(progress: PhaseProgress) -> str:
    """What the status shows of an unfinished analysis or output finishing; "" once done."""
    if progress.done >= progress.total:
        return ""
    if progress.phase == "analysis":
        return f"analysing frame {progress.done + 1} of {progress.total}"
    if progress.phase == "pictures":
        return f"contact sheet: step {progress.done + 1} of {progress.total}"
    return "finishing the output"


def frame_outcome(report: Any) -> str:
    """What became of one frame, in words ("swapped", "left as corrected", ...)."""
    if report.status == "unselected":
        return "left as corrected" if report.corrected else "face not chosen"
    return {"no_face": "without a face", "skipped": "already done"}.get(report.status,
                                                                        report.status)


def frame_counts(summary: Any) -> str:
    """A render's frames in words: swapped, left as they are by the user's corrections or by
    the Target Face rule (faces found, none swapped), without a face, already done."""
    chosen = summary.unselected - summary.corrected
    parts = [f"{summary.swapped} swapped"]
    if summary.corrected:
        parts.append(f"{summary.corrected} left as they are by your corrections")
    if chosen:
        parts.append(f"{chosen} with faces Target Face did not choose")
    return ", ".join([*parts, f"{summary.no_face} without a face",
                      f"{summary.skipped} already done"])


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


def review_job(plan: StripSwap, folder: Path) -> Job:
    """Review the strip as Swap Strip would render it (facefuse.write_review into `folder`);
    its flags become timeline markers and its people the strip's people (review.py)."""
    def work(report: Report, cancelled: Any) -> dict[str, Any]:
        from facefuse import write_review

        pipeline = runner().pipeline(plan.request.settings)
        return dict(write_review(plan.request, folder, pipeline=pipeline, on_phase=report,
                                 cancel=cancelled).report)

    def on_progress(job: Job, progress: Any) -> None:
        if isinstance(progress, PhaseProgress) and progress.phase in ("analysis", "pictures"):
            job.status = phase_line(progress) or "writing the report"

    def on_done(_job: Job, report: dict[str, Any]) -> Message:
        scene, strip = result.find_strip(plan)
        strip.facefuse.report = blend_path(folder / "report.json")
        markers = review.apply_report(plan, scene, strip, report)
        people = len(strip.facefuse.people)
        return Message('WARNING' if markers else 'INFO',
                       f"Review of '{plan.strip}': {people} person(s), {markers} flag(s) "
                       f"marked on the timeline, {strip.facefuse.flagged} frame(s) flagged")

    return Job(LOOK, f"Review of '{plan.strip}'", work, on_done, on_progress,
               status="analysing the shot")


# -- looks ---------------------------------------------------------------------------------------

def preview_job(plan: StripSwap, frame: int) -> Job:
    """Render the frame under the playhead as Swap Strip will and show it as the image
    'facefuse preview' (the strip's first preview analyses its range first)."""
    number = plan.number_at(frame)

    def work(report: Report, _cancelled: Any) -> Path:
        from facefuse import preview_frame

        pipeline = runner().pipeline(plan.request.settings)
        return preview_frame(plan.request, number, pipeline=pipeline, on_phase=report)

    def on_progress(job: Job, progress: Any) -> None:
        if isinstance(progress, PhaseProgress) and progress.phase == "analysis":
            job.status = phase_line(progress) or "swapping one frame"

    def on_done(_job: Job, path: Path) -> Message:
        image = show_image(path, PREVIEW_IMAGE)
        return Message('INFO', f"Preview of frame {frame} in image '{image.name}'")

    return Job(LOOK, f"Preview of frame {frame}", work, on_done, on_progress,
               status="swapping one frame")


def faces_job(plan: StripSwap, frame: int) -> Job:
    """Outline and number the faces under the playhead (image 'facefuse faces')."""
    number = plan.number_at(frame)

    def work(_report: Report, _cancelled: Any) -> tuple[Path, int]:
        from facefuse import faces_overlay

        pipeline = runner().pipeline(plan.request.settings)
        return faces_overlay(plan.request, number, pipeline=pipeline)

    def on_done(_job: Job, outcome: tuple[Path, int]) -> Message:
        path, count = outcome
        _, strip = result.find_strip(plan)
        strip.facefuse.reference_faces = count
        image = show_image(path, FACES_IMAGE)
        if count == 0:
            return Message('WARNING', f"No face under the playhead (frame {frame})")
        return Message('INFO', f"{count} face(s) under the playhead, numbered from the left in "
                               f"image '{image.name}': choose one and press Use Face")

    return Job(LOOK, "Finding faces under the playhead", work, on_done, status="detecting")


def reference_job(plan: StripSwap, frame: int, index: int) -> Job:
    """Save face `index` under the playhead as the strip's reference face."""
    number = plan.number_at(frame)
    folder = plan.output_dir / REFERENCE_FOLDER

    def work(_report: Report, _cancelled: Any) -> Path:
        from facefuse import reference_face

        pipeline = runner().pipeline(plan.request.settings)
        return reference_face(plan.request, number, index, folder, pipeline=pipeline)

    def on_done(_job: Job, path: Path) -> Message:
        _, strip = result.find_strip(plan)
        strip.facefuse.reference_image = blend_path(path)
        strip.facefuse.selector = 'reference'
        return Message('INFO', f"Face {index} of frame {frame} is the reference: {path.name}")

    return Job(LOOK, "Saving the reference face", work, on_done, status="cropping")


def sources_job(scene: Any, strip: Any) -> Job:
    """Detect the faces of every source image, make thumbnails, store counts on the strip."""
    require_swappable(strip)
    settings = engine_settings(strip.facefuse)
    missing = missing_models(settings, LOOK_ROLES)
    if missing:
        raise StripError(in_blender("; ".join(missing)))
    items = [(item.filepath, Path(bpy.path.abspath(item.filepath)))
             for item in strip.facefuse.sources if item.filepath.strip()]
    names = (scene.name, strip.name)

    def work(_report: Report, _cancelled: Any) -> list[tuple[str, str, int, str]]:
        from facefuse import source_preview

        pipeline = runner().pipeline(settings)
        checked = []
        for text, path in items:
            try:
                thumb, count = source_preview(path, settings, pipeline=pipeline)
                checked.append((text, str(thumb), count, ""))
            except FacefuseError as exc:
                checked.append((text, "", 0, str(exc)))
        return checked

    def on_done(_job: Job, checked: list[tuple[str, str, int, str]]) -> Message:
        _, target = result.strip_named(*names)
        problems = []
        for text, thumb, count, error in checked:
            for item in target.facefuse.sources:
                if item.filepath == text:
                    item.checked_path, item.thumbnail, item.faces = text, thumb, count
            if error or count == 0:
                problems.append(error or f"{Path(text).name}: no face found; use a photo where "
                                         "the face is clearly visible")
        if problems:
            return Message('WARNING', "; ".join(problems))
        return Message('INFO', f"{len(checked)} source image(s) checked: a face in each")

    return Job(LOOK, "Checking source images", work, on_done, status="detecting faces")


def fetch_job(settings: Any, window_manager: Any = None) -> Job:
    """Download the chosen manifest models that are not on disk (needs online access), with
    the progress in the status bar and on the cursor (window_manager.progress_*)."""
    absent = absent_models(settings)
    if not absent:
        raise StripError("Every model is downloaded already")
    shown = _ProgressCursor(window_manager)

    def work(report: Report, _cancelled: Any) -> list[str] | FacefuseError:
        try:
            paths = fetch_models(settings, [name for _, name in absent],
                                 on_progress=lambda *p: report(p))
        except FacefuseError as exc:  # handed to on_done, which ends the cursor's progress
            return exc
        return [str(path) for path in paths]

    def on_progress(job: Job, item: tuple[str, int, int | None]) -> None:
        name, done, total = item
        job.done, job.total = done, total or 0
        size = f" ({done / 1e6:.0f} of {total / 1e6:.0f} MB)" if total else ""
        job.status = f"downloading {name}{size}"
        shown.update(job.fraction)

    def on_done(_job: Job, paths: list[str] | FacefuseError) -> Message:
        shown.end()
        if isinstance(paths, FacefuseError):
            raise StripError(f"Downloading the models failed: {paths}")
        return Message('INFO', f"{len(paths)} model(s) downloaded")

    shown.begin()
    return Job(LOOK, "Downloading models", work, on_done, on_progress, status="connecting")


class _ProgressCursor:
    """Blender's own progress (window_manager.progress_begin/update/end), 0..1000."""

    def __init__(self, window_manager: Any) -> None:
        self.window_manager = window_manager

    def begin(self) -> None:
        if self.window_manager is not None:
            self.window_manager.progress_begin(0, 1000)

    def update(self, fraction: float) -> None:
        if self.window_manager is not None:
            self.window_manager.progress_update(int(1000 * fraction))

    def end(self) -> None:
        if self.window_manager is not None:
            self.window_manager.progress_end()


# -- bpy helpers (main thread) -------------------------------------------------------------------

def show_image(path: Path, name: str) -> Any:
    """Load `path` as image `name` (reloading it if it exists) and show it in Image Editors."""
    image = bpy.data.images.get(name)
    if image is None:
        image = bpy.data.images.load(str(path), check_existing=False)
        image.name = name
    else:
        image.filepath = str(path)
        image.reload()
    wm = getattr(bpy.context, "window_manager", None)
    for window in getattr(wm, "windows", ()):
        for area in window.screen.areas:
            if area.type == 'IMAGE_EDITOR':
                area.spaces.active.image = image
    return image


def blend_path(path: Path | str) -> str:
    """`path` relative to the .blend (//...) when the file is saved and prefers relative paths."""
    prefs = getattr(bpy.context, "preferences", None)
    relative = prefs is None or prefs.filepaths.use_relative_paths
    if bpy.data.filepath and relative:
        try:
            return bpy.path.relpath(str(path))
        except ValueError:  # another drive (Windows)
            pass
    return str(path)

