"""Pass 2 of a render (see shot.run.render): the frames still to do read, swapped and written.

Reading, inference and writing run in three threads joined by small bounded queues
(streaming.stream); with several swap workers (Settings.swap_workers, the Pipeline's
models.swap_workers) that many frames are swapped at once, each on a worker thread through its
own sessions of the batch-1 models, and handed to the writer in frame order. Nothing a frame's
swap reads depends on the frames before it (the Pipeline's caches are keyed by identity and
size alone, each frame's stage times its own), so its pixels are those one worker gives. The
reader hands on each frame once the analysis has made its targets final
(early_targets), so where pass 1 runs on a thread of its own the two passes end together: an error
or early stop on either side stops the other, and each error is raised as itself on the
render's thread. Each frame the writer settles is counted and reported by the render's tally.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from ...geometry import DisplayConversion
from ...io.video import DecodeFailure, Frame
from ...pipeline import Pipeline
from ...timing import StageClock
from ...types import FrameResult
from ..contract.inputs import ShotInput
from ..contract.request import CancelCheck, PhaseProgress
from ..output import provenance
from ..output.prints import FramePrints, Identities
from ..output.writers import FrameToWrite, FrameWriter
from ..plan.casting import default_identity
from ..plan.plan import PlannedFace
from .early_targets import AnalysisStopped, EarlyTargets
from .held_frames import HeldFrames
from .pass_one import PassOne
from .streaming import stream
from .tally import FrameTally

# What pass 2's reader hands to inference: number, frame (or failure), the read's stage
# milliseconds, the frame's planned faces and its fingerprint.
_ReadFrame = tuple[int, Any, Mapping[str, float], tuple[PlannedFace, ...], str]
# a held frame's read (shot.run.held_frames): pass 2 spent nothing decoding it
_NOT_DECODED: Mapping[str, float] = MappingProxyType({"decode": 0.0})


@dataclass(frozen=True)
class Swap:
    """How pass 2 swaps a frame: with `pipeline`, each planned face to its source's identity
    (`identities`), the input converted by `colour`; the full-frame matte only with `matte`
    (a matte or patch output)."""

    pipeline: Pipeline
    identities: Identities
    colour: DisplayConversion | None
    matte: bool

    @property
    def workers(self) -> int:
        """Frames swapped side by side (see the module docstring)."""
        return self.pipeline.models.swap_workers

    def frame(self, frame: Frame, planned: Sequence[PlannedFace]) -> FrameResult:
        """Swap the planned faces of `frame`, pasting into the frame itself (see _timed)."""
        targets = [face.face for face in planned]
        own = [self.identities[face.source] for face in planned]
        return self.pipeline.swap_frame(frame, default_identity(self.identities), targets,
                                        self.colour, matte=self.matte, identities=own)


@dataclass(frozen=True)
class Output:
    """Where pass 2's frames go: `writer`, every file carrying `metadata` (with `per_frame`,
    an image sequence's, each its frame's own fingerprint too), settled by `tally`."""

    writer: FrameWriter
    metadata: Mapping[str, str]
    per_frame: bool
    tally: FrameTally


class PassTwo:
    """What pass 2 works through (the frames to do of `shot`, their plan and fingerprints) and
    how it ends together with a pass-1 thread, if one runs (see the module docstring)."""

    def __init__(self, shot: ShotInput, plan: EarlyTargets, todo: Sequence[int],
                 prints: FramePrints, halt: threading.Event, pass_one: PassOne) -> None:
        self.shot, self.plan, self.todo, self.prints = shot, plan, todo, prints
        self.halt, self.pass_one = halt, pass_one
        self._errors: list[BaseException] = []  # of process() and sink(), when they raise

    def run(self, swap: Swap, out: Output, fail_fast: bool, cancelled: CancelCheck) -> bool:
        """Read, swap and write the frames to do; False when cancelled or stopped early by
        --fail-fast. Raises pass 1's error, or the one that made the reader give up."""
        tally = out.tally
        tally.todo_total = len(self.todo)
        # Set on the inference thread as soon as a frame fails, so with --fail-fast no frame
        # after it is processed, let alone written; frames before it still complete. With
        # several workers the frames already taken after it may be processed, and are not
        # written (see sink).
        failed_here: list[int] = []
        past_failure: list[bool] = []  # the writer reached a frame that failed (--fail-fast)

        def process(item: _ReadFrame) -> FrameToWrite:
            number, frame, read_ms, planned, fingerprint = item
            if isinstance(frame, DecodeFailure):
                failed_here.append(number)
                if fail_fast:
                    self.halt.set()  # a reader waiting on pass 1 gives up at once
                return FrameToWrite(number, None, None, 0, read_ms, frame.reason)
            # the frame is this pass's own (see _timed): paste into it, matte only if written
            result = swap.frame(frame, planned)
            return FrameToWrite(number, frame, result.matte, len(result.swapped),
                             MappingProxyType({**read_ms, **result.timings_ms}),
                             pasted=result.pasted, fingerprint=fingerprint)

        def sink(item: FrameToWrite) -> None:
            if past_failure:
                return  # a worker's frame after a failed one, with --fail-fast
            if fail_fast and item.number in failed_here:
                past_failure.append(True)
            own = {**out.metadata, provenance.FINGERPRINT: item.fingerprint} if out.per_frame \
                else out.metadata
            tally.settle(out.writer.write(item, own))
            if fail_fast and tally.counts.failed:
                self.halt.set()

        def stop() -> bool:
            return cancelled() or (fail_fast and bool(failed_here or tally.counts.failed))

        finished = False
        try:
            finished = stream(self._planned(tally), self.guard(process), self.guard(sink),
                              stop, workers=swap.workers)
        except AnalysisStopped:
            self.raise_pass_two_error()  # cancelled, --fail-fast or pass 1 failed: see below
        finally:
            self.end(finished)  # pass 1 ends before the output does
            stopped = fail_fast and bool(failed_here or tally.counts.failed)
            self._finish_output(out, finished and not stopped)
        self.raise_pass_one_error()
        return finished and not (fail_fast and bool(failed_here))

    def _finish_output(self, out: Output, went_through: bool) -> None:
        """Finish the writer: complete when pass 2 went through its frames (not stopped)
        and pass 1 raised nothing; reported as the encode phase."""
        tally = out.tally
        tally.phase(PhaseProgress("encode", 0, 1))
        with tally.timings.measure("encode_finish"):
            complete = went_through and self.pass_one_error is None
            tally.settle(out.writer.finish(complete))
        tally.phase(PhaseProgress("encode", 1, 1))

    def _planned(self, tally: FrameTally) -> Iterator[_ReadFrame]:
        """The frames (see _timed) with their targets, each once its targets are final (the
        reader thread waits for the analysis here; AnalysisStopped when they will not be)."""
        plan = self.plan
        for number, frame, ms in _timed(self.shot, self.todo, self.pass_one.held):
            targets = plan.targets(number)
            tally.found[number] = plan.feed.found(number)
            assert plan.plan is not None  # made by targets()
            if number in plan.plan.corrected:
                tally.corrected.add(number)
            yield number, frame, ms, targets, self.prints.of(plan.plan, number)

    def guard(self, step: Callable[[Any], Any]) -> Callable[[Any], Any]:
        """`step`, halting pass 1 (and a reader waiting on it) when it raises."""
        def guarded(item: Any) -> Any:
            try:
                return step(item)
            except BaseException as exc:
                self._errors.append(exc)
                self.halt.set()
                raise
        return guarded

    @property
    def pass_one_error(self) -> BaseException | None:
        """Pass 1's exception, if it raised one."""
        return self.pass_one.error

    def end(self, finished: bool) -> None:
        """Wait for pass 1: it completes the analysis (and caches it) when pass 2 went through
        its frames, and stops at its next frame otherwise."""
        if not finished:
            self.halt.set()
        self.pass_one.join()
        self.pass_one.held.close()

    def raise_pass_two_error(self) -> None:
        """Raise the writer's error that made the reader give up waiting, if there was one."""
        if self._errors:
            raise self._errors[0]

    def raise_pass_one_error(self) -> None:
        if self.pass_one_error is not None:
            raise self.pass_one_error


def _timed(shot: ShotInput, numbers: Sequence[int], held: HeldFrames
           ) -> Iterator[tuple[int, Frame | DecodeFailure, Mapping[str, float]]]:
    """The frames, those pass 1 holds on first (shot.run.held_frames: only where pass 1 ran
    before pass 2) and the rest decoded, with the milliseconds each took to decode (and,
    where the reader converts at once, to convert: "colour"); each frame is an object of its
    own (see VideoSource.read), which pass 2 pastes into and hands to the writer."""
    clock = StageClock()
    first_decoded = len(numbers)
    for index, number in enumerate(numbers):
        frame = held.take(number)
        if frame is None:
            first_decoded = index
            break
        yield number, frame, _NOT_DECODED
    if first_decoded == len(numbers):
        return  # every frame was held: no decoder to open
    for number, decoded in shot.read(numbers[first_decoded:], clock):
        yield number, decoded, clock.take()
