"""`render`: a shot (video or image sequence) in, swapped frames out. One entry point for hosts.

Two passes. Pass 1 (analysis) decodes the whole requested range, detects and embeds every face,
and caches that per input content; tracks, the shot-level identity choice and landmark smoothing
are derived from it, so every chunk of a farm render makes the same decisions. Pass 2 decodes
only the frames still to do, swaps them and writes them, reading, inference and writing running
in three threads joined by small bounded queues, so memory does not grow with shot length.

Every decision the render makes for the shot (cuts, tracks, people, who is swapped with which
source, gap fills, smoothing) is its shot plan (shot.plan.plan.ShotPlan), made from the analysis; a
preview or a review of the same request makes the same plan.

Where the plan's decisions are local (make.plan_horizon: `many`) and frames must be
analysed, pass 1 runs on a thread of its own while pass 2 runs: a frame is swapped once the
analysis covers the frames its targets depend on (see early_targets), so the first output frame
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

import logging
import threading
import time
from collections.abc import Mapping
from dataclasses import replace

from ...color import input_conversion
from ...credentials.signing import LoadedSigner
from ...errors import InputError
from ...io import sequences
from ...pipeline import Pipeline
from ...runtime.memory import returning_freed_memory
from ...runtime.threads import blas_on_one_thread
from ...timing import RenderTimings
from ..contract.frames import select_frames
from ..contract.inputs import ShotInput, open_input
from ..contract.request import (
    CancelCheck,
    FrameReport,
    PhaseCallback,
    PhaseProgress,
    ProgressCallback,
    RenderRequest,
    RenderSummary,
    Replacement,
    SigningChoices,
)
from ..contract.studio import load_studio, under_studio
from ..output.outputs import open_writer
from ..output.prints import Identities, RenderPrints, render_prints
from ..output.writers import FrameWriter
from ..plan.analysis import ShotAnalysis
from ..plan.casting import check_casting, check_sources
from ..plan.make import make_plan, plan_horizon
from ..plan.options import PlanOptions, plan_options
from ..plan.override_fit import fit_overrides
from ..plan.overrides import Overrides, load_overrides
from ..plan.plan import DEFAULT_SOURCE, ShotPlan, shot_id_of
from .answers import RenderAnswers
from .early_targets import EarlyTargets
from .held_frames import MIB
from .pass_one import PassOne
from .pass_two import Output, PassTwo, Swap
from .replacement import made_outputs, replacement_of
from .tally import FrameCounts, FrameTally

log = logging.getLogger(__name__)


def render(request: RenderRequest, on_progress: ProgressCallback | None = None,
           cancel: CancelCheck | None = None,
           on_phase: PhaseCallback | None = None,
           timings: RenderTimings | None = None,
           pipeline: Pipeline | None = None, sign: bool = True) -> RenderSummary:
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
    sign: False for scratch outputs nobody receives (shot.looks.stills: previews, the live
    swap): no signing key is read and nothing is signed, whatever the request or the studio
    settings file name.
    """
    started = time.perf_counter()
    if pipeline is not None and pipeline.settings != request.settings:
        raise ValueError("the pipeline given to render() was built from other settings")
    request = under_studio(request, load_studio())
    if not sign:
        request = replace(request, signing=SigningChoices())
    check_casting(request)
    overrides = (load_overrides(request.plan.overrides)
                 if request.plan.overrides is not None else None)
    shot = open_input(request.input.path, request.input.start_number, request.input.conform_vfr,
                      request.settings.threads)
    try:
        # a flat peak however long the shot (runtime.memory); no BLAS workers left spinning
        with returning_freed_memory(), blas_on_one_thread():
            if pipeline is not None:
                job = _job(request, overrides, shot, pipeline, on_progress, on_phase, timings)
                finished = job.run(pipeline, cancel or _never)
            else:
                with Pipeline(request.settings, timer=timings) as own:
                    job = _job(request, overrides, shot, own, on_progress, on_phase, timings)
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
                         unselected=counts.unselected, corrected=counts.corrected,
                         replaced=job.replaced.count, replaced_ranges=job.replaced.frames,
                         notes=job.notes, request_fingerprint=job.request_fingerprint,
                         answers=job.answers.sentences,
                         warnings=warnings,
                         analysis_cached=job.pass_one.cached,
                         decoded_once=job.pass_one.held.taken,
                         held_mib=round(job.pass_one.held.peak_bytes / MIB, 1))


