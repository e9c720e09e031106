"""`render`: a shot (video or image sequence) in, swapped frames out. One entry point for hosts.

Two passes. Pass 1 (analysis) decodes the whole requested range, detects and embeds every face,
and caches that per input content; tracks, the shot-level identity choice and landmark smoothing
are derived from it, so every chunk of a farm render makes the same decisions. Pass 2 decodes
only the frames still to do, swaps them and writes them, reading, inference and writing running
in three threads joined by small bounded queues, so memory does not grow with shot length.

Image-sequence outputs are written frame by frame (temporary name, then rename) and resumable:
a frame whose output exists, reads completely and carries the same render fingerprint is skipped.
Video outputs are written in one pass over the requested range to a temporary file that is
renamed when complete; they cannot be chunked or resumed (render a sequence for farm work).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Generator, Iterable, Iterator, Mapping, Sequence
from contextlib import closing
from dataclasses import replace
from pathlib import Path
from types import MappingProxyType
from typing import Any

import numpy as np

from ..cache.hashes import HashMemo
from ..cache.locking import FileLock, LockWaitCancelled
from ..color import input_conversion
from ..io.analysis_pictures import AnalysisPicture
from ..io.video import DecodeFailure
from ..models.manifest import ROLES
from ..pipeline import Pipeline
from ..runtime.memory import returning_freed_memory
from ..timing import RenderTimings, StageClock
from ..types import Face, SourceIdentity
from . import provenance
from .analysis import (
    PLAN_VERSION,
    AnalysisCache,
    AnalysisKey,
    ShotAnalysis,
    analyse_frames,
    missing_frames,
    plan_targets,
)
from .analysis_pass import FrameAnalysis
from .frames import plan_frames
from .inputs import ShotInput, open_input
from .outputs import FrameWriter, Processed, open_writer
from .request import (
    CancelCheck,
    FrameReport,
    PhaseCallback,
    PhaseProgress,
    ProgressCallback,
    RenderRequest,
    RenderSummary,
)
from .smoothing import OneEuroParams
from .streaming import prefetch, stream

log = logging.getLogger(__name__)

ANALYSIS_LOCK_STALE_S = 120.0


def render(request: RenderRequest, on_progress: ProgressCallback | None = None,
           cancel: CancelCheck | None = None,
           on_phase: PhaseCallback | None = None,
           timings: RenderTimings | None = None,
           pipeline: Pipeline | None = None) -> RenderSummary:
    """Render a shot (see the module docstring); the CLI, Blender, Resolve and farms call this.

    on_progress(FrameReport) is called once per frame: from the calling thread for frames skipped
    as already done, from the writer thread for rendered ones.
    on_phase(PhaseProgress) tells how far each phase (analysis, swap, encode) has got: from the
    calling thread for analysis and encode, from the writer thread for swap.
    cancel() is checked between frames; cancelling leaves only complete output frames (and no
    video file). User errors raise FacefuseError subclasses before any output is written.
    timings: when given, every stage of every frame, session creation and inference are timed
    into it (see timing.RenderTimings; `facefuse bench` reads it); session creation and
    inference only when render() builds the Pipeline itself.
    pipeline: one built from request.settings that the caller keeps (a farm worker's, so its
    sessions load once per process); it is used and left open. None: one is built and closed.
    """
    started = time.perf_counter()
    if pipeline is not None and pipeline.settings != request.settings:
        raise ValueError("the pipeline given to render() was built from other settings")
    shot = open_input(request.input, request.start_number, request.conform_vfr,
                      request.settings.threads)
    try:
        job = RenderJob(request, shot, on_progress or _ignore, on_phase or _ignore, timings)
        with returning_freed_memory():  # a flat peak however long the shot (runtime.memory)
            if pipeline is not None:
                finished = job.run(pipeline, cancel or _never)
            else:
                with Pipeline(request.settings, timer=timings) as own:
                    finished = job.run(own, cancel or _never)
    finally:
        shot.close()
    counts = job.counts
    stopped_by_failure = request.fail_fast and bool(counts.failed)
    warnings = _warnings(request, counts)
    for warning in warnings:
        log.warning("%s", warning)
    return RenderSummary(frames=len(job.frames.rendered), swapped=counts.swapped,
                         no_face=counts.no_face, skipped=counts.skipped,
                         failed=tuple(counts.failed), seconds=time.perf_counter() - started,
                         cancelled=not finished and not stopped_by_failure,
                         unselected=counts.unselected, warnings=warnings,
                         analysis_cached=job.analysis_cached)


def _warnings(request: RenderRequest, counts: Counts) -> tuple[str, ...]:
    """What the user must hear although nothing failed: faces found but nothing swapped."""
    if counts.swapped or not counts.unselected:
        return ()
    settings = request.settings
    why = (f"selector {settings.selector}, similarity {settings.similarity}"
           if settings.selector == "reference" else f"selector {settings.selector}")
    return (f"faces were found in {counts.unselected} frames but none was swapped ({why}); "
            + "those frames were written unchanged",)


class Counts:
    """Per-run tallies, touched only by the thread that settles frames."""

    def __init__(self) -> None:
        self.swapped = self.no_face = self.skipped = self.unselected = 0
        self.failed: list[tuple[int, str]] = []


class RenderJob:
    """The checked-up-front plan of one render and the code that carries it out; the one place
    that counts frames and reports them to the host."""

    def __init__(self, request: RenderRequest, shot: ShotInput,
                 report: ProgressCallback, phase: PhaseCallback,
                 timings: RenderTimings | None = None) -> None:
        self.request, self.shot, self.report, self.phase = request, shot, report, phase
        self.timings = timings if timings is not None else RenderTimings()
        self.frames = plan_frames(shot.frame_numbers, request.frames, request.chunk, shot.label,
                                  contiguous=shot.is_sequence,
                                  chunk_frames=request.chunk_frames)
        self.colour, self.colour_name = input_conversion(request.colorspace, shot.suffix,
                                                         shot.pixel_type)
        self.writer: FrameWriter = open_writer(request, shot, self.frames.rendered, self.colour)
        self.counts = Counts()
        self.found: dict[int, int] = {}  # faces the analysis found, per frame number
        # Stage times of frames analysed in this run (not cached), until the frame is reported.
        self.analysis_ms: dict[int, Mapping[str, float]] = {}
        self.analysis_cached = 0  # frames whose analysis came from the cache
        self.settled = 0
        self.todo_total = 0

    # -- the run ----------------------------------------------------------------------------
    def run(self, pipeline: Pipeline, cancelled: CancelCheck) -> bool:
        """Pass 1 and pass 2; False when cancelled or stopped early by --fail-fast."""
        pipeline.models.require_models()
        pipeline.check_options()
        identity = pipeline.source_identity(self.request.sources)
        memo = pipeline.hashes
        content = self.shot.content_sha256(memo)
        fingerprint = self._fingerprint(pipeline, identity, content, memo)
        metadata = provenance.provenance(self.request.settings, pipeline.models.used(),
                                         identity, fingerprint, self.shot.label,
                                         full=self.request.provenance == "full")
        todo = self._todo(fingerprint)
        if not todo:
            return True
        analysis = self._analysis(pipeline, content, cancelled)
        self.found = {n: len(faces) for n, faces in analysis.faces.items()}
        with self.timings.measure("track"):
            targets = plan_targets(analysis, self.request.settings.selector,
                                   pipeline.reference_embedding(),
                                   self.request.settings.similarity,
                                   float(self.shot.rate) if self.shot.rate else None,
                                   self._smoothing())
        return self._pass_two(pipeline, identity, targets, todo, metadata, cancelled)

    def _smoothing(self) -> OneEuroParams | None:
        if not self.request.smoothing:
            return None
        defaults = OneEuroParams()
        return OneEuroParams(
            min_cutoff=self.request.smoothing_min_cutoff or defaults.min_cutoff,
            beta=defaults.beta if self.request.smoothing_beta is None else
            self.request.smoothing_beta, d_cutoff=defaults.d_cutoff)

    def _fingerprint(self, pipeline: Pipeline, identity: SourceIdentity, content_sha256: str,
                     memo: HashMemo) -> str:
        roles = [r for r in ROLES if r != "enhancer" or self.request.settings.enhancer]
        models = {role: pipeline.models.sha256(role) for role in roles}
        references = [memo.sha256(Path(p)) for p in self.request.settings.reference_images]
        memo.flush()
        analysed = self.frames.analysed
        extra = {"smoothing": repr(self._smoothing()), "frames": (analysed[0], analysed[-1]),
                 "plan": PLAN_VERSION,
                 "start_number": self.request.start_number, "input": content_sha256,
                 "reference": references, "enhancer": bool(self.request.settings.enhancer),
                 "conform_vfr": self.request.conform_vfr}
        return provenance.fingerprint(self.request.settings, models, identity, self.colour_name,
                                      extra)

    def _todo(self, fingerprint: str) -> tuple[int, ...]:
        todo = []
        for number in self.frames.rendered:
            if not self.request.overwrite and self.writer.finished(number, fingerprint):
                self.counts.skipped += 1
                self.report(FrameReport(number, "skipped"))
            else:
                todo.append(number)
        if self.counts.skipped:
            log.info("%d frames already rendered with these settings; skipping them",
                     self.counts.skipped)
        return tuple(todo)

    def _settle(self, items: Iterable[Processed]) -> None:
        """Count and report frames the writer has settled (all their files are in place)."""
        for settled in items:
            item = self._timed_item(settled)
            if item.frame is None:
                self.counts.failed.append((item.number, item.error))
                log.error("frame %d failed: %s", item.number, item.error)
                self.report(FrameReport(item.number, "failed", 0, item.ms, item.error,
                                        self.found.get(item.number, 0)))
            else:
                found = self.found.get(item.number, 0)
                if item.faces:
                    self.counts.swapped += 1
                else:
                    self.counts.no_face += 1
                    self.counts.unselected += int(found > 0)
                self.report(FrameReport(item.number, "swapped" if item.faces else "no_face",
                                        item.faces, item.ms, found=found))
            self.settled += 1
            self.phase(PhaseProgress("swap", self.settled, self.todo_total))

    def _timed_item(self, item: Processed) -> Processed:
        """Record a settled frame's pass-2 stage times; the item with its analysis stage times
        (this run's, prefixed "analysis." except detect and embed) added for the host."""
        self.timings.frame("swap", item.ms)
        if item.frame is not None:
            self.timings.mark("first_output")
        analysed = self.analysis_ms.pop(item.number, None)
        if not analysed:
            return item
        ms = {(k if k in ("detect", "embed") else f"analysis.{k}"): v for k, v in analysed.items()}
        return replace(item, ms=MappingProxyType({**ms, **item.ms}))

    # -- pass 1 -----------------------------------------------------------------------------
    def _analysis(self, pipeline: Pipeline, content_sha256: str,
                  cancelled: CancelCheck) -> ShotAnalysis:
        settings = self.request.settings
        key = AnalysisKey(content_sha256, pipeline.models.identity("detector"),
                          pipeline.models.identity("recogniser"), settings.detector_size_px,
                          settings.detector_score, self.colour_name)
        cache = AnalysisCache(pipeline.cache.analysis)
        try:
            cache.directory.mkdir(parents=True, exist_ok=True)
        except OSError as exc:  # a read-only cache only costs time: the lock says so
            log.warning("cannot create the analysis cache %s (%s); going on without it",
                        cache.directory, exc.strerror or exc)
        # Chunks of one shot started together wait here for the first one's analysis.
        lock = FileLock(cache.path(key).with_suffix(".lock"), ANALYSIS_LOCK_STALE_S,
                        cancelled=cancelled, what=f"the analysis of {self.shot.label}")
        wanted = self.frames.analysed
        try:
            with lock:
                analysis = cache.load(key)
                missing = missing_frames(wanted, analysis.faces)
                self.analysis_cached = len(wanted) - len(missing)
                self.phase(PhaseProgress("analysis", len(wanted) - len(missing), len(wanted)))
                if missing:
                    analysis = analysis.merged(self._analyse(pipeline, missing, cancelled, lock))
                    if not cancelled():
                        cache.save(key, analysis)
        except LockWaitCancelled:
            return ShotAnalysis()
        return analysis.over(wanted)

    def _analyse(self, pipeline: Pipeline, missing: Sequence[int], cancelled: CancelCheck,
                 lock: FileLock) -> ShotAnalysis:
        log.info("analysing %d frames (detection, tracking)", len(missing))
        total = len(self.frames.analysed)
        done = [total - len(missing)]  # a cell the callback below counts in
        clock = StageClock()  # detect and embed (decode and colour come with each frame)
        analysis = FrameAnalysis(pipeline, self.colour, clock)
        rendered = set(self.frames.rendered)
        read_ms: dict[int, Mapping[str, float]] = {}
        current: list[Any] = [None]  # the picture whose frame analyse_frames is handed

        def frames() -> Generator[tuple[int, Any], None, None]:
            # Decoding runs ahead on a worker thread, overlapping detection.
            with closing(prefetch(self._analysis_pictures(pipeline, missing))) as read:
                for number, picture, ms in read:
                    read_ms[number], current[0] = ms, picture
                    yield number, (picture.small if isinstance(picture, AnalysisPicture)
                                   else picture)

        def analyse(_frame: np.ndarray) -> tuple[Face, ...]:
            lock.refresh()
            return analysis.faces(current[0])

        def analysed(number: int) -> None:
            done[0] += 1
            ms = _sum_ms(read_ms.pop(number, {}), clock.take())
            self.timings.frame("analysis", ms)
            if number in rendered:
                self.analysis_ms[number] = ms
            self.phase(PhaseProgress("analysis", done[0], total))

        with closing(frames()) as source:  # a cancel stops the reader at once
            # the cut signatures come from the picture detection sees (small or full, in display
            # colour: colour is only set for full frames of colour-managed shots)
            return analyse_frames(source, analyse, cancelled, on_frame=analysed,
                                  colour=self.colour)

    def _analysis_pictures(self, pipeline: Pipeline, numbers: Sequence[int]
                           ) -> Iterator[tuple[int, Any, Mapping[str, float]]]:
        """The pictures pass 1 analyses, with their decode and colour times: small ones where
        the input allows (see io.analysis_pictures), full frames for colour-managed shots."""
        clock = StageClock()
        if self.colour is None:
            side = max(pipeline.models.detector().input_size)
            pictures = self.shot.read_analysis(numbers, side, clock)
        else:
            pictures = self.shot.read(numbers, clock)
        for number, picture in pictures:
            yield number, picture, clock.take()

    # -- pass 2 -----------------------------------------------------------------------------
    def _pass_two(self, pipeline: Pipeline, identity: SourceIdentity,
                  targets: Mapping[int, tuple[Face, ...]], todo: Sequence[int],
                  metadata: Mapping[str, str], cancelled: CancelCheck) -> bool:
        fail_fast, colour = self.request.fail_fast, self.colour
        wants_matte = bool(self.request.matte or self.request.patch)
        self.todo_total = len(todo)
        # Set on this (the inference) thread as soon as a frame fails, so with --fail-fast no
        # frame after it is processed, let alone written; frames before it still complete.
        failed_here: list[int] = []

        def process(item: tuple[int, Any, Mapping[str, float]]) -> Processed:
            number, frame, read_ms = item
            if isinstance(frame, DecodeFailure):
                failed_here.append(number)
                return Processed(number, None, None, 0, read_ms, frame.reason)
            # the frame is this pass's own (see _timed): paste into it, matte only if written
            result = pipeline.swap_faces(frame, identity, targets.get(number, ()), colour,
                                         in_place=True, matte=wants_matte)
            return Processed(number, result.frame, result.matte, len(result.swapped),
                             MappingProxyType({**read_ms, **result.timings_ms}))

        def sink(item: Processed) -> None:
            self._settle(self.writer.write(item, metadata))

        def stop() -> bool:
            return cancelled() or (fail_fast and bool(failed_here or self.counts.failed))

        finished = False
        try:
            finished = stream(_timed(self.shot, todo), process, sink, stop)
        finally:
            self.phase(PhaseProgress("encode", 0, 1))
            stopped = fail_fast and bool(failed_here or self.counts.failed)
            with self.timings.measure("encode_finish"):
                self._settle(self.writer.finish(finished and not stopped))
            self.phase(PhaseProgress("encode", 1, 1))
        return finished and not (fail_fast and bool(failed_here))


def _timed(shot: ShotInput, numbers: Sequence[int]
           ) -> Iterator[tuple[int, Any, Mapping[str, float]]]:
    """The frames with the milliseconds each took to decode (and convert to BGR: "colour");
    each frame is an array of its own (see VideoSource.read), which pass 2 pastes into."""
    clock = StageClock()
    for number, frame in shot.read(numbers, clock):
        yield number, frame, clock.take()


def _sum_ms(*parts: Mapping[str, float]) -> Mapping[str, float]:
    """Stage times added up over several clocks' snapshots."""
    total: dict[str, float] = {}
    for part in parts:
        for stage, ms in part.items():
            total[stage] = round(total.get(stage, 0.0) + ms, 3)
    return MappingProxyType(total)


def _ignore(_report: FrameReport | PhaseProgress) -> None:
    return None


def _never() -> bool:
    return False
