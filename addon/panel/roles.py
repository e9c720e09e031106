"""What each part of the panel's controller is given: the shown shot (`Shot`, the window as the
jobs see it), the controller's own state and helpers (`Controller`, actions.Actions as
frames.py, looks.py, live.py, rendering.py and downloads.py see it), the live swap as the
others see it (`Live`) and a finished render (`Result`). Those modules import these instead of
the window or each other's controller, so the panel has no import circle."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from PySide6.QtGui import QPixmap

from facefuse import (
    Job,
    Message,
    PhaseProgress,
    PhaseRate,
    PlanChoices,
    RenderRequest,
    Settings,
    is_frame_pattern,
)

from .corrections import Corrections
from .host import Clip, Host
from .layout import PanelLayout
from .review import ShotReview
from .worker import Jobs


@dataclass(frozen=True, slots=True)
class Result:
    """A finished render: its output (sequence pattern or movie), the clip frames in it, and
    the render fingerprints of this shot's renders into it (the latest last): frames they made
    are the user's own work, which a render replaces without asking."""

    output: str
    first: int
    last: int
    made_by: tuple[str, ...] = ()

    @property
    def folder(self) -> Path:
        return Path(self.output).parent

    def frame_of(self, frame: int) -> int | None:
        """The output's number for clip frame `frame` (a movie counts from 1), or None."""
        if not self.first <= frame <= self.last:
            return None
        return frame if is_frame_pattern(self.output) else frame - self.first + 1


class Shot(Protocol):
    """The shown shot and the user's choices on it, as the window holds them."""

    base: Settings
    review: ShotReview
    assigned: dict[str, Path]
    skipped: set[str]
    consent: dict[str, Path]
    corrections: Corrections
    last_request: RenderRequest | None

    @property
    def ui(self) -> PanelLayout: ...

    @property
    def jobs(self) -> Jobs: ...

    @property
    def host(self) -> Host: ...

    def set_review(self, review: ShotReview, keep_range: bool = False) -> None:
        """Show `review` on the timeline and the people grid."""

    def frame_moved(self, frame: int, show: bool = True) -> None:
        """The playhead is at `frame` (show: fetch what it shows)."""

    def remember(self) -> None:
        """Save what the panel keeps between runs."""

    def render_ranges(self) -> tuple[tuple[int, int], ...] | None:
        """The in..out range when it is not the whole clip, else None."""

    def people_choices(self) -> PlanChoices:
        """The user's people choices as the request's plan choices: assign, skip, overrides."""

    def show_people(self) -> None:
        """Show the people's cards with the user's choices."""


class Live(Protocol):
    """The live swap of the playhead's frame (live.LiveSwap), as the other jobs use it."""

    def original(self, request: RenderRequest, frame: int) -> QPixmap | None: ...

    def keep_original(self, request: RenderRequest, frame: int, picture: QPixmap) -> None: ...

    def show(self, frame: int) -> None: ...

    def waiting(self) -> bool: ...

    def resume(self) -> None: ...

    def drop(self) -> None: ...

    def stop(self) -> None: ...


class Controller(Protocol):
    """The window's jobs (actions.Actions): their state and the helpers every job uses."""

    generation: int
    pending: list[tuple[str, Callable[[], None]]]
    pending_thumbnails: list[Path]
    thumbnailed: set[Path]
    frame_dirty: bool
    open_waiting: tuple[Clip, bool] | None
    preview_at: tuple[int, Path, Path] | None
    result: Result | None
    rates: dict[str, PhaseRate]
    render_steps: dict[str, PhaseProgress]

    @property
    def w(self) -> Shot: ...

    @property
    def ui(self) -> PanelLayout: ...

    @property
    def live(self) -> Live: ...

    def settings(self) -> Settings: ...

    def request(self, settings: Settings | None = None) -> RenderRequest: ...

    def casting_problem(self) -> str | None: ...

    def frame_request(self) -> RenderRequest | None: ...

    def checked_request(self) -> RenderRequest | None: ...

    def current(self, done: Callable[[Any], Message]) -> Callable[[Job, Any], Message]: ...

    def with_models(self, settings: Settings, roles: tuple[str, ...],
                    then: Callable[[], None]) -> None: ...

    def start_job(self, job: Job) -> None: ...

    def activity(self, text: str | None) -> None: ...
