"""Footage that must work (issue 8, items 12-14): phone video stored sideways with a display
rotation is analysed and swapped upright in every frame, animated GIF and other files FFmpeg can
decode are accepted as video inputs whatever their extension (a variable-delay GIF conformed to
its typical rate), a file nothing can decode gets one sentence naming its format and the
conversion to do, and display-referred pixels become scene-linear for an EXR output.

Media are written here with PyAV directly (a real face from tests/render_media.py, the frame
index burned in as a marker); models and the session's analysis cache come from
tests/conftest.py. Renders use the colour contract swapper, so a swapped face visibly changes
and the matte says where.
"""

from __future__ import annotations

import shutil
from fractions import Fraction
from pathlib import Path

import av
import numpy as np
import pytest

from facefuse.color import (
    ColourConverter,
    display_to_linear,
    input_conversion,
    linear_output_converter,
)
from facefuse.errors import InputError
from facefuse.shot.contract.inputs import VideoInput, open_input
from facefuse.shot.contract.request import InputSpec, OutputSpec
from tests import media_factory
from tests.integration.render_helpers import assert_changes_confined, read_bgr
from tests.media_factory import read_marker
from tests.render_media import (
    SIZE,
    arrays,
    decode_video,
    face_frame,
    face_photo,
    make_face_clip,
    read_plate_oiio,
    render_request,
    run_render,
    srgb_to_linear,
)

PHONE_FRAMES = 6
GIF_DELAYS_CS = (10, 10, 20, 10, 10)  # hundredths of a second: not one constant rate
GIF_SLOTS = (0, 1, 2, 2, 3, 4)  # the GIF's frames on its 10 fps grid (the 0.2 s frame twice)


def phone_clip(path: Path, face: np.ndarray, rotation: int = -90) -> Path:
    """H.264 clip whose stored pictures are face_frame(i) turned sideways, with a display matrix
    that turns them back (-90: stored turned counter-clockwise, shown turned clockwise, as
    phones held upright record)."""
    turns = -rotation // 90
    with av.open(str(path), "w") as container:
        stream = media_factory._video_stream(container, "h264", Fraction(30), SIZE[::-1], 3,
                                             None)
        stream.set_display_rotation(rotation)
        for i in range(PHONE_FRAMES):
            stored = np.ascontiguousarray(np.rot90(face_frame(i, face), turns))
            picture = av.VideoFrame.from_ndarray(stored, format="bgr24")
            picture = picture.reformat(format="yuv444p").reformat(format=stream.pix_fmt)
            picture.pts = i
            container.mux(stream.encode(picture))
        container.mux(stream.encode(None))
    return path


def animated_gif(path: Path, face: np.ndarray, delays_cs: tuple[int, ...] = GIF_DELAYS_CS
                 ) -> Path:
    """An animated GIF of face_frame(i), frame i shown for delays_cs[i] hundredths."""
    with av.open(str(path), "w") as container:
        stream = container.add_stream("gif", rate=10)
        stream.width, stream.height, stream.pix_fmt = SIZE[0], SIZE[1], "rgb8"
        stream.codec_context.time_base = Fraction(1, 100)
        start = 0
        for i, delay in enumerate(delays_cs):
            picture = av.VideoFrame.from_ndarray(face_frame(i, face), format="bgr24")
            picture = picture.reformat(format="rgb8")
            picture.pts, picture.time_base = start, Fraction(1, 100)
            start += delay
            container.mux(stream.encode(picture))
        container.mux(stream.encode(None))
    return path


# --- item 12: rotation ---------------------------------------------------------------------------

def test_sideways_phone_clip_is_swapped_upright_in_every_frame(
        testdata: Path, render_models: Path, render_cache: Path, tmp_path: Path) -> None:
    face = face_photo(testdata)
    clip = phone_clip(tmp_path / "phone.mp4", face)
    request = render_request(render_models, render_cache, testdata / "media" / "obama.jpg", clip,
                             OutputSpec(str(tmp_path / "out.####.png"),
                                        matte=str(tmp_path / "matte.####.exr")),
                             swapper="colour")
    summary, reports = run_render(request)
    assert summary.frames == PHONE_FRAMES and summary.failed == ()
    assert summary.swapped == PHONE_FRAMES, (
        f"only {summary.swapped} of {PHONE_FRAMES} sideways frames were swapped")
    assert sorted((r.frame, r.status, r.faces) for r in reports) == [
        (n, "swapped", 1) for n in range(1, PHONE_FRAMES + 1)]
    # image sequences come out upright; outside the face they are the input's pixels exactly
    stored = decode_video(clip)
    for n in range(1, PHONE_FRAMES + 1):
        out = read_bgr(tmp_path / f"out.{n:04d}.png")
        matte = read_bgr(tmp_path / f"matte.{n:04d}.exr")[..., 0]
        upright = np.ascontiguousarray(np.rot90(stored[n - 1], 3))  # -90: a clockwise turn
        assert out.shape == (SIZE[1], SIZE[0], 3)
        assert read_marker(out) == n - 1
        assert_changes_confined(out, upright, matte, min_changed=200)


