"""shot.plan.plan: people named by first appearance, who is swapped with which source (selector,
--assign, --skip, by picture), and the per-frame digest re-renders compare."""

from __future__ import annotations

import numpy as np
import pytest

from facefuse.errors import InputError
from facefuse.shot.plan.analysis import ShotAnalysis
from facefuse.shot.plan.make import make_plan, plan_horizon
from facefuse.shot.plan.options import PlanOptions
from facefuse.shot.plan.plan import DEFAULT_SOURCE
from tests.unit.shot.faces import face_at


def _unit(index: int, dim: int = 8) -> np.ndarray:
    vector = np.zeros(dim, np.float32)
    vector[index] = 1.0
    return vector


LEAD, EXTRA = _unit(0), _unit(1)


def _two_people() -> ShotAnalysis:
    """p1 (small, on the left, seen from frame 1), p2 (large, from frame 3: the main person)."""
    detections = {n: (face_at(10, LEAD),) for n in (1, 2)}
    detections.update({n: (face_at(10, LEAD), face_at(300, EXTRA, 120)) for n in range(3, 9)})
    return ShotAnalysis(detections)


def _sources(plan, frame: int) -> dict[str, str]:
    return {face.person_id: face.source for face in plan.faces(frame)}


def test_people_are_named_by_first_appearance_and_the_selector_decides_the_rest() -> None:
    plan = make_plan(_two_people(), PlanOptions("one", rate_hz=24.0), "s")
    assert [p.person_id for p in plan.people] == ["p1", "p2"]
    assert [p.swapped for p in plan.people] == [False, True]
    assert plan.person("p2").why == "chosen (selector one)"
    assert _sources(plan, 5) == {"p2": DEFAULT_SOURCE} and plan.faces(1) == ()
    again = make_plan(_two_people(), PlanOptions("one", rate_hz=24.0), "s")
    assert [p.frames for p in again.people] == [p.frames for p in plan.people]


def test_assign_gives_a_person_their_own_source_and_skip_leaves_one_untouched() -> None:
    options = PlanOptions("one", rate_hz=24.0, assign={"p1": "anna.png"}, skip=frozenset({"p2"}))
    plan = make_plan(_two_people(), options, "s")
    assert _sources(plan, 5) == {"p1": "anna.png"} and _sources(plan, 1) == {"p1": "anna.png"}
    assert plan.person("p2").why == "skipped" and plan.sources == ("anna.png",)
    both = make_plan(_two_people(), PlanOptions("one", rate_hz=24.0, assign={"p1": "a.png"}),
                     "s")
    assert _sources(both, 5) == {"p1": "a.png", "p2": DEFAULT_SOURCE}


def test_a_picture_names_the_person_who_looks_like_it() -> None:
    options = PlanOptions("many", rate_hz=24.0, assign_references=((EXTRA, "b.png"),),
                          skip_references=(LEAD,))
    plan = make_plan(_two_people(), options, "s")
    assert _sources(plan, 5) == {"p2": "b.png"}
    nobody = PlanOptions("many", rate_hz=24.0, assign_references=((_unit(5), "b.png"),))
    with pytest.raises(InputError, match="no person in this shot looks like"):
        make_plan(_two_people(), nobody, "s")


def test_a_person_the_shot_does_not_have_is_refused_in_one_sentence() -> None:
    with pytest.raises(InputError, match=r"no person 'p7'.*people are p1, p2$"):
        make_plan(_two_people(), PlanOptions("one", skip=frozenset({"p7"})), "s")
    plan = make_plan(_two_people(), PlanOptions("one"), "s")
    with pytest.raises(InputError, match="no person 'p3'"):
        plan.person("p3")


def test_the_frame_digest_follows_what_the_frame_swaps() -> None:
    base = make_plan(_two_people(), PlanOptions("many", rate_hz=24.0), "s")
    other = make_plan(_two_people(), PlanOptions("many", rate_hz=24.0, assign={"p2": "b.png"}),
                      "s")
    assert base.frame_digest(1) == other.frame_digest(1)  # p2 is not in frame 1
    assert base.frame_digest(5) != other.frame_digest(5)
    skipped = make_plan(_two_people(), PlanOptions("many", rate_hz=24.0,
                                                   skip=frozenset({"p1"})), "s")
    assert skipped.frame_digest(1) == make_plan(ShotAnalysis(), PlanOptions(), "").frame_digest(1)


def test_naming_anyone_makes_the_plan_whole_range() -> None:
    assert plan_horizon(PlanOptions("many", rate_hz=24.0)) == 48
    assert plan_horizon(PlanOptions("many", rate_hz=24.0, skip=frozenset({"p1"}))) is None
    assert plan_horizon(PlanOptions("one", rate_hz=24.0)) is None
