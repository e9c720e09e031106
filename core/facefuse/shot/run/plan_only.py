"""`plan_shot`: the shot plan a render of a request would make, without rendering.

It analyses the request's range the way a render's pass 1 does (from the analysis cache where it
has it, else analysing and caching, with "analysis" progress) and makes the plan with the
render's own options (plan.options.plan_options), so a review, a preview or a host sees exactly the
decisions the render carries out (its overrides fitted to its frames as the render fits them:
shot.plan.override_fit).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from ...color import input_conversion
from ...pipeline import Pipeline
from ...runtime.threads import blas_on_one_thread
from ...stopping import Cancelled
from ...timing import RenderTimings
from ..contract.frames import select_frames
from ..contract.inputs import open_input
from ..contract.request import CancelCheck, PhaseCallback, PhaseProgress, RenderRequest
from ..plan.make import make_plan
from ..plan.options import plan_options
from ..plan.override_fit import fit_overrides
from ..plan.overrides import load_overrides
from ..plan.plan import ShotPlan, shot_id_of
from .early_targets import AnalysisStopped
from .pass_one import PassOne

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
        frames = select_frames(shot.frame_numbers, request.frames.range, None, shot.label,
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



def _ignore(_progress: PhaseProgress) -> None:
    return None
