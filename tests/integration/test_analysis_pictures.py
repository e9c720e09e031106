"""The analysis pass's small-picture path (io.video.frame's small() and region(),
shot.run.pass_one) on video larger than the detector: it finds the faces the full conversion finds,
the recogniser's crops come from real pixels, and a render through it changes nothing outside the
face."""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path

import av
import cv2
import numpy as np
import pytest

from facefuse.geometry import scale_face
from facefuse.io.video import DecodedFrame, VideoSource
from facefuse.io.video.yuv import chroma_centred
from facefuse.pipeline import Pipeline
from facefuse.shot.contract.request import OutputSpec
from facefuse.shot.run.frame_analysis import FrameAnalysis
from facefuse.shot.run.render import render
from facefuse.timing import RenderTimings, StageClock
from facefuse.types import Face, Roi
from tests import media_factory
from tests.integration.render_helpers import read_bgr
from tests.render_media import (
    arrays,
    decode_video,
    face_frame,
    face_photo,
    make_face_clip,
    render_request,
    render_settings,
)

SIZE = (1280, 720)  # twice the detector's 640: the small path is taken
FRAMES = 3


@pytest.fixture(scope="module")
def hd_clip(tmp_path_factory: pytest.TempPathFactory, testdata: Path) -> Path:
    face = face_photo(testdata, (192, 240))
    return make_face_clip(tmp_path_factory.mktemp("hd") / "hd.mp4", face, frames=FRAMES,
                          size=SIZE, audio=None)


def _pictures(clip: Path) -> list:
    with av.open(str(clip)) as container:
        return list(container.decode(video=0))


# yuv420p (limited), yuvj444p (full), yuv422p10le (limited: BGR uint16 regions)
@pytest.mark.parametrize("codec", ["h264", "mjpeg", "prores_422"])
def test_face_regions_are_exactly_the_full_conversion_and_small_stays_close(
        codec: str, testdata: Path, tmp_path: Path) -> None:
    face = face_photo(testdata, (192, 240))
    clip = make_face_clip(tmp_path / f"c.{'mp4' if codec == 'h264' else 'mov'}", face,
                          frames=2, size=SIZE, audio=None, codec=codec)
    picture = _pictures(clip)[1]
    deep = codec == "prores_422"
    full = decode_video(clip, "bgr48le" if deep else "bgr24")[1]  # as the swap pass converts it
    with VideoSource(clip) as source:  # the reader's frame is that conversion
        np.testing.assert_array_equal(next(arrays(source.read([2])))[1], full)
    fmt = "bgr48le" if deep else "bgr24"
    # as the reader makes it
    frame = DecodedFrame.of_picture(picture, fmt, centred=chroma_centred(codec))
    small = frame.small(640)
    assert small is not None and small.pixels.shape == (360, 640, 3)
    assert small.scale_xy == (0.5, 0.5)
    inside, clipped = frame.region(Roi(101, 51, 501, 401)), frame.region(Roi(1200, 700, 1400, 800))
    assert inside is not None and inside.part.origin_xy == (101, 51)
    np.testing.assert_array_equal(inside.pixels, full[51:401, 101:501])
    assert clipped is not None and clipped.part.origin_xy == (1200, 700)
    assert clipped.pixels.shape == (20, 80, 3)
    np.testing.assert_array_equal(clipped.pixels, full[700:, 1200:])
    assert frame.region(Roi(1300, 10, 1400, 50)) is None  # wholly outside
    kept = frame.converted()  # the decoded picture as it is (no 4:4:4 copy) and one region
    assert kept is not None and not kept.whole
    per_pixel = {"yuv420p": 1.5, "yuvj444p": 3, "yuv422p10le": 4}[picture.format.name]
    assert frame.nbytes == 1280 * 720 * per_pixel + small.pixels.nbytes + kept.nbytes
    assert small.pixels.dtype == np.uint8 and inside.pixels.dtype == full.dtype
    shrunk = cv2.resize(full // 257 if deep else full, (640, 360),
                        interpolation=cv2.INTER_AREA).astype(int)
    assert np.abs(small.pixels.astype(int) - shrunk).mean() < 1.0
    # small enough: the full conversion
    assert DecodedFrame.of_picture(picture, fmt, centred=chroma_centred(codec)).small(1280) is None


