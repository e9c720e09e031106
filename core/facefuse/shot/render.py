"""`render`: a shot (video or image sequence) in, swapped frames out. One entry point for hosts.

Two passes. Pass 1 (analysis) decodes the whole requested range, detects and embeds every face,
and caches that per input content; tracks, the shot-level identity choice and landmark smoothing
are derived from it, so every chunk of a farm render makes the same decisions. Pass 2 decodes
only the frames still to do, swaps them and writes them, reading, inference and writing running
in three threads joined by small bounded queues, so memory does not grow with shot length.

Every decision the render makes for the shot (cuts, tracks, people, who is swapped with which
source, gap fills, smoothing) is its shot plan (shot.plan.ShotPlan), made from the analysis; a
preview or a review of the same request makes the same plan.

Where the plan's decisions are local (plan.plan_horizon: `many`) and frames must be
analysed, pass 1 runs on a thread of its own while pass 2 runs: a frame is swapped once the
analysis covers the frames its targets depend on (see early_plan), so the first output frame
comes after a fixed stretch of analysis, not after all of it. Other selectors plan on the
whole analysis first, as does a render whose analysis is cached.

Image-sequence outputs are written frame by frame (temporary name, then rename) and resumable:
a frame whose output exists, reads completely and carries the same fingerprint is skipped. Each
frame's fingerprint is the render's with what the plan decides for that frame
(provenance.frame_fingerprint), so a render whose plan changes in some frames only (overrides,
assignments) rewrites only those files and leaves the others as they are. To know those
fingerprints before pass 2, a render whose output has any file of its frames already plans on
the whole analysis first (no early plan alongside), as does one with overrides.

Video outputs are written in one pass over the requested range to a temporary file that is
renamed when complete; they cannot be chunked, resumed or rewritten in part (overrides render
the whole video again; render a sequence for farm work).
"""

from __future__ import annotations

import hashlib
import json
import logging
import threading
import time
from collections.abc import Mapping
from pathlib import Path

from ..cache.hashes import HashMemo
from ..color import input_conversion
from ..errors import InputError
from ..io import sequences
from ..io.video.yuv import READER_VERSION
from ..models.manifest import ROLES
from ..pipeline import Pipeline
from ..runtime.memory import returning_freed_memory
from ..runtime.threads import blas_on_one_thread
from ..timing import RenderTimings
from ..types import SourceIdentity
from . import provenance
from .analysis import ANALYSIS_VERSION, ShotAnalysis
from .early_plan import EarlyPlan
from .frames import plan_frames
from .held_frames import MIB
from .inputs import ShotInput, open_input
from .outputs import open_writer
from .overrides import Overrides, load_overrides
from .pass_one import PassOne
from .pass_two import FramePrints, Identities, Output, PassTwo, Swap
from .plan import (
    DEFAULT_SOURCE,
    PLAN_VERSION,
    PlanOptions,
    ShotPlan,
    make_plan,
    plan_horizon,
    shot_id_of,
)
from .planning import plan_options, smoothing_of, source_identities
from .request import (
    CancelCheck,
    FrameReport,
    PhaseCallback,
    PhaseProgress,
    ProgressCallback,
    RenderRequest,
    RenderSummary,
)
from .tally import Counts, FrameTally
from .writers import FrameWriter

log = logging.getLogger(__name__)


