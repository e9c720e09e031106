"""The "frame" job: a clip opened (its frames counted, the first one shown) and the frame under
the playhead as decoded, beside its swap (live.py) or the result's frame. It needs no model, so
scrubbing never waits behind a look; an original already fetched comes from live.py's cache."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from PySide6.QtGui import QImage, QPixmap

from facefuse import (
    CacheLayout,
    InputSpec,
    Message,
    OutputSpec,
    RenderRequest,
    Settings,
    clip_frames,
    frame_picture,
)

from . import looks
from .host import Clip
from .review import ShotReview
from .roles import Controller, Result
from .worker import look_job

FRAME = "frame"
RENDERED = "Rendered"


def open_clip(act: Controller, clip: Clip, counted: bool) -> None:
    """Count the clip's frames (unless known) and show the frame under the playhead; while
    the previous clip's frame job ends (cancelled), the opening waits for it."""
    if act.w.jobs.busy(FRAME):
        act.frame_dirty = False
        act.open_waiting = (clip, counted)
        act.activity(f"Opening {clip.label}…")
        return
    request = act.frame_request()
    if request is None:
        return
    wanted = act.ui.timeline.frame if counted or clip.preview_frame is None \
        else clip.preview_frame  # a frame picked from a sequence: shown first
    scrub = _scrub_folder(request.settings)

    def work(_p: Any, _report: Any, _cancelled: Any) -> tuple[tuple[int, ...], int, QImage]:
        numbers = () if counted else clip_frames(clip.input, clip.start_number)
        frame = wanted if counted or wanted in numbers else numbers[0]
        return numbers, frame, QImage(str(frame_picture(request, frame, scrub)))

    def shown(result: tuple[tuple[int, ...], int, QImage]) -> Message:
        numbers, frame, picture = result
        if numbers:
            act.ui.timeline.blockSignals(True)  # the frame is here: no job for it
            act.w.set_review(ShotReview.empty(numbers[0], numbers[-1]))
            act.ui.timeline.set_frame(frame)
            act.ui.timeline.blockSignals(False)
            act.w.frame_moved(frame, show=False)
        before = QPixmap.fromImage(picture)
        act.live.keep_original(request, frame, before)
        act.ui.view.set_frame(frame)
        act.ui.view.show_before(before, frame)
        act.live.show(frame)
        act.activity(None)
        count = len(numbers) or act.w.review.last - act.w.review.first + 1
        return Message("INFO", f"{clip.label}: {count} frames "
                       f"({act.w.review.first}-{act.w.review.last})")
    act.activity(f"Opening {clip.label}…")
    act.start_job(look_job(FRAME, f"Opening {clip.label}", act.w.jobs.runner, None, work,
                           act.current(shown)))


def busy_showing(act: Controller) -> bool:
    """True while the frame under the playhead is still being fetched, or its swap."""
    return act.w.jobs.busy(FRAME) or act.frame_dirty or act.live.waiting()


def show_frame(act: Controller) -> None:
    """The frame under the playhead: the original (from the cache at once, else the "frame"
    job) and its swap (the rendered result's frame with Show render, else the live swap)."""
    frame = act.ui.timeline.frame
    if act.w.host.clip is None:
        return
    view = act.ui.view
    view.set_frame(frame)
    request = act.frame_request()
    if request is None:
        act.live.drop()
        return
    result = act.result if act.ui.show_result.isChecked() else None
    number = result.frame_of(frame) if result is not None else None
    before = act.live.original(request, frame)
    previewed = act.preview_at is not None and act.preview_at[0] == frame and number is None
    if previewed and act.preview_at is not None:
        view.show_pair(act.preview_at[1], act.preview_at[2])
    elif before is not None and number is None:
        view.show_before(before, frame)
    elif act.w.jobs.busy(FRAME):
        act.frame_dirty = True
    else:
        _fetch(act, request, frame, result, number)
    if number is None and not previewed:
        act.live.show(frame)
    else:
        act.live.drop()  # the rendered frame, or Preview's, is the result shown


def _fetch(act: Controller, request: RenderRequest, frame: int, result: Result | None,
           number: int | None) -> None:
    """The "frame" job: the original of `frame`, and the result's frame `number` (not None)."""
    scrub = _scrub_folder(request.settings)

    def work(_p: Any, _report: Any, _cancelled: Any) -> tuple[QImage, QImage | None]:
        before = QImage(str(frame_picture(request, frame, scrub)))
        if result is None or number is None:
            return before, None
        rendered = RenderRequest(sources=(), input=InputSpec(result.output),
                                 output=OutputSpec(request.output.path), settings=request.settings)
        return before, QImage(str(frame_picture(rendered, number, scrub / "result")))

    def shown(pair: tuple[QImage, QImage | None]) -> Message:
        before = QPixmap.fromImage(pair[0])
        act.live.keep_original(request, frame, before)
        view = act.ui.view
        if frame == act.ui.timeline.frame or view.after is None:  # a late frame while dragging
            view.show_before(before, frame)
        if frame == act.ui.timeline.frame and pair[1] is not None:
            view.set_after(QPixmap.fromImage(pair[1]), RENDERED, frame)
        return Message("DEBUG", f"frame {frame}")
    act.start_job(look_job(FRAME, f"Frame {frame}", act.w.jobs.runner, None, work,
                           act.current(shown)))


def mode_changed(act: Controller, mode: str) -> None:
    """Original stops the live swap; Result and Split ask for the playhead's swap."""
    if mode == "original":
        act.live.stop()
        act.ui.view.set_note("")
    else:
        show_frame(act)


def preview(act: Controller) -> None:
    """Preview: the swap of the playhead's frame beside the original (Split when the original
    alone is shown); the live swap's when it can make one, else looks.preview (which says why
    not, or fetches the models first)."""
    view = act.ui.view
    if view.mode == "original":
        view.set_mode("split")
    act.live.show(act.ui.timeline.frame)
    if not act.live.waiting() and view.after is None:
        looks.preview(act)


def _scrub_folder(settings: Settings) -> Path:
    return CacheLayout.at(settings.cache_dir).previews / "scrub"