def test_small_path_finds_the_same_faces_and_embeddings(hd_clip: Path, render_models: Path,
                                                        tmp_path: Path) -> None:
    settings = render_settings(render_models, tmp_path / "cache")
    clock = StageClock()
    with Pipeline(settings) as pipeline:
        analysis = FrameAnalysis(pipeline, None, clock)
        for picture in _pictures(hd_clip):
            frame = picture.reformat(format="yuv444p").to_ndarray(format="bgr24")
            old = pipeline.embed_faces(frame, pipeline.detect(frame))
            new = analysis.faces(DecodedFrame.of_picture(picture, "bgr24", centred=False))
            assert len(old) == len(new) == 1
            assert np.abs(old[0].kps5 - new[0].kps5).max() < 1.5
            assert float(old[0].embedding @ new[0].embedding) > 0.999
    assert {"detect", "colour", "embed"} <= set(clock.take())


def test_crops_from_face_regions_embed_exactly_as_from_a_full_size_frame(
        hd_clip: Path, render_models: Path, tmp_path: Path) -> None:
    """The pass cuts each crop from its face's region alone (no full-size BGR frame): the
    embeddings are those of crops cut from a full-size frame (bit for bit with OpenCV 4)."""
    with Pipeline(render_settings(render_models, tmp_path / "cache")) as pipeline:
        analysis = FrameAnalysis(pipeline, None, StageClock())
        for picture in _pictures(hd_clip):
            small = DecodedFrame.of_picture(picture, "bgr24", centred=False)
            assert small.small(640) is not None
            faces = analysis.faces(small)
            assert len(faces) == 1
            frame = _frame_of_regions(small, [analysis.crop_box(face) for face in faces])
            again = pipeline.embed_faces(frame, faces)
            if cv2.__version__.startswith("4."):  # shift-invariant warps: bit for bit
                np.testing.assert_array_equal(faces[0].embedding, again[0].embedding)
            else:  # OpenCV 5: crops a level off in ~0.2 % of values (see test_geometry)
                assert float(faces[0].embedding @ again[0].embedding) > 0.99999


def test_a_render_through_the_small_path_changes_only_the_face(
        hd_clip: Path, render_models: Path, testdata: Path, tmp_path: Path) -> None:
    request = render_request(render_models, tmp_path / "cache", testdata / "media" / "obama.jpg",
                             hd_clip,
                             OutputSpec(str(tmp_path / "out.#.png"),
                                        matte=str(tmp_path / "matte.#.png")),
                             swapper="colour")
    timings = RenderTimings()
    summary = render(request, timings=timings)
    assert summary.swapped == FRAMES and not summary.failed
    assert timings.report().stages["analysis"]["colour"].frames == FRAMES
    for index, ref in enumerate(decode_video(hd_clip)):
        out = read_bgr(tmp_path / f"out.{index + 1}.png")
        matte = read_bgr(tmp_path / f"matte.{index + 1}.png")[..., 0]
        np.testing.assert_array_equal(out[matte == 0], ref[matte == 0])
        assert (np.abs(out.astype(int) - ref).max(axis=2) > 20).sum() > 2000  # the face changed


def _sideways_clip(path: Path, face: np.ndarray, rotation: int) -> Path:
    """hd_clip's pictures stored turned by -rotation under a display rotation of `rotation`."""
    turns = rotation // 90
    with av.open(str(path), "w") as container:
        stream = media_factory._video_stream(container, "h264", Fraction(24),
                                             SIZE[::-1] if turns % 2 else SIZE, 2, None)
        stream.set_display_rotation(rotation)
        for i in range(2):
            stored = np.ascontiguousarray(np.rot90(face_frame(i, face, SIZE), -turns))
            picture = av.VideoFrame.from_ndarray(stored, format="bgr24").reformat(
                format="yuv420p", dst_colorspace="itu709", dst_color_range=1)
            picture.pts = i
            container.mux(stream.encode(picture))
        container.mux(stream.encode(None))
    return path


