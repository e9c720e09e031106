"""The window's engine jobs (worker.Jobs): the requests the form makes, starting a job, the
activity bar, and what a finished job starts next.

Job kinds: "frame" (frames.py: the clip's frame under the playhead, and the result's), "look"
(looks.py: thumbnails, Find people, who is swapped, Preview: one at a time, a look asked for
while another runs waits for it), "download" (downloads.py: missing models, with size and time
left) and "render" (rendering.py). Any job that can take seconds shows itself in the activity
bar; a new clip makes the old clip's outcomes stale (`generation`), so they are dropped.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from facefuse import (
    FacefuseError,
    HostError,
    Job,
    Message,
    PhaseProgress,
    PhaseRate,
    RenderRequest,
    Settings,
)

from . import frames, looks
from .downloads import DOWNLOAD, with_models
from .frames import FRAME
from .host import OPEN_HINT
from .looks import LOOK
from .rendering import RENDER, Result, render_finished, start_render
from .review import ranges_text

if TYPE_CHECKING:
    from .window import PanelWindow


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

    def current(self, done: Callable[[Any], Message]) -> Callable[[Job, Any], Message]:
        """on_done for a job of the shown clip: dropped once another clip is shown."""
        generation = self.generation

        def deliver(_job: Job, result: Any) -> Message:
            if generation != self.generation:
                return Message("DEBUG", "an outcome for the previous clip was dropped")
            return done(result)
        return deliver

    # -- models -----------------------------------------------------------------------------------
    def with_models(self, settings: Settings, roles: tuple[str, ...],
                    then: Callable[[], None]) -> None:
        """then() once the models `roles` need are here (downloads.with_models)."""
        with_models(self, settings, roles, then)

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
            frames.show_frame(self)
        if kind in (LOOK, DOWNLOAD) and not self.w.jobs.busy(LOOK):
            if self.pending:
                self.pending.pop(0)[1]()
            else:
                looks.next_thumbnail(self)
