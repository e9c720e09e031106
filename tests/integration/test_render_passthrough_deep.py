"""10-bit renders and writers beside tests/integration/test_render_passthrough.py (which holds
the passed-through planes of 8- and 10-bit clips, and the renders that convert whole frames, to
one bar): a sideways ProRes 422 HQ clip passes through in its stored orientation; each 10-bit
writer's output reads back with the matrix it converted with (so refusing on the matrix is
enough to keep a passed-through picture's colours as the whole-frame path's); a 10-bit h265
output keeps the tags of an h264 or HEVC source; ProRes white and black read as the whole
16-bit range.
"""

from __future__ import annotations

import logging
from fractions import Fraction
from pathlib import Path
from typing import Any

import av
import numpy as np
import pytest

from facefuse.io.video import VideoSink, VideoSource
from facefuse.io.video.passthrough import decoded_picture
from facefuse.io.video.yuv import (
    matrix_for,
    picture_planes,
)
from facefuse.io.video.yuv_write import bgr_to_picture
from tests.integration.passthrough_clips import (
    BT709,
    BT2020,
    PQ,
    capture_composed,
    deep_clip,
    deep_frame,
    planes_and_frames,
)
from tests.integration.passthrough_clips import DEEP_FRAMES as FRAMES
from tests.integration.passthrough_clips import DEEP_WITHOUT_FACE as WITHOUT_FACE
from tests.render_media import arrays, face_photo, render_request, run_render


@pytest.fixture()
def captured(monkeypatch: pytest.MonkeyPatch
             ) -> list[tuple[np.ndarray, list[np.ndarray], np.ndarray]]:
    """(frame, planes composed for the encoder, where the paste masks are > 0) of every frame
    VideoSink passes through."""
    return capture_composed(monkeypatch)


def _render(testdata: Path, models: Path, cache: Path, clip: Path, out: Path,
            caplog: pytest.LogCaptureFixture, **fields: Any) -> list[str]:
    """Render with the colour swapper; the writer's debug lines on passing through."""
    request = render_request(models, cache, testdata / "media" / "obama.jpg", clip, out,
                             swapper="colour", **fields)
    with caplog.at_level(logging.DEBUG, logger="facefuse.io.video.write"):
        summary, _ = run_render(request)
    assert summary.failed == () and summary.swapped == FRAMES - len(WITHOUT_FACE)
    return [r.getMessage() for r in caplog.records
            if "pass through" in r.getMessage() or "whole frames" in r.getMessage()]


def test_a_sideways_10_bit_clip_passes_through_in_its_stored_orientation(
        testdata: Path, render_models: Path, render_cache: Path, tmp_path: Path,
        captured: list, caplog: pytest.LogCaptureFixture) -> None:
    """A ProRes 422 clip stored a quarter turn under a display rotation: the upright pastes are
    turned back to the stored planes (io.video.orientation), as for 8-bit clips."""
    clip = deep_clip(tmp_path / "shot.mov", face_photo(testdata), "prores_422", turns=1)
    out = tmp_path / "out.mov"
    lines = _render(testdata, render_models, render_cache, clip, out, caplog, codec="prores_422")
    assert len(lines) == 1 and "pass through" in lines[0], lines
    with VideoSource(out) as rendered:
        assert rendered.info.rotation_deg == 90 and rendered.info.width == 320
    planes, _ = planes_and_frames(clip)
    assert len(captured) == FRAMES
    for i, ((frame, composed, masked), source) in enumerate(zip(captured, planes, strict=True)):
        assert frame.shape == (240, 320, 3) and masked.any() == (i not in WITHOUT_FACE)
        stored, stored_mask = np.rot90(frame, -1), np.rot90(masked, -1)  # 320 x 240 stored
        today = picture_planes(bgr_to_picture(np.ascontiguousarray(stored), "yuv422p10le",
                                              BT709, False))
        footprint = stored_mask.reshape(320, 120, 2).any(axis=2)
        for index, (plane, original, whole) in enumerate(zip(composed, source, today)):
            inside = stored_mask if index == 0 else footprint
            np.testing.assert_array_equal(plane[~inside], original[~inside])  # exact
            np.testing.assert_array_equal(plane[inside], whole[inside])  # the whole-frame path


@pytest.mark.parametrize(("codec", "output"), [
    ("prores_422", "out.mov"), ("prores_422", "out.mkv"), ("prores_4444", "out.mov"),
    ("dnxhr_444", "out.mov"), ("h265", "out.mp4"), ("h265", "out.mkv")])
