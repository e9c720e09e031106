"""The add-on's look jobs: review a strip, preview a frame, check sources, look at and pick faces,
fetch models (the swap itself: swap.py).

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
    Report,
    absent_models,
    fetch_models,
    missing_models,
)

from . import result, review
from .frames import StripSwap
from .jobs import LOOK, runner
from .settings import engine_settings, in_blender
from .strips import StripError, require_swappable
from .words import phase_line

PREVIEW_IMAGE = "facefuse preview"
FACES_IMAGE = "facefuse faces"
REFERENCE_FOLDER = "reference"
log = logging.getLogger(__name__)


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

