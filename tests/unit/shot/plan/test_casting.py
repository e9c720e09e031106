"""Casting without a default source (shot.plan.options): who a request without -s would swap with
nothing, the one-sentence refusals, and the frames a plan leaves by the user's corrections."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from facefuse.errors import InputError
from facefuse.shot.contract.request import (
    InputSpec,
    OutputSpec,
    PersonId,
    PlanChoices,
    RenderRequest,
)
from facefuse.shot.plan.analysis import ShotAnalysis
from facefuse.shot.plan.casting import (
    check_casting,
    check_sources,
    default_identity,
    people_without_source,
)
from facefuse.shot.plan.make import make_plan
from facefuse.shot.plan.options import PlanOptions
from facefuse.shot.plan.overrides import Override, Overrides
from tests.unit.shot.faces import face_at

LEAD, EXTRA = np.eye(8, dtype=np.float32)[0], np.eye(8, dtype=np.float32)[1]


def _two_people() -> ShotAnalysis:
    """p1 (small, from frame 1), p2 (large, frames 3-8: the main person)."""
    detections = {n: (face_at(10, LEAD),) for n in (1, 2)}
    detections.update({n: (face_at(10, LEAD), face_at(300, EXTRA, 120)) for n in range(3, 9)})
    return ShotAnalysis(detections)


def _request(sources: tuple[str, ...] = (), **plan: object) -> RenderRequest:
    return RenderRequest(sources=tuple(Path(s) for s in sources), input=InputSpec("in.mov"),
                         output=OutputSpec("out.####.png"),
                         plan=PlanChoices(**plan))  # type: ignore[arg-type]


def test_only_people_swapped_with_the_default_source_need_one() -> None:
    plan = make_plan(_two_people(), PlanOptions("many", rate_hz=24.0, assign={"p1": "a.png"}),
                     "s")
    request = _request(assign=((PersonId("p1"), Path("a.png")),))
    assert people_without_source(plan, request) == ("p2",)
    assert people_without_source(plan, request, (1, 2)) == ()  # p2 is not in frames 1-2
    check_sources(plan, request, (1, 2))
    with pytest.raises(InputError) as caught:
        check_sources(plan, request, range(1, 9))
    message = str(caught.value)
    assert message.startswith("p2 is swapped but has no source") and "--assign p2=" in message
    assert "\n" not in message
    assert people_without_source(plan, _request(("s.png",))) == ()  # -s covers everyone


def test_a_request_with_no_source_and_nobody_assigned_is_refused_at_once() -> None:
    with pytest.raises(InputError, match="there is no source face to swap in"):
        check_casting(_request())
    check_casting(_request(assign=((PersonId("p1"), Path("a.png")),)))
    check_casting(_request(("s.png",)))


def test_without_sources_the_fingerprint_names_an_empty_identity() -> None:
    empty = default_identity({})
    assert empty.embedding.shape == (0,) and empty.source_sha256 == ()
    assert empty.digest == default_identity({}).digest  # the same every time


def test_corrected_frames_are_those_the_users_corrections_leave() -> None:
    skipped = make_plan(_two_people(), PlanOptions("one", rate_hz=24.0,
                                                   skip=frozenset({"p2"})), "s")
    assert skipped.corrected == frozenset(range(3, 9))  # where the skipped p2 is seen
    chosen = make_plan(_two_people(), PlanOptions("one", rate_hz=24.0), "s")
    assert chosen.corrected == frozenset()  # p1 left by the selector: not a correction
    kept = Overrides((Override(((4, 5),), None, "keep"), Override(((1, 2),), None, "keep")))
    overridden = make_plan(_two_people(), PlanOptions("one", rate_hz=24.0, overrides=kept), "s")
    assert overridden.corrected == frozenset({4, 5})  # 1-2 had nobody swapped to keep
