"""`facefuse render` and colour: 8-bit h264 levels in and out, linear EXR plates written to
video display-encoded, EXR half/float plates keeping their type, alpha, HDR values and colour
space, and 10/16-bit integer plates bit-exact outside the matte.

The shot (`media`: a 23.976 fps h264 clip with a face in all but its first frames) and
`cli_cache` come from tests/integration/conftest.py, the models and the session's analysis cache
from tests/conftest.py; frames carry their index as a burned-in marker and a real face
(tests/render_media.py), and pixels are compared with the input decoded independently.
"""

from __future__ import annotations

import json
from pathlib import Path

import av
import numpy as np
import pytest

from facefuse.shot.contract.request import InputSpec, OutputSpec
from tests.integration.render_helpers import Media, assert_changes_confined, read_bgr
from tests.media_factory import read_marker
from tests.render_media import (
    SIZE,
    YUNET_SHA256,
    codes_to_uint16,
    decode_video,
    face_frame,
    read_plate_oiio,
    render_request,
    run_render,
    srgb_to_linear,
    write_plate_oiio,
)


def test_linear_exr_to_video_is_written_display_encoded(
        media: Media, render_models: Path, render_cache: Path, tmp_path: Path) -> None:
    plates = tmp_path / "plates"
    plates.mkdir()
    display = {}
    for n in range(1, 4):
        display[n] = face_frame(n, media.face)
        linear = srgb_to_linear(display[n][..., ::-1] / 255.0).astype(np.float32)
        write_plate_oiio(plates / f"p.{n}.exr", linear, "half")
    out = tmp_path / "linear.mov"
    summary, _ = run_render(render_request(render_models, render_cache, media.source,
                                           plates / "p.#.exr",
                                           OutputSpec(str(out), codec="prores_422")))
    assert summary.failed == ()
    first = decode_video(out)[0]
    region = (slice(160, 240), slice(0, 100))  # far from the face
    assert np.abs(first[region].astype(int) - display[1][region]).mean() < 3.0


GREYS = (17, 64, 100, 128, 192, 235)


def _grey_bands(width_per_band: int = 80, height: int = 64) -> np.ndarray:
    bands = np.repeat(np.array(GREYS, np.uint8), width_per_band)
    return np.ascontiguousarray(np.broadcast_to(bands[None, :, None],
                                                (height, bands.size, 3)))


def test_h264_output_encodes_8bit_greys_to_the_right_limited_range_codes(
        media: Media, render_models: Path, render_cache: Path, tmp_path: Path) -> None:
    """Flat grey bands (no face, so passed through) written as h264 (BT.709, limited range):
    luma must be round(16 + 219 v / 255). A code low everywhere darkens every render by
    about 1 %, outside the face too."""
    plates = tmp_path / "plates"
    plates.mkdir()
    for n in (1, 2):
        write_plate_oiio(plates / f"g.{n}.png", _grey_bands(), "uint8")
    out = tmp_path / "grey.mov"
    summary, _ = run_render(render_request(render_models, render_cache, media.source,
                                           plates / "g.#.png", out))
    assert summary.no_face == 2
    with av.open(str(out)) as container:
        frame = next(container.decode(video=0))
        assert frame.format.name == "yuv420p"
        luma = frame.to_ndarray(format="yuv420p")[:64, :]  # the Y plane (H, W)
    got = [int(luma[32, 80 * i + 40]) for i in range(len(GREYS))]
    assert got == [round(16 + 219 * v / 255) for v in GREYS]