def _job(request: RenderRequest, overrides: Overrides | None, shot: ShotInput,
         pipeline: Pipeline, on_progress: ProgressCallback | None,
         on_phase: PhaseCallback | None, timings: RenderTimings | None) -> RenderJob:
    """The render of `request` with its overrides fitted to its frames (shot.plan.override_fit);
    the note on corrections it ignores is logged and kept for the summary."""
    fitted = fit_overrides(request, shot, pipeline, overrides)
    job = RenderJob(fitted.request, shot, on_progress or _ignore, on_phase or _ignore, timings,
                    overrides)
    if fitted.note is not None:
        log.info("%s", fitted.note)
        job.notes = (fitted.note,)
    return job


def _warnings(request: RenderRequest, counts: FrameCounts) -> tuple[str, ...]:
    """What the user must hear although nothing failed: faces found, nothing swapped, and
    not because of the user's own corrections (skips, overrides: those are choices)."""
    chosen = counts.unselected - counts.corrected  # left by the selector
    if counts.swapped or not chosen:
        return ()
    settings = request.settings
    why = (f"selector {settings.selector}, similarity {settings.similarity}"
           if settings.selector == "reference" else f"selector {settings.selector}")
    warning = (f"faces were found in {chosen} frames but the selector chose none of them "
               f"({why}); those frames were written unchanged")
    return (warning,)


