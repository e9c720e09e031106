"""What the panel's buttons start: engine jobs on worker threads (worker.Jobs) and what their
outcomes change in the window.

Job kinds: "frame" (the clip's frame under the playhead, and the result's: no model, so
scrubbing never waits behind an analysis), "look" (thumbnails, Find people, who is swapped,
Preview: one at a time, sharing the runner's Pipeline; a look asked for while another runs
waits for it), "download" (missing models, with size and time left) and "render". Any job that
can take seconds shows itself in the activity bar; a new clip makes the old clip's outcomes
stale (`generation`), so they are dropped.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from facefuse import (
    LOOK_ROLES,
    MODEL_ROLES,
    CacheLayout,
    FacefuseError,
    HostError,
    Job,
    Message,
    PhaseProgress,
    PhaseRate,
    RenderRequest,
    Settings,
    clip_frames,
    frame_picture,
    plan_shot,
    preview_frame,
    source_preview,
    write_review,
)

from .downloads import DOWNLOAD, with_models
from .host import OPEN_HINT, Clip
from .rendering import RENDER, Result, render_finished, start_render
from .review import (
    ShotReview,
    ranges_text,
    review_from_plan,
    review_from_report,
    review_with_plan,
    with_boxes,
)
from .worker import Look, look_job

if TYPE_CHECKING:
    from .window import PanelWindow

LOOK, FRAME = "look", "frame"


class Actions:
    """The window's jobs (see the module docstring)."""

    def __init__(self, window: PanelWindow) -> None:
        self.w, self.ui = window, window.ui
        self.generation = 0
        self.pending: list[tuple[str, Callable[[], None]]] = []  # (key, start) of waiting looks
        self.pending_thumbnails: list[Path] = []
        self.thumbnailed: set[Path] = set()
        self.frame_dirty = False
        self.preview_at: tuple[int, Path, Path] | None = None
        self.result: Result | None = None
        self.rates: dict[str, PhaseRate] = {}
        self.render_steps: dict[str, PhaseProgress] = {}

    def reset(self) -> None:
        """Forget the shown clip's preview, result and running looks' outcomes."""
        self.generation += 1
        self.pending = []
        self.w.jobs.cancel(LOOK)
        self.w.jobs.cancel(FRAME)
        self.preview_at = None
        self.result = None
        self.ui.show_result.setChecked(False)
        self.ui.show_result.setEnabled(False)
        self.ui.open_folder.setEnabled(False)
        self.activity(None)

    # -- requests ---------------------------------------------------------------------------------
    def settings(self) -> Settings:
        return self.ui.form.settings(self.w.base)

    def request(self, settings: Settings | None = None) -> RenderRequest:
        """The look request of the shown clip with the user's people choices."""
        clip = self.w.host.clip
        if clip is None:
            raise HostError(OPEN_HINT)
        return RenderRequest(sources=tuple(self.ui.sources.paths()), input=clip.input,
                             output=str(clip.folder / "look.####.png"),
                             settings=settings or self.settings(), frames=clip.frames,
                             start_number=clip.start_number, **self.w.people_choices())

    def settings_or_base(self) -> Settings:
        try:
            return self.settings()
        except FacefuseError:
            return self.w.base

    def frame_request(self) -> RenderRequest | None:
        """The request a look at the clip's frames uses: the form's settings, or the base ones
        while the form holds some the engine refuses (a frame needs no model)."""
        try:
            settings = self.settings()
        except FacefuseError:
            settings = self.w.base
        try:
            return self.request(settings)
        except (FacefuseError, HostError) as exc:
            self.ui.log.say(str(exc), "ERROR")
            return None

    def checked_request(self) -> RenderRequest | None:
        try:
            return self.request()
        except (FacefuseError, HostError) as exc:
            self.ui.log.say(str(exc), "ERROR")
            return None

    def _current(self, done: Callable[[Any], Message]) -> Callable[[Job, Any], Message]:
        """on_done for a job of the shown clip: dropped once another clip is shown."""
        generation = self.generation

        def deliver(_job: Job, result: Any) -> Message:
            if generation != self.generation:
                return Message("DEBUG", "an outcome for the previous clip was dropped")
            return done(result)
        return deliver

    # -- the clip and its frames ------------------------------------------------------------------
    def open_clip(self, clip: Clip, counted: bool) -> None:
        """Count the clip's frames (unless known) and show the frame under the playhead."""
        request = self.frame_request()
        if request is None:
            return
        wanted = self.ui.timeline.frame
        scrub = _scrub_folder(request.settings)

        def work(_p: Any, _report: Any, _cancelled: Any) -> tuple[tuple[int, ...], int, Path]:
            numbers = () if counted else clip_frames(clip.input, clip.start_number)
            frame = wanted if counted or wanted in numbers else numbers[0]
            return numbers, frame, frame_picture(request, frame, scrub)

        def shown(result: tuple[tuple[int, ...], int, Path]) -> Message:
            numbers, frame, picture = result
            if numbers:
                self.ui.timeline.blockSignals(True)  # the frame is here: no job for it
                self.w.set_review(ShotReview.empty(numbers[0], numbers[-1]))
                self.ui.timeline.set_frame(frame)
                self.ui.timeline.blockSignals(False)
                self.w.frame_moved(frame, show=False)
            self.ui.view.show_pair(picture, None)
            self.activity(None)
            count = len(numbers) or self.w.review.last - self.w.review.first + 1
            return Message("INFO", f"{clip.label}: {count} frames "
                           f"({self.w.review.first}-{self.w.review.last})")
        self.activity(f"Opening {clip.label}…")
        self.start_job(look_job(FRAME, f"Opening {clip.label}", self.w.jobs.runner, None, work,
                             self._current(shown)))

    def busy_showing(self) -> bool:
        """True while the frame under the playhead is still being fetched."""
        return self.w.jobs.busy(FRAME) or self.frame_dirty

    def show_frame(self) -> None:
        """The frame under the playhead as decoded, beside its preview or the result's frame."""
        frame = self.ui.timeline.frame
        if self.w.host.clip is None:
            return
        if self.preview_at is not None and self.preview_at[0] == frame \
                and not self.ui.show_result.isChecked():
            self.ui.view.show_pair(self.preview_at[1], self.preview_at[2])
            return
        if self.w.jobs.busy(FRAME):
            self.frame_dirty = True
            return
        request = self.frame_request()
        if request is None:
            return
        result = self.result if self.ui.show_result.isChecked() else None
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
            if frame == self.ui.timeline.frame:
                self.ui.view.show_pair(pair[0], pair[1], ("Original", "Result"))
            return Message("DEBUG", f"frame {frame}")
        self.start_job(look_job(FRAME, f"Frame {frame}", self.w.jobs.runner, None, work,
                             self._current(shown)))

    # -- looks ------------------------------------------------------------------------------------
    def look(self, key: str, label: str, look: Look, done: Callable[[Any], Message],
             settings: Settings, roles: tuple[str, ...] = MODEL_ROLES,
             progress: bool = False) -> None:
        """Run `look` as the one look job, once the models for `roles` are here; a look asked
        for while another runs waits (a newer one of the same key replaces it)."""
        if self.w.jobs.busy(LOOK) or self.w.jobs.busy(DOWNLOAD):
            self.pending = [(k, s) for k, s in self.pending if k != key or not key]
            self.pending.append((key, lambda: self.look(key, label, look, done, settings,
                                                       roles, progress)))
            return

        def start() -> None:
            self.activity(f"{label}…")
            self.rates.pop(LOOK, None)
            self.start_job(look_job(LOOK, label, self.w.jobs.runner, settings, look,
                                 self._current(done),
                                 self._look_progress if progress else None))
        self.with_models(settings, roles, start)

    def sources_changed(self, paths: list[Path]) -> None:
        self.pending_thumbnails += [p for p in paths if p not in self.thumbnailed
                                    and p not in self.pending_thumbnails]
        self.thumbnailed.update(paths)
        self.w.remember()
        self.next_thumbnail()

    def next_thumbnail(self) -> None:
        if not self.pending_thumbnails or self.w.jobs.busy(LOOK):
            return
        try:
            settings = self.settings()
        except FacefuseError as exc:
            self.ui.log.say(f"No thumbnails while the settings are refused: {exc}", "ERROR")
            return
        path = self.pending_thumbnails.pop(0)

        def shown(result: tuple[Path, int]) -> Message:
            self.ui.sources.set_thumbnail(path, *result)
            return Message("INFO", f"{path.name}: {result[1]} face(s)")
        self.look("", f"Thumbnail of {path.name}",
                  lambda p, _r, _c: source_preview(path, p.settings, pipeline=p), shown,
                  settings, LOOK_ROLES)

    def find_people(self) -> None:
        """The shot's people at once from its plan (analysing it the first time, with
        progress), then its review: flags and thumbnails (rendering the contact sheet)."""
        request = self.checked_request()
        if request is None:
            return
        span = (self.w.review.first, self.w.review.last)

        def planned(plan: Any) -> Message:
            self.w.set_review(review_from_plan(plan, *span), keep_range=True)
            self._review(request)
            return Message("INFO", f"{len(plan.people)} people in frames {span[0]}-{span[1]}: "
                                   "now the review (flags, thumbnails)")
        self.look("plan", "Finding people (analysing the shot the first time)",
                  lambda p, report, cancelled: plan_shot(request, p, report, cancelled),
                  planned, request.settings, progress=True)

    def _review(self, request: RenderRequest) -> None:
        folder = _review_folder(request)

        def shown(result: Any) -> Message:
            review = with_boxes(review_from_report(result.report, result.folder), self.w.review)
            self.w.set_review(review, keep_range=True)
            flagged = (f"flagged {ranges_text(review.flagged)}" if review.flagged
                       else "nothing flagged")
            cuts = len(review.cuts)
            return Message("INFO", f"Review of {review.first}-{review.last}: {len(review.people)}"
                                   f" people, {cuts} cut{'s' if cuts != 1 else ''}, {flagged}")
        self.look("review", "Reviewing the shot (flags, thumbnails)",
                  lambda p, report, cancelled: write_review(request, folder, p, on_phase=report,
                                                            cancel=cancelled),
                  shown, request.settings, progress=True)

    def replan(self) -> None:
        """After a person got a source or was skipped: who is swapped now, on the timeline."""
        self.preview_at = None
        if not self.w.review.planned:
            return
        request = self.checked_request()
        if request is None:
            return

        def shown(plan: Any) -> Message:
            self.w.set_review(review_with_plan(self.w.review, plan), keep_range=True)
            swapped = sum(p.swapped for p in plan.people)
            return Message("INFO", f"{swapped} of {len(plan.people)} people swapped")
        self.look("replan", "Updating who is swapped",
                  lambda p, report, cancelled: plan_shot(request, p, report, cancelled),
                  shown, request.settings, progress=True)

    def preview(self) -> None:
        """The frame under the playhead as the render makes it, beside the original."""
        if not self.ui.sources.paths() and not self.w.assigned:
            self.ui.log.say("Add a source photo first (Sources > Add…)", "ERROR")
            return
        request, frame = self.checked_request(), self.ui.timeline.frame
        if request is None:
            return

        def both(p: Any, report: Any, _cancelled: Any) -> tuple[Path, Path]:
            return (frame_picture(request, frame),
                    preview_frame(request, frame, pipeline=p, on_phase=report))

        def shown(pair: tuple[Path, Path]) -> Message:
            self.preview_at = (frame, *pair)
            self.ui.show_result.setChecked(False)
            if frame == self.ui.timeline.frame:
                self.ui.view.show_pair(*pair)
            return Message("INFO", f"Preview of frame {frame}: drag the divider to compare")
        self.look("preview", f"Preview of frame {frame} (the render's own pixels)", both, shown,
                  request.settings, progress=True)

    # -- models -----------------------------------------------------------------------------------
    def with_models(self, settings: Settings, roles: tuple[str, ...],
                    then: Callable[[], None]) -> None:
        """then() once the models `roles` need are here (downloads.with_models)."""
        with_models(self, settings, roles, then)

    def _look_progress(self, job: Job, item: Any) -> None:
        if not isinstance(item, PhaseProgress):
            return
        rate = self.rates.setdefault(LOOK, PhaseRate(item.done))
        bar = self.ui.activity
        bar.setMaximum(max(1, item.total))
        bar.setValue(item.done)
        _, left = rate.fps_eta(item.done, item.total)
        eta = "" if left is None else f" · {_clock(left)} left"
        unit = "steps" if item.phase == "pictures" else "frames"  # a review's contact sheet
        bar.setFormat(f"{item.phase}: {item.done}/{item.total} {unit}{eta}")

    # -- render -----------------------------------------------------------------------------------
    def start_render(self, ranges: tuple[tuple[int, int], ...] | None = None,
                     force: bool = False) -> None:
        """Render the clip (the in..out range when set; `ranges` instead when given)."""
        start_render(self, ranges if ranges is not None else self.w.render_ranges(), force)

    def rerender_flagged(self) -> None:
        review = self.w.review
        if not review.flagged:
            self.ui.log.say("Nothing is flagged: Find people shows the flags")
            return
        self.ui.log.say(f"Re-rendering the flagged frames {ranges_text(review.flagged)}")
        self.start_render(review.flagged, force=True)

    def cancel_render(self) -> None:
        if self.w.jobs.cancel(RENDER):
            self.ui.status.setText("Cancelling…")

    # -- jobs -------------------------------------------------------------------------------------
    def start_job(self, job: Job) -> None:
        try:
            self.w.jobs.start(job)
        except (FacefuseError, HostError) as exc:
            self.ui.log.say(str(exc), "ERROR")
            self.activity(None)

    def activity(self, text: str | None) -> None:
        """Say what a job that may take seconds is doing (None: nothing is)."""
        bar = self.ui.activity
        self.ui.activity_label.setText("Working:" if text is not None else "")
        bar.setEnabled(text is not None)
        bar.setMaximum(0 if text is not None else 1)  # busy until the job says how far it is
        bar.setValue(0)
        bar.setFormat(text or "")

    def job_finished(self, kind: str, message: Message) -> None:
        if message.level != "DEBUG":
            self.ui.log.say(message.text, message.level)
        if kind == RENDER:
            render_finished(self, message)
        if kind in (LOOK, DOWNLOAD) and not self.w.jobs.busy(LOOK) \
                and not self.w.jobs.busy(DOWNLOAD):
            self.activity(None)
            if message.level == "ERROR":
                self.pending = []
        if kind == FRAME and self.frame_dirty:
            self.frame_dirty = False
            self.show_frame()
        if kind in (LOOK, DOWNLOAD) and not self.w.jobs.busy(LOOK):
            if self.pending:
                self.pending.pop(0)[1]()
            else:
                self.next_thumbnail()


def _clock(seconds: float) -> str:
    return f"{int(seconds) // 60}:{int(seconds) % 60:02d}"


def _scrub_folder(settings: Settings) -> Path:
    return CacheLayout.at(settings.cache_dir).previews / "scrub"


def _review_folder(request: RenderRequest) -> Path:
    """Where the panel keeps the review of a clip (in the cache: not beside the media)."""
    key = hashlib.sha256(f"{request.input}|{request.frames}".encode()).hexdigest()[:16]
    return CacheLayout.at(request.settings.cache_dir).previews / f"review-{key}"
