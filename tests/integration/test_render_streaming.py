"""Pass 2 beside pass 1 (selector many, analysis not cached; see shot/run/early_targets.py): the
streamed render's frames are bit-identical to a render of the same shot whose analysis was cached
first,
with smoothing, two faces and a cut, for a farm chunk inside the range and for a sequence output
resumed after a cancel; the first frame is written before the analysis ends (selector one still
waits for it); a pass-1 failure surfaces as itself; the two passes read one video at once.

The shot: 40 frames at 8 fps (so the plan's horizon is 16 frames), two real faces drifting a
pixel or two a frame, and a cut at frame 21 (the background and the faces' places change)."""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, replace
from fractions import Fraction
from pathlib import Path
from typing import Any

import av
import numpy as np
import pytest

from facefuse.errors import ModelError
from facefuse.io.video import VideoSource
from facefuse.pipeline import Pipeline
from facefuse.shot.contract.request import FrameReport, PhaseProgress, RenderRequest, RenderSummary
from facefuse.shot.plan.make import plan_horizon
from facefuse.shot.plan.options import PlanOptions
from facefuse.shot.run.render import render
from tests import media_factory
from tests.integration import farm_helpers
from tests.integration.render_helpers import read_bgr
from tests.render_media import (
    arrays,
    decode_video,
    face_photo,
    make_face_clip,
    render_request,
    stray_files,
)

FRAMES = 40
RATE = Fraction(8)
CUT = 20  # 0-based index of the first frame after the cut
SIZE = (480, 270)
PATTERN = "out.####.png"
SMOOTHING = True  # fixed-lag smoothing keeps plan_horizon's promise (shot.plan.smoothing)


def _shot_frame(index: int, face: np.ndarray) -> np.ndarray:
    """Two copies of the face (one mirrored) on a plain background; they drift along, and at
    the cut the background turns from blue-grey to warm and the faces trade places."""
    after = index >= CUT
    frame = np.empty((SIZE[1], SIZE[0], 3), np.uint8)
    frame[:] = (40, 160, 220) if after else (150, 110, 60)
    step = index - CUT if after else index
    h, w = face.shape[:2]
    places = [(260 - step, 70 + step % 3), (40 + step, 90)] if after else \
             [(40 + 2 * step, 60 + step % 4), (300 - step, 100)]
    for (x, y), picture in zip(places, (face, face[:, ::-1])):
        frame[y:y + h, x:x + w] = picture
    return frame


def _make_shot(path: Path, face: np.ndarray) -> Path:
    with av.open(str(path), "w") as container:
        stream = media_factory._video_stream(container, "h264", RATE, SIZE, 12, None)
        for i in range(FRAMES):
            picture = av.VideoFrame.from_ndarray(_shot_frame(i, face), format="bgr24")
            picture = picture.reformat(format=stream.pix_fmt, dst_colorspace="itu709",
                                       dst_color_range=1)
            picture.pts = i
            container.mux(stream.encode(picture))
        container.mux(stream.encode(None))
    return path


class _Events:
    """Every FrameReport and PhaseProgress in the order they arrived (from several threads)."""

    def __init__(self) -> None:
        self.items: list[FrameReport | PhaseProgress] = []
        self._lock = threading.Lock()

    def __call__(self, item: FrameReport | PhaseProgress) -> None:
        with self._lock:
            self.items.append(item)

    def first_swapped(self) -> int:
        return next(i for i, e in enumerate(self.items)
                    if isinstance(e, FrameReport) and e.status == "swapped")

    def analysis_done(self) -> int:
        return next(i for i, e in enumerate(self.items) if isinstance(e, PhaseProgress)
                    and e.phase == "analysis" and e.done == e.total)


@dataclass(frozen=True)
class Shot:
    root: Path
    clip: Path
    request: Callable[..., RenderRequest]  # (cache, output folder, **fields)
    streamed: RenderSummary
    events: _Events
    batch: RenderSummary
    batch_dir: Path


def _render(request: RenderRequest, cancel: Callable[[], bool] | None = None,
            events: _Events | None = None) -> RenderSummary:
    events = events if events is not None else _Events()
    return render(request, events, cancel, events)


