"""One render, step by step: frame selection, outputs, fingerprint, analysis, pass 2.

render.render() is the public entry point; this module holds its working parts.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from . import provenance
from .analysis import AnalysisCache, AnalysisKey, analyse_frames, missing_frames, plan_targets
from .content_hash import HashMemo
from .embedding_cache import default_cache_dir
from .errors import InputError
from .geometry import DisplayConversion
from .io import sequences, video
from .io.video import DecodeFailure
from .locking import FileLock, LockWaitCancelled
from .render import CancelCheck, FrameReport, ProgressCallback, RenderRequest
from .render_outputs import Counts, FrameWriter, Processed, open_writer
from .shots import SequenceInput, ShotInput
from .smoothing import OneEuroParams
from .streaming import stream
from .types import Face, SourceIdentity

log = logging.getLogger(__name__)

ROLES = ("detector", "recogniser", "swapper", "enhancer")
ANALYSIS_LOCK_STALE_S = 120.0


def select_numbers(available: Sequence[int], frames: tuple[int, int] | None,
                   is_sequence: bool, label: str) -> tuple[int, ...]:
    """The input's frame numbers inside `frames` (inclusive); InputError when the range misses
    the input or, for a sequence, when files are missing inside it."""
    first, last = available[0], available[-1]
    lo, hi = frames if frames is not None else (first, last)
    if hi < first or lo > last:
        raise InputError(f"frames {lo}-{hi} are outside {label}, which has frames {first}-{last}")
    chosen = tuple(n for n in available if lo <= n <= hi)
    gaps = sequences.find_gaps(chosen) if is_sequence else ()
    if gaps:
        shown = ", ".join(str(n) for n in gaps[:8]) + (" ..." if len(gaps) > 8 else "")
        raise InputError(f"{label} has gaps: frame {shown} missing ({len(gaps)} in all); render "
                         "the ranges on either side with --frames, or fill the gap")
    return chosen


class RenderJob:
    """The checked-up-front plan of one render and the code that carries it out."""

    def __init__(self, request: RenderRequest, shot: ShotInput) -> None:
        self.request, self.shot = request, shot
        is_sequence = isinstance(shot, SequenceInput)
        self.analysis_numbers = select_numbers(shot.frame_numbers, request.frames, is_sequence,
                                               shot.label)
        self.numbers = (sequences.chunk_of(self.analysis_numbers, *request.chunk)
                        if request.chunk else self.analysis_numbers)
        self.colour, self.colour_name = self._colour()
        self.writer: FrameWriter = open_writer(request, shot, self.numbers, self.colour)

    # -- the run ----------------------------------------------------------------------------
    def run(self, pipeline: Any, report: ProgressCallback,
            cancelled: CancelCheck) -> tuple[Counts, bool]:
        counts = Counts()
        identity = pipeline.source_identity(self.request.sources)
        colour, colour_name = self.colour, self.colour_name
        memo = HashMemo(self._cache_dir(pipeline) / "hashes.json")
        content = self.shot.content_sha256(memo)
        fingerprint = self._fingerprint(pipeline, identity, colour_name, content, memo)
        metadata = provenance.provenance(self.request.settings, pipeline.models_used(), identity,
                                         fingerprint, self.shot.label)
        todo = self._todo(fingerprint, counts, report)
        if not todo:
            return counts, True
        detections = self._analysis(pipeline, colour, colour_name, content, cancelled)
        targets = plan_targets(detections, self.request.settings.selector,
                               pipeline.reference_embedding(), self.request.settings.similarity,
                               float(self.shot.rate) if self.shot.rate else None,
                               self._smoothing())
        return counts, self._pass_two(pipeline, identity, colour, targets, todo, metadata,
                                      counts, report, cancelled)

    def _colour(self) -> tuple[DisplayConversion | None, str | None]:
        requested = self.request.colorspace
        if requested is not None and requested.lower() == "none":
            return None, None
        from .color import ColourConverter, default_colorspace

        name = requested or default_colorspace(self.shot.suffix, self.shot.pixel_type)
        if name is None:
            return None, None
        converter = ColourConverter(name)
        return (None if converter.is_identity else converter), converter.input_space

    def _smoothing(self) -> OneEuroParams | None:
        if not self.request.smoothing:
            return None
        defaults = OneEuroParams()
        return OneEuroParams(
            min_cutoff=self.request.smoothing_min_cutoff or defaults.min_cutoff,
            beta=defaults.beta if self.request.smoothing_beta is None else
            self.request.smoothing_beta, d_cutoff=defaults.d_cutoff)

    def _fingerprint(self, pipeline: Any, identity: SourceIdentity, colour_name: str | None,
                     content_sha256: str, memo: HashMemo) -> str:
        roles = [r for r in ROLES if r != "enhancer" or self.request.settings.enhancer]
        models = {role: pipeline.model_sha256(role) for role in roles}
        references = [memo.sha256(Path(p)) for p in self.request.settings.reference_images]
        memo.flush()
        rendered_range = (self.analysis_numbers[0], self.analysis_numbers[-1])
        extra = {"smoothing": repr(self._smoothing()), "frames": rendered_range,
                 "start_number": self.request.start_number, "input": content_sha256,
                 "reference": references, "enhancer": bool(self.request.settings.enhancer),
                 "conform_vfr": self.request.conform_vfr}
        return provenance.fingerprint(self.request.settings, models, identity, colour_name,
                                      extra)

    def _todo(self, fingerprint: str, counts: Counts,
              report: ProgressCallback) -> tuple[int, ...]:
        todo = []
        for number in self.numbers:
            if not self.request.overwrite and self.writer.finished(number, fingerprint):
                counts.skipped += 1
                report(FrameReport(number, "skipped"))
            else:
                todo.append(number)
        if counts.skipped:
            log.info("%d frames already rendered with these settings; skipping them",
                     counts.skipped)
        return tuple(todo)

    @staticmethod
    def _cache_dir(pipeline: Any) -> Path:
        return default_cache_dir(pipeline.settings.cache_dir).parent / "analysis"

    # -- pass 1 -----------------------------------------------------------------------------
    def _analysis(self, pipeline: Any, colour: DisplayConversion | None,
                  colour_name: str | None, content_sha256: str,
                  cancelled: CancelCheck) -> dict[int, tuple[Face, ...]]:
        cache_dir = self._cache_dir(pipeline)
        settings = self.request.settings
        key = AnalysisKey(content_sha256,
                          pipeline.model_identity("detector"),
                          pipeline.model_identity("recogniser"), settings.detector_size_px,
                          settings.detector_score, colour_name)
        cache = AnalysisCache(cache_dir)
        cache_dir.mkdir(parents=True, exist_ok=True)
        # Chunks of one shot started together wait here for the first one's analysis.
        lock = FileLock(cache.path(key).with_suffix(".lock"), ANALYSIS_LOCK_STALE_S,
                        cancelled=cancelled)
        try:
            with lock:
                detections = cache.load(key)
                missing = missing_frames(self.analysis_numbers, detections)
                if missing:
                    detections = {**detections,
                                  **self._analyse(pipeline, colour, missing, cancelled, lock)}
                    if not cancelled():
                        cache.save(key, detections)
        except LockWaitCancelled:
            return {}
        return {n: detections.get(n, ()) for n in self.analysis_numbers}

    def _analyse(self, pipeline: Any, colour: DisplayConversion | None, missing: Sequence[int],
                 cancelled: CancelCheck, lock: FileLock) -> dict[int, tuple[Face, ...]]:
        log.info("analysing %d frames (detection, tracking)", len(missing))

        def analyse(frame: np.ndarray) -> tuple[Face, ...]:
            lock.refresh()
            return tuple(pipeline.embed_faces(frame, pipeline.detect(frame, colour), colour))

        return analyse_frames(self.shot.read(missing), analyse, cancelled)

    # -- pass 2 -----------------------------------------------------------------------------
    def _pass_two(self, pipeline: Any, identity: SourceIdentity,
                  colour: DisplayConversion | None, targets: Mapping[int, tuple[Face, ...]],
                  todo: Sequence[int], metadata: Mapping[str, str], counts: Counts,
                  report: ProgressCallback, cancelled: CancelCheck) -> bool:
        fail_fast = self.request.fail_fast

        def process(item: tuple[int, Any, float]) -> Processed:
            number, frame, decode_ms = item
            if isinstance(frame, DecodeFailure):
                return Processed(number, None, None, 0, {"decode": decode_ms}, frame.reason)
            result = pipeline.swap_faces(frame, identity, targets.get(number, ()), colour)
            return Processed(number, result.frame, result.matte, len(result.swapped),
                              {"decode": round(decode_ms, 3), **result.timings_ms})

        def sink(item: Processed) -> None:
            self.writer.write(item, metadata, counts, report)

        def stop() -> bool:
            return cancelled() or (fail_fast and bool(counts.failed))

        finished = False
        try:
            finished = stream(_timed(self.shot.read(todo)), process, sink, stop)
        finally:
            self.writer.finish(finished and not (fail_fast and counts.failed))
        return finished


def _timed(frames: Iterable[tuple[int, Any]]) -> Iterator[tuple[int, Any, float]]:
    """The frames with the milliseconds each took to decode."""
    iterator = iter(frames)
    while True:
        start = time.perf_counter()
        try:
            number, frame = next(iterator)
        except StopIteration:
            return
        yield number, frame, (time.perf_counter() - start) * 1000.0


def is_video_output(output: str) -> bool:
    return video.is_video_path(Path(output)) and not sequences.is_frame_pattern(output)
