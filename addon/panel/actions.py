"""The window's engine jobs (worker.Jobs): the requests the form makes, starting a job, the
activity bar, and what a finished job starts next.

Job kinds: "frame" (frames.py: the clip's frame under the playhead, and the result's), "look"
(looks.py: thumbnails, Find people, who is swapped, Preview: one at a time, a look asked for
while another runs waits for it; live.py's swap of the playhead's frame runs as a look once
no other waits), "download" (downloads.py: missing models, with size and time
left) and "render" (rendering.py). Any job that can take seconds shows itself in the activity
bar; a new clip makes the old clip's outcomes stale (`generation`), so they are dropped.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from facefuse import (
    FacefuseError,
    FrameSpec,
    HostError,
    InputSpec,
    Job,
    Message,
    OutputSpec,
    PhaseProgress,
    PhaseRate,
    RenderRequest,
    Settings,
)

from . import consent, frames, looks
from .downloads import DOWNLOAD, with_models
from .frames import FRAME
from .host import OPEN_HINT, Clip
from .live import LiveSwap
from .looks import LOOK
from .rendering import RENDER, render_finished, start_render
from .review import ranges_text
from .roles import Result, Shot


class Actions:
    """The window's jobs (see the module docstring): roles.Controller, given the shown shot."""

    def __init__(self, window: Shot) -> None:
        self.w, self.ui = window, window.ui
        self.generation = 0
        self.pending: list[tuple[str, Callable[[], None]]] = []  # (key, start) of waiting looks
        self.pending_thumbnails: list[Path] = []
        self.thumbnailed: set[Path] = set()
        self.frame_dirty = False
        self.open_waiting: tuple[Clip, bool] | None = None  # a clip opened while FRAME ran
        self.preview_at: tuple[int, Path, Path] | None = None
        self.result: Result | None = None
        self.rates: dict[str, PhaseRate] = {}
        self.render_steps: dict[str, PhaseProgress] = {}
        self.live = LiveSwap(self)

    def reset(self) -> None:
        """Forget the shown clip's preview, result and running looks' outcomes."""
        self.generation += 1
        self.pending = []
        self.w.jobs.cancel(LOOK)
        self.w.jobs.cancel(FRAME)
        self.live.reset()
        self.open_waiting = None
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
        """The look request of the shown clip with the user's people choices and consent
        (the render's own: rendering.render_request)."""
        clip = self.w.host.clip
        if clip is None:
            raise HostError(OPEN_HINT)
        return RenderRequest(sources=tuple(self.ui.sources.paths()),
                             input=InputSpec(clip.input, start_number=clip.start_number),
                             output=OutputSpec(str(clip.folder / "look.####.png")),
                             settings=settings or self.settings(),
                             frames=FrameSpec(range=clip.frames), plan=self.w.people_choices(),
                             policy=consent.policy_choices(self.w))

    def casting_problem(self) -> str | None:
        """Why Preview and Render cannot swap yet (one line), or None: with no photo under
        Sources, every person the plan swaps needs their own source (before Find people: at
        least one person given one)."""
        if self.ui.sources.paths():
            return None
        w = self.w
        if not w.review.planned:
            return None if w.assigned else ("Add a source photo (Sources > Add…), or Find "
                                            "people and give each person their own source")
        bare = [p.person_id for p in w.review.people
                if p.swapped and p.person_id not in w.assigned and p.person_id not in w.skipped]
        if not bare:
            return None if w.assigned or not w.review.people else \
                "Nobody is swapped: give a person their own source, or add a source photo"
        names = ", ".join(bare)
        one = len(bare) == 1
        return (f"{names} {'is' if one else 'are'} swapped but {'has' if one else 'have'} no "
                f"source photo: give {'them their' if one else 'each their'} own (Source… on "
                "the card), skip them, or add a photo under Sources for everyone")

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
        if kind == FRAME and message.level == "ERROR" and not self.w.jobs.busy(LOOK) \
                and not self.w.jobs.busy(DOWNLOAD):
            self.activity(None)  # a refused clip leaves no busy bar behind
        if kind == FRAME and self.open_waiting is not None:
            clip, counted = self.open_waiting
            self.open_waiting = None
            frames.open_clip(self, clip, counted)
        elif kind == FRAME and self.frame_dirty:
            self.frame_dirty = False
            frames.show_frame(self)
        if kind in (LOOK, DOWNLOAD) and not self.w.jobs.busy(LOOK):
            if self.pending:
                self.pending.pop(0)[1]()
            else:
                looks.next_thumbnail(self)
        if kind in (LOOK, DOWNLOAD):
            self.live.resume()  # the live swap waits for the looks
