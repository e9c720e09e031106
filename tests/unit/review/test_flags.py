"""Flags on synthetic plans: each kind fires on a case made for it, and none on a clean track."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from facefuse.review.flags import KINDS, Thresholds, find_flags
from facefuse.review.measures import hull_area, person_series
from facefuse.review.records import flagged_ranges, ranges
from tests.unit.review.plans import SIZE, face, moved, plan_of
from tests.unit.shot.identities import identity, seen

FRAMES = tuple(range(1, 41))


def _kinds(plan, **limits):
    return [(f.kind, f.first, f.last, f.person_id) for f in find_flags(plan, Thresholds(**limits))]


def test_a_clean_steady_track_has_no_flag():
    plan = plan_of(FRAMES, [FRAMES, FRAMES[10:30]], cuts=(21,))
    assert find_flags(plan) == ()
    series = person_series(plan, "p1")
    assert series.frames == FRAMES
    assert all(v is None or v == pytest.approx(0.0, abs=1e-6) for v in series.jitter)
    assert series.mask_area_change[0] is None
    assert series.jitter[0] is None and series.jitter[-1] is None


def test_missed_frames_inside_a_track_that_gap_filling_leaves_open():
    gap = range(10, 15)  # five frames: more than MAX_FILLED_FRAMES
    plan = plan_of(FRAMES, [FRAMES], spoil=lambda f, x: None if f in gap else x)
    flags = find_flags(plan)
    missed = [f for f in flags if f.kind == "missed"]
    assert [(f.first, f.last) for f in missed] == [(10, 14)]
    assert "5 frames" in missed[0].reason
    # the plan did not fill them either: the swap drops out there too
    assert [(f.first, f.last) for f in flags if f.kind == "swap_dropout"] == [(10, 14)]
    short = plan_of(FRAMES, [FRAMES], spoil=lambda f, x: None if f in (10, 11) else x,
                    planned_spoil=None)
    assert [f.kind for f in find_flags(short)] == ["swap_dropout"]  # the stub plan fills none


def test_an_identity_jump_within_a_track():
    other = identity(3)
    plan = plan_of(FRAMES, [FRAMES], spoil=lambda f, x: replace(x, embedding=seen(other, f, 0.1))
                   if f >= 25 else x)
    assert _kinds(plan) == [("identity_jump", 25, 25, "p1")]
    assert "0." in find_flags(plan)[0].reason


def test_low_detector_confidence():
    plan = plan_of(FRAMES, [FRAMES], spoil=lambda f, x: replace(x, score=0.4)
                   if 5 <= f <= 7 else x)
    (flag,) = find_flags(plan)
    assert (flag.kind, flag.frames, flag.value) == ("low_confidence", (5, 7), pytest.approx(0.4))


def test_a_box_jump_and_a_mask_area_spike():
    jump = plan_of(FRAMES, [FRAMES], planned_spoil=lambda f, x: moved(x, dx=0.5 * SIZE)
                   if f == 20 else x)
    assert _kinds(jump) == [("box_jump", 20, 21, "p1")]  # there and back
    spike = plan_of(FRAMES, [FRAMES], planned_spoil=lambda f, x: moved(x, scale=1.2)
                    if f == 20 else x)
    kinds = _kinds(spike)
    assert ("mask_flicker", 20, 21, "p1") in kinds  # 1.2^2 = +44 %, then back
    assert {k for k, *_ in kinds} == {"mask_flicker"}
    series = person_series(spike, "p1")
    assert series.mask_area_change[19] == pytest.approx(0.44, abs=1e-3)
    assert max(v for v in series.jitter if v is not None) > 0.0


def test_a_swap_that_drops_out_inside_the_presence_but_not_at_a_cut():
    plan = plan_of(FRAMES, [FRAMES], cuts=(21,),
                   planned_spoil=lambda f, x: None if f in (12, 13) else x)
    assert _kinds(plan) == [("swap_dropout", 12, 13, "p1")]
    ends = plan_of(FRAMES, [FRAMES[:15] + FRAMES[25:]], cuts=(21,))
    assert find_flags(ends) == ()  # not seen from 16 to the cut, nor after it until 26


def test_a_face_too_small_for_the_swapper_and_extreme_yaw():
    # eyes 80 px apart at full size, 20 px at a quarter: arcface_128 puts them 35 px apart
    small = plan_of(FRAMES, [FRAMES], planned_spoil=lambda f, x: moved(x, scale=0.25)
                    if f > 30 else x)
    assert _kinds(small, mask_area_spike=1.0, box_jump=2.0) == [("too_small", 31, 40, "p1")]
    assert 1.5 < find_flags(small, Thresholds(mask_area_spike=1.0, box_jump=2.0))[0].value < 2.5
    assert _kinds(small, swapper_size_px=64, mask_area_spike=1.0, box_jump=2.0) == []
    turned = plan_of(FRAMES, [FRAMES], planned_spoil=lambda f, x: face(f, nose_along=0.05)
                     if f <= 3 else x)
    assert _kinds(turned) == [("extreme_yaw", 1, 3, "p1")]


def test_people_not_swapped_are_not_flagged_and_ranges_stop_at_cuts():
    plan = plan_of(FRAMES, [FRAMES, FRAMES], cuts=(21,), swapped=[False, True],
                   spoil=lambda f, x: replace(x, score=0.3))
    flags = find_flags(plan)
    assert [(f.person_id, f.frames) for f in flags] == [("p2", (1, 20)), ("p2", (21, 40))]
    assert flagged_ranges(flags, FRAMES) == ((1, 40),)


def test_ranges_and_hull_area():
    assert ranges([1, 2, 3, 7, 9, 10]) == ((1, 3), (7, 7), (9, 10))
    assert ranges([]) == ()
    square = np.array([[0, 0], [2, 0], [2, 2], [0, 2], [1, 1]], np.float32)
    assert hull_area(square) == pytest.approx(4.0)
    assert hull_area(np.zeros((5, 2))) == 0.0
    assert set(KINDS) == {"missed", "identity_jump", "low_confidence", "box_jump",
                          "mask_flicker", "swap_dropout", "too_small", "extreme_yaw",
                          "will_fail"}


def test_frames_the_render_fails_are_one_flag_per_run_quoting_their_reasons():
    from facefuse.review.flags import failure_flags

    failures = {n: f"f{n} is damaged" for n in (3, 10, 11, 12, 13, 14, 40)}
    frames = [*range(1, 30), 40]  # 29 and 40 are consecutive analysed frames
    flags = failure_flags(failures, frames)
    assert [(f.kind, f.first, f.last, f.person_id, f.value) for f in flags] == [
        ("will_fail", 3, 3, None, 1.0), ("will_fail", 10, 14, None, 5.0),
        ("will_fail", 40, 40, None, 1.0)]
    assert flags[0].reason == "the render fails this frame: f3 is damaged"
    assert flags[1].reason == ("the render fails these 5 frames (frame 10: f10 is damaged; "
                               "frame 11: f11 is damaged; frame 12: f12 is damaged; and 2 more)")
