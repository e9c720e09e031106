"""The Blender extension's background jobs: in the UI the swap runs on a worker drained by the
timer (driven by hand here: with bpy as a module timers never fire), and Cancel keeps only
complete frames, which a re-run resumes from.

The extension zip is installed into the session's throw-away Blender user folder and enabled as
bl_ext.user_default.facefuse once for the modules of tests/hosts/addon/ (`addon`; `shot` is a
saved .blend with a trimmed plate strip: both in tests/hosts/addon/conftest.py; helpers in
tests/hosts/addon/blender_helpers.py).
"""

from __future__ import annotations

import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

# tests/hosts/conftest.py points BLENDER_USER_* at a temporary folder before bpy is imported.
bpy = pytest.importorskip("bpy", reason="bpy (Blender as a Python module) is not installed")

import cv2

from tests.hosts.addon.blender_helpers import (
    TRIMMED,
    FakeLayout,
    add_source,
    drain_until_idle,
    last_message,
    module,
    operator_error,
    result_strip,
)
from tests.media_factory import read_marker


def test_in_the_ui_the_swap_runs_on_a_worker_drained_by_the_timer(
        shot: SimpleNamespace, testdata: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    jobs = module("jobs")
    monkeypatch.setattr(jobs, "runs_blocking", lambda: False)
    add_source(shot.strip, testdata / "media" / "obama.jpg")

    assert bpy.ops.facefuse.swap_strip() == {'FINISHED'}  # returns at once
    job = jobs.current().running(jobs.RENDER)
    assert job is not None and job.total == TRIMMED
    assert bpy.app.timers.is_registered(jobs.drain)
    error = operator_error(bpy.ops.facefuse.swap_strip)
    assert "is still running" in error
    layout = FakeLayout()
    module("panels").draw_status(SimpleNamespace(layout=layout), bpy.context)
    assert layout.calls_of("progress") and layout.calls_of("operator")

    drain_until_idle(jobs)
    assert job.done == TRIMMED and job.fraction == 1.0
    assert last_message().level == 'INFO' and f"{TRIMMED} swapped" in last_message().text
    assert result_strip(shot.scene).frame_final_duration == TRIMMED
    assert jobs.drain() is None  # idle: the timer stops


def test_cancel_keeps_only_complete_frames_and_a_rerun_resumes(
        shot: SimpleNamespace, testdata: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    jobs, swap = module("jobs"), module("swap")
    monkeypatch.setattr(jobs, "runs_blocking", lambda: False)
    swap_job = swap.swap_job

    def slowed_swap_job(plan: Any, **kwargs: Any) -> Any:
        """The real job, its frames written at most every 50 ms: Cancel lands mid-render."""
        job = swap_job(plan, **kwargs)
        work = job.work

        def slowed(report: Any, cancelled: Any) -> Any:
            return work(lambda item: (time.sleep(0.05), report(item)), cancelled)

        job.work = slowed
        return job

    monkeypatch.setattr(swap, "swap_job", slowed_swap_job)
    add_source(shot.strip, testdata / "media" / "obama.jpg")
    shot.strip.facefuse.mask_blur = 0.45  # settings of its own: nothing to resume from

    assert bpy.ops.facefuse.swap_strip() == {'FINISHED'}
    job = jobs.current().running(jobs.RENDER)
    drain_until_idle(jobs, until=lambda: job.done >= 2)
    assert bpy.ops.facefuse.cancel() == {'FINISHED'}
    drain_until_idle(jobs)

    assert last_message().level == 'WARNING' and "cancelled" in last_message().text
    assert not [s for s in shot.scene.sequence_editor.strips if s.facefuse.result_of]
    kept = sorted(shot.out.glob("plate.*.png"))
    assert 2 <= len(kept) < TRIMMED
    assert not [p.name for p in shot.out.iterdir() if p.name.startswith(".")]  # no temp files
    for path in kept:  # every kept frame is complete and right
        assert read_marker(cv2.imread(str(path))) == int(path.name.split(".")[1]) - 1

    monkeypatch.setattr(jobs, "runs_blocking", lambda: True)
    monkeypatch.setattr(swap, "swap_job", swap_job)
    assert bpy.ops.facefuse.swap_strip() == {'FINISHED'}
    assert f"{len(kept)} already done" in last_message().text
    assert result_strip(shot.scene).frame_final_duration == TRIMMED


def test_the_swap_status_shows_the_analysis_beside_the_frames_and_the_finishing() -> None:
    from facefuse.shot.contract.request import FrameReport, PhaseProgress

    plan = SimpleNamespace(scene="no scene", strip="plate", todo=lambda: (1, 2, 3), request=None)
    job = module("swap").swap_job(plan)
    seen = []
    for report in (PhaseProgress("analysis", 0, 3), PhaseProgress("analysis", 1, 3),
                   FrameReport(1, "swapped"), PhaseProgress("swap", 1, 3),
                   PhaseProgress("analysis", 3, 3), FrameReport(2, "no_face"),
                   PhaseProgress("encode", 0, 1), PhaseProgress("encode", 1, 1),
                   FrameReport(3, "unselected", corrected=True),
                   FrameReport(4, "unselected", found=2)):
        job.on_progress(job, report)
        seen.append(job.status)
    assert seen == ["analysing frame 1 of 3", "analysing frame 2 of 3",
                    "frame 1 swapped · analysing frame 2 of 3",
                    "frame 1 swapped · analysing frame 2 of 3",  # the bar counts the swap
                    "frame 1 swapped", "frame 2 without a face",
                    "frame 2 without a face · finishing the output", "frame 2 without a face",
                    "frame 3 left as corrected", "frame 4 face not chosen"]
    assert job.done == 4
