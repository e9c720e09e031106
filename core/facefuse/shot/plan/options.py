"""The options a request's shot plan is made with, and the checks of who is swapped with which
source."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path

import numpy as np

from ...errors import InputError
from ...pipeline import Pipeline
from ...types import SourceIdentity
from ..contract.request import REFERENCE_PREFIX, RenderRequest
from .overrides import Overrides, load_overrides
from .plan import DEFAULT_SOURCE, PlanOptions, ShotPlan
from .smoothing import OneEuroParams


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
    request's sources; absent without any) and each assigned image (InputError / NoFaceError
    for a bad one)."""
    identities = ({DEFAULT_SOURCE: pipeline.source_identity(request.sources)}
                  if request.sources else {})
    for _, image in request.assign:
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
    if not request.sources and not request.assign:
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