def test_phone_clip_timing_tells_a_video_output_the_rotation(testdata: Path,
                                                             tmp_path: Path) -> None:
    shot = open_input(str(phone_clip(tmp_path / "phone.mov", face_photo(testdata), 90)))
    try:
        assert isinstance(shot, VideoInput)
        assert (shot.info.width, shot.info.height) == SIZE
        timing = shot.video_timing(shot.frame_numbers)
        assert timing.source is not None and timing.source.rotation_deg == 90
    finally:
        shot.close()


# --- item 13: GIF and other decodable inputs -----------------------------------------------------

def test_variable_delay_gif_renders_conformed_to_its_rate(
        testdata: Path, render_models: Path, render_cache: Path, tmp_path: Path) -> None:
    gif = animated_gif(tmp_path / "reaction.gif", face_photo(testdata))
    shot = open_input(str(gif))
    try:
        assert shot.rate == Fraction(10) and shot.frame_numbers == tuple(range(1, 7))
    finally:
        shot.close()
    request = render_request(render_models, render_cache, testdata / "media" / "obama.jpg",
                             gif, tmp_path / "out.####.png", swapper="colour")
    summary, _ = run_render(request)
    assert (summary.frames, summary.swapped, summary.failed) == (len(GIF_SLOTS),
                                                                 len(GIF_SLOTS), ())
    markers = [read_marker(read_bgr(tmp_path / f"out.{n:04d}.png"))
               for n in range(1, len(GIF_SLOTS) + 1)]
    assert tuple(markers) == GIF_SLOTS


@pytest.mark.parametrize(("codec", "name"), [("mjpeg", "clip.avi"), ("vp8", "clip.webm"),
                                             ("ffv1", "clip.footage")])
def test_any_file_ffmpeg_decodes_is_a_video_input(tmp_path: Path, codec: str,
                                                  name: str) -> None:
    made = tmp_path / ("made.mkv" if codec == "ffv1" else name)
    if codec == "vp8":
        with av.open(str(made), "w") as container:
            stream = container.add_stream("libvpx", rate=24)
            stream.width, stream.height, stream.pix_fmt = 64, 48, "yuv420p"
            for i in range(3):
                picture = av.VideoFrame.from_ndarray(np.full((48, 64, 3), 40 * i, np.uint8),
                                                     format="bgr24").reformat(format="yuv420p")
                picture.pts = i
                container.mux(stream.encode(picture))
            container.mux(stream.encode(None))
    else:
        media_factory.make_marked_clip(made, frames=3, codec=codec)
    path = tmp_path / name
    if made != path:
        shutil.move(made, path)
    shot = open_input(str(path))
    try:
        assert shot.frame_numbers == (1, 2, 3)
        assert all(isinstance(frame, np.ndarray)
                   for _, frame in arrays(shot.read(shot.frame_numbers)))
    finally:
        shot.close()


def test_a_file_nothing_decodes_gets_one_sentence_naming_format_and_conversion(
        tmp_path: Path) -> None:
    path = tmp_path / "notes.xyz"
    path.write_text("not a picture\n" * 20)
    with pytest.raises(InputError) as caught:
        open_input(str(path))
    message = str(caught.value)
    assert "in a .xyz file" in message and "convert it to an H.264 .mp4" in message
    assert "\n" not in message


# --- item 14: display-referred pixels into a scene-linear EXR -------------------------------------

def test_display_to_linear_is_the_srgb_decode_and_inverts_to_display() -> None:
    converter = linear_output_converter()
    half = display_to_linear(np.full((2, 2, 3), 0.5, np.float32), converter)
    assert half.dtype == np.float32
    np.testing.assert_allclose(half, 0.2140, atol=2e-4)
    pixels = np.random.default_rng(8).random((16, 16, 3)).astype(np.float32)
    np.testing.assert_allclose(converter.to_display(display_to_linear(pixels, converter)),
                               pixels, atol=1e-4)
    # what reading the EXR back does (the default input conversion of a float EXR)
    reader, space = input_conversion(None, ".exr", "half")
    assert isinstance(reader, ColourConverter) and space == converter.input_space
    np.testing.assert_allclose(reader.to_display(display_to_linear(pixels)), pixels, atol=1e-4)


