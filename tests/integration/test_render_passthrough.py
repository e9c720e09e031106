"""A render to h264 of an 8-bit 4:2:0 BT.709 clip, and 10-bit ones (ProRes 422 HQ to prores_422,
HEVC Main10 to h265), hand the encoder the decoded planes with only the pasted faces converted
(io.video.passthrough): bit-identical to the input outside the paste, today's whole-frame
conversion inside it, frames without a face untouched (a sideways phone clip too); and every
render of the 8-bit clip that cannot pass through (a colour transform, a 10-bit output, a forced
refusal) converts whole frames, its matte and patch sequences the same either way. The tests
only 10-bit renders and writers have are in test_render_passthrough_deep.py.

The planes the encoder gets are captured where VideoSink composes them, and an h264 render at
--crf 0 (lossless) shows they are what the file holds.
"""

from __future__ import annotations

import logging
from fractions import Fraction
from pathlib import Path
from typing import Any

import av
import numpy as np
import pytest

from facefuse.io.video import VideoSource
from facefuse.io.video import write as video_write
from facefuse.io.video.orientation import turned_size
from facefuse.io.video.yuv import (
    PLANAR,
    PLANAR_10BIT,
    YuvPlanes,
    matrix_for,
    picture_planes,
    yuv_to_bgr,
)
from facefuse.io.video.yuv_write import bgr_to_picture
from tests import media_factory
from tests.integration.render_helpers import FACE_BOX, read_bgr
from tests.integration.test_footage import phone_clip
from tests.render_media import (
    arrays,
    decode_video,
    face_frame,
    face_photo,
    render_request,
    run_render,
)

FRAMES = 6
WITHOUT_FACE = (0, 1)
_BT709, _LIMITED, _FULL, _UNTAGGED = 1, 1, 2, 2
_BT2020, _PQ = 9, 16
# the 10-bit clips: frames, those without a face, (encoder, pixel format, options) per codec
DEEP_FRAMES = 5
DEEP_WITHOUT_FACE = (0,)
_SOURCES = {"prores_422": ("prores_ks", "yuv422p10le", {"profile": "3"}),
            "h265": ("libx265", "yuv420p10le", {"x265-params": "log-level=error", "crf": "12"})}


def _bt709_clip(path: Path, face: np.ndarray, colorspace: int = _BT709,
                color_range: int = _LIMITED, pixel_format: str = "yuv420p") -> Path:
    """An h264 clip tagged BT.709 limited range (as camera footage is) unless told otherwise
    (2 / 0: untagged, read as BT.601 limited; range 2: full), converted with the matrix it is
    read with, frames 0 and 1 without a face."""
    with av.open(str(path), "w") as container:
        stream = media_factory._video_stream(container, "h264", Fraction(24),
                                             (320, 240), 3, None)
        stream.pix_fmt = pixel_format
        stream.codec_context.colorspace, stream.codec_context.color_range = (colorspace,
                                                                             color_range)
        for i in range(FRAMES):
            bgr = face_frame(i, None if i in WITHOUT_FACE else face)
            picture = bgr_to_picture(bgr, pixel_format, colorspace, color_range == _FULL)
            assert picture is not None
            picture.pts = i
            container.mux(stream.encode(picture))
        container.mux(stream.encode(None))
    return path


def _deep_frame(index: int, face: np.ndarray | None) -> np.ndarray:
    """face_frame at 16 bits, with a fine ramp so the low two of the 10 bits vary too."""
    frame = face_frame(index, face).astype(np.uint16) * 257
    ramp = (np.arange(frame.shape[1], dtype=np.uint16) % 64 * 4)[None, :, None]
    return frame + np.minimum(ramp, 65535 - frame)


def _deep_clip(path: Path, face: np.ndarray, codec: str, colorspace: int = _BT709,
               turns: int = 0) -> Path:
    """A 10-bit clip (see _SOURCES) tagged `colorspace`, limited range, converted with that
    matrix; frame 0 without a face. turns: stored that many quarter turns clockwise under a
    display rotation that shows it upright (as a phone or a rotated camera stores it)."""
    encoder, pixel_format, options = _SOURCES[codec]
    with av.open(str(path), "w") as container:
        stream = container.add_stream(encoder, rate=Fraction(24), options=options)
        size = (240, 320) if turns % 2 else (320, 240)
        stream.width, stream.height, stream.pix_fmt = *size, pixel_format
        stream.codec_context.colorspace, stream.codec_context.color_range = colorspace, 1
        if colorspace == _BT2020:  # HDR: BT.2020 primaries, PQ
            stream.codec_context.color_primaries, stream.codec_context.color_trc = _BT2020, _PQ
        if turns:
            stream.set_display_rotation(90 * turns)
        for i in range(DEEP_FRAMES):
            upright = _deep_frame(i, None if i in DEEP_WITHOUT_FACE else face)
            picture = bgr_to_picture(np.ascontiguousarray(np.rot90(upright, -turns)),
                                     pixel_format, colorspace, False)
            picture.pts = i
            container.mux(stream.encode(picture))
        container.mux(stream.encode(None))
    return path