def render(request: RenderRequest, on_progress: ProgressCallback | None = None,
           cancel: CancelCheck | None = None,
           on_phase: PhaseCallback | None = None,
           timings: RenderTimings | None = None,
           pipeline: Pipeline | None = None) -> RenderSummary:
    """Render a shot (see the module docstring); the CLI, Blender, Resolve and farms call this.

    on_progress(FrameReport) is called once per frame: from the calling thread for frames skipped
    as already done, from the writer thread for rendered ones.
    on_phase(PhaseProgress) tells how far each phase (analysis, swap, encode) has got: from the
    calling thread for analysis and encode, from the writer thread for swap; where pass 1 runs
    beside pass 2 (see the module docstring), analysis comes from pass 1's thread, interleaved
    with swap (each phase's own counts still only grow).
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
        # a flat peak however long the shot (runtime.memory); no BLAS workers left spinning
        with returning_freed_memory(), blas_on_one_thread():
            if pipeline is not None:
                finished = job.run(pipeline, cancel or _never)
            else:
                with Pipeline(request.settings, timer=timings) as own:
                    finished = job.run(own, cancel or _never)
    finally:
        shot.close()
    counts = job.tally.counts
    stopped_by_failure = request.fail_fast and bool(counts.failed)
    warnings = _warnings(request, counts)
    for warning in warnings:
        log.warning("%s", warning)
    return RenderSummary(frames=len(job.frames.rendered), swapped=counts.swapped,
                         no_face=counts.no_face, skipped=counts.skipped,
                         failed=tuple(counts.failed), seconds=time.perf_counter() - started,
                         cancelled=not finished and not stopped_by_failure,
                         unselected=counts.unselected, warnings=warnings,
                         analysis_cached=job.pass_one.cached,
                         decoded_once=job.pass_one.held.taken,
                         held_mib=round(job.pass_one.held.peak_bytes / MIB, 1))


def _warnings(request: RenderRequest, counts: Counts) -> tuple[str, ...]:
    """What the user must hear although nothing failed: faces found but nothing swapped."""
    if counts.swapped or not counts.unselected:
        return ()
    settings = request.settings
    why = (f"selector {settings.selector}, similarity {settings.similarity}"
           if settings.selector == "reference" else f"selector {settings.selector}")
    if request.overrides is not None:
        why += f", overrides {request.overrides.name}"
    return (f"faces were found in {counts.unselected} frames but none was swapped ({why}); "
            + "those frames were written unchanged",)


class RenderJob:
    """The checked-up-front plan of one render and the code that carries it out: pass 1, the
    plan, pass 2 (shot.pass_two); its tally (shot.tally) counts the frames and reports them."""

    def __init__(self, request: RenderRequest, shot: ShotInput,
                 report: ProgressCallback, phase: PhaseCallback,
                 timings: RenderTimings | None = None) -> None:
        self.request, self.shot = request, shot
        self.timings = timings if timings is not None else RenderTimings()
        self.frames = plan_frames(shot.frame_numbers, request.frames, request.chunk, shot.label,
                                  contiguous=shot.is_sequence,
                                  chunk_frames=request.chunk_frames, only=request.only)
        self.overrides: Overrides | None = (load_overrides(request.overrides)
                                            if request.overrides is not None else None)
        self.colour, self.colour_name = input_conversion(request.colorspace, shot.suffix,
                                                         shot.pixel_type)
        self.writer: FrameWriter = open_writer(request, shot, self.frames.rendered, self.colour)
        self.pass_one = PassOne(shot, self.frames, request.settings,
                                (self.colour, self.colour_name), self.timings, phase,
                                request.settings.frame_memory_mib * MIB)
        self.tally = FrameTally(report, phase, self.timings, self.pass_one)
        self.plan: ShotPlan | None = None  # the shot plan, once made (see run)

    # -- the run ----------------------------------------------------------------------------
    def run(self, pipeline: Pipeline, cancelled: CancelCheck) -> bool:
        """Pass 1 and pass 2 (side by side where the selector allows: see the module
        docstring); False when cancelled or stopped early by --fail-fast."""
        pipeline.models.require_models()
        pipeline.check_options()
        identities = source_identities(self.request, pipeline)
        identity = identities[DEFAULT_SOURCE]
        memo = pipeline.hashes
        content = self.shot.content_sha256(memo)
        self._check_only_input(f"sha256:{content}")
        base = self._fingerprint(pipeline, identity, content, memo)
        self.prints = FramePrints(base, identities)
        metadata = provenance.provenance(self.request.settings, pipeline.models.used(),
                                         identity, self._whole_fingerprint(base, memo),
                                         self.shot.label,
                                         full=self.request.provenance == "full")
        if self.overrides is not None:
            metadata[f"{provenance.PREFIX}overrides_sha256"] = self.overrides.sha256
        rendered = self.frames.rendered
        if not rendered:
            return True
        options = plan_options(self.request, pipeline, self._rate(), self.overrides)
        resuming = not self.request.overwrite and self.writer.started(rendered)
        whole_first = resuming or (self.request.only_input or "").startswith("shot:")
        horizon = None if whole_first else self._horizon(rendered[0], options)
        halt = threading.Event()  # pass 2 ended early: pass 1 stops too

        def stop() -> bool:
            return cancelled() or halt.is_set()

        feed = self.pass_one.start(pipeline, content, cancelled, horizon, halt)
        plan = EarlyPlan(feed, (horizon or 0) if self.pass_one.alongside else 0,
                         lambda analysis: self._plan(analysis, options), stop)
        if not self.pass_one.alongside and stop():  # cancelled while pass 1 ran
            self.tally.settle(self.writer.finish(False))
            return False
        if not self.pass_one.alongside:
            plan.targets(rendered[0])  # plans now: a person named wrongly stops the render here
            assert plan.plan is not None
            self._check_only_input(f"shot:{plan.plan.shot_id}")
        todo = self._todo(plan) if resuming else rendered
        self._say_video_is_whole()
        try:
            if not todo:
                return True
            work = PassTwo(self.shot, plan, todo, self.prints, halt, self.pass_one)
            return self._pass_two(pipeline, identities, work, metadata, cancelled)
        finally:
            self.plan = plan.plan
            if plan.plans > 1:
                log.info("planned %d times on the growing analysis (%.3f s in all)",
                         plan.plans, plan.plan_s)

    def _horizon(self, first: int, options: PlanOptions) -> int | None:
        """plan_horizon for this render, or None when even its first frame to do would wait
        for the whole analysis (a range no longer than the horizon): then pass 2 simply
        follows pass 1."""
        horizon = plan_horizon(options)
        analysed = self.frames.analysed
        if horizon is None or analysed.index(first) + horizon + 1 >= len(analysed):
            return None
        return horizon

    def _check_only_input(self, found: str) -> None:
        """InputError when the frames to render were chosen for another input: request.only_input
        names it as `found` does ("sha256:HEX" of its content or "shot:ID"), and differently."""
        wanted = self.request.only_input
        if wanted is None or wanted.partition(":")[0] != found.partition(":")[0]:
            return
        if wanted != found:
            raise InputError(f"the frames to render (--frames flagged: or --only-input) were "
                             f"chosen for another shot ({wanted[:23]}), not for "
                             f"{self.shot.label} as these options analyse it ({found[:23]}); "
                             "review it again with these options")

    def _say_video_is_whole(self) -> None:
        if self.request.overrides is not None and not sequences.is_frame_pattern(
                self.request.output):
            log.info("%s is a video, written whole: all %d frames are rendered again (a video "
                     "cannot be rewritten in part; render a sequence to rewrite only the frames "
                     "the overrides change)", self.request.output, len(self.frames.rendered))

    def _rate(self) -> float | None:
        return float(self.shot.rate) if self.shot.rate else None

    def _plan(self, analysis: ShotAnalysis, options: PlanOptions) -> ShotPlan:
        """The plan of `analysis` (the whole analysed range or, while pass 1 runs, a prefix of
        it) with this render's options."""
        key = self.pass_one.key
        shot_id = shot_id_of(key.digest if key is not None else "", self.frames.analysed)
        with self.timings.measure("track"):
            return make_plan(analysis, options, shot_id)

    def _fingerprint(self, pipeline: Pipeline, identity: SourceIdentity, content_sha256: str,
                     memo: HashMemo) -> str:
        roles = [r for r in ROLES if r != "enhancer" or self.request.settings.enhancer]
        models = {role: pipeline.models.sha256(role) for role in roles}
        references = [memo.sha256(Path(p)) for p in self.request.settings.reference_images]
        memo.flush()
        analysed = self.frames.analysed
        extra = {"smoothing": repr(smoothing_of(self.request)),
                 "frames": (analysed[0], analysed[-1]),
                 "analysis": ANALYSIS_VERSION, "plan": PLAN_VERSION, "reader": READER_VERSION,
                 "start_number": self.request.start_number, "input": content_sha256,
                 "reference": references, "enhancer": bool(self.request.settings.enhancer),
                 "conform_vfr": self.request.conform_vfr}
        return provenance.fingerprint(self.request.settings, models, identity, self.colour_name,
                                      extra)

    def _whole_fingerprint(self, base: str, memo: HashMemo) -> str:
        """The fingerprint of the whole render (a video's): the render's with what the plan
        is told (assignments, skips, the overrides file's content)."""
        told = {"assign": [(person, memo.sha256(image)) for person, image in
                           self.request.assign], "skip": list(self.request.skip),
                "overrides": self.overrides.sha256 if self.overrides is not None else None}
        text = base + json.dumps(told, sort_keys=True)
        return hashlib.sha256(text.encode("utf-8")).hexdigest()

    def _todo(self, plan: EarlyPlan) -> tuple[int, ...]:
        """The rendered frames whose files are not finished with their fingerprint under the
        plan (made on the whole analysis: see run)."""
        assert plan.plan is not None
        todo = []
        for number in self.frames.rendered:
            if self.writer.finished(number, self.prints.of(plan.plan, number)):
                self.tally.skip(number)
            else:
                todo.append(number)
        skipped = self.tally.counts.skipped
        if skipped:
            log.info("%d frames already rendered with these settings and this plan; skipping "
                     "them (%d to render)", skipped, len(todo))
        return tuple(todo)

    def _pass_two(self, pipeline: Pipeline, identities: Identities, work: PassTwo,
                  metadata: Mapping[str, str], cancelled: CancelCheck) -> bool:
        """Pass 2 over `work`'s frames (pass_two.PassTwo.run) into this render's output."""
        request = self.request
        swap = Swap(pipeline, identities, self.colour, bool(request.matte or request.patch))
        out = Output(self.writer, metadata, sequences.is_frame_pattern(request.output),
                     self.tally)
        return work.run(swap, out, request.fail_fast, cancelled)


def _ignore(_report: FrameReport | PhaseProgress) -> None:
    return None


def _never() -> bool:
    return False
