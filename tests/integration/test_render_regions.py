"""Once a video's decoded pictures pass through to the encoder, pass 2 converts only the box
around each frame's swap to BGR (io.video.frame): the encoder gets the same planes as when
every whole frame is converted (bit for bit with OpenCV 4; OpenCV 5's warps are not exactly
shift-invariant, so a crop cut from a box is a level off in ~0.2 % of its values there), and
so do the matte and patch sequences. The clip's frames cycle through no face, one face, two
faces and a face whose crops the frame edge cuts; the planes are captured where VideoSink
composes them. A 10-bit ProRes 422 HQ copy of the clip (rendered to prores_422, BGR uint16
regions) gives the same planes with and without regions too.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from types import MappingProxyType
from typing import Any

import av
import cv2
import numpy as np
import pytest

from facefuse.io.video import DecodedFrame
from facefuse.io.video import write as video_write
from facefuse.io.video.yuv import picture_planes
from facefuse.io.video.yuv_write import bgr_to_picture
from facefuse.shot.run import pass_two
from facefuse.shot.run.render import render as render_shot
from tests import media_factory
from tests.integration.render_helpers import read_bgr
from tests.render_media import face_photo, render_request

FRAMES = 20
SIZE = (640, 360)
# Face photo positions (top-left): one face, two faces, one at the frame's left edge (the
# swap's crops reach past the frame); frame i has LAYOUTS[i % 3], except NO_FACE.
LAYOUTS = (((300, 120),), ((60, 40), (420, 200)), ((0, 230),))
# Frames from here on have no face for a while, then every layout again.
REGIONS_FROM = 11
NO_FACE = range(REGIONS_FROM, REGIONS_FROM + 4)  # longer than the track gap filler's 3
_BT709, _LIMITED = 1, 1


def _frame(index: int, face: np.ndarray) -> np.ndarray:
    frame = media_factory.marked_frame(index, SIZE)
    h, w = face.shape[:2]
    for x, y in () if index in NO_FACE else LAYOUTS[index % len(LAYOUTS)]:
        frame[y:y + h, x:x + w] = face
    return frame


@pytest.fixture(scope="module")
def clip(tmp_path_factory: pytest.TempPathFactory, testdata: Path) -> Path:
    """An h264 yuv420p clip tagged BT.709 limited range (so its pictures pass through)."""
    path = tmp_path_factory.mktemp("regions") / "shot.mp4"
    face = face_photo(testdata)
    with av.open(str(path), "w") as container:
        stream = media_factory._video_stream(container, "h264", Fraction(24), SIZE, 4, None)
        stream.codec_context.colorspace, stream.codec_context.color_range = _BT709, _LIMITED
        for i in range(FRAMES):
            picture = bgr_to_picture(_frame(i, face), "yuv420p", _BT709, False)
            assert picture is not None
            picture.pts = i
            container.mux(stream.encode(picture))
        container.mux(stream.encode(None))
    return path


@pytest.fixture(scope="module")
def deep_clip(tmp_path_factory: pytest.TempPathFactory, testdata: Path) -> Path:
    """The clip's frames at 16 bits with a fine ramp (the low two of the 10 bits vary), as a
    ProRes 422 HQ (yuv422p10le) clip tagged BT.709 limited range."""
    path = tmp_path_factory.mktemp("regions_deep") / "shot.mov"
    face = face_photo(testdata)
    ramp = (np.arange(SIZE[0], dtype=np.uint16) % 64 * 4)[None, :, None]
    with av.open(str(path), "w") as container:
        stream = container.add_stream("prores_ks", rate=Fraction(24), options={"profile": "3"})
        stream.width, stream.height, stream.pix_fmt = *SIZE, "yuv422p10le"
        stream.codec_context.colorspace, stream.codec_context.color_range = _BT709, _LIMITED
        for i in range(FRAMES):
            frame = _frame(i, face).astype(np.uint16) * 257
            picture = bgr_to_picture(frame + np.minimum(ramp, 65535 - frame), "yuv422p10le",
                                     _BT709, False)
            assert picture is not None
            picture.pts = i
            container.mux(stream.encode(picture))
        container.mux(stream.encode(None))
    return path


@dataclass(frozen=True)
class Depth:
    """A bit depth's clip (fixture name), its render's output suffix and options (the 8-bit
    h264 at --crf 0 is lossless; the 10-bit one renders to ProRes 422 HQ), its planes' dtype."""

    clip: str
    suffix: str
    options: Mapping[str, Any]
    dtype: type


DEPTHS = MappingProxyType({
    "8bit": Depth("clip", ".mp4", MappingProxyType({"crf": 0}), np.uint8),
    "10bit": Depth("deep_clip", ".mov", MappingProxyType({"codec": "prores_422"}), np.uint16)})