def test_display_to_linear_takes_engine_frames_and_keeps_alpha() -> None:
    frame = np.zeros((2, 3, 4), np.uint8)
    frame[..., :3], frame[..., 3] = 255, 128
    linear = display_to_linear(frame)
    assert linear.shape == (2, 3, 4) and linear.dtype == np.float32
    np.testing.assert_allclose(linear[..., :3], 1.0, atol=1e-4)
    np.testing.assert_allclose(linear[..., 3], 128 / 255, atol=1e-6)
    deep = display_to_linear(np.full((1, 1, 3), 65535 // 2, np.uint16))
    np.testing.assert_allclose(deep, 0.2140, atol=2e-4)
    original = frame.copy()
    display_to_linear(frame)
    np.testing.assert_array_equal(frame, original)


def test_sideways_phone_clip_to_video_keeps_its_rotation_and_stored_pictures(
        testdata: Path, render_models: Path, render_cache: Path, tmp_path: Path) -> None:
    clip = phone_clip(tmp_path / "phone.mp4", face_photo(testdata))
    out = tmp_path / "out.mov"
    request = render_request(render_models, render_cache, testdata / "media" / "obama.jpg", clip,
                             OutputSpec(str(out), codec="mjpeg",
                                        matte=str(tmp_path / "matte.####.exr")),
                             swapper="colour")
    summary, _ = run_render(request)
    assert summary.swapped == PHONE_FRAMES
    with av.open(str(out)) as container:
        stream = container.streams.video[0]
        assert (stream.codec_context.width, stream.codec_context.height) == SIZE[::-1]
        first = next(container.decode(stream))
        assert first.rotation == -90  # what the input says: players turn it clockwise
    stored_in, stored_out = decode_video(clip), decode_video(out)
    assert len(stored_out) == PHONE_FRAMES
    for n in range(1, PHONE_FRAMES + 1):
        matte = np.rot90(read_bgr(tmp_path / f"matte.{n:04d}.exr")[..., 0], 1)  # to stored
        assert stored_out[n - 1].shape == stored_in[n - 1].shape
        far = matte == 0
        # mjpeg re-encoding: outside the face the stored picture is the input's, within loss
        error = np.abs(stored_out[n - 1][far].astype(int) - stored_in[n - 1][far]).mean()
        assert error < 3, f"frame {n}: stored picture differs outside the face ({error:.1f})"


def test_display_referred_video_to_exr_is_scene_linear(
        testdata: Path, render_models: Path, render_cache: Path, tmp_path: Path) -> None:
    clip = make_face_clip(tmp_path / "shot.mov", face_photo(testdata), frames=3,
                          codec="mjpeg", audio=None)
    request = render_request(render_models, render_cache, testdata / "media" / "obama.jpg", clip,
                             OutputSpec(str(tmp_path / "out.####.exr"),
                                        matte=str(tmp_path / "matte.####.exr"),
                                        patch=str(tmp_path / "patch.####.exr")))
    summary, _ = run_render(request)
    assert summary.frames == 3 and summary.failed == ()
    decoded = decode_video(clip)
    for n in range(1, 4):
        pixels, _ = read_plate_oiio(tmp_path / f"out.{n:04d}.exr")
        linear_bgr = pixels[..., [2, 1, 0]].astype(np.float32)
        matte = read_bgr(tmp_path / f"matte.{n:04d}.exr")[..., 0]
        expected = srgb_to_linear(decoded[n - 1].astype(np.float32) / 255)
        far = matte == 0
        np.testing.assert_allclose(linear_bgr[far], expected[far], atol=2e-3, rtol=2e-3)
        patch, _ = read_plate_oiio(tmp_path / f"patch.{n:04d}.exr")  # RGBA, premultiplied
        alpha = patch[..., 3:].astype(np.float32)
        assert alpha.max() > 0.99, "the face is in the patch"
        np.testing.assert_allclose(patch[..., :3], pixels[..., :3] * alpha, atol=2e-3)


def test_colorspace_none_writes_display_values_to_exr_unchanged(
        testdata: Path, render_models: Path, render_cache: Path, tmp_path: Path) -> None:
    """`--colorspace none` turns colour management off both ways: the EXR holds the video's
    display code values (as 0..1 floats), not a linearised picture."""
    clip = make_face_clip(tmp_path / "shot.mov", face_photo(testdata), frames=2,
                          codec="mjpeg", audio=None)
    request = render_request(render_models, render_cache, testdata / "media" / "obama.jpg",
                             InputSpec(str(clip), colorspace="none"),
                             OutputSpec(str(tmp_path / "out.####.exr"),
                                        matte=str(tmp_path / "matte.####.exr")))
    summary, _ = run_render(request)
    assert summary.frames == 2 and summary.failed == ()
    decoded = decode_video(clip)
    for n in (1, 2):
        pixels, _ = read_plate_oiio(tmp_path / f"out.{n:04d}.exr")
        far = read_bgr(tmp_path / f"matte.{n:04d}.exr")[..., 0] == 0
        stored = pixels[..., [2, 1, 0]].astype(np.float32)[far]
        np.testing.assert_allclose(stored, decoded[n - 1][far].astype(np.float32) / 255,
                                   atol=1e-3)
