"""Which frames a render does (shot.frames.plan_frames): ranges, chunks, gaps, refusals."""

from __future__ import annotations

import pytest

from facefuse.errors import InputError
from facefuse.io.sequences import chunk_of
from facefuse.shot.frames import FramePlan, plan_frames

SHOT = tuple(range(1001, 1011))  # ten frames, 1001-1010


def test_everything_by_default():
    assert plan_frames(SHOT, None, None, "shot") == FramePlan(SHOT, SHOT)


def test_a_range_is_clipped_to_the_input():
    plan = plan_frames(SHOT, (995, 1003), None, "shot")
    assert plan.analysed == plan.rendered == (1001, 1002, 1003)


def test_a_chunk_renders_its_slice_and_analyses_the_whole_range():
    plans = [plan_frames(SHOT, None, (i, 3), "shot") for i in (1, 2, 3)]
    assert all(plan.analysed == SHOT for plan in plans)
    assert [plan.rendered for plan in plans] == [chunk_of(SHOT, i, 3) for i in (1, 2, 3)]
    assert sum((plan.rendered for plan in plans), ()) == SHOT


def test_a_chunk_of_a_range():
    plan = plan_frames(SHOT, (1003, 1008), (2, 2), "shot")
    assert plan.analysed == tuple(range(1003, 1009)) and plan.rendered == (1006, 1007, 1008)


def test_more_chunks_than_frames_leaves_some_empty():
    assert plan_frames(SHOT[:2], None, (3, 3), "shot").rendered == ()


@pytest.mark.parametrize("frames", [(1, 1000), (1011, 2000)])
def test_a_range_outside_the_input_is_refused_naming_both(frames):
    with pytest.raises(InputError, match=rf"frames {frames[0]}-{frames[1]} are outside shot, "
                                         r"which has frames 1001-1010"):
        plan_frames(SHOT, frames, None, "shot")


def test_gaps_matter_only_for_sequences():
    holes = (1, 2, 5, 6, 9)
    assert plan_frames(holes, None, None, "clip").rendered == holes
    with pytest.raises(InputError, match=r"plate has gaps: frame 3, 4, 7, 8 missing \(4 in all\)"):
        plan_frames(holes, None, None, "plate", contiguous=True)
    assert plan_frames(holes, (5, 6), None, "plate", contiguous=True).rendered == (5, 6)


def test_a_chunk_that_does_not_exist_is_refused():
    with pytest.raises(InputError, match="chunk 4/3 does not exist"):
        plan_frames(SHOT, None, (4, 3), "shot")
