"""What a render's outputs carry, worked out before any frame is rendered: the identities of its
sources, its fingerprints (shot.output.provenance) and the metadata every output file is given.

`render_prints` is the one place a render's fingerprint is made: the render itself (shot.run.render)
and `replaced_frames` (shot.run.replacement), which tells a host beforehand which finished frames a
render would replace, both call it, so the two cannot disagree.

Besides provenance.provenance's keys the metadata holds the render's fingerprint before the plan
(RENDER_KEY: what every frame's own fingerprint starts from), the fingerprint of the whole
request, base and what the plan is told (REQUEST_KEY: a host tells the frames its own renders
made by it, Replacement.made_by), and the options of the fingerprint
that are not settings, with the input's colour space (OPTIONS_KEY, JSON), so a later render can
say what it changed; neither is part of any fingerprint.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ...io.video.yuv import READER_VERSION
from ...models.manifest import ROLES
from ...pipeline import Pipeline
from ...types import SourceIdentity
from ..contract.inputs import ShotInput
from ..contract.request import RenderRequest
from ..plan.analysis import ANALYSIS_VERSION
from ..plan.casting import default_identity, source_identities
from ..plan.make import PLAN_VERSION
from ..plan.options import smoothing_of
from ..plan.overrides import Overrides
from ..plan.plan import ShotPlan
from . import provenance

Identities = Mapping[str, SourceIdentity]  # the identity of each source key of a plan
RENDER_KEY = f"{provenance.PREFIX}render_fingerprint"
REQUEST_KEY = f"{provenance.PREFIX}request_fingerprint"
OPTIONS_KEY = f"{provenance.PREFIX}options"
OVERRIDES_KEY = f"{provenance.PREFIX}overrides_sha256"


class FramePrints:
    """Each frame's fingerprint (provenance.frame_fingerprint) under a plan: the render's
    `base` fingerprint, the frame's plan digest and the identities its faces are swapped to."""

    def __init__(self, base: str, identities: Identities) -> None:
        self.base, self.identities = base, identities

    def of(self, plan: ShotPlan, frame: int) -> str:
        return provenance.frame_fingerprint(
            self.base, plan.frame_digest(frame),
            [self.identities[face.source].digest for face in plan.faces(frame)])


@dataclass(frozen=True, slots=True)
class RenderPrints:
    """A render's identities and fingerprints: `base` (everything but the plan), `whole` (a
    video's: base with what the plan is told), `frames` (each frame's, under a plan), the input's
    content sha256 and the metadata every output file carries (a sequence frame's FINGERPRINT is
    replaced by its own)."""

    identities: Mapping[str, SourceIdentity]
    content_sha256: str
    base: str
    whole: str
    frames: FramePrints
    metadata: Mapping[str, str]


def render_prints(request: RenderRequest, pipeline: Pipeline, shot: ShotInput,
                  analysed: Sequence[int], colour_name: str | None,
                  overrides: Overrides | None) -> RenderPrints:
    """The identities, fingerprints and metadata of a render of `request` over the analysed
    frames `analysed` of `shot` (InputError / NoFaceError for a bad source image)."""
    identities = source_identities(request, pipeline)
    identity = default_identity(identities)
    memo = pipeline.hashes
    content = shot.content_sha256(memo)
    roles = [r for r in ROLES if r != "enhancer" or request.settings.enhancer]
    models = {role: pipeline.models.sha256(role) for role in roles}
    options = fingerprint_options(request, analysed, content,
                                  [memo.sha256(Path(p)) for p in request.settings.reference_images])
    base = provenance.fingerprint(request.settings, models, identity, colour_name, options)
    told = {"assign": [(str(person), memo.sha256(image))
                       for person, image in request.plan.assign],
            "skip": [str(person) for person in request.plan.skip],
            "overrides": overrides.sha256 if overrides is not None else None}
    memo.flush()
    whole = hashlib.sha256((base + json.dumps(told, sort_keys=True)).encode("utf-8")).hexdigest()
    metadata = provenance.provenance(request.settings, pipeline.models.used(), identity, whole,
                                     shot.label, full=request.output.provenance == "full")
    if overrides is not None:
        metadata[OVERRIDES_KEY] = overrides.sha256
    metadata[RENDER_KEY] = base
    metadata[REQUEST_KEY] = whole
    metadata[OPTIONS_KEY] = json.dumps({**options, "colorspace": colour_name}, sort_keys=True)
    return RenderPrints(identities, content, base, whole, FramePrints(base, identities),
                        metadata)


def fingerprint_options(request: RenderRequest, analysed: Sequence[int], content_sha256: str,
                        references: Sequence[str]) -> dict[str, Any]:
    """What the fingerprint holds besides the settings, models, source identity and colour
    space: smoothing, the analysed range, the analysis, plan and reader versions, the start
    number, the input's content, the reference pictures' sha256, enhancer on or off, conform."""
    return {"smoothing": repr(smoothing_of(request)), "frames": (analysed[0], analysed[-1]),
            "analysis": ANALYSIS_VERSION, "plan": PLAN_VERSION, "reader": READER_VERSION,
            "start_number": request.input.start_number, "input": content_sha256,
            "reference": list(references), "enhancer": bool(request.settings.enhancer),
            "conform_vfr": request.input.conform_vfr}