def test_each_10_bit_writer_reads_back_with_the_matrix_it_converted_with(
        tmp_path: Path, codec: str, output: str) -> None:
    """Where it does not keep the source's tags (here a ProRes source's BT.601, untagged or
    BT.2020), a 10-bit output is converted with, tagged and read back as BT.709 limited
    range: ProRes keeps the matrix in its frame header, HEVC in its VUI, and FFmpeg's DNxHR
    decoder gives BT.709 pictures whatever the .mov says. A source tagged otherwise is
    refused passing through on its matrix; ProRes 4444 sources decode to 12 bits and are
    converted whole."""
    from facefuse.io.video.read import VideoInfo

    # three frames: two of 10-bit h265 in .mp4 fail in FFmpeg 8's muxer ("not yet implemented")
    for colour_tags in ((6, 1, 6, 6), (2, 0, 2, 2), (9, 1, 9, 16)):
        info = VideoInfo(path=tmp_path / "in.mov", frame_count=3, rate=Fraction(24), width=256,
                         height=128, codec="prores", pixel_format="yuv422p10le", bit_depth=10,
                         has_alpha=False, timecode=None, audio_streams=0, duration_s=3 / 24,
                         variable_frame_rate=False, colour_tags=colour_tags)
        path = tmp_path / output
        with VideoSink(path, info, codec=codec) as sink:
            for i in range(3):
                sink.write(deep_frame(i, None)[:128, :256])
            cc = sink._stream.codec_context
            written = matrix_for(cc.colorspace, cc.color_range, cc.format.name)
        with av.open(str(path)) as container:
            picture = next(container.decode(video=0))
        read = matrix_for(picture.colorspace, picture.color_range, picture.format.name)
        assert written == read == matrix_for(BT709, 1, "yuv422p10le"), (colour_tags, read)
        expected = "yuv444p12le" if codec == "prores_4444" else sink._pix_fmt
        assert picture.format.name == expected
        assert (decoded_picture(picture) is None) == (codec == "prores_4444")


@pytest.mark.parametrize(("source_codec", "color_range", "kept"), [
    ("hevc", 1, True), ("h264", 1, True), ("hevc", 2, False), ("prores", 1, False),
    ("dnxhd", 1, False)])
def test_a_10_bit_h265_output_keeps_the_tags_of_a_10_bit_h264_or_hevc_source(
        tmp_path: Path, source_codec: str, color_range: int, kept: bool) -> None:
    """H.264 / HEVC pictures carry their stream's tags, so a 10-bit h265 output keeps them
    (HDR stays BT.2020 PQ) and converts with their matrix; not from ProRes (primaries and
    transfer read back unspecified) or DNxHR (its pictures are BT.709 whatever the .mov
    says), nor 10-bit full range (converted by swscale)."""
    from facefuse.io.video.read import VideoInfo

    tags = (BT2020, color_range, BT2020, PQ)
    info = VideoInfo(path=tmp_path / "in.mkv", frame_count=3, rate=Fraction(24), width=256,
                     height=128, codec=source_codec, pixel_format="yuv420p10le", bit_depth=10,
                     has_alpha=False, timecode=None, audio_streams=0, duration_s=3 / 24,
                     variable_frame_rate=False, colour_tags=tags)
    with VideoSink(tmp_path / "out.mkv", info, codec="h265") as sink:
        for i in range(3):
            sink.write(deep_frame(i, None)[:128, :256])
    with av.open(str(tmp_path / "out.mkv")) as container:
        picture = next(container.decode(video=0))
    read = (picture.colorspace, picture.color_range, picture.color_primaries, picture.color_trc)
    assert read == (tags if kept else (BT709, 1, BT709, BT709))


def test_a_prores_clip_reads_white_and_black_as_the_whole_16_bit_range(tmp_path: Path) -> None:
    """Y 940 and 64 (flat, so ProRes keeps them) read back through the reader as 65535 and 0
    (swscale's bgr48, the reader before, gave 65283 at white), and the writer's 10-bit matrix
    turns those frames back into the same levels: a whole-frame round trip is unbiased."""
    path = tmp_path / "levels.mov"
    with av.open(str(path), "w") as container:
        stream = container.add_stream("prores_ks", rate=Fraction(24), options={"profile": "3"})
        stream.width, stream.height, stream.pix_fmt = 128, 64, "yuv422p10le"
        stream.codec_context.colorspace, stream.codec_context.color_range = BT709, 1
        picture = av.VideoFrame(128, 64, "yuv422p10le")
        y, cb, cr = picture_planes(picture)
        y[:, :64], y[:, 64:], cb[:], cr[:] = 940, 64, 512, 512
        picture.colorspace, picture.color_range, picture.pts = BT709, 1, 0
        container.mux(stream.encode(picture))
        container.mux(stream.encode(None))
    with VideoSource(path) as source:
        frame = next(arrays(source.read([1])))[1]
    assert frame.dtype == np.uint16
    assert np.all(frame[:, :56] == 65535) and np.all(frame[:, 72:] == 0)  # away from the edge
    back = picture_planes(bgr_to_picture(frame, "yuv422p10le", BT709, False))
    with av.open(str(path)) as container:
        decoded = picture_planes(next(container.decode(video=0)))
    np.testing.assert_array_equal(back[0][:, :56], 940)
    np.testing.assert_array_equal(back[0][:, 72:], 64)
    for plane, original in zip(back, decoded, strict=True):
        np.testing.assert_array_equal(plane[:, :plane.shape[1] * 7 // 16],
                                      original[:, :plane.shape[1] * 7 // 16])