@pytest.mark.parametrize("rotation", [90, 180, 270])
def test_a_sideways_picture_is_analysed_upright(rotation: int, testdata: Path,
                                                render_models: Path, tmp_path: Path) -> None:
    """A clip stored sideways: `small` is the upright picture's, its regions are the reader's
    upright frame exactly, and the faces found are those of the clip stored upright."""
    face = face_photo(testdata, (192, 240))
    clip = _sideways_clip(tmp_path / "phone.mp4", face, rotation)
    upright = _sideways_clip(tmp_path / "upright.mp4", face, 0)
    with VideoSource(clip) as source, VideoSource(upright) as plain:
        _, frame = next(iter(source.read([2])))
        _, full = next(arrays(source.read([2])))
        _, level = next(iter(plain.read([2])))
    assert isinstance(frame, DecodedFrame) and isinstance(full, np.ndarray)
    assert isinstance(level, DecodedFrame) and level.small(640) is not None
    small = frame.small(640)
    assert small is not None
    assert small.pixels.shape == (360, 640, 3) and small.scale_xy == (0.5, 0.5)
    assert small.pixels.flags.c_contiguous
    for box in ((101, 51, 501, 401), (1200, 650, 1400, 800), (-5, -5, 40, 30)):
        region = frame.region(Roi(*box))
        assert region is not None and region.part.origin_xy == (max(0, box[0]), max(0, box[1]))
        (x0, y0), (h, w) = region.part.origin_xy, region.pixels.shape[:2]
        np.testing.assert_array_equal(region.pixels, full[y0:y0 + h, x0:x0 + w])
        assert (x0 + w, y0 + h) == (min(SIZE[0], box[2]), min(SIZE[1], box[3]))
    assert frame.region(Roi(1300, 730, 1400, 800)) is None  # wholly outside (below)
    shrunk = cv2.resize(full, (640, 360), interpolation=cv2.INTER_AREA).astype(int)
    assert np.abs(small.pixels.astype(int) - shrunk).mean() < 1.0
    with Pipeline(render_settings(render_models, tmp_path / "cache")) as pipeline:
        analysis = FrameAnalysis(pipeline, None, StageClock())
        turned, straight = analysis.faces(frame), analysis.faces(level)
    assert len(turned) == len(straight) == 1
    assert np.abs(turned[0].kps5 - straight[0].kps5).max() < 1.5
    assert float(turned[0].embedding @ straight[0].embedding) > 0.999


def test_a_dci_4k_picture_is_scaled_back_per_axis() -> None:
    """4096x2160 shrinks to 640x338: x and y scale differently (0.15625 vs 0.15648), and a
    face found in the small picture maps back with each axis's own factor."""
    picture = av.VideoFrame.from_ndarray(np.zeros((2160, 4096, 3), np.uint8), format="bgr24")
    small = DecodedFrame.of_picture(picture.reformat(format="yuv420p"), "bgr24").small(640)
    assert small is not None and small.pixels.shape == (338, 640, 3)
    assert small.scale_xy == (640 / 4096, 338 / 2160)
    found = Face(bbox_xyxy=np.array([10, 300, 60, 330], np.float32),
                 kps5=np.full((5, 2), (30.0, 320.0), np.float32), score=0.9)
    back = scale_face(found, (1 / small.scale_xy[0], 1 / small.scale_xy[1]))
    np.testing.assert_allclose(back.kps5[0], (30 * 4096 / 640, 320 * 2160 / 338), rtol=1e-6)
    assert abs(back.kps5[0, 1] - 320 / small.scale_xy[0]) > 2.5  # one factor would be 3 px off
    # stored sideways (turned upright by a quarter turn): the factors are the upright axes'
    turned = DecodedFrame.of_picture(picture.reformat(format="yuv420p"), "bgr24",
                                     turns=1).small(640)
    assert turned is not None and turned.pixels.shape == (640, 338, 3)
    assert turned.scale_xy == (338 / 2160, 640 / 4096)


def _frame_of_regions(picture: DecodedFrame, boxes: list[Roi]) -> np.ndarray:
    """A full-size BGR frame, black except the given regions of the picture."""
    frame = np.zeros((picture.height, picture.width, 3), np.uint8)
    for box in boxes:
        region = picture.region(box)
        assert region is not None
        pixels, (x, y) = region.pixels, region.part.origin_xy
        frame[y:y + pixels.shape[0], x:x + pixels.shape[1]] = pixels
    return frame