class Capture:
    """The planes VideoSink composes for the encoder, and the frames converted as regions."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.planes: list[list[np.ndarray]] = []
        self.regions: list[int] = []
        compose, timed = video_write.compose, pass_two._timed

        def composing(*args: Any) -> Any:
            out = compose(*args)
            self.planes.append([p.copy() for p in picture_planes(out)])
            return out

        def reading(*args: Any) -> Any:  # the frames left for pass 2 to convert by parts
            for number, frame, ms in timed(*args):
                if getattr(frame, "by_parts", False):
                    self.regions.append(number)
                yield number, frame, ms

        monkeypatch.setattr(video_write, "compose", composing)
        monkeypatch.setattr(pass_two, "_timed", reading)


def _render(monkeypatch: pytest.MonkeyPatch, request: Any, regions: bool,
            cancel_after: int | None = None) -> tuple[Capture, Any]:
    """render() with the planes captured; regions False: every frame converted whole;
    cancel_after: cancelled once that many frames are reported."""
    reports: list[Any] = []
    with monkeypatch.context() as patched:
        if not regions:
            patched.setattr(DecodedFrame, "by_parts", property(lambda _: False))
        capture = Capture(patched)
        summary = render_shot(request, reports.append, cancel=lambda: (
            cancel_after is not None and len(reports) >= cancel_after))
    return capture, summary


def _assert_same_pixels(got: np.ndarray, want: np.ndarray, what: str) -> None:
    """Equal with OpenCV 4; with OpenCV 5 (crops a level off in ~0.2 % of values) at most
    2 levels (of 255) apart in fewer than 0.2 % of the values."""
    if cv2.__version__.startswith("4."):  # shift-invariant warps: bit for bit
        np.testing.assert_array_equal(got, want, err_msg=what)
        return
    level = (1 / 255 if np.issubdtype(want.dtype, np.floating)
             else 257 if want.dtype == np.uint16 else 1)
    differs = got != want
    assert differs.mean() < 0.002, f"{what}: {differs.mean():.4%} differ"
    steps = np.abs(got.astype(np.float64) - want.astype(np.float64)).max(initial=0) / level
    assert steps <= 2 + 1e-6, f"{what}: {steps} levels apart"


def _assert_same_planes(got: list[list[np.ndarray]], want: list[list[np.ndarray]]) -> None:
    assert len(got) == len(want) == FRAMES
    for n, (planes, expected) in enumerate(zip(got, want, strict=True)):
        for plane, reference in zip(planes, expected, strict=True):
            _assert_same_pixels(plane, reference, f"frame {n}")


def _request(testdata: Path, models: Path, cache: Path, clip: Path, out: Path,
             swapper: str = "colour", **changes: Any) -> Any:
    fields = {k: changes.pop(k) for k in ("matte", "patch") if k in changes}
    return render_request(models, cache, testdata / "media" / "obama.jpg", clip, out,
                          swapper=swapper, settings={"selector": "many", **changes},
                          crf=0, **fields)


def _assert_regions(capture: Capture) -> None:
    """Every frame from REGIONS_FROM on (no face and all three layouts) went through
    pass 2 by parts (the reader left them unconverted)."""
    assert set(range(REGIONS_FROM, FRAMES)) <= set(capture.regions), capture.regions


@pytest.mark.parametrize(("depth", "swapper", "settings"), [
    ("8bit", "identity", {}), ("8bit", "identity", {"pixel_boost": 256}), ("10bit", "colour", {})],
    ids=["8bit-plain", "8bit-pixel-boost", "10bit"])
def test_region_frames_give_the_encoder_the_same_planes(
        request: pytest.FixtureRequest, testdata: Path, render_models: Path, render_cache: Path,
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, depth: str, swapper: str,
        settings: dict[str, Any]) -> None:
    case = DEPTHS[depth]
    runs = {}
    for regions in (True, False):
        clip = request.getfixturevalue(case.clip)
        job = render_request(render_models, render_cache, testdata / "media" / "obama.jpg",
                             clip, tmp_path / f"{regions}{case.suffix}", swapper=swapper,
                             settings={"selector": "many", **settings}, **case.options)
        runs[regions], summary = _render(monkeypatch, job, regions)
        assert summary.swapped == FRAMES - len(NO_FACE) and not summary.failed
    _assert_regions(runs[True])
    assert runs[False].regions == []
    assert runs[True].planes[0][0].dtype == case.dtype
    _assert_same_planes(runs[True].planes, runs[False].planes)


@pytest.mark.parametrize("depth", DEPTHS)
def test_with_an_enhancer_matte_and_patch_regions_write_the_same_files(
        request: pytest.FixtureRequest, testdata: Path, render_models: Path, render_cache: Path,
        contract_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        depth: str) -> None:
    case = DEPTHS[depth]
    runs = {}
    for regions in (True, False):
        folder = tmp_path / str(regions)
        job = render_request(
            render_models, render_cache, testdata / "media" / "obama.jpg",
            request.getfixturevalue(case.clip), folder / f"out{case.suffix}",
            swapper="colour", settings={
                "selector": "many", "enhancer": str(contract_dir / "identity_restorer.onnx")},
            matte=str(folder / "matte.####.png"), patch=str(folder / "patch.####.exr"),
            **case.options)
        runs[regions], _ = _render(monkeypatch, job, regions)
    _assert_regions(runs[True])
    _assert_same_planes(runs[True].planes, runs[False].planes)
    for n in range(1, FRAMES + 1):
        for kind in ("matte.{:04d}.png", "patch.{:04d}.exr"):
            _assert_same_pixels(read_bgr(tmp_path / "True" / kind.format(n)),
                                read_bgr(tmp_path / "False" / kind.format(n)), kind.format(n))


def test_a_cancelled_region_render_leaves_no_video_and_its_rerun_is_the_same(
        clip: Path, testdata: Path, render_models: Path, render_cache: Path, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    out = tmp_path / "out.mp4"
    request = _request(testdata, render_models, render_cache, clip, out)
    cancelled, summary = _render(monkeypatch, request, True, cancel_after=REGIONS_FROM + 2)
    assert summary.cancelled and not out.exists()
    assert REGIONS_FROM in cancelled.regions
    again, _ = _render(monkeypatch, request, True)
    whole, _ = _render(monkeypatch, _request(testdata, render_models, render_cache, clip,
                                             tmp_path / "whole.mp4"), False)
    _assert_regions(again)
    _assert_same_planes(again.planes, whole.planes)
