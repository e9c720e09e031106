"""shot.run.early_targets: the growing analysis pass 2 plans on (AnalysisFeed) and the frame
targets it hands out once final (EarlyTargets): what covers a frame, waiting across threads,
stopping, and how often it plans."""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest

from facefuse.shot.plan.analysis import ShotAnalysis
from facefuse.shot.plan.plan import PlannedFace, ShotPlan
from facefuse.shot.run.early_targets import AnalysisFeed, AnalysisStopped, EarlyTargets
from facefuse.types import Face


def _face(number: int) -> Face:
    x = float(number)
    box = np.array([x, 10, x + 50, 60], np.float32)
    kps = np.array([[x + 15, 25], [x + 35, 25], [x + 25, 35], [x + 17, 48], [x + 33, 48]],
                   np.float32)
    return Face(box, kps, 0.9, None)


def _part(*numbers: int) -> ShotAnalysis:
    return ShotAnalysis({n: (_face(n),) for n in numbers})


class _Planner:
    """Plans every frame of an analysis to its own faces, remembering each analysis' length."""

    def __init__(self) -> None:
        self.lengths: list[int] = []

    def __call__(self, analysis: ShotAnalysis) -> ShotPlan:
        self.lengths.append(len(analysis.faces))
        planned = {n: tuple(PlannedFace(face, "p1", 0, "default") for face in faces)
                   for n, faces in analysis.faces.items() if faces}
        return ShotPlan("", tuple(analysis.faces), (), (), planned, analysis)


def _never() -> bool:
    return False


def test_cached_frames_count_and_the_prefix_grows_only_without_holes() -> None:
    feed = AnalysisFeed(range(1, 11), _part(1, 2, 5, 20))  # 20 lies outside the range
    assert feed.prefix()[1] == 2
    feed.add(_part(3))
    feed.add(ShotAnalysis(), tried=(4,))  # tried, did not decode: covered, without faces
    analysis, covered = feed.prefix()
    assert covered == 5
    assert sorted(analysis.faces) == [1, 2, 3, 4, 5] and analysis.faces[4] == ()
    assert feed.found(5) == 1 and feed.found(4) == 0 and feed.found(9) == 0


def test_a_frame_waits_for_its_horizon_and_planning_catches_up_in_steps() -> None:
    wanted = range(100)
    feed = AnalysisFeed(wanted, ShotAnalysis())
    planner = _Planner()
    plan = EarlyTargets(feed, 10, planner, _never)
    got: list[tuple[Face, ...]] = []
    reader = threading.Thread(target=lambda: got.append(plan.targets(0)))
    reader.start()
    for number in range(10):
        feed.add(_part(number))
    time.sleep(0.2)
    assert reader.is_alive(), "frame 0 needs frames 0..10 analysed"
    for number in range(10, 40):
        feed.add(_part(number))
    reader.join(5)
    assert not reader.is_alive() and got[0][0].face.bbox_xyxy[0] == 0
    # planned once, on max(horizon, MIN_STEP) frames at least: then frame 5 needs no new plan
    assert planner.lengths[0] >= 16 and plan.targets(5)[0].face.bbox_xyxy[0] == 5
    assert len(planner.lengths) == 1


def test_planning_cost_stays_a_small_multiple_of_one_whole_plan() -> None:
    total = 600
    feed = AnalysisFeed(range(total), ShotAnalysis())
    planner = _Planner()
    plan = EarlyTargets(feed, 48, planner, _never)

    def analyse() -> None:  # pass 1 on its own thread, a frame at a time
        for number in range(total):
            feed.add(_part(number))
            time.sleep(0.0002)
        feed.finish()

    worker = threading.Thread(target=analyse)
    worker.start()
    for number in range(total):
        assert plan.targets(number)[0].face.bbox_xyxy[0] == number
    worker.join()
    assert planner.lengths[-1] == total  # the last plan is of the whole range
    assert sum(planner.lengths) <= 6 * total, planner.lengths
    assert len(planner.lengths) <= 16, planner.lengths


def test_a_complete_feed_plans_once_on_the_whole_range() -> None:
    planner = _Planner()
    feed = AnalysisFeed.complete(range(1, 31), _part(*range(1, 31)))
    plan = EarlyTargets(feed, 0, planner, _never)
    assert all(plan.targets(n) for n in range(1, 31))
    assert planner.lengths == [30]


def test_stop_and_a_failed_pass_one_end_the_wait() -> None:
    feed = AnalysisFeed(range(50), ShotAnalysis())
    stop = threading.Event()
    plan = EarlyTargets(feed, 10, _Planner(), stop.is_set)
    threading.Timer(0.2, stop.set).start()
    started = time.monotonic()
    with pytest.raises(AnalysisStopped):
        plan.targets(0)
    assert time.monotonic() - started < 2.0
    failed = AnalysisFeed(range(50), ShotAnalysis())
    failed.add(_part(0, 1))
    threading.Timer(0.1, failed.finish, (RuntimeError("decoder gone"),)).start()
    with pytest.raises(AnalysisStopped):
        EarlyTargets(failed, 10, _Planner(), _never).targets(0)


def test_a_finished_analysis_releases_frames_near_the_end() -> None:
    feed = AnalysisFeed(range(20), ShotAnalysis())
    for number in range(20):
        feed.add(_part(number))
    feed.finish()
    plan = EarlyTargets(feed, 48, _Planner(), _never)  # the horizon reaches past the end
    assert plan.targets(19)[0].face.bbox_xyxy[0] == 19
