"""The live swap: while the playhead moves, the frame under it is swapped in the background, and
every picture the viewer gets is kept for the session.

- The swap is Preview's: facefuse.preview_frame of the look request (Actions.request(): the
  clip's analysed range, the settings, sources and people choices a render of it takes), so it
  holds the render's pixels. The first swap of a request plans the shot first (plan_shot:
  analysing it, cancellable, its progress on the activity bar), as its render would.
- It runs as a "look" job (the looks share the runner's Pipeline, so they take turns): it waits
  for the user's looks, theirs wait for it, and the "frame" job showing the original runs beside
  it. The newest frame asked for is swapped next; a frame the playhead left before its swap
  started is never swapped; a swap that already runs (preview_frame cannot be stopped) finishes
  into the cache and is not shown over a newer frame.
- FrameCache: originals by (input, frame) and swaps by (request, frame), CACHE_BYTES at most,
  least recently shown out first; a cached picture shows at once, without a job.
- No swap before it can be made: a source photo (or a person's own), settings the engine takes,
  the models on disk. A live swap never downloads: the view says which models are missing
  (Preview or Render fetch them), and one that fails says why once, until the request changes.
"""

from __future__ import annotations

import hashlib
from collections import OrderedDict
from dataclasses import replace
from pathlib import Path
from typing import Any

from PySide6.QtGui import QImage, QPixmap

from facefuse import (
    MODEL_ROLES,
    CacheLayout,
    FacefuseError,
    HostError,
    InputError,
    Job,
    Message,
    PhaseProgress,
    RenderRequest,
    absent_models,
    load_overrides,
    missing_models,
    plan_shot,
    preview_frame,
)

from .downloads import DOWNLOAD
from .looks import LOOK
from .roles import Controller
from .worker import look_job

CACHE_BYTES = 2**30  # pixels at 4 bytes each: 128 pictures of 1920x1080, 32 of 3840x2160
SWAPPED = "Swapped"


class FrameCache:
    """Pictures by key, at most `limit` bytes of pixels, the least recently used out first."""

    def __init__(self, limit: int = CACHE_BYTES) -> None:
        self.limit = limit
        self.used = 0
        self.pictures: OrderedDict[tuple[Any, ...], QPixmap] = OrderedDict()

    def get(self, key: tuple[Any, ...]) -> QPixmap | None:
        picture = self.pictures.get(key)
        if picture is not None:
            self.pictures.move_to_end(key)
        return picture

    def put(self, key: tuple[Any, ...], picture: QPixmap) -> None:
        self.drop(key)
        self.pictures[key] = picture
        self.used += _bytes(picture)
        while self.used > self.limit and len(self.pictures) > 1:
            self.drop(next(iter(self.pictures)))

    def drop(self, key: tuple[Any, ...]) -> None:
        picture = self.pictures.pop(key, None)
        if picture is not None:
            self.used -= _bytes(picture)