class RenderJob:
    """The checked-up-front plan of one render and the code that carries it out: pass 1, the
    plan, pass 2 (shot.run.pass_two); its tally (shot.run.tally) counts the frames and reports
    them."""

    def __init__(self, request: RenderRequest, shot: ShotInput,
                 report: ProgressCallback, phase: PhaseCallback,
                 timings: RenderTimings | None = None,
                 overrides: Overrides | None = None) -> None:
        self.request, self.shot = request, shot
        self.timings = timings if timings is not None else RenderTimings()
        asked = request.frames
        self.frames = select_frames(shot.frame_numbers, asked.range, asked.chunk, shot.label,
                                  contiguous=shot.is_sequence,
                                  chunk_frames=asked.chunk_frames, only=asked.only)
        self.overrides = overrides  # request.plan.overrides, read
        self.colour, self.colour_name = input_conversion(request.input.colorspace, shot.suffix,
                                                         shot.pixel_type)
        self.writer: FrameWriter = open_writer(request, shot, self.frames.rendered, self.colour)
        self.pass_one = PassOne(shot, self.frames, request.settings,
                                (self.colour, self.colour_name), self.timings, phase,
                                request.settings.frame_memory_mib * MIB)
        self.tally = FrameTally(report, phase, self.timings, self.pass_one)
        self.plan: ShotPlan | None = None  # the shot plan, once made (see run)
        self.replaced = Replacement(request.output.path)  # what it rewrites that was made otherwise
        self.notes: tuple[str, ...] = ()  # what the user should hear (not warnings)
        self.request_fingerprint = ""  # the whole request's (RenderPrints.whole), once known
        self.answers = RenderAnswers(request)  # licences, signing key, consent

    # -- the run ----------------------------------------------------------------------------
    def run(self, pipeline: Pipeline, cancelled: CancelCheck) -> bool:
        """Pass 1 and pass 2 (side by side where the selector allows: see the module
        docstring); False when cancelled or stopped early by --fail-fast."""
        self.answers.check_licences(pipeline)  # before any model is fetched
        pipeline.models.require_models()
        pipeline.check_options()
        prints = render_prints(self.request, pipeline, self.shot, self.frames.analysed,
                               self.colour_name, self.overrides)
        self._check_only_input(f"sha256:{prints.content_sha256}")
        key = self.answers.signing_key()
        try:
            return self._passes(pipeline, cancelled, prints, key)
        finally:
            if key is not None:
                key.close()

    def _passes(self, pipeline: Pipeline, cancelled: CancelCheck, prints: RenderPrints,
                key: LoadedSigner | None) -> bool:
        """run() once the request is checked: the passes, the plan, the writing."""
        identities, content, metadata = prints.identities, prints.content_sha256, prints.metadata
        self.prints, self.request_fingerprint = prints.frames, prints.whole
        rendered = self.frames.rendered
        if not rendered:
            return True
        options = plan_options(self.request, pipeline, self._rate(), self.overrides)
        made = made_outputs(self.request.output.path, rendered)  # results it may replace
        resuming = not self.request.output.overwrite and self.writer.started(rendered)
        # the plan decides which made frames a sequence replaces (replacement_of) and, without
        # sources of the render's own, that it swaps nobody with them (check_sources): such
        # renders plan on the whole analysis first
        whole_first = (resuming or (bool(made) and self.is_sequence)
                       or (self.request.frames.only_input or "").startswith("shot:")
                       or DEFAULT_SOURCE not in identities or self.answers.plans_first)
        horizon = None if whole_first else self._horizon(rendered[0], options)
        halt = threading.Event()  # pass 2 ended early: pass 1 stops too

        def stop() -> bool:
            return cancelled() or halt.is_set()

        feed = self.pass_one.start(pipeline, content, cancelled, horizon, halt)
        plan = EarlyTargets(feed, (horizon or 0) if self.pass_one.alongside else 0,
                         lambda analysis: self._plan(analysis, options), stop)
        if not self.pass_one.alongside and stop():  # cancelled while pass 1 ran
            self.tally.settle(self.writer.finish(False))
            return False
        if not self.pass_one.alongside:
            plan.targets(rendered[0])  # plans now: a person named wrongly stops the render here
            assert plan.plan is not None
            self._check_only_input(f"shot:{plan.plan.shot_id}")
            check_sources(plan.plan, self.request, rendered)
            metadata = self.answers.check_consent(plan.plan, pipeline, rendered, metadata)
        if key is not None:
            self.writer.sign_with(self.answers.signer(prints, self.shot.label, key))
        if made:
            self._say_replaced(made, plan.plan, prints)
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
        """InputError when the frames to render were chosen for another input:
        request.frames.only_input names it as `found` does ("sha256:HEX" of its content or
        "shot:ID"), and differently."""
        wanted = self.request.frames.only_input
        if wanted is None or wanted.partition(":")[0] != found.partition(":")[0]:
            return
        if wanted != found:
            raise InputError(f"the frames to render (--frames flagged: or --only-input) were "
                             f"chosen for another shot ({wanted[:23]}), not for "
                             f"{self.shot.label} as these options analyse it ({found[:23]}); "
                             "review it again with these options")

    def _say_replaced(self, made: Mapping[int, Mapping[str, str]], plan: ShotPlan | None,
                      prints: RenderPrints) -> None:
        """Work out (shot.run.replacement) and log which finished frames made with other choices
        this render rewrites; the summary reports them."""
        self.replaced = replacement_of(self.request.output.path, made, self.frames.rendered,
                                       plan if self.is_sequence else None, prints)
        if self.replaced:
            log.info("%s", self.replaced.message)

    def _say_video_is_whole(self) -> None:
        if self.request.plan.overrides is not None and not sequences.is_frame_pattern(
                self.request.output.path):
            log.info("%s is a video, written whole: all %d frames are rendered again (a video "
                     "cannot be rewritten in part; render a sequence to rewrite only the frames "
                     "the overrides change)", self.request.output.path, len(self.frames.rendered))

    @property
    def is_sequence(self) -> bool:
        """Whether the output is an image sequence (else a video)."""
        return sequences.is_frame_pattern(self.request.output.path)

    def _rate(self) -> float | None:
        return float(self.shot.rate) if self.shot.rate else None

    def _plan(self, analysis: ShotAnalysis, options: PlanOptions) -> ShotPlan:
        """The plan of `analysis` (the whole analysed range or, while pass 1 runs, a prefix of
        it) with this render's options."""
        key = self.pass_one.key
        shot_id = shot_id_of(key.digest if key is not None else "", self.frames.analysed)
        with self.timings.measure("track"):
            return make_plan(analysis, options, shot_id)

    def _todo(self, plan: EarlyTargets) -> tuple[int, ...]:
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
        swap = Swap(pipeline, identities, self.colour,
                    bool(request.output.matte or request.output.patch))
        out = Output(self.writer, metadata, sequences.is_frame_pattern(request.output.path),
                     self.tally)
        return work.run(swap, out, request.fail_fast, cancelled)


def _ignore(_report: FrameReport | PhaseProgress) -> None:
    return None


def _never() -> bool:
    return False