@pytest.fixture(scope="module")
def shot(tmp_path_factory: pytest.TempPathFactory, testdata: Path, render_models: Path) -> Shot:
    root = tmp_path_factory.mktemp("streaming")
    clip = _make_shot(root / "shot.mp4", face_photo(testdata))

    def request(cache: Path, out: Path, **fields: Any) -> RenderRequest:
        out.mkdir(parents=True, exist_ok=True)
        return render_request(render_models, cache, testdata / "media" / "obama.jpg", clip,
                              out / PATTERN, swapper="colour",
                              settings={"selector": "many"},
                              **{"smoothing": SMOOTHING, **fields})

    cache = root / "cache"
    events = _Events()
    streamed = _render(request(cache, root / "streamed"), events=events)
    batch = _render(request(cache, root / "batch"))  # the analysis is cached now
    return Shot(root, clip, request, streamed, events, batch, root / "batch")


def _frames(folder: Path) -> dict[int, np.ndarray]:
    return {int(p.name.split(".")[1]): read_bgr(p) for p in sorted(folder.glob("out.*.png"))}


def _assert_same_as_batch(shot: Shot, folder: Path, numbers: range) -> None:
    got, want = _frames(folder), _frames(shot.batch_dir)
    assert sorted(got) == list(numbers)
    for number in numbers:
        np.testing.assert_array_equal(got[number], want[number], f"frame {number}")


def test_the_streamed_render_equals_the_batch_render(shot: Shot) -> None:
    assert plan_horizon(PlanOptions("many", rate_hz=float(RATE))) == 16
    assert shot.streamed.analysis_cached == 0 and shot.batch.analysis_cached == FRAMES
    assert shot.streamed.swapped == shot.batch.swapped >= FRAMES - 4
    two_faces = [e for e in shot.events.items if isinstance(e, FrameReport) and e.faces == 2]
    assert len(two_faces) >= FRAMES - 4, "both faces are swapped in (nearly) every frame"
    _assert_same_as_batch(shot, shot.root / "streamed", range(1, FRAMES + 1))
    # pass 2 had no other frames to look at: the plan of a prefix swapped them
    assert shot.events.first_swapped() < shot.events.analysis_done()


def test_each_phase_counts_up_while_the_two_interleave(shot: Shot) -> None:
    for phase in ("analysis", "swap"):
        done = [e.done for e in shot.events.items
                if isinstance(e, PhaseProgress) and e.phase == phase]
        assert done == sorted(done) and done[-1] == FRAMES, phase
    phases = [e.phase for e in shot.events.items if isinstance(e, PhaseProgress)]
    assert phases[-1] == "encode" and "analysis" in phases[phases.index("swap"):]


def test_a_chunk_inside_the_range_streams_and_caches_the_whole_analysis(shot: Shot) -> None:
    cache, out = shot.root / "chunk-cache", shot.root / "chunk"
    chunk = _render(shot.request(cache, out, chunk_frames=(14, 25)))
    assert chunk.frames == 12 and chunk.analysis_cached == 0 and not chunk.cancelled
    _assert_same_as_batch(shot, out, range(14, 26))
    again = _render(shot.request(cache, shot.root / "chunk-again", chunk_frames=(1, 2)))
    assert again.analysis_cached == FRAMES  # pass 1 finished and saved after pass 2 ended


def test_a_cancelled_streamed_render_resumes_to_the_same_frames(shot: Shot) -> None:
    cache, out = shot.root / "cancel-cache", shot.root / "cancelled"
    events = _Events()
    pressed: list[int] = []  # how many events had arrived when cancel was first pressed

    def cancel() -> bool:
        if not pressed and sum(isinstance(e, FrameReport) for e in list(events.items)) >= 5:
            pressed.append(len(events.items))
        return bool(pressed)

    first = _render(shot.request(cache, out), cancel, events)
    assert first.cancelled and 5 <= first.swapped + first.no_face < FRAMES
    later = [e for e in events.items[pressed[0]:]
             if isinstance(e, PhaseProgress) and e.phase == "analysis"]
    assert len(later) <= 2, "pass 1 stops with pass 2 (a frame in flight may still finish)"
    assert not stray_files(out), "only complete frames are left"
    written = _frames(out)
    assert len(written) == first.swapped + first.no_face
    resumed = _render(shot.request(cache, out))
    assert resumed.skipped == len(written) and not resumed.cancelled
    assert resumed.analysis_cached > 0, "the cancelled render kept what pass 1 analysed"
    _assert_same_as_batch(shot, out, range(1, FRAMES + 1))