def _decoded(path: Path) -> tuple[list[list[np.ndarray]], list[np.ndarray]]:
    """Every picture's planes (copies) and frame as the reader makes it (BGR uint16)."""
    with av.open(str(path)) as container:
        pictures = sorted(container.decode(video=0), key=lambda f: f.pts)
        planes = [[p.copy() for p in picture_planes(f)] for f in pictures]
    with VideoSource(path) as source:
        frames = [frame for _, frame in arrays(source.read(range(1, len(planes) + 1)))]
    return planes, frames


def _outside_face() -> np.ndarray:
    outside = np.ones((240, 320), bool)
    x0, y0, x1, y1 = FACE_BOX
    outside[y0:y1, x0:x1] = False
    return outside


def _planes(path: Path) -> list[list[np.ndarray]]:
    """Every picture's Y, Cb, Cr planes (copies), in presentation order."""
    with av.open(str(path)) as container:
        pictures = sorted(container.decode(video=0), key=lambda f: f.pts)
        return [[p.copy() for p in picture_planes(f)] for f in pictures]


def _whole(picture: Any, frame: np.ndarray, origin_xy: tuple[int, int] = (0, 0)) -> np.ndarray:
    """The whole frame compose() was given part of (a region frame, io.video.frame: the
    rest is the decoded picture as the reader converts it, turned upright by its turns; BGR
    uint8, or uint16 for a 10-bit picture)."""
    width, height = turned_size(picture.width, picture.height, picture.turns)
    if frame.shape[:2] == (height, width):
        return frame.copy()
    matrix = matrix_for(picture.colorspace, picture.color_range, picture.pixel_format)
    assert matrix is not None
    bits = 10 if picture.pixel_format in PLANAR_10BIT else 8
    planes = YuvPlanes(*picture.planes, *PLANAR[picture.pixel_format], False, matrix, bits=bits)
    whole = np.rot90(yuv_to_bgr(planes), picture.turns).copy()
    (x, y), (h, w) = origin_xy, frame.shape[:2]
    whole[y:y + h, x:x + w] = frame
    return whole


def _mask(pasted: Any, shape: tuple[int, ...]) -> np.ndarray:
    """Where the pastes' masks are > 0, as a frame-sized bool array."""
    changed = np.zeros(shape[:2], bool)
    for paste in pasted:
        changed[paste.roi.slices()] |= paste.mask > 0
    return changed


@pytest.fixture()
def captured(monkeypatch: pytest.MonkeyPatch) -> list[tuple[np.ndarray, list[np.ndarray]]]:
    """(frame, planes composed for the encoder, where the paste masks are > 0) of every frame
    VideoSink passes through."""
    seen: list[tuple[np.ndarray, list[np.ndarray], np.ndarray]] = []
    original = video_write.compose

    def capture(picture: Any, frame: np.ndarray, *rest: Any) -> Any:
        out = original(picture, frame, *rest)
        whole = _whole(picture, frame, *rest[2:])
        seen.append((whole, [p.copy() for p in picture_planes(out)], _mask(rest[0], whole.shape)))
        return out

    monkeypatch.setattr(video_write, "compose", capture)
    return seen


def _render(testdata: Path, models: Path, cache: Path, clip: Path, out: Path,
            **fields: Any) -> None:
    request = render_request(models, cache, testdata / "media" / "obama.jpg", clip, out,
                             swapper="colour", **fields)
    summary, _ = run_render(request)
    assert summary.failed == () and summary.swapped == FRAMES - len(WITHOUT_FACE)


