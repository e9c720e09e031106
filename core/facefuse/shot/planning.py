"""`plan_shot`: the shot plan a render of a request would make, without rendering.

It analyses the request's range the way a render's pass 1 does (from the analysis cache where it
has it, else analysing and caching, with "analysis" progress) and makes the plan with the
render's own options (plan_options, also below), so a review, a preview or a host sees exactly the
decisions the render carries out (its overrides fitted to its frames as the render fits them:
shot.override_fit).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path

import numpy as np

from ..color import input_conversion
from ..errors import InputError
from ..pipeline import Pipeline
from ..runtime.threads import blas_on_one_thread
from ..stopping import Cancelled
from ..timing import RenderTimings
from ..types import SourceIdentity
from .early_plan import AnalysisStopped
from .frames import plan_frames
from .inputs import open_input
from .override_fit import fit_overrides
from .overrides import Overrides, load_overrides
from .pass_one import PassOne
from .plan import DEFAULT_SOURCE, PlanOptions, ShotPlan, make_plan, shot_id_of
from .request import (
    CancelCheck,
    PersonId,
    PersonInPicture,
    PhaseCallback,
    PhaseProgress,
    RenderRequest,
)
from .smoothing import OneEuroParams

log = logging.getLogger(__name__)


class PlanCancelled(Cancelled):
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
    overrides = (load_overrides(request.plan.overrides)
                 if request.plan.overrides is not None else None)
    shot = open_input(request.input.path, request.input.start_number, request.input.conform_vfr,
                      request.settings.threads)
    try:
        fitted = fit_overrides(request, shot, pipeline, overrides)
        if fitted.note is not None:
            log.info("%s", fitted.note)
        request = fitted.request
        frames = plan_frames(shot.frame_numbers, request.frames.range, None, shot.label,
                             contiguous=shot.is_sequence, only=request.frames.only)  # only: checked
        colour = input_conversion(request.input.colorspace, shot.suffix, shot.pixel_type)
        pipeline.models.require_models()
        options = plan_options(request, pipeline, float(shot.rate) if shot.rate else None,
                               overrides)
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


def fitted_request(request: RenderRequest, pipeline: Pipeline) -> RenderRequest:
    """`request` as it is planned with its overrides (shot.override_fit: a part of the shot
    the overrides were made for is planned over that shot); itself without overrides or
    without --frames."""
    if request.plan.overrides is None or request.frames.range is None:
        return request
    overrides = load_overrides(request.plan.overrides)
    shot = open_input(request.input.path, request.input.start_number, request.input.conform_vfr,
                      request.settings.threads)
    try:
        return fit_overrides(request, shot, pipeline, overrides).request
    finally:
        shot.close()


def smoothing_of(request: RenderRequest) -> OneEuroParams | None:
    """The landmark smoothing a request asks for (None: off)."""
    if not request.plan.smoothing:
        return None
    defaults = OneEuroParams()
    return OneEuroParams(
        min_cutoff=request.plan.smoothing_min_cutoff or defaults.min_cutoff,
        beta=defaults.beta if request.plan.smoothing_beta is None else request.plan.smoothing_beta,
        d_cutoff=defaults.d_cutoff)


def plan_options(request: RenderRequest, pipeline: Pipeline, rate_hz: float | None,
                 overrides: Overrides | None = None) -> PlanOptions:
    """The options the shot plan of `request` is made with (render, preview and review alike):
    its selector, reference and smoothing, the people it names (their reference pictures'
    identities found with `pipeline`) and its overrides (`overrides`: request.plan.overrides read
    already; else read here)."""
    if overrides is None and request.plan.overrides is not None:
        overrides = load_overrides(request.plan.overrides)
    settings = request.settings
    plan = request.plan
    named = {person.id: str(image) for person, image in plan.assign
             if isinstance(person, PersonId)}
    by_picture = tuple(
        (pipeline.source_identity([Path(person.path)]).embedding, str(image))
        for person, image in plan.assign if isinstance(person, PersonInPicture))
    skipped = [p.id for p in plan.skip if isinstance(p, PersonId)]
    skipped_by_picture = tuple(
        pipeline.source_identity([Path(p.path)]).embedding
        for p in plan.skip if isinstance(p, PersonInPicture))
    return PlanOptions(settings.selector, pipeline.reference_embedding(), settings.similarity,
                       rate_hz, smoothing_of(request), named, by_picture, frozenset(skipped),
                       skipped_by_picture, overrides)


def source_identities(request: RenderRequest, pipeline: Pipeline) -> dict[str, SourceIdentity]:
    """The identity of every source key a plan of `request` can use: DEFAULT_SOURCE (the
    request's sources; absent without any) and each assigned image (InputError / NoFaceError
    for a bad one)."""
    identities = ({DEFAULT_SOURCE: pipeline.source_identity(request.sources)}
                  if request.sources else {})
    for _, image in request.plan.assign:
        identities.setdefault(str(image), pipeline.source_identity([image]))
    return identities


def default_identity(identities: Mapping[str, SourceIdentity]) -> SourceIdentity:
    """The identity of the request's own sources (DEFAULT_SOURCE), or, for a request without
    any, the empty identity (no embedding, no sources) its fingerprint and provenance name."""
    found = identities.get(DEFAULT_SOURCE)
    if found is not None:
        return found
    return SourceIdentity(np.zeros(0, np.float32), ())


def check_casting(request: RenderRequest) -> None:
    """InputError, before anything is analysed, for a request that swaps faces with nothing:
    no sources (-s) and nobody assigned one (--assign)."""
    if not request.sources and not request.plan.assign:
        raise InputError("there is no source face to swap in: give -s PHOTO (the face given "
                         "to everyone the selector chooses) or --assign p1=PHOTO per person "
                         "(`facefuse review` lists the people)")


def people_without_source(plan: ShotPlan, request: RenderRequest,
                          frames: Iterable[int] | None = None) -> tuple[str, ...]:
    """The people `plan` swaps in `frames` (None: all its frames) with the request's own
    sources (DEFAULT_SOURCE) while the request has none: chosen by the selector or swapped by
    an override, and assigned nothing. () when the request has sources."""
    if request.sources:
        return ()
    numbers = plan.planned if frames is None else frames
    missing = {face.person_id for number in numbers for face in plan.faces(number)
               if face.source == DEFAULT_SOURCE}
    return tuple(p.person_id for p in plan.people if p.person_id in missing)


def check_sources(plan: ShotPlan, request: RenderRequest,
                  frames: Iterable[int] | None = None) -> None:
    """InputError naming the people swapped in `frames` who have no source
    (people_without_source), and how to give them one."""
    missing = people_without_source(plan, request, frames)
    if not missing:
        return
    names = ", ".join(missing)
    verb = "is" if len(missing) == 1 else "are"
    raise InputError(f"{names} {verb} swapped but {'has' if len(missing) == 1 else 'have'} no "
                     f"source: give -s PHOTO (everyone the selector chooses), "
                     f"--assign {missing[0]}=PHOTO per person, or --skip {missing[0]}")


def _ignore(_progress: PhaseProgress) -> None:
    return None
