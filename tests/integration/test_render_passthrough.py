"""A render to h264 of an 8-bit 4:2:0 BT.709 clip, and 10-bit ones (ProRes 422 HQ to prores_422,
HEVC Main10 to h265), hand the encoder the decoded planes with only the pasted faces converted
(io.video.passthrough): bit-identical to the input outside the paste, today's whole-frame
conversion inside it, frames without a face untouched (a sideways phone clip too). Every render
that cannot pass through (a colour transform, an output of another bit depth, a matrix the
writer does not tag, a forced refusal) converts whole frames, keeping the clip's colours, its
matte and patch sequences the same either way. Tests that only 10-bit renders and writers have
are in test_render_passthrough_deep.py; the clips are tests/integration/passthrough_clips.py's.

The planes the encoder gets are captured where VideoSink composes them, and an h264 render at
--crf 0 (lossless) shows they are what the file holds.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import av
import numpy as np
import pytest

from facefuse.io.video import write as video_write
from facefuse.io.video.yuv import PLANAR, picture_planes
from facefuse.io.video.yuv_write import bgr_to_picture
from tests.integration.passthrough_clips import (
    BT601,
    BT709,
    BT2020,
    DEEP_FRAMES,
    DEEP_WITHOUT_FACE,
    FRAMES,
    FULL,
    LIMITED,
    SOURCES,
    UNTAGGED,
    WITHOUT_FACE,
    bt709_clip,
    capture_composed,
    deep_clip,
    outside_face,
    planes_and_frames,
    planes_of,
)
from tests.integration.render_helpers import FACE_BOX, read_bgr
from tests.integration.test_footage import phone_clip
from tests.render_media import (
    decode_video,
    face_photo,
    render_request,
    run_render,
)


@pytest.fixture()
def captured(monkeypatch: pytest.MonkeyPatch
             ) -> list[tuple[np.ndarray, list[np.ndarray], np.ndarray]]:
    """(frame, planes composed for the encoder, where the paste masks are > 0) of every frame
    VideoSink passes through."""
    return capture_composed(monkeypatch)


def _render(testdata: Path, models: Path, cache: Path, clip: Path, out: Path,
            **fields: Any) -> None:
    request = render_request(models, cache, testdata / "media" / "obama.jpg", clip, out,
                             swapper="colour", **fields)
    summary, _ = run_render(request)
    assert summary.failed == () and summary.swapped == FRAMES - len(WITHOUT_FACE)


@pytest.mark.parametrize(("codec", "output", "colorspace"), [
    ("h264", "out.mp4", BT709), ("prores_422", "out.mov", BT709), ("h265", "out.mp4", BT709),
    ("h265", "out.mkv", BT2020)], ids=["8bit-h264", "10bit-prores_422", "10bit-h265",
                                        "10bit-h265-hdr"])
def test_outside_the_paste_the_encoder_gets_the_decoded_planes(
        testdata: Path, render_models: Path, render_cache: Path, tmp_path: Path,
        captured: list, caplog: pytest.LogCaptureFixture, codec: str, output: str,
        colorspace: int) -> None:
    """8 bits: an h264 yuv420p clip to h264 at --crf 0 (lossless: the file holds the planes
    composed); 10 bits: a ProRes 422 HQ clip to prores_422, an HEVC Main10 one to h265, BT.709
    or BT.2020 PQ (whose tags the h265 output keeps). Inside the paste the samples are the
    whole-frame conversion's; read back, the output shows the clip's colours outside the face."""
    deep = codec != "h264"
    suffix = Path(output).suffix
    if deep:
        clip = deep_clip(tmp_path / f"shot{suffix}", face_photo(testdata), codec, colorspace)
        frames, without_face, fmt = DEEP_FRAMES, DEEP_WITHOUT_FACE, SOURCES[codec][1]
        fields, dtype, level = {"codec": codec}, np.uint16, 257
    else:
        clip = bt709_clip(tmp_path / "shot.mp4", face_photo(testdata))
        frames, without_face, fmt = FRAMES, WITHOUT_FACE, "yuv420p"
        fields, dtype, level = {"crf": 0}, np.uint8, 1
    out = tmp_path / output
    request = render_request(render_models, render_cache, testdata / "media" / "obama.jpg",
                             clip, out, swapper="colour", **fields)
    with caplog.at_level(logging.DEBUG, logger="facefuse.io.video.write"):
        summary, _ = run_render(request)
    assert summary.failed == () and summary.swapped == frames - len(without_face)
    lines = [r.getMessage() for r in caplog.records
             if "pass through" in r.getMessage() or "whole frames" in r.getMessage()]
    assert sum("pass through" in line for line in lines) == 1
    assert len(lines) == 1 and "pass through" in lines[0], lines
    with av.open(str(clip)) as source, av.open(str(out)) as rendered:
        tags = [(int(c.colorspace), int(c.color_range), int(c.color_primaries), int(c.color_trc))
                for c in (source.streams.video[0].codec_context,
                          rendered.streams.video[0].codec_context)]
    assert tags[1][:2] == (colorspace, 1) and (codec == "prores_422" or tags[1] == tags[0])
    (decoded, frames_in), written = planes_and_frames(clip), planes_of(out)
    assert len(captured) == len(written) == frames
    x0, y0, x1, y1 = FACE_BOX
    across, down = PLANAR[fmt]
    for i, ((frame, composed, masked), source, before) in enumerate(
            zip(captured, decoded, frames_in, strict=True)):
        if not deep:  # --crf 0 is lossless
            for got, plane in zip(written[i], composed, strict=True):
                np.testing.assert_array_equal(got, plane)
        assert frame.dtype == dtype and frame.shape == (240, 320, 3)  # (regions made whole)
        pasted = np.any(frame != before, axis=2)  # the pixels the swap changed
        assert pasted.any() == (i not in without_face) and not pasted[~masked].any()
        today = picture_planes(bgr_to_picture(frame, fmt, colorspace, False))
        footprint = masked.reshape(240 // down, down, 320 // across, across).any(axis=(1, 3))
        for index, (plane, original, whole) in enumerate(zip(composed, source, today)):
            inside = masked if index == 0 else footprint
            np.testing.assert_array_equal(plane[~inside], original[~inside])  # exact
            np.testing.assert_array_equal(plane[inside], whole[inside])  # the whole-frame path
            step_x, step_y = (1, 1) if index == 0 else (across, down)
            differs = plane != original
            if i in without_face:
                assert not differs.any(), f"frame {i}: a frame without a face was changed"
                continue
            ys, xs = np.nonzero(differs)
            assert differs.sum() > 500 // (step_x * step_y)
            assert (xs.min() * step_x >= x0 and xs.max() * step_x < x1
                    and ys.min() * step_y >= y0 and ys.max() * step_y < y1)
            # where the swap changed pixels, the samples are today's whole-frame conversion
            changed = pasted[::step_y, ::step_x] if index else pasted
            np.testing.assert_array_equal(plane[changed], whole[changed])
    _, written_frames = planes_and_frames(out)  # read back: the clip's colours outside the face
    outside = outside_face()
    for source_frame, back in zip(frames_in, written_frames, strict=True):
        error = back[outside].astype(float) - source_frame[outside]
        assert (np.abs(error).mean() < 2.5 * level
                and np.abs(error.mean(axis=0)).max() < 0.5 * level)


@pytest.mark.parametrize(("colorspace", "color_range", "pixel_format", "kept"), [
    (UNTAGGED, 0, "yuv420p", (UNTAGGED, 0)),  # most phone and web h264 carries no tags
    (BT709, FULL, "yuvj420p", (BT709, FULL)),  # full range (yuvj): the stream says so
    (5, LIMITED, "yuv420p", (5, LIMITED)),  # BT.601 (BT.470BG) SD footage stays BT.601
], ids=["untagged", "full-range", "bt601"])
def test_a_source_keeps_its_own_colour_tags_and_passes_through(
        testdata: Path, render_models: Path, render_cache: Path, tmp_path: Path,
        captured: list, colorspace: int, color_range: int, pixel_format: str,
        kept: tuple[int, int]) -> None:
    clip = bt709_clip(tmp_path / "shot.mp4", face_photo(testdata), colorspace, color_range,
                       pixel_format)
    out = tmp_path / "out.mp4"
    _render(testdata, render_models, render_cache, clip, out, crf=0)
    with av.open(str(out)) as container:
        cc = container.streams.video[0].codec_context
        # the decoder names a full-range 4:2:0 stream yuvj420p, as it did the source
        assert (cc.colorspace, cc.color_range, cc.format.name) == (*kept, pixel_format)
    assert len(captured) == FRAMES  # every frame went to the encoder as decoded planes
    pasted = [changed for _, _, changed in captured]
    for i, (source, written) in enumerate(zip(planes_of(clip), planes_of(out), strict=True)):
        kept_luma = ~pasted[i]  # outside the paste the file holds the source's codes exactly
        np.testing.assert_array_equal(written[0][kept_luma], source[0][kept_luma])
        assert pasted[i].any() == (i not in WITHOUT_FACE)


@pytest.mark.parametrize(("codec", "output", "crf"), [
    ("h264", "out.mp4", 0), ("dnxhr_hq", "out.mov", None)], ids=["h264", "dnxhr_hq"])
def test_an_untagged_source_reads_back_in_its_own_colours(
        testdata: Path, render_models: Path, render_cache: Path, tmp_path: Path, codec: str,
        output: str, crf: int | None) -> None:
    """Read back as the reader reads it, the render of an untagged (BT.601-read) clip shows the
    clip's colours outside the face: h264 keeps the tags (and at --crf 0 the very codes), and
    dnxhr_hq, whose .mov carries no colour tags and reads back as BT.709, is converted to that."""
    clip = bt709_clip(tmp_path / "shot.mp4", face_photo(testdata), UNTAGGED, 0)
    out = tmp_path / output
    fields = {"codec": codec} if crf is None else {"codec": codec, "crf": crf}
    _render(testdata, render_models, render_cache, clip, out, **fields)
    x0, y0, x1, y1 = FACE_BOX
    for source, written in zip(decode_video(clip), decode_video(out), strict=True):
        outside = np.ones(source.shape[:2], bool)
        outside[y0:y1, x0:x1] = False
        error = written[outside].astype(float) - source[outside]
        if crf == 0:
            assert not error.any()
        else:  # DNxHR's own loss, without a colour cast
            assert np.abs(error).mean() < 1.5 and np.abs(error.mean(axis=0)).max() < 0.5


def test_a_sideways_phone_clip_passes_through_too(
        testdata: Path, render_models: Path, render_cache: Path, tmp_path: Path,
        captured: list, caplog: pytest.LogCaptureFixture) -> None:
    """An untagged phone clip with a display rotation (tests/integration/test_render_rotated.py
    holds rotated clips' planes to the bar of the test above)."""
    clip = phone_clip(tmp_path / "phone.mp4", face_photo(testdata))
    with caplog.at_level(logging.DEBUG, logger="facefuse.io.video.write"):
        request = render_request(render_models, render_cache, testdata / "media" / "obama.jpg",
                                 clip, tmp_path / "out.mp4", swapper="colour")
        summary, _ = run_render(request)
    assert summary.swapped > 0 and len(captured) == summary.frames
    assert sum("pass through" in r.getMessage() for r in caplog.records) == 1


@pytest.mark.parametrize(("depth", "colorspace", "output", "fields", "words", "kept"), [
    (8, BT709, "out.mp4", {"colorspace": "Linear Rec.709 (sRGB)"}, "colour-transformed", False),
    (8, BT709, "out.mov", {"codec": "prores_422"}, "not the encoder's yuv422p10le", True),
    (10, BT709, "out.mp4", {"codec": "h264"}, "not the encoder's yuv420p", True),
    (10, BT601, "out.mov", {"codec": "prores_422"}, "another matrix", True),  # BT.709 writer
], ids=["8bit-colour-transform", "8bit-10-bit-output", "10bit-8-bit-output", "10bit-matrix"])
def test_a_render_the_writer_cannot_take_as_it_is_converts_whole_frames(
        testdata: Path, render_models: Path, render_cache: Path, tmp_path: Path,
        captured: list, caplog: pytest.LogCaptureFixture, depth: int, colorspace: int,
        output: str, fields: dict[str, str], words: str, kept: bool) -> None:
    """A colour transform, an output of another bit depth, a source matrix the writer does not
    tag: whole frames converted, and read back (kept) the clip's colours outside the face,
    within the rounding to the output's bits and the codec's loss."""
    if depth == 8:
        clip = bt709_clip(tmp_path / "shot.mp4", face_photo(testdata))
        frames, without_face = FRAMES, WITHOUT_FACE
    else:
        clip = deep_clip(tmp_path / "shot.mov", face_photo(testdata), "prores_422", colorspace)
        frames, without_face = DEEP_FRAMES, DEEP_WITHOUT_FACE
    out = tmp_path / output
    with caplog.at_level(logging.DEBUG, logger="facefuse.io.video.write"):
        request = render_request(render_models, render_cache, testdata / "media" / "obama.jpg",
                                 clip, out, swapper="colour", **fields)
        summary, _ = run_render(request)
    assert summary.failed == () and captured == []
    assert summary.swapped == frames - len(without_face)
    reasons = [r.getMessage() for r in caplog.records if "whole frames" in r.getMessage()]
    assert len(reasons) == 1 and words in reasons[0], reasons
    lines = [r.getMessage() for r in caplog.records
             if "pass through" in r.getMessage() or "whole frames" in r.getMessage()]
    assert len(lines) == 1 and words in lines[0], lines
    if not kept:
        return
    _, frames_in = planes_and_frames(clip)
    _, written = planes_and_frames(out)
    outside, deep = outside_face(), written[0].dtype == np.uint16
    # converted, colours kept (to 8 bits, within its rounding and x264's loss)
    size, cast = (2.5, 0.5) if deep else (2.0, 1.0)
    for source, back in zip(frames_in, written, strict=True):
        error = _sixteen_bit(back[outside]) - _sixteen_bit(source[outside])
        assert np.abs(error).mean() < size * 257 and np.abs(error.mean(axis=0)).max() < cast * 257


def _sixteen_bit(pixels: np.ndarray) -> np.ndarray:
    """BGR uint8 or uint16 pixels as float64 on the 16-bit scale."""
    return pixels.astype(float) * (257 if pixels.dtype == np.uint8 else 1)


def test_matte_and_patch_are_the_same_whether_frames_pass_through_or_not(
        testdata: Path, render_models: Path, render_cache: Path, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    clip = bt709_clip(tmp_path / "shot.mp4", face_photo(testdata))
    outputs = {}
    for name in ("through", "whole"):
        if name == "whole":
            monkeypatch.setattr(video_write, "refusal", lambda *args: "forced by the test")
        folder = tmp_path / name
        folder.mkdir()
        _render(testdata, render_models, render_cache, clip, folder / "out.mp4",
                crf=0, matte=str(folder / "matte.####.png"), patch=str(folder / "patch.####.exr"))
        outputs[name] = folder
    through = planes_of(outputs["through"] / "out.mp4")
    whole = planes_of(outputs["whole"] / "out.mp4")
    decoded = planes_of(clip)
    for n in range(1, FRAMES + 1):
        for kind in ("matte.{:04d}.png", "patch.{:04d}.exr"):
            np.testing.assert_array_equal(read_bgr(outputs["through"] / kind.format(n)),
                                          read_bgr(outputs["whole"] / kind.format(n)))
        # whole-frame conversion: a round trip off the decoded planes far from the face too;
        # passing through: none (the test's own frame 0 has no face)
        corner = (slice(160, 240), slice(0, 100))
        assert np.array_equal(through[n - 1][0][corner], decoded[n - 1][0][corner])
    assert any(not np.array_equal(w[0], d[0]) for w, d in zip(whole, decoded)), (
        "the forced refusal did not convert whole frames")


def test_a_frame_without_its_picture_is_converted_whole_and_the_stream_goes_on(
        tmp_path: Path, captured: list) -> None:
    """Once the first frame passed through, a later frame that comes without its decoded
    picture (e.g. one standing in for a frame that failed to decode) is converted whole; the
    frames after it pass through again."""
    from facefuse.io.video import VideoSink, VideoSource

    clip = bt709_clip(tmp_path / "shot.mp4", np.full((64, 64, 3), 128, np.uint8))
    with VideoSource(clip) as source:
        info = source.info
        frames = list(source.read(range(1, FRAMES + 1)))
    with VideoSink(tmp_path / "out.mp4", info, codec="h264", quality=0) as sink:
        for index, (_, frame) in enumerate(frames):
            sink.write(frame.to_ndarray() if index == 2 else frame)
        assert sink.passes_through is True
    assert len(captured) == FRAMES - 1
