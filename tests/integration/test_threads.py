"""`--threads N` (Settings.threads): one budget sizing ONNX Runtime's, the decoder's and the
encoder's thread pools. It changes how fast a render runs, never its pixels, so frames rendered
with one budget count as finished under another (a farm mixes machines of different sizes)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from facefuse.pipeline import Pipeline
from facefuse.runtime.sessions import TimedSession
from facefuse.shot.contract.request import FrameSpec, RenderSummary
from tests.integration.render_helpers import Media, read_bgr
from tests.render_media import render_request, render_settings, run_render


def test_the_budget_sizes_the_inference_sessions(render_models: Path, render_cache: Path) -> None:
    with Pipeline(render_settings(render_models, render_cache, "identity", threads=2)) as p:
        session = p.models.sessions.get(render_models / "identity_swapper.onnx")
        assert isinstance(session, TimedSession)  # gated: pass 1 and pass 2 take turns
        assert session.get_session_options().intra_op_num_threads == 2


def test_one_thread_renders_the_same_frames_and_they_count_as_finished(
        media: Media, render_models: Path, render_cache: Path, tmp_path: Path) -> None:
    def go(out: Path, threads: int) -> RenderSummary:
        request = render_request(render_models, render_cache, media.source, media.clip,
                                 out / "o.####.png", settings={"threads": threads},
                                 frames=FrameSpec(range=(1, 8)))
        return run_render(request)[0]

    one = go(tmp_path / "one", 1)
    all_cores = go(tmp_path / "all", 0)
    assert one.swapped == all_cores.swapped > 0
    for n in range(1, 9):
        np.testing.assert_array_equal(read_bgr(tmp_path / "one" / f"o.{n:04d}.png"),
                                      read_bgr(tmp_path / "all" / f"o.{n:04d}.png"))
    resumed = go(tmp_path / "one", 3)
    assert (resumed.skipped, resumed.swapped) == (8, 0)


def test_the_budget_reaches_the_encoder(media: Media, render_models: Path, render_cache: Path,
                                        tmp_path: Path) -> None:
    for threads in (1, 2):
        out = tmp_path / f"t{threads}.mp4"
        request = render_request(render_models, render_cache, media.source, media.clip, out,
                                 settings={"threads": threads}, frames=FrameSpec(range=(1, 4)))
        assert run_render(request)[0].frames == 4
        # x264 writes the options it ran with into the stream (its first SEI)
        assert f" threads={threads} ".encode() in out.read_bytes()