@pytest.mark.parametrize(("codec", "output", "colorspace"), [
    ("h264", "out.mp4", _BT709), ("prores_422", "out.mov", _BT709), ("h265", "out.mp4", _BT709),
    ("h265", "out.mkv", _BT2020)], ids=["8bit-h264", "10bit-prores_422", "10bit-h265",
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
        clip = _deep_clip(tmp_path / f"shot{suffix}", face_photo(testdata), codec, colorspace)
        frames, without_face, fmt = DEEP_FRAMES, DEEP_WITHOUT_FACE, _SOURCES[codec][1]
        fields, dtype, level = {"codec": codec}, np.uint16, 257
    else:
        clip = _bt709_clip(tmp_path / "shot.mp4", face_photo(testdata))
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
    (decoded, frames_in), written = _decoded(clip), _planes(out)
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
    _, written_frames = _decoded(out)  # read back: the clip's colours outside the face
    outside = _outside_face()
    for source_frame, back in zip(frames_in, written_frames, strict=True):
        error = back[outside].astype(float) - source_frame[outside]
        assert (np.abs(error).mean() < 2.5 * level
                and np.abs(error.mean(axis=0)).max() < 0.5 * level)


@pytest.mark.parametrize(("colorspace", "color_range", "pixel_format", "kept"), [
    (_UNTAGGED, 0, "yuv420p", (_UNTAGGED, 0)),  # most phone and web h264 carries no tags
    (_BT709, _FULL, "yuvj420p", (_BT709, _FULL)),  # full range (yuvj): the stream says so
    (5, _LIMITED, "yuv420p", (5, _LIMITED)),  # BT.601 (BT.470BG) SD footage stays BT.601
], ids=["untagged", "full-range", "bt601"])
def test_a_source_keeps_its_own_colour_tags_and_passes_through(
        testdata: Path, render_models: Path, render_cache: Path, tmp_path: Path,
        captured: list, colorspace: int, color_range: int, pixel_format: str,
        kept: tuple[int, int]) -> None:
    clip = _bt709_clip(tmp_path / "shot.mp4", face_photo(testdata), colorspace, color_range,
                       pixel_format)
    out = tmp_path / "out.mp4"
    _render(testdata, render_models, render_cache, clip, out, crf=0)
    with av.open(str(out)) as container:
        cc = container.streams.video[0].codec_context
        # the decoder names a full-range 4:2:0 stream yuvj420p, as it did the source
        assert (cc.colorspace, cc.color_range, cc.format.name) == (*kept, pixel_format)
    assert len(captured) == FRAMES  # every frame went to the encoder as decoded planes
    pasted = [changed for _, _, changed in captured]
    for i, (source, written) in enumerate(zip(_planes(clip), _planes(out), strict=True)):
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
    clip = _bt709_clip(tmp_path / "shot.mp4", face_photo(testdata), _UNTAGGED, 0)
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


@pytest.mark.parametrize(("output", "fields", "words"), [
    ("out.mp4", {"colorspace": "Linear Rec.709 (sRGB)"}, "colour-transformed"),
    ("out.mov", {"codec": "prores_422"}, "not the encoder's yuv422p10le"),  # 10-bit output
], ids=["colour-transform", "10-bit"])
def test_other_renders_of_the_clip_convert_whole_frames(
        testdata: Path, render_models: Path, render_cache: Path, tmp_path: Path,
        captured: list, caplog: pytest.LogCaptureFixture, output: str,
        fields: dict[str, str], words: str) -> None:
    clip = _bt709_clip(tmp_path / "shot.mp4", face_photo(testdata))
    with caplog.at_level(logging.DEBUG, logger="facefuse.io.video.write"):
        request = render_request(render_models, render_cache, testdata / "media" / "obama.jpg",
                                 clip, tmp_path / output, swapper="colour", **fields)
        summary, _ = run_render(request)
    assert summary.failed == () and captured == []
    reasons = [r.getMessage() for r in caplog.records if "whole frames" in r.getMessage()]
    assert len(reasons) == 1 and words in reasons[0], reasons


def test_matte_and_patch_are_the_same_whether_frames_pass_through_or_not(
        testdata: Path, render_models: Path, render_cache: Path, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    clip = _bt709_clip(tmp_path / "shot.mp4", face_photo(testdata))
    outputs = {}
    for name in ("through", "whole"):
        if name == "whole":
            monkeypatch.setattr(video_write, "refusal", lambda *args: "forced by the test")
        folder = tmp_path / name
        folder.mkdir()
        _render(testdata, render_models, render_cache, clip, folder / "out.mp4",
                crf=0, matte=str(folder / "matte.####.png"), patch=str(folder / "patch.####.exr"))
        outputs[name] = folder
    through, whole = _planes(outputs["through"] / "out.mp4"), _planes(outputs["whole"] / "out.mp4")
    decoded = _planes(clip)
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

    clip = _bt709_clip(tmp_path / "shot.mp4", np.full((64, 64, 3), 128, np.uint8))
    with VideoSource(clip) as source:
        info = source.info
        frames = list(source.read(range(1, FRAMES + 1)))
    with VideoSink(tmp_path / "out.mp4", info, codec="h264", quality=0) as sink:
        for index, (_, frame) in enumerate(frames):
            sink.write(frame.to_ndarray() if index == 2 else frame)
        assert sink.passes_through is True
    assert len(captured) == FRAMES - 1