def test_selector_one_still_waits_for_the_whole_analysis(shot: Shot) -> None:
    events = _Events()
    request = shot.request(shot.root / "one-cache", shot.root / "one", frames=(1, 24))
    request = replace(request, settings=replace(request.settings, selector="one"))
    summary = _render(request, events=events)
    assert summary.swapped and summary.analysis_cached == 0
    assert events.analysis_done() < events.first_swapped()


class _FailingPipeline(Pipeline):
    """A pipeline whose detector fails at its 30th frame (a model error in pass 1)."""

    calls = 0

    def detect(self, frame: np.ndarray, colour: Any = None) -> Any:
        self.calls += 1
        if self.calls >= 30:
            raise ModelError("the detector failed")
        return super().detect(frame, colour)


def test_a_pass_one_failure_surfaces_as_itself_and_leaves_only_whole_frames(shot: Shot
                                                                            ) -> None:
    out = shot.root / "failed"
    request = shot.request(shot.root / "fail-cache", out)
    with _FailingPipeline(request.settings) as pipeline, \
            pytest.raises(ModelError, match="the detector failed"):
        render(request, None, None, None, pipeline=pipeline)
    assert not stray_files(out)
    assert len(_frames(out)) <= 30 - 16  # only frames whose targets were final
    _assert_same_as_batch(shot, out, range(1, len(_frames(out)) + 1))


def test_an_analysis_read_and_a_frame_read_run_at_once(shot: Shot) -> None:
    reference = decode_video(shot.clip)
    results: dict[str, list[int]] = {}
    with VideoSource(shot.clip) as source:
        def analysis() -> None:
            results["analysis"] = [n for n, picture in arrays(source.read(range(1, FRAMES + 1)))
                                   if np.array_equal(picture, reference[n - 1])]

        worker = threading.Thread(target=analysis)
        worker.start()
        results["frames"] = [n for n, frame in arrays(source.read(range(1, FRAMES + 1, 2)))
                             if np.array_equal(frame, reference[n - 1])]
        worker.join()
    assert results == {"analysis": list(range(1, FRAMES + 1)),
                       "frames": list(range(1, FRAMES + 1, 2))}


def test_fail_fast_stops_a_streamed_render_at_the_failed_frame(render_models: Path,
                                                               testdata: Path,
                                                               tmp_path: Path) -> None:
    # 52 frames at 24 fps: the horizon is 48 frames, so pass 2 starts before pass 1 ends
    clip = make_face_clip(tmp_path / "broken.mkv", frames=52, zeroed=(4,),
                          **farm_helpers.farm_clip(testdata))
    out = tmp_path / "out"
    out.mkdir()
    events = _Events()
    request = render_request(render_models, tmp_path / "cache", testdata / "media" / "obama.jpg",
                             clip, out / "out.####.png", fail_fast=True,
                             settings={"selector": "many"})
    summary = _render(request, events=events)
    assert [n for n, _ in summary.failed] == [5] and not summary.cancelled
    assert [e.frame for e in events.items if isinstance(e, FrameReport)] == [1, 2, 3, 4, 5]
    assert sorted(farm_helpers.frame_files(out)) == [1, 2, 3, 4] and not stray_files(out)
    assert summary.swapped + summary.no_face == 4


def test_a_range_no_longer_than_the_horizon_is_analysed_first(shot: Shot) -> None:
    events = _Events()
    summary = _render(shot.request(shot.root / "short-cache", shot.root / "short",
                                   frames=(1, 16)), events=events)
    assert summary.swapped and summary.analysis_cached == 0
    assert events.analysis_done() < events.first_swapped()
