"""Decode failures mid-clip (zeroed MJPEG packets: the container still indexes them, the
decoder cannot decode them) are reported by number, the rest is finished, exit 5;
--fail-fast stops at the first; a video output keeps one picture per frame.

`farm` (tests/integration/conftest.py) is a 120-frame clip and its uninterrupted reference
render, made once per session; tests/integration/farm_helpers.py starts and reads the processes.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import av

from facefuse.shot.contract.request import InputSpec, OutputSpec, RenderRequest
from facefuse.shot.run.render import render
from tests.integration.farm_helpers import (
    FRAMES_FAILED_EXIT,
    QUEUE_DEPTH,
    Farm,
    assert_only_outputs,
    farm_clip,
    read_pixels,
    run,
)
from tests.media_factory import read_marker
from tests.render_media import make_face_clip


def test_undecodable_frames_are_reported_the_rest_finished_exit_5(farm: Farm, testdata: Path,
                                                                  tmp_path: Path) -> None:
    broken = (10, 11, 20)  # 0-based clip indices: render frames 11, 12 and 21
    failing = [i + 1 for i in broken]
    clip = make_face_clip(tmp_path / "broken.mkv", frames=30, zeroed=broken, **farm_clip(testdata))
    out, fast = tmp_path / "out", tmp_path / "fast"
    out.mkdir()
    fast.mkdir()
    cache = tmp_path / "cache"

    result = run(farm, farm.command(out / "out.####.png", clip=clip), tmp_path / "all", cache)
    assert result.returncode == FRAMES_FAILED_EXIT, result.stderr
    summary = result.summary
    assert [f["frame"] for f in summary["failed"]] == failing
    assert all(f["error"] for f in summary["failed"])
    assert summary["swapped"] == 30 - len(failing) and summary["cancelled"] is False
    assert [r["frame"] for r in result.frames] == list(range(1, 31))
    assert [r["frame"] for r in result.frames if r["status"] == "failed"] == failing
    assert all(r.get("error") for r in result.frames if r["status"] == "failed")
    for number in failing:
        assert f"frame {number} failed" in result.stderr
    files = assert_only_outputs(out, "png", max_temps=0)
    assert list(files) == [n for n in range(1, 31) if n not in failing]
    for number, path in files.items():
        assert read_marker(read_pixels(path)[..., 2::-1]) == number - 1

    stopped = run(farm, farm.command(fast / "out.####.png", "--fail-fast", clip=clip),
                  tmp_path / "fast", cache)
    assert stopped.returncode == FRAMES_FAILED_EXIT, stopped.stderr
    failed = [f["frame"] for f in stopped.summary["failed"]]
    assert failed[0] == failing[0] and failing[2] not in failed, failed
    written = list(assert_only_outputs(fast, "png", max_temps=0))
    assert written[:10] == list(range(1, 11))
    assert max(written) <= failing[0] + 2 * QUEUE_DEPTH + 2, "fail-fast must stop promptly"
    print(f"\n--fail-fast: failed {failed}, wrote frames up to {max(written)}")


def _decoded_markers(path: Path) -> list[int | None]:
    markers: list[int | None] = []
    with av.open(str(path)) as container:
        for frame in container.decode(video=0):
            try:
                markers.append(read_marker(frame.to_ndarray(format="bgr24")))
            except ValueError:
                markers.append(None)
    return markers


def test_video_output_keeps_one_picture_per_frame_when_frames_fail(farm: Farm, testdata: Path,
                                                                   tmp_path: Path) -> None:
    """A failed frame keeps its slot in a video output (else picture and audio/timecode drift
    apart): the previous frame stands in, and for a failed first frame something must too."""
    clip = make_face_clip(tmp_path / "broken.mkv", frames=12, zeroed=(0, 5), **farm_clip(testdata))
    settings = replace(farm.settings(), cache_dir=tmp_path / "cache")
    out = tmp_path / "out.mkv"
    summary = render(RenderRequest(sources=(farm.source,), settings=settings,
                                   input=InputSpec(str(clip)),
                                   output=OutputSpec(str(out), codec="mjpeg")))
    assert [n for n, _ in summary.failed] == [1, 6]
    markers = _decoded_markers(out)
    assert len(markers) == 12, f"{len(markers)} pictures for 12 frames: {markers}"
    assert markers[1:] == [1, 2, 3, 4, 4, 6, 7, 8, 9, 10, 11]
