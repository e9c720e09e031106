"""Progress and cancel: render() through the API (cancel() stops between frames and leaves
complete frames, a video output nothing at all; on_progress gets one report per frame, in
order) and --progress json (one line per frame, then a summary: frames, done, skipped,
failed, fps).

`farm` (tests/integration/conftest.py) is a 120-frame clip and its uninterrupted reference
render, made once per session; tests/integration/farm_helpers.py starts and reads the processes.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from facefuse.shot.contract.request import (
    FrameReport,
    FrameSpec,
    InputSpec,
    OutputSpec,
    RenderRequest,
)
from facefuse.shot.run.render import render
from tests.integration.farm_helpers import (
    CLIP_FRAMES,
    QUEUE_DEPTH,
    Farm,
    assert_only_outputs,
    read_pixels,
)

# --- render() through the API ------------------------------------------------------------------

def test_api_cancel_leaves_complete_frames_and_reports_each_frame_in_order(
        farm: Farm, tmp_path: Path) -> None:
    reports: list[FrameReport] = []
    request = RenderRequest(sources=(farm.source,), settings=farm.settings(),
                            input=InputSpec(str(farm.clip)),
                            output=OutputSpec(str(tmp_path / "out.####.png")))
    summary = render(request, reports.append, lambda: len(reports) >= 10)

    assert summary.cancelled and summary.failed == ()
    numbers = [r.frame for r in reports]
    assert numbers == list(range(1, len(numbers) + 1))
    assert 10 <= len(numbers) <= 10 + 2 * QUEUE_DEPTH + 2, "cancel() is checked between frames"
    assert summary.swapped == len(numbers) and summary.skipped == 0
    for report in reports:
        assert report.status == "swapped" and report.faces == 1 and report.error == ""
        assert {"decode", "swap"} <= set(report.ms) and all(v >= 0 for v in report.ms.values())
    files = assert_only_outputs(tmp_path, "png", max_temps=0)
    assert list(files) == numbers, "exactly the reported frames are on disk"
    for number, path in files.items():
        assert np.array_equal(read_pixels(path), read_pixels(farm.reference[number])), number


def test_api_video_output_reports_every_frame_and_a_cancel_leaves_no_file(
        farm: Farm, tmp_path: Path) -> None:
    settings = farm.settings()
    reports: list[FrameReport] = []
    whole = tmp_path / "whole.mkv"
    summary = render(RenderRequest(sources=(farm.source,), settings=settings,
                                   input=InputSpec(str(farm.clip)), frames=FrameSpec(range=(5, 34)),
                                   output=OutputSpec(str(whole), codec="mjpeg")), reports.append)
    assert not summary.cancelled and summary.frames == summary.swapped == 30
    assert [r.frame for r in reports] == list(range(5, 35))
    assert [p.name for p in tmp_path.iterdir()] == ["whole.mkv"]

    out = tmp_path / "cancelled"
    out.mkdir()
    reports.clear()
    summary = render(RenderRequest(sources=(farm.source,), settings=settings,
                                   input=InputSpec(str(farm.clip)),
                                   output=OutputSpec(str(out / "cut.mkv"), codec="mjpeg")),
                     reports.append, lambda: len(reports) >= 8)
    assert summary.cancelled
    assert [r.frame for r in reports] == list(range(1, len(reports) + 1))
    assert len(reports) < CLIP_FRAMES
    assert list(out.iterdir()) == [], "a cancelled video leaves neither file nor temporary"


# --- --progress json ---------------------------------------------------------------------------

def test_progress_json_has_one_line_per_frame(farm: Farm) -> None:
    lines = farm.reference_log
    frames, summary = [line for line in lines if "frame" in line], lines[-1]
    phases = [line for line in lines if "phase" in line]
    assert [line["frame"] for line in frames] == list(range(1, CLIP_FRAMES + 1))
    assert {line["phase"] for line in phases} >= {"analysis", "swap"}
    for phase in ("analysis", "swap"):
        steps = [line for line in phases if line["phase"] == phase]
        assert steps[-1]["done"] == steps[-1]["total"] == CLIP_FRAMES
        assert [s["done"] for s in steps] == sorted(s["done"] for s in steps)
    for line in frames:
        assert set(line) == {"frame", "status", "faces", "found", "ms"}
        assert line["status"] == "swapped" and line["faces"] == line["found"] == 1
        assert {"decode", "swap", "paste"} <= set(line["ms"])
        assert all(isinstance(v, (int, float)) and v >= 0 for v in line["ms"].values())
    record = summary["summary"]
    assert record["frames"] == CLIP_FRAMES and record["swapped"] == CLIP_FRAMES
    assert record["skipped"] == 0 and record["failed"] == [] and record["cancelled"] is False
    assert 0 < record["fps"] and record["seconds"] > 0
    assert record["fps"] == pytest.approx(CLIP_FRAMES / record["seconds"], rel=0.01)
    print(f"\nreference render: {CLIP_FRAMES} frames in {farm.reference_seconds:.1f} s "
          f"(summary {record['seconds']} s, {record['fps']} fps)")


def test_progress_json_summary_counts_done_frames(farm: Farm) -> None:
    """The summary names frames, done, skipped, failed and fps (done = swapped + no_face)."""
    record = farm.reference_log[-1]["summary"]
    assert {"frames", "done", "skipped", "failed", "fps"} <= set(record), sorted(record)
    assert record["done"] == record["swapped"] + record["no_face"] == CLIP_FRAMES
