"""`plan_shot`: the shot plan a render of a request would make, without rendering.

It analyses the request's range the way a render's pass 1 does (from the analysis cache where it
has it, else analysing and caching, with "analysis" progress) and makes the plan with the
render's own options (plan_options, also below), so a review, a preview or a host sees exactly the
decisions the render carries out.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path

from ..color import input_conversion
from ..pipeline import Pipeline
from ..runtime.threads import blas_on_one_thread
from ..timing import RenderTimings
from ..types import SourceIdentity
from .early_plan import AnalysisStopped
from .frames import plan_frames
from .inputs import open_input
from .overrides import Overrides, load_overrides
from .pass_one import PassOne
from .plan import DEFAULT_SOURCE, PlanOptions, ShotPlan, make_plan, shot_id_of
from .request import REFERENCE_PREFIX, CancelCheck, PhaseCallback, PhaseProgress, RenderRequest
from .smoothing import OneEuroParams


class PlanCancelled(Exception):
    """plan_shot was cancelled before the analysis was complete."""


def plan_shot(request: RenderRequest, pipeline: Pipeline | None = None,
              on_phase: PhaseCallback | None = None,
              cancel: CancelCheck | None = None) -> ShotPlan:
    """The plan of request's shot (see the module docstring). pipeline: one built from
    request.settings that the caller keeps (left open); None: one is built and closed.
    PlanCancelled when cancel() turns True during the analysis; the Pipeline's and the
    input's errors (InputError, NoFaceError, ...) as a render raises them."""
    if pipeline is not None and pipeline.settings != request.settings:
        raise ValueError("the pipeline given to plan_shot() was built from other settings")
    with blas_on_one_thread():  # runtime.threads
        if pipeline is None:
            with Pipeline(request.settings) as own:
                return _plan(request, own, on_phase, cancel)
        return _plan(request, pipeline, on_phase, cancel)


def _plan(request: RenderRequest, pipeline: Pipeline, on_phase: PhaseCallback | None,
          cancel: CancelCheck | None) -> ShotPlan:
    cancelled: Callable[[], bool] = cancel or (lambda: False)
    shot = open_input(request.input, request.start_number, request.conform_vfr,
                      request.settings.threads)
    try:
        frames = plan_frames(shot.frame_numbers, request.frames, None, shot.label,
                             contiguous=shot.is_sequence)
        colour = input_conversion(request.colorspace, shot.suffix, shot.pixel_type)
        pipeline.models.require_models()
        options = plan_options(request, pipeline, float(shot.rate) if shot.rate else None)
        pass_one = PassOne(shot, frames, request.settings, colour, RenderTimings(),
                           on_phase or _ignore)
        feed = pass_one.start(pipeline, shot.content_sha256(pipeline.hashes), cancelled, None,
                              threading.Event())
        try:
            feed.wait(len(frames.analysed), cancelled)
        except AnalysisStopped as exc:
            raise PlanCancelled("the analysis was cancelled") from exc
        if cancelled():  # a stopped pass 1 hands out what it has: not the shot's plan
            raise PlanCancelled("the analysis was cancelled")
        analysis, _ = feed.prefix()
    finally:
        shot.close()
    key = pass_one.key
    shot_id = shot_id_of(key.digest if key is not None else "", frames.analysed)
    return make_plan(analysis, options, shot_id, frames.analysed)


def smoothing_of(request: RenderRequest) -> OneEuroParams | None:
    """The landmark smoothing a request asks for (None: off)."""
    if not request.smoothing:
        return None
    defaults = OneEuroParams()
    return OneEuroParams(
        min_cutoff=request.smoothing_min_cutoff or defaults.min_cutoff,
        beta=defaults.beta if request.smoothing_beta is None else request.smoothing_beta,
        d_cutoff=defaults.d_cutoff)


def plan_options(request: RenderRequest, pipeline: Pipeline, rate_hz: float | None,
                 overrides: Overrides | None = None) -> PlanOptions:
    """The options the shot plan of `request` is made with (render, preview and review alike):
    its selector, reference and smoothing, the people it names (their reference pictures'
    identities found with `pipeline`) and its overrides (`overrides`: request.overrides read
    already; else read here)."""
    if overrides is None and request.overrides is not None:
        overrides = load_overrides(request.overrides)
    settings = request.settings
    named = {person: str(image) for person, image in request.assign
             if not person.startswith(REFERENCE_PREFIX)}
    by_picture = tuple(
        (pipeline.source_identity([Path(person.removeprefix(REFERENCE_PREFIX))]).embedding,
         str(image)) for person, image in request.assign if person.startswith(REFERENCE_PREFIX))
    skipped = [p for p in request.skip if not p.startswith(REFERENCE_PREFIX)]
    skipped_by_picture = tuple(
        pipeline.source_identity([Path(p.removeprefix(REFERENCE_PREFIX))]).embedding
        for p in request.skip if p.startswith(REFERENCE_PREFIX))
    return PlanOptions(settings.selector, pipeline.reference_embedding(), settings.similarity,
                       rate_hz, smoothing_of(request), named, by_picture, frozenset(skipped),
                       skipped_by_picture, overrides)


def source_identities(request: RenderRequest, pipeline: Pipeline) -> dict[str, SourceIdentity]:
    """The identity of every source key a plan of `request` can use: DEFAULT_SOURCE (the
    request's sources) and each assigned image (InputError / NoFaceError for a bad one)."""
    identities = {DEFAULT_SOURCE: pipeline.source_identity(request.sources)}
    for _, image in request.assign:
        identities.setdefault(str(image), pipeline.source_identity([image]))
    return identities


def _ignore(_progress: PhaseProgress) -> None:
    return None
