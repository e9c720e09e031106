"""The options a shot plan is made with (`PlanOptions`), and how a request gives them."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ...pipeline import Pipeline
from ..contract.request import PersonId, PersonInPicture, RenderRequest
from .overrides import Overrides, load_overrides
from .smoothing import OneEuroParams


@dataclass(frozen=True, slots=True, eq=False)
class PlanOptions:
    """What make_plan decides with.

    selector / reference / similarity: the default rule (Settings.selector; the reference
    embedding for "reference"). rate_hz: the shot's frame rate (None: DEFAULT_RATE_HZ).
    smoothing: landmark and pose smoothing, None for none. assign: person id -> source key;
    assign_references: (picture embedding, source key) pairs naming people by a picture;
    skip: person ids never swapped; skip_references: pictures of people never swapped.
    overrides: per-frame, per-person corrections (shot.plan.overrides), applied last.
    """

    selector: str = "one"
    reference: np.ndarray | None = None
    similarity: float = 0.4
    rate_hz: float | None = None
    smoothing: OneEuroParams | None = None
    assign: Mapping[str, str] = field(default_factory=dict)
    assign_references: tuple[tuple[np.ndarray, str], ...] = ()
    skip: frozenset[str] = frozenset()
    skip_references: tuple[np.ndarray, ...] = ()
    overrides: Overrides | None = None

    @property
    def local(self) -> bool:
        """Whether every decision is local (plan_horizon): selector many, nobody named, no
        overrides."""
        return (self.selector == "many" and not self.assign and not self.assign_references
                and not self.skip and not self.skip_references and self.overrides is None)


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