def test_8bit_h264_input_decodes_to_the_right_greys(
        media: Media, render_models: Path, render_cache: Path, tmp_path: Path) -> None:
    """A lossless h264 clip with known luma codes (BT.709, limited range, neutral chroma):
    the frames render passes through must hold round((Y - 16) * 255 / 219)."""
    codes = (125, 217, 100, 30, 71, 200)
    width, height = 80 * len(codes), 64
    luma = np.repeat(np.array(codes, np.uint8), 80)[None, :].repeat(height, axis=0)
    planes = np.concatenate([luma, np.full((height // 2, width), 128, np.uint8)])
    clip = tmp_path / "codes.mp4"
    with av.open(str(clip), "w") as container:
        stream = container.add_stream("libx264", rate=24, options={"qp": "0"})
        stream.width, stream.height, stream.pix_fmt = width, height, "yuv420p"
        cc = stream.codec_context
        cc.colorspace = cc.color_primaries = cc.color_trc = cc.color_range = 1  # 709, limited
        for i in range(2):
            picture = av.VideoFrame.from_ndarray(planes, format="yuv420p")
            picture.pts = i
            container.mux(stream.encode(picture))
        container.mux(stream.encode(None))
    out = tmp_path / "out"
    out.mkdir()
    summary, _ = run_render(render_request(render_models, render_cache, media.source, clip,
                                           out / "o.#.png"))
    assert summary.no_face == 2
    got = read_bgr(out / "o.1.png")
    assert [int(got[32, 80 * i + 40, 1]) for i in range(len(codes))] == [
        round((c - 16) * 255 / 219) for c in codes]


def linear_plate(index: int, face: np.ndarray | None, alpha: bool,
                 linear: bool = True) -> np.ndarray:
    """RGB(A) float32 plate: the face frame decoded from sRGB to scene-linear (or left
    display-encoded with linear=False), with HDR and negative patches far from the face, and a
    gradient alpha."""
    frame = face_frame(index, face)[..., ::-1] / 255.0
    rgb = (srgb_to_linear(frame) if linear else frame).astype(np.float32)
    rgb[170:240, 0:120] = (4.0, 2.5, 16.0)  # above display white
    rgb[40:80, 0:60] = (-0.25, 0.125, -0.0625)  # negative (out of gamut) values
    rgb[200:240, 290:320] = 100.0
    if not alpha:
        return rgb
    a = np.tile(np.linspace(0.0, 1.0, SIZE[0], dtype=np.float32), (SIZE[1], 1))[..., None]
    return np.concatenate([rgb, a], axis=2)


def test_exr_half_rgba_linear_plates_keep_type_alpha_and_values_above_one(
        media: Media, render_models: Path, render_cache: Path, tmp_path: Path) -> None:
    plates, out = tmp_path / "plates", tmp_path / "out"
    plates.mkdir(), out.mkdir()
    numbers = range(1001, 1005)
    inputs = {}
    for n in numbers:
        inputs[n] = write_plate_oiio(plates / f"plate.{n}.exr", linear_plate(n - 1001, media.face,
                                                                           True),
                                     "half", attributes={"compression": "piz"})
    request = render_request(render_models, render_cache, media.source, plates / "plate.####.exr",
                             OutputSpec(str(out / "swap.####.exr"),
                                        matte=str(out / "matte.####.exr")))
    summary, _ = run_render(request)
    assert (summary.frames, summary.swapped, summary.no_face, summary.failed) == (4, 4, 0, ())
    for n in numbers:
        got, spec = read_plate_oiio(out / f"swap.{n}.exr")
        ref, _ = read_plate_oiio(inputs[n])
        assert str(spec.format) == "half" and tuple(spec.channelnames) == ("R", "G", "B", "A")
        assert spec.alpha_channel == 3 and (spec.width, spec.height) == SIZE
        assert spec.getattribute("compression") == "piz"
        np.testing.assert_array_equal(got[..., 3], ref[..., 3])  # alpha untouched everywhere
        matte = read_plate_oiio(out / f"matte.{n}.exr")[0][..., 0]
        assert_changes_confined(got, ref, matte, min_changed=1500)
        assert np.all(got[170:240, 0:120, :3] == (4.0, 2.5, 16.0))
        assert np.all(got[200:240, 290:320, :3] == 100.0)
        assert np.all(got[40:80, 0:60, :3] == (-0.25, 0.125, -0.0625))
        assert read_marker(got[..., 2::-1].copy()) == n - 1001
        # the identity swapper gives the face back: linear values, not display-encoded ones
        face = matte > 0.99
        assert np.abs(got[face, :3] - ref[face, :3]).mean() < 0.02


@pytest.mark.parametrize("colorspace", [None, "none"], ids=["default-linear", "none"])
def test_exr_float_colour_swap_lands_in_the_plate_colour_space(
        media: Media, render_models: Path, render_cache: Path, tmp_path: Path,
        colorspace: str | None) -> None:
    """Default for a float EXR: scene-linear, so the display colour the swapper paints comes
    back sRGB-decoded. With colorspace "none" (a display-referred float plate) it lands as is."""
    plates, out = tmp_path / "plates", tmp_path / "out"
    plates.mkdir(), out.mkdir()
    linear = colorspace is None
    for n in range(1001, 1004):
        write_plate_oiio(plates / f"plate.{n}.exr",
                         linear_plate(n - 1001, media.face, False, linear), "float")
    request = render_request(render_models, render_cache, media.source,
                             InputSpec(str(plates / "plate.####.exr"), colorspace=colorspace),
                             OutputSpec(str(out / "swap.####.exr"),
                                        matte=str(out / "matte.####.exr")),
                             swapper="colour")
    summary, _ = run_render(request)
    assert (summary.swapped, summary.no_face, summary.failed) == (3, 0, ())
    expected = srgb_to_linear(media.colour_rgb) if linear else media.colour_rgb
    for n in range(1001, 1004):
        got, spec = read_plate_oiio(out / f"swap.{n}.exr")
        assert str(spec.format) == "float" and spec.nchannels == 3
        matte = read_plate_oiio(out / f"matte.{n}.exr")[0][..., 0]
        core = matte == 1.0
        assert core.sum() > 200
        np.testing.assert_allclose(got[core], np.broadcast_to(expected, got[core].shape),
                                   atol=2e-3)
        assert np.all(got[170:240, 0:120] == (4.0, 2.5, 16.0))
        assert np.all(got[40:80, 0:60] == (-0.25, 0.125, -0.0625))


@pytest.mark.parametrize("ext, bits", [("dpx", 10), ("tif", 16), ("png", 16)])
def test_integer_plates_round_trip_bit_exact_outside_the_matte(
        media: Media, render_models: Path, render_cache: Path, tmp_path: Path, ext: str,
        bits: int) -> None:
    plates, out = tmp_path / "plates", tmp_path / "out"
    plates.mkdir(), out.mkdir()
    rng = np.random.default_rng(bits)
    inputs = {}
    for n in range(1, 4):
        frame = face_frame(n, media.face)[..., ::-1].astype(np.int64)  # RGB
        top = (1 << bits) - 1
        codes = np.clip(frame * top // 255 + rng.integers(-2, 3, frame.shape), 0, top)
        pixels = codes_to_uint16(codes, bits)  # the values OIIO reads for those codes
        inputs[n] = write_plate_oiio(plates / f"plate.{n:04d}.{ext}", pixels, "uint16",
                                     bits=bits if bits != 16 else 0)
    request = render_request(render_models, render_cache, media.source,
                             plates / f"plate.####.{ext}",
                             OutputSpec(str(out / f"swap.####.{ext}"),
                                        matte=str(out / "matte.####.exr")))
    summary, _ = run_render(request)
    assert (summary.frames, summary.swapped, summary.failed) == (3, 3, ())
    for n in range(1, 4):
        got, spec = read_plate_oiio(out / f"swap.{n:04d}.{ext}")
        ref, _ = read_plate_oiio(inputs[n])
        assert str(spec.format) == "uint16" and spec.nchannels == 3
        assert spec.get_int_attribute("oiio:BitsPerSample", 16) == bits
        matte = read_plate_oiio(out / f"matte.{n:04d}.exr")[0][..., 0]
        assert_changes_confined(got, ref, matte, min_changed=1500)
        assert read_marker(got[..., ::-1].copy()) == n
        tags = _carried_tags(spec, ext)  # provenance, as JSON where the format drops attributes
        assert tags["facefuse:frame"] == str(n) and len(tags["facefuse:fingerprint"]) == 64
        assert json.loads(tags["facefuse:models"])["detector"]["sha256"] == YUNET_SHA256


def _carried_tags(spec, ext: str) -> dict[str, str]:
    attributes = {p.name: p.value for p in spec.extra_attribs}
    if ext == "png":
        return {k: str(v) for k, v in attributes.items() if k.startswith("facefuse:")}
    if ext == "tif":
        return json.loads(attributes["ImageDescription"])
    blob = bytes(np.asarray(attributes["dpx:UserData"], np.uint8)).rstrip(b"\0")
    return json.loads(blob.decode("utf-8"))
