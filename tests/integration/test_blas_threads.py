"""numpy's BLAS on one thread while a render or a plan runs (runtime.threads.blas_on_one_thread),
and as it was before once it ends: a BLAS that splits the engine's small products over threads
leaves its workers spinning (docs/performance.md). The limit changes no pixel: the same bytes
with the BLAS on one thread as on two. The real render code: real YuNet, the contract
recogniser and the colour swapper, whose output is the source's latent (the 512 x 512 product
that a two-thread BLAS splits)."""

from __future__ import annotations

import contextlib
from pathlib import Path

import pytest
from threadpoolctl import threadpool_info, threadpool_limits

import facefuse.shot.run.render as render_module
from facefuse.runtime.threads import blas_on_one_thread
from facefuse.shot.contract.request import OutputSpec
from facefuse.shot.run.plan_only import plan_shot
from facefuse.shot.run.render import render
from tests.render_media import face_photo, make_face_clip, render_request

SOURCE = "media/obama.jpg"


def _blas_threads() -> list[int]:
    """The threads of numpy's own BLAS (OpenCV's wheel carries a single-threaded one too)."""
    return [pool["num_threads"] for pool in threadpool_info()
            if pool["user_api"] == "blas" and "numpy" in pool["filepath"]]


@pytest.fixture
def two_blas_threads() -> object:
    """The BLAS on two threads around the test (as on a 2-core machine), whatever it was."""
    if not _blas_threads():
        pytest.skip("numpy's BLAS is not one that threadpoolctl controls")
    with threadpool_limits(limits=2, user_api="blas"):
        yield


@pytest.fixture(scope="module")
def clip(tmp_path_factory: pytest.TempPathFactory, testdata: Path) -> Path:
    return make_face_clip(tmp_path_factory.mktemp("blas") / "clip.mov", face_photo(testdata),
                          frames=6, codec="h264", audio=None)


def test_one_thread_inside_the_block_and_as_before_after(two_blas_threads: object) -> None:
    assert set(_blas_threads()) == {2}
    with blas_on_one_thread():
        assert set(_blas_threads()) == {1}
        with blas_on_one_thread():
            assert set(_blas_threads()) == {1}
        assert set(_blas_threads()) == {1}
    assert set(_blas_threads()) == {2}


def test_a_render_runs_its_frames_on_one_blas_thread_and_puts_it_back(
        two_blas_threads: object, render_models: Path, testdata: Path, clip: Path,
        tmp_path: Path) -> None:
    request = render_request(render_models, tmp_path / "cache", testdata / SOURCE, clip,
                             tmp_path / "o.mov", swapper="colour")
    seen: list[list[int]] = []
    summary = render(request, lambda _report: seen.append(_blas_threads()))
    assert summary.swapped == 6 and len(seen) == 6
    assert all(set(threads) == {1} for threads in seen)
    assert set(_blas_threads()) == {2}


def test_a_plan_runs_on_one_blas_thread_and_puts_it_back(
        two_blas_threads: object, render_models: Path, testdata: Path, clip: Path,
        tmp_path: Path) -> None:
    request = render_request(render_models, tmp_path / "cache", testdata / SOURCE, clip,
                             tmp_path / "o.mov")
    seen: list[list[int]] = []
    plan = plan_shot(request, on_phase=lambda _phase: seen.append(_blas_threads()))
    assert len(plan.frames) == 6 and seen
    assert all(set(threads) == {1} for threads in seen)
    assert set(_blas_threads()) == {2}


def test_the_same_bytes_with_the_blas_on_one_thread_as_on_two(
        two_blas_threads: object, render_models: Path, testdata: Path, clip: Path,
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    outputs = {}
    for name in ("one", "two"):
        if name == "two":  # the render as it was before the limit
            monkeypatch.setattr(render_module, "blas_on_one_thread", contextlib.nullcontext)
        # rawvideo: every pixel compared (h264 renders in one process may differ, a known defect)
        request = render_request(render_models, tmp_path / f"cache-{name}", testdata / SOURCE, clip,
                                 OutputSpec(str(tmp_path / f"{name}.mov"), codec="rawvideo"),
                                 swapper="colour")
        assert render(request).swapped == 6
        outputs[name] = (tmp_path / f"{name}.mov").read_bytes()
    assert outputs["one"] == outputs["two"]