class LiveSwap:
    """The window's live swaps and its cache of pictures (see the module docstring)."""

    def __init__(self, act: Controller) -> None:
        self.act = act
        self.cache = FrameCache()
        self.key = ""  # the request of the swap asked for last
        self.asked: int | None = None  # the frame whose swap the viewer waits for
        self.wanted: tuple[str, int, RenderRequest] | None = None  # the next to start
        self.job: Job | None = None
        self.running: tuple[str, int] | None = None  # the swap the job makes
        self.planned: set[str] = set()  # requests whose shot was planned (analysed)
        self.failed: dict[str, str] = {}  # request -> why its swap fails
        self.models_ok: set[str] = set()  # settings whose models are on disk

    # -- originals --------------------------------------------------------------------------------
    def original(self, request: RenderRequest, frame: int) -> QPixmap | None:
        return self.cache.get(_original_key(request, frame))

    def keep_original(self, request: RenderRequest, frame: int, picture: QPixmap) -> None:
        self.cache.put(_original_key(request, frame), picture)

    # -- swaps ------------------------------------------------------------------------------------
    def show(self, frame: int) -> None:
        """The swap of `frame` on the viewer: from the cache at once, else asked for (the
        viewer says why when there can be none)."""
        view = self.act.ui.view
        self.asked, self.wanted = None, None
        if view.mode == "original" or self.act.w.host.clip is None:
            view.set_note("")
            return
        why, key, request = self._request()
        self.key = key
        if request is None:
            view.set_note(why)
            return
        cached = self.cache.get(("swap", key, frame))
        if cached is not None:
            view.set_after(cached, SWAPPED, frame)
            view.set_note("")
            return
        if key in self.failed:
            view.set_note(f"No swap: {self.failed[key]}")
            return
        view.set_note(f"Swapping frame {frame}…" if key in self.planned else
                      "Analysing the shot for the first swap…")
        self.asked = frame
        if self.running != (key, frame):
            self.wanted = (key, frame, request)
            self.resume()

    def waiting(self) -> bool:
        """True while the viewer waits for the swap of the playhead's frame."""
        return self.asked is not None

    def resume(self) -> None:
        """Start the wanted swap once no look runs or waits (Actions.job_finished calls it)."""
        jobs = self.act.w.jobs
        if self.job is not None and self.job not in jobs.runner.jobs:  # it ended in an error
            if self.running is not None:
                self.failed[self.running[0]] = "it failed (the log says why)"
            self.job = self.running = self.asked = None
        if self.wanted is None or jobs.busy(LOOK) or jobs.busy(DOWNLOAD) or self.act.pending:
            return
        key, frame, request = self.wanted
        self.wanted = None
        self._start(key, frame, request)

    def drop(self) -> None:
        """The playhead's swap is not wanted (a running one finishes into the cache)."""
        self.asked = self.wanted = None

    def stop(self) -> None:
        """Original shown: nothing is swapped (a running analysis stops)."""
        self.asked = self.wanted = None
        if self.job is not None:
            self.job.cancel_event.set()

    def reset(self) -> None:
        """Another clip: its swaps are asked afresh (the cache stays; the running look is
        cancelled by Actions.reset)."""
        self.asked = self.wanted = None
        self.job = self.running = None

    def _request(self) -> tuple[str, str, RenderRequest | None]:
        """(why not, key, request) of the playhead's swap; request None: none can be made."""
        act = self.act
        problem = act.casting_problem()
        if problem is not None:
            return f"Result: {problem}", "", None
        try:
            request = act.request()
        except (FacefuseError, HostError) as exc:
            return f"Result: {exc}", "", None
        settings = repr(request.settings)
        if settings not in self.models_ok:
            absent = sorted({name for _, name in absent_models(request.settings, MODEL_ROLES)})
            lines = missing_models(request.settings, MODEL_ROLES)
            if absent:
                return (f"Result: {', '.join(absent)} not on this computer yet (Preview or "
                        "Render fetches the models)"), "", None
            if lines:
                return f"Result: {lines[0]}", "", None
            self.models_ok.add(settings)
        return "", _request_key(request), request

    def _start(self, key: str, frame: int, request: RenderRequest) -> None:
        act, plan_first = self.act, key not in self.planned
        folder = CacheLayout.at(request.settings.cache_dir).previews / "live"

        def work(pipeline: Any, report: Any, cancelled: Any) -> QImage | str | None:
            try:
                if plan_first:
                    plan_shot(request, pipeline, report, cancelled)
                if cancelled():
                    return None
                # one file per input, rewritten: read before the next swap writes it
                return QImage(str(preview_frame(request, frame, pipeline, folder)))
            except FacefuseError as exc:
                return None if cancelled() else str(exc)

        def done(result: QImage | str | None) -> Message:
            return self._done(key, frame, result)
        if plan_first:
            act.activity("Analysing the shot for the live swap…")
        self.running = (key, frame)
        self.job = look_job(LOOK, f"Swap of frame {frame}", act.w.jobs.runner, request.settings,
                            work, act.current(done), self._progress if plan_first else None)
        act.start_job(self.job)

    def _done(self, key: str, frame: int, result: QImage | str | None) -> Message:
        self.job = self.running = None
        if result is None:
            return Message("DEBUG", f"the swap of frame {frame} was stopped")
        view = self.act.ui.view
        current = key == self.key and frame == self.act.ui.timeline.frame
        if isinstance(result, str):
            first = key not in self.failed
            self.failed[key] = result
            if current:
                self.asked = None
                view.set_note(f"No swap: {result}")
            return Message("WARNING" if first else "DEBUG", f"No live swap: {result}")
        self.planned.add(key)
        picture = QPixmap.fromImage(result)
        self.cache.put(("swap", key, frame), picture)
        if current and view.mode != "original":
            self.asked = None
            view.set_after(picture, SWAPPED, frame)
            view.set_note("")
        return Message("DEBUG", f"swapped frame {frame}")

    def _progress(self, job: Job, item: Any) -> None:
        if not isinstance(item, PhaseProgress):
            return
        bar = self.act.ui.activity
        bar.setMaximum(max(1, item.total))
        bar.setValue(item.done)
        bar.setFormat(f"Live swap: {item.phase} {item.done}/{item.total} frames")


def _bytes(picture: QPixmap) -> int:
    return picture.width() * picture.height() * 4  # 32 bits a pixel, as Qt keeps them


def _original_key(request: RenderRequest, frame: int) -> tuple[Any, ...]:
    return ("original", request.input.path, request.input.start_number,
            request.input.colorspace, frame)


def _request_key(request: RenderRequest) -> str:
    """What decides a swap's pixels: the request (its output aside), the overrides' content and
    the source files' sizes and times (a source saved again is another request)."""
    parts = [repr(replace(request, output=replace(request.output, path="")))]
    files = [*request.sources, *(path for _, path in request.plan.assign)]
    for path in files:
        try:
            stat = Path(path).stat()
            parts.append(f"{path}:{stat.st_size}:{stat.st_mtime_ns}")
        except OSError:
            parts.append(f"{path}:absent")
    if request.plan.overrides is not None:
        try:  # read as the render reads it (never blocking on a FIFO, bounded)
            parts.append(load_overrides(Path(request.plan.overrides)).sha256)
        except InputError:
            parts.append("no overrides")
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()
