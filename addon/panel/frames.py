"""The "frame" job: a clip opened (its frames counted, the first one shown) and the frame under
the playhead as decoded, beside its preview or the result's frame. It needs no model, so
scrubbing never waits behind a look."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from facefuse import CacheLayout, Message, RenderRequest, Settings, clip_frames, frame_picture

from .host import Clip
from .review import ShotReview
from .worker import look_job

if TYPE_CHECKING:
    from .actions import Actions

FRAME = "frame"


def open_clip(act: Actions, clip: Clip, counted: bool) -> None:
    """Count the clip's frames (unless known) and show the frame under the playhead."""
    request = act.frame_request()
    if request is None:
        return
    wanted = act.ui.timeline.frame
    scrub = _scrub_folder(request.settings)

    def work(_p: Any, _report: Any, _cancelled: Any) -> tuple[tuple[int, ...], int, Path]:
        numbers = () if counted else clip_frames(clip.input, clip.start_number)
        frame = wanted if counted or wanted in numbers else numbers[0]
        return numbers, frame, frame_picture(request, frame, scrub)

    def shown(result: tuple[tuple[int, ...], int, Path]) -> Message:
        numbers, frame, picture = result
        if numbers:
            act.ui.timeline.blockSignals(True)  # the frame is here: no job for it
            act.w.set_review(ShotReview.empty(numbers[0], numbers[-1]))
            act.ui.timeline.set_frame(frame)
            act.ui.timeline.blockSignals(False)
            act.w.frame_moved(frame, show=False)
        act.ui.view.show_pair(picture, None)
        act.activity(None)
        count = len(numbers) or act.w.review.last - act.w.review.first + 1
        return Message("INFO", f"{clip.label}: {count} frames "
                       f"({act.w.review.first}-{act.w.review.last})")
    act.activity(f"Opening {clip.label}…")
    act.start_job(look_job(FRAME, f"Opening {clip.label}", act.w.jobs.runner, None, work,
                           act.current(shown)))


def busy_showing(act: Actions) -> bool:
    """True while the frame under the playhead is still being fetched."""
    return act.w.jobs.busy(FRAME) or act.frame_dirty


def show_frame(act: Actions) -> None:
    """The frame under the playhead as decoded, beside its preview or the result's frame."""
    frame = act.ui.timeline.frame
    if act.w.host.clip is None:
        return
    if act.preview_at is not None and act.preview_at[0] == frame \
            and not act.ui.show_result.isChecked():
        act.ui.view.show_pair(act.preview_at[1], act.preview_at[2])
        return
    if act.w.jobs.busy(FRAME):
        act.frame_dirty = True
        return
    request = act.frame_request()
    if request is None:
        return
    result = act.result if act.ui.show_result.isChecked() else None
    scrub = _scrub_folder(request.settings)

    def work(_p: Any, _report: Any, _cancelled: Any) -> tuple[Path, Path | None]:
        before = frame_picture(request, frame, scrub)
        number = result.frame_of(frame) if result is not None else None
        if result is None or number is None:
            return before, None
        rendered = RenderRequest(sources=(), input=result.output, output=request.output,
                                 settings=request.settings)
        return before, frame_picture(rendered, number, scrub / "result")

    def shown(pair: tuple[Path, Path | None]) -> Message:
        if frame == act.ui.timeline.frame:
            act.ui.view.show_pair(pair[0], pair[1], ("Original", "Result"))
        return Message("DEBUG", f"frame {frame}")
    act.start_job(look_job(FRAME, f"Frame {frame}", act.w.jobs.runner, None, work,
                           act.current(shown)))


def _scrub_folder(settings: Settings) -> Path:
    return CacheLayout.at(settings.cache_dir).previews / "scrub"
