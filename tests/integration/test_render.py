"""`facefuse render` end to end: real YuNet, contract swappers, generated media with a real face.

Every generated frame carries its index as a burned-in marker (tests/media_factory.py) and a
photo of a face (tests/render_fixtures.py), so each output frame proves which input frame it came
from, and pixels are compared with the input decoded independently (PyAV / OpenImageIO): where the
written matte is 0 the output must be bit-identical to the input.

Farm topics (chunks, kills, memory) live in test_render_farm.py.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path

import av
import numpy as np
import pytest

from facefuse.cli import main as cli  # imported here, while sys.stderr is pytest's own stream
from facefuse.cli import render as cli_render
from facefuse.errors import ExitCode
from facefuse.pipeline import Pipeline
from facefuse.shot.request import FrameReport, RenderSummary
from tests import contract_models, media_factory
from tests.media_factory import make_vfr_clip, read_marker
from tests.render_fixtures import (  # noqa: F401 - fixtures are used by name
    FACE_SIZE,
    FACE_XY,
    SIZE,
    YUNET_NAME,
    YUNET_SHA256,
    cli_args,
    codes_to_uint16,
    decode_video,
    face_frame,
    face_photo,
    make_face_clip,
    read_plate_oiio,
    render_cache_fixture,
    render_models_fixture,
    render_request,
    render_settings,
    run_render,
    srgb_to_linear,
    stray_files,
    write_plate_oiio,
)

NTSC_FILM = Fraction(24000, 1001)
CLIP_FRAMES = 16
NO_FACE = range(4)  # clip frames (0-based) without a face: a run longer than the gap filler's 3
FACE_BOX = (FACE_XY[0] - 45, FACE_XY[1] - 45, FACE_XY[0] + FACE_SIZE[0] + 45,
            FACE_XY[1] + FACE_SIZE[1] + 45)  # x0, y0, x1, y1: where any paste must stay


@dataclass(frozen=True)
class Media:
    root: Path
    face: np.ndarray
    source: Path
    clip: Path  # h264 .mp4, 23.976 fps, AAC tone, timecode 01:00:00:00, no face in NO_FACE
    clip_frames: list[np.ndarray]  # the clip decoded with PyAV (BGR uint8)
    nose_xy: tuple[int, int]  # YuNet's nose landmark on the face frames
    colour_rgb: np.ndarray  # what the colour swapper paints for this source (display, 0..1)


@pytest.fixture(scope="module")
def media(tmp_path_factory: pytest.TempPathFactory, testdata: Path, render_models: Path,
          render_cache: Path) -> Media:
    root = tmp_path_factory.mktemp("render-media")
    face = face_photo(testdata)
    source = testdata / "media" / "obama.jpg"
    clip = make_face_clip(root / "shot.mp4", face, frames=CLIP_FRAMES, rate=NTSC_FILM,
                          without_face=NO_FACE)
    settings = render_settings(render_models, render_cache, "colour")
    with Pipeline(settings) as pipeline:
        faces = pipeline.detect(face_frame(5, face))
        identity = pipeline.source_identity([source])
        latent = pipeline.models.swapper().latent(identity.embedding)
    assert len(faces) == 1, "the composited face must be found by YuNet"
    nose = faces[0].kps5[2].round().astype(int)
    return Media(root, face, source, clip, decode_video(clip), (int(nose[0]), int(nose[1])),
                 contract_models.expected_colour_rgb(latent))


@pytest.fixture()
def cli_cache(render_cache: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """CLI renders share the session's analysis cache (the CLI takes it from $FACEFUSE_CACHE)."""
    monkeypatch.setenv("FACEFUSE_CACHE", str(render_cache))
    return render_cache


def read_bgr(path: Path) -> np.ndarray:
    """An image file's pixels as stored, in B, G, R(, A) order (or (H, W, 1) grey)."""
    pixels, _ = read_plate_oiio(path)
    if pixels.shape[2] >= 3:
        order = [2, 1, 0] + ([3] if pixels.shape[2] == 4 else [])
        pixels = pixels[..., order]
    return np.ascontiguousarray(pixels)


def changed(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """(H, W) True where any colour channel differs (NaN-free inputs)."""
    return np.any(a[..., :3] != b[..., :3], axis=2)


def assert_changes_confined(out: np.ndarray, ref: np.ndarray, matte: np.ndarray,
                            min_changed: int) -> None:
    """Bit-identical where the matte is 0; the face really changed; the matte sits on the face."""
    assert out.shape == ref.shape and out.dtype == ref.dtype
    np.testing.assert_array_equal(out[matte == 0], ref[matte == 0])
    diff = changed(out, ref)
    assert diff.sum() >= min_changed, f"only {diff.sum()} pixels changed under the face"
    ys, xs = np.nonzero(matte > 0)
    x0, y0, x1, y1 = FACE_BOX
    assert xs.min() >= x0 and xs.max() < x1 and ys.min() >= y0 and ys.max() < y1, (
        f"matte spans x {xs.min()}..{xs.max()}, y {ys.min()}..{ys.max()}: outside the face")


def one_line_error(captured: str) -> str:
    lines = [line for line in captured.splitlines() if line.strip()]
    assert "Traceback" not in captured
    assert len(lines) == 1 and lines[0].startswith("facefuse: error: "), captured
    return lines[0]


# --- 1. video in -> image sequence out -------------------------------------------------------

@dataclass(frozen=True)
class SequenceRender:
    out: Path
    summary: RenderSummary
    reports: list
    numbers: range


@pytest.fixture(scope="module")
def video_to_png(media: Media, render_models: Path, render_cache: Path,
                 tmp_path_factory: pytest.TempPathFactory) -> SequenceRender:
    """Clip frames 1003-1014 (numbered from 1001) -> PNG, with an EXR matte and patch."""
    out = tmp_path_factory.mktemp("video-to-png")
    request = render_request(render_models, render_cache, media.source, media.clip,
                             out / "shot.####.png", start_number=1001, frames=(1003, 1014),
                             matte=str(out / "matte.####.exr"), patch=str(out / "patch.####.exr"))
    summary, reports = run_render(request)
    return SequenceRender(out, summary, reports, range(1003, 1015))


def test_video_to_sequence_output_frame_n_is_input_frame_n(video_to_png: SequenceRender) -> None:
    result, numbers = video_to_png, list(video_to_png.numbers)
    s = result.summary
    assert (s.frames, s.swapped, s.no_face, s.skipped, s.failed, s.cancelled) == (
        12, 10, 2, 0, (), False)
    for kind in ("shot", "matte", "patch"):
        files = sorted(result.out.glob(f"{kind}.*"))
        assert [f.name for f in files] == [f"{kind}.{n}.{'png' if kind == 'shot' else 'exr'}"
                                           for n in numbers]
    assert stray_files(result.out) == []
    for n in numbers:
        assert read_marker(read_bgr(result.out / f"shot.{n}.png")) == n - 1001
    assert sorted(r.frame for r in result.reports) == numbers
    status = {r.frame: (r.status, r.faces) for r in result.reports}
    assert status == {n: ("no_face", 0) if n - 1001 in NO_FACE else ("swapped", 1)
                      for n in numbers}
    assert all({"decode", "swap", "paste"} <= set(r.ms) for r in result.reports
               if r.status == "swapped")


def test_video_to_sequence_changes_only_pixels_under_the_matte(video_to_png: SequenceRender,
                                                                media: Media) -> None:
    for n in video_to_png.numbers:
        out = read_bgr(video_to_png.out / f"shot.{n}.png")
        ref = media.clip_frames[n - 1001]
        matte = read_bgr(video_to_png.out / f"matte.{n}.exr")[..., 0]
        if n - 1001 in NO_FACE:
            np.testing.assert_array_equal(out, ref)
            assert matte.max() == 0.0
        else:
            assert_changes_confined(out, ref, matte, min_changed=1500)


def test_matte_is_one_channel_zero_outside_and_one_at_the_nose(video_to_png: SequenceRender,
                                                               media: Media) -> None:
    nx, ny = media.nose_xy
    for n in video_to_png.numbers:
        pixels, spec = read_plate_oiio(video_to_png.out / f"matte.{n}.exr")
        assert (spec.width, spec.height, spec.nchannels) == (*SIZE, 1)
        assert tuple(spec.channelnames) == ("Y",)
        matte = pixels[..., 0]
        assert matte.min() >= 0.0 and matte.max() <= 1.0
        if n - 1001 in NO_FACE:
            assert matte.max() == 0.0
            continue
        assert matte[ny, nx] > 0.99
        x0, y0, x1, y1 = FACE_BOX
        outside = np.ones(matte.shape, bool)
        outside[y0:y1, x0:x1] = False
        assert matte[outside].max() == 0.0
        assert (matte > 0.5).sum() > 1000  # a face-sized soft blob, not a speck


def test_patch_is_premultiplied_output_with_the_matte_as_alpha(video_to_png: SequenceRender
                                                               ) -> None:
    for n in list(video_to_png.numbers)[1:4]:  # a no-face frame and two swapped ones
        patch, spec = read_plate_oiio(video_to_png.out / f"patch.{n}.exr")
        assert tuple(spec.channelnames) == ("R", "G", "B", "A") and spec.alpha_channel == 3
        matte = read_plate_oiio(video_to_png.out / f"matte.{n}.exr")[0][..., 0]
        rgb = read_plate_oiio(video_to_png.out / f"shot.{n}.png")[0].astype(np.float32) / 255
        np.testing.assert_array_equal(patch[..., 3], matte)
        np.testing.assert_allclose(patch[..., :3], rgb * matte[..., None], atol=2e-3, rtol=2e-3)
        assert np.all(patch[matte == 0] == 0.0)


def test_sequence_outputs_carry_provenance(video_to_png: SequenceRender, media: Media) -> None:
    fingerprints = set()
    for n in (1004, 1010):
        for name in (f"shot.{n}.png", f"matte.{n}.exr", f"patch.{n}.exr"):
            tags = _facefuse_tags(read_plate_oiio(video_to_png.out / name)[1])
            assert tags["frame"] == str(n)
            assert tags["input"] == str(media.clip)
            assert tags["sources_sha256"] == hashlib.sha256(media.source.read_bytes()).hexdigest()
            assert len(tags["source_identity"]) == 16
            models = json.loads(tags["models"])
            assert models["detector"] == {"model": YUNET_NAME, "sha256": YUNET_SHA256}
            assert models["swapper"]["model"] == "identity_swapper.onnx"
            assert set(models) == {"detector", "recogniser", "swapper"}
            assert json.loads(tags["settings"])["mask_blur"] == 0.3
            assert tags["version"]
            fingerprints.add(tags["fingerprint"])
    assert len(fingerprints) == 1 and len(fingerprints.pop()) == 64


def _facefuse_tags(spec) -> dict[str, str]:
    return {p.name.removeprefix("facefuse:"): str(p.value) for p in spec.extra_attribs
            if p.name.startswith("facefuse:")}


def test_cli_frames_and_start_number_with_json_progress(media: Media, render_models: Path,
                                                        cli_cache: Path, tmp_path: Path,
                                                        capsys: pytest.CaptureFixture[str]
                                                        ) -> None:
    rc = cli.main(cli_args(render_models, media.source, media.clip, tmp_path / "f.%04d.png",
                           "--frames", "1004-1008", "--start-number", "1001",
                           "--progress", "json"))
    captured = capsys.readouterr()
    assert rc == 0, captured.err
    lines = [json.loads(line) for line in captured.out.splitlines()]
    frames = [line for line in lines if "frame" in line]
    assert sorted(f["frame"] for f in frames) == [1004, 1005, 1006, 1007, 1008]
    assert {f["frame"]: f["status"] for f in frames}[1004] == "no_face"
    summary = lines[-1]["summary"]
    assert (summary["frames"], summary["swapped"], summary["no_face"], summary["failed"]) == (
        5, 4, 1, [])
    files = sorted(tmp_path.glob("f.*.png"))
    assert [f.name for f in files] == [f"f.{n}.png" for n in range(1004, 1009)]
    for path in files:
        n = int(path.name.split(".")[1])
        out = read_bgr(path)
        assert read_marker(out) == n - 1001
        ref = media.clip_frames[n - 1001]
        x0, y0, x1, y1 = FACE_BOX  # no matte here: compare outside the face box
        outside = np.ones(out.shape[:2], bool)
        outside[y0:y1, x0:x1] = False
        np.testing.assert_array_equal(out[outside], ref[outside])


# --- 2. video in -> video out ----------------------------------------------------------------

def video_facts(path: Path) -> dict:
    """What PyAV reads back: frames, rate, duration, timecode, audio span, tags."""
    with av.open(str(path)) as container:
        stream = container.streams.video[0]
        packets = [p for p in container.demux(stream) if p.size]
        tags = {k.lower(): v for k, v in container.metadata.items()}
        timecode = next((str(v) for s in container.streams for k, v in s.metadata.items()
                         if k.lower() == "timecode"), None)
        facts = {"codec": stream.codec_context.name, "rate": stream.average_rate,
                 "packets": len(packets),
                 "end_s": float(max(p.pts + p.duration for p in packets) * stream.time_base),
                 "start_s": float(min(p.pts for p in packets) * stream.time_base),
                 "timecode": timecode, "tags": tags, "audio": len(container.streams.audio)}
    if facts["audio"]:
        with av.open(str(path)) as container:
            audio = container.streams.audio[0]
            pk = [p for p in container.demux(audio) if p.size]
            facts["audio_codec"] = audio.codec_context.name
            facts["audio_end_s"] = float(max(p.pts + p.duration for p in pk) * audio.time_base)
            facts["audio_packet_s"] = float(pk[1].duration * audio.time_base)
    return facts


def test_video_to_mov_h264_keeps_rate_duration_timecode_audio(media: Media, render_models: Path,
                                                              render_cache: Path,
                                                              tmp_path: Path) -> None:
    out = tmp_path / "swapped.mov"
    request = render_request(render_models, render_cache, media.source, media.clip, out,
                             swapper="colour", matte=str(tmp_path / "matte.####.png"))
    summary, _ = run_render(request)
    assert (summary.frames, summary.swapped, summary.no_face, summary.failed) == (
        CLIP_FRAMES, CLIP_FRAMES - len(NO_FACE), len(NO_FACE), ())
    mattes = [f"matte.{n:04d}.png" for n in range(1, CLIP_FRAMES + 1)]
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(["swapped.mov", *mattes])
    for n in range(1, CLIP_FRAMES + 1):  # a matte per frame beside the video, same numbering
        matte = read_bgr(tmp_path / f"matte.{n:04d}.png")[..., 0]
        assert matte.shape == (SIZE[1], SIZE[0])
        assert (matte.max() == 0) == (n - 1 in NO_FACE)
    facts = video_facts(out)
    source = video_facts(media.clip)
    assert facts["codec"] == "h264" and facts["packets"] == CLIP_FRAMES
    assert facts["rate"] == NTSC_FILM  # the exact rational, not 23.976
    assert facts["end_s"] - facts["start_s"] == pytest.approx(float(CLIP_FRAMES / NTSC_FILM),
                                                              abs=1e-3)
    assert facts["timecode"] == "01:00:00:00"
    assert facts["audio"] == 1 and facts["audio_codec"] == "aac"
    assert facts["audio_end_s"] == pytest.approx(source["audio_end_s"], abs=1e-3)
    assert facts["tags"]["facefuse:fingerprint"] and "facefuse:models" in facts["tags"]
    frames = decode_video(out)
    assert [read_marker(f) for f in frames] == list(range(CLIP_FRAMES))
    nx, ny = media.nose_xy
    expected_bgr = media.colour_rgb[::-1] * 255
    for i, (got, ref) in enumerate(zip(frames, media.clip_frames)):
        nose = got[ny - 1:ny + 2, nx - 1:nx + 2].reshape(-1, 3).mean(axis=0)
        if i in NO_FACE:  # untouched (up to the h264 re-encode)
            assert np.abs(nose - ref[ny, nx]).max() < 8
        else:  # painted with the source's colour
            np.testing.assert_allclose(nose, expected_bgr, atol=8)
        corner = (slice(160, 240), slice(0, 100))  # far from the face: the input, re-encoded
        assert np.abs(got[corner].astype(int) - ref[corner]).mean() < 4.0  # see the 8-bit test


@pytest.mark.parametrize("rate, timecode, shifted", [
    (NTSC_FILM, "01:00:00:00", "01:00:00:04"),
    (Fraction(30000, 1001), "00:00:59;28", "00:01:00;04"),  # drop frame: ;00 and ;01 skipped
], ids=["23.976-ndf", "29.97-df"])
def test_video_sub_range_to_mkv_prores_shifts_timecode_and_audio(
        media: Media, render_models: Path, cli_cache: Path, tmp_path: Path, rate: Fraction,
        timecode: str, shifted: str) -> None:
    clip = make_face_clip(tmp_path / "in.mov", media.face, frames=14, rate=rate,
                          timecode=timecode)
    out = tmp_path / "out" / "range.mkv"
    out.parent.mkdir()
    rc = cli.main(cli_args(render_models, media.source, clip, out, "--frames", "5-12",
                           "--codec", "prores_4444"))
    assert rc == 0
    facts = video_facts(out)
    assert facts["codec"] == "prores" and facts["packets"] == 8
    assert facts["rate"] == rate
    assert facts["end_s"] - facts["start_s"] == pytest.approx(float(8 / rate), abs=1.5e-3)
    assert facts["timecode"] == shifted
    assert facts["audio"] == 1
    assert abs(facts["audio_end_s"] - float(8 / rate)) <= facts["audio_packet_s"]
    assert "facefuse:fingerprint" in facts["tags"]  # matroska upper-cases, video_facts lowers
    assert [read_marker(f) for f in decode_video(out)] == list(range(4, 12))
    assert sorted(p.name for p in out.parent.iterdir()) == ["range.mkv"]


def test_prores_4444_alpha_clip_to_16bit_png_and_back_to_prores(
        media: Media, render_models: Path, cli_cache: Path, tmp_path: Path) -> None:
    """A 12-bit ProRes 4444 clip with alpha: frames come out uint16 RGBA, alpha untouched,
    colour bit-identical where the matte is 0; a ProRes 4444 output keeps an alpha plane."""
    clip = make_face_clip(tmp_path / "alpha.mov", media.face, frames=4, codec="prores_4444",
                          audio="pcm_s16le")
    ref = decode_video(clip, "bgra64le")
    out = tmp_path / "png"
    out.mkdir()
    assert cli.main(cli_args(render_models, media.source, clip, out / "o.#.png",
                             "--matte", str(out / "m.#.exr"))) == 0
    for n in range(1, 5):
        got, spec = read_plate_oiio(out / f"o.{n}.png")
        assert str(spec.format) == "uint16" and tuple(spec.channelnames) == ("R", "G", "B", "A")
        got = got[..., [2, 1, 0, 3]]
        np.testing.assert_array_equal(got[..., 3], ref[n - 1][..., 3])
        matte = read_bgr(out / f"m.{n}.exr")[..., 0]
        assert_changes_confined(got, ref[n - 1], matte, min_changed=1500)
        assert read_marker(got) == n - 1
    movie = tmp_path / "alpha_out.mov"
    assert cli.main(cli_args(render_models, media.source, clip, movie,
                             "--codec", "prores_4444")) == 0
    with av.open(str(movie)) as container:
        assert container.streams.video[0].codec_context.pix_fmt.startswith("yuva444p")
        assert len(container.streams.audio) == 1
    back = decode_video(movie, "bgra64le")
    assert [read_marker(f) for f in back] == [0, 1, 2, 3]
    for got, want in zip(back, ref):  # ProRes alpha: within a 10-bit code or two
        assert np.abs(got[..., 3].astype(int) - want[..., 3]).max() <= 128


def test_sequence_to_video_takes_the_rate_and_keeps_the_order(
        media: Media, render_models: Path, render_cache: Path, tmp_path: Path) -> None:
    plates = tmp_path / "plates"
    plates.mkdir()
    for n in range(1001, 1007):
        write_plate_oiio(plates / f"p.{n}.png", face_frame(n - 1001, media.face)[..., ::-1]
                         .copy(), "uint8")
    out = tmp_path / "seq.mp4"
    summary, _ = run_render(render_request(render_models, render_cache, media.source,
                                           plates / "p.####.png", out,
                                           rate=Fraction(30000, 1001)))
    assert (summary.frames, summary.swapped) == (6, 6)
    facts = video_facts(out)
    assert facts["packets"] == 6 and facts["rate"] == Fraction(30000, 1001)
    assert facts["end_s"] - facts["start_s"] == pytest.approx(6 * 1001 / 30000, abs=1e-3)
    assert facts["timecode"] is None and facts["audio"] == 0
    assert [read_marker(f) for f in decode_video(out)] == list(range(6))


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
                                           plates / "p.#.exr", out, codec="prores_422"))
    assert summary.failed == ()
    first = decode_video(out)[0]
    region = (slice(160, 240), slice(0, 100))  # far from the face
    assert np.abs(first[region].astype(int) - display[1][region]).mean() < 3.0


def test_variable_frame_rate_conformed_on_request(media: Media, render_models: Path,
                                                  cli_cache: Path, tmp_path: Path) -> None:
    """--conform-vfr: slot k of the 30 fps grid shows the last frame starting before the middle
    of the slot, so the frame after each doubled step is shown twice."""
    times = media_factory.vfr_default_times_ms()
    vfr = make_vfr_clip(tmp_path / "vfr.mkv")
    out = tmp_path / "out"
    out.mkdir()
    assert cli.main(cli_args(render_models, media.source, vfr, out / "o.#.png",
                             "--conform-vfr", "--frames", "1-12")) == 0
    expected = [max(i for i, t in enumerate(times) if t <= (k + 0.5) * 1000 / 30)
                for k in range(12)]
    got = [read_marker(read_bgr(out / f"o.{n}.png")) for n in range(1, 13)]
    assert got == expected and len(set(got)) < 12


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


# --- 3. image sequences in and out -----------------------------------------------------------

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
    request = render_request(render_models, render_cache, media.source,
                             plates / "plate.####.exr", out / "swap.####.exr",
                             matte=str(out / "matte.####.exr"))
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
                             plates / "plate.####.exr", out / "swap.####.exr", swapper="colour",
                             matte=str(out / "matte.####.exr"), colorspace=colorspace)
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
                             plates / f"plate.####.{ext}", out / f"swap.####.{ext}",
                             matte=str(out / "matte.####.exr"))
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


# --- 5. frames without a face ------------------------------------------------------------------

def test_frames_without_a_face_pass_through_and_are_counted(
        media: Media, render_models: Path, render_cache: Path, tmp_path: Path) -> None:
    """Frames 1-3: no face (before the face's track starts): unchanged, counted no_face.
    Frame 6: the face is missing for one frame inside its track, which is filled in
    (interpolated landmarks) so a detector drop-out does not flash the original face."""
    plates, out = tmp_path / "plates", tmp_path / "out"
    plates.mkdir(), out.mkdir()
    faceless = {1, 2, 3, 6}
    inputs = {}
    for n in range(1, 9):
        inputs[n] = face_frame(n, None if n in faceless else media.face)
        write_plate_oiio(plates / f"p.{n}.png", inputs[n][..., ::-1].copy(), "uint8")
    request = render_request(render_models, render_cache, media.source, plates / "p.#.png",
                             out / "o.#.png", matte=str(out / "m.#.exr"))
    summary, reports = run_render(request)
    assert (summary.frames, summary.swapped, summary.no_face, summary.skipped,
            summary.failed) == (8, 5, 3, 0, ())
    assert summary.done == 8
    status = {r.frame: (r.status, r.faces) for r in reports}
    assert status == {n: ("no_face", 0) if n <= 3 else ("swapped", 1) for n in range(1, 9)}
    for n in range(1, 9):
        got = read_bgr(out / f"o.{n}.png")
        matte = read_bgr(out / f"m.{n}.exr")[..., 0]
        if n <= 3:
            np.testing.assert_array_equal(got, inputs[n])
            assert matte.max() == 0.0
        else:
            assert matte.max() > 0.99
            np.testing.assert_array_equal(got[matte == 0], inputs[n][matte == 0])


# --- 6. resume ---------------------------------------------------------------------------------

def _file_state(folder: Path) -> dict[str, tuple[int, int, bytes]]:
    return {p.name: (p.stat().st_mtime_ns, p.stat().st_ino, p.read_bytes())
            for p in sorted(folder.iterdir())}


def test_resume_skips_finished_frames_and_rerenders_on_changes(
        media: Media, render_models: Path, render_cache: Path, tmp_path: Path) -> None:
    plates, out = tmp_path / "plates", tmp_path / "out"
    plates.mkdir(), out.mkdir()
    for n in range(1001, 1006):
        write_plate_oiio(plates / f"p.{n}.png", face_frame(n, media.face)[..., ::-1].copy(),
                         "uint8")

    def go(**changes):
        settings = changes.pop("settings", None)
        request = render_request(render_models, render_cache, media.source,
                                 plates / "p.####.png", out / "o.####.png",
                                 matte=str(out / "m.####.png"), settings=settings, **changes)
        return run_render(request)

    first, _ = go()
    assert (first.swapped, first.skipped) == (5, 0)
    state = _file_state(out)
    assert len(state) == 10

    again, reports = go()
    assert (again.frames, again.swapped, again.no_face, again.skipped) == (5, 0, 0, 5)
    assert sorted((r.frame, r.status) for r in reports) == [(n, "skipped")
                                                           for n in range(1001, 1006)]
    assert _file_state(out) == state  # not rewritten: same mtime, inode and bytes

    (out / "o.1003.png").write_bytes(state["o.1003.png"][2][:200])  # a half-written frame
    (out / "m.1005.png").unlink()  # a missing matte
    repaired, reports = go()
    assert (repaired.swapped, repaired.skipped) == (2, 3)
    assert sorted(r.frame for r in reports if r.status == "swapped") == [1003, 1005]
    after = _file_state(out)
    assert {k: v[2] for k, v in after.items()} == {k: v[2] for k, v in state.items()}
    assert after["o.1001.png"] == state["o.1001.png"]

    blurred, _ = go(settings={"mask_blur": 0.6})  # a pixel-relevant setting: all re-rendered
    assert (blurred.swapped, blurred.skipped) == (5, 0)
    changed_state = _file_state(out)
    for n in range(1001, 1006):
        assert changed_state[f"o.{n}.png"][2] != state[f"o.{n}.png"][2]
        assert changed_state[f"m.{n}.png"][2] != state[f"m.{n}.png"][2]
    assert go(settings={"mask_blur": 0.6})[0].skipped == 5  # the new fingerprint is recorded

    forced, _ = go(settings={"mask_blur": 0.6}, overwrite=True)
    assert (forced.swapped, forced.skipped) == (5, 0)
    rewritten = _file_state(out)
    for name, (mtime, inode, data) in rewritten.items():
        assert data == changed_state[name][2]  # deterministic ...
        assert (mtime, inode) != changed_state[name][:2]  # ... but written again

    # a setting that does not change pixels (the cache folder) does not re-render
    moved = render_request(render_models, tmp_path / "other-cache" / "embeddings", media.source,
                           plates / "p.####.png", out / "o.####.png",
                           matte=str(out / "m.####.png"), settings={"mask_blur": 0.6})
    assert run_render(moved)[0].skipped == 5


def test_resume_does_not_keep_frames_rendered_from_another_input(
        media: Media, render_models: Path, render_cache: Path, tmp_path: Path) -> None:
    shot_a, shot_b, out = tmp_path / "a", tmp_path / "b", tmp_path / "out"
    for folder in (shot_a, shot_b, out):
        folder.mkdir()
    for n in (1, 2, 3):
        write_plate_oiio(shot_a / f"p.{n}.png", face_frame(n, media.face)[..., ::-1].copy(),
                         "uint8")
        write_plate_oiio(shot_b / f"p.{n}.png", face_frame(n + 100, media.face)[..., ::-1]
                         .copy(), "uint8")
    for shot in (shot_a, shot_b):
        run_render(render_request(render_models, render_cache, media.source, shot / "p.#.png",
                                  out / "o.#.png"))
    assert [read_marker(read_bgr(out / f"o.{n}.png")) for n in (1, 2, 3)] == [101, 102, 103]


def test_resume_rerenders_frames_whose_plate_changed(
        media: Media, render_models: Path, render_cache: Path, tmp_path: Path) -> None:
    plates, out = tmp_path / "plates", tmp_path / "out"
    plates.mkdir(), out.mkdir()
    for n in (1, 2, 3):
        write_plate_oiio(plates / f"p.{n}.png", face_frame(n, media.face)[..., ::-1].copy(),
                         "uint8")
    request = render_request(render_models, render_cache, media.source, plates / "p.#.png",
                             out / "o.#.png")
    run_render(request)
    write_plate_oiio(plates / "p.2.png", face_frame(42, media.face)[..., ::-1].copy(), "uint8")
    summary, _ = run_render(request)  # a new plate version under the same name
    assert summary.skipped < 3
    assert read_marker(read_bgr(out / "o.2.png")) == 42


@pytest.fixture()
def damaged_plates(media: Media, tmp_path: Path) -> Path:
    """p.1..6.png with p.3.png cut in half (it exists, so it is not a gap)."""
    plates = tmp_path / "damaged"
    plates.mkdir()
    for n in range(1, 7):
        write_plate_oiio(plates / f"p.{n}.png", face_frame(n, media.face)[..., ::-1].copy(),
                         "uint8")
    data = (plates / "p.3.png").read_bytes()
    (plates / "p.3.png").write_bytes(data[:len(data) // 2])
    return plates


def test_damaged_frame_is_reported_and_the_others_rendered(
        damaged_plates: Path, media: Media, render_models: Path, cli_cache: Path,
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "out"
    out.mkdir()
    rc = cli.main(cli_args(render_models, media.source, damaged_plates / "p.#.png",
                           out / "o.#.png", "--progress", "json"))
    captured = capsys.readouterr()
    assert rc == ExitCode.FRAMES_FAILED == 5
    assert "Traceback" not in captured.err
    lines = [json.loads(line) for line in captured.out.splitlines()]
    failed = [line for line in lines if line.get("status") == "failed"]
    assert [f["frame"] for f in failed] == [3] and "p.3.png" in failed[0]["error"]
    summary = lines[-1]["summary"]
    assert (summary["frames"], summary["swapped"]) == (6, 5)
    assert [f["frame"] for f in summary["failed"]] == [3]
    assert sorted(p.name for p in out.iterdir()) == [f"o.{n}.png" for n in (1, 2, 4, 5, 6)]
    assert [read_marker(read_bgr(out / f"o.{n}.png")) for n in (1, 2, 4, 5, 6)] == [1, 2, 4,
                                                                                   5, 6]


def test_damaged_frame_in_a_video_output(damaged_plates: Path, media: Media,
                                         render_models: Path, render_cache: Path,
                                         tmp_path: Path) -> None:
    """The previous frame stands in (timing kept), the run reports the failure; with fail_fast
    the video is abandoned and nothing is left behind."""
    out = tmp_path / "out"
    out.mkdir()
    summary, _ = run_render(render_request(render_models, render_cache, media.source,
                                           damaged_plates / "p.#.png", out / "v.mov"))
    assert [n for n, _ in summary.failed] == [3] and summary.swapped == 5
    assert [read_marker(f) for f in decode_video(out / "v.mov")] == [1, 2, 2, 4, 5, 6]
    fast, _ = run_render(render_request(render_models, render_cache, media.source,
                                        damaged_plates / "p.#.png", out / "w.mov",
                                        fail_fast=True))
    assert [n for n, _ in fast.failed] == [3]
    assert sorted(p.name for p in out.iterdir()) == ["v.mov"]


# --- 7. bad inputs: one clear line, the right exit code, nothing written ------------------------

@pytest.fixture()
def bad(media: Media, render_models: Path, cli_cache: Path, tmp_path: Path,
        capsys: pytest.CaptureFixture[str]):
    """run(input, output, *extra) -> (exit code, the one error line); checks no traceback."""
    def run(input: str | Path, output: str | Path, *extra: str,
            code: int = 2) -> str:
        rc = cli.main(cli_args(render_models, media.source, input, output, *extra))
        captured = capsys.readouterr()
        assert rc == code, captured.err
        assert captured.out == ""
        return one_line_error(captured.err)
    return run


@pytest.fixture()
def out_dir(tmp_path: Path) -> Path:
    folder = tmp_path / "out"
    folder.mkdir()
    return folder


def test_missing_input_file(bad, tmp_path: Path, out_dir: Path) -> None:
    line = bad(tmp_path / "nope.mov", out_dir / "f.####.png")
    assert "nope.mov does not exist" in line
    assert list(out_dir.iterdir()) == []


def test_truncated_mp4_is_refused(bad, media: Media, tmp_path: Path, out_dir: Path) -> None:
    data = media.clip.read_bytes()
    broken = tmp_path / "cut.mp4"
    broken.write_bytes(data[:len(data) // 2])  # the index (moov) is at the end: gone
    line = bad(broken, out_dir / "f.####.png")
    assert "cut.mp4" in line and "read" in line
    assert list(out_dir.iterdir()) == []


@pytest.mark.parametrize("codec, keep", [("mjpeg", 0.5), ("h264", 0.9)],
                         ids=["mjpeg-half", "h264-90pc"])
def test_truncated_mkv_is_refused_or_its_missing_frames_fail(
        media: Media, render_models: Path, cli_cache: Path, tmp_path: Path,
        capsys: pytest.CaptureFixture[str], codec: str, keep: float) -> None:
    clip = make_face_clip(tmp_path / "whole.mkv", media.face, frames=12, codec=codec,
                          audio=None)
    data = clip.read_bytes()
    broken = tmp_path / "cut.mkv"
    broken.write_bytes(data[:int(len(data) * keep)])
    out = tmp_path / "out"
    out.mkdir()
    rc = cli.main(cli_args(render_models, media.source, broken, out / "f.####.png"))
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err
    assert rc in (2, 5), f"exit {rc}: {captured.out.strip()}"
    if rc == 2:  # refused: say why (not "variable frame rate", which invites --conform-vfr)
        assert "truncat" in captured.err or "damaged" in captured.err, captured.err
        assert list(out.iterdir()) == []


def test_sequence_with_a_gap_inside_the_range(bad, media: Media, render_models: Path,
                                              render_cache: Path, tmp_path: Path,
                                              out_dir: Path) -> None:
    plates = tmp_path / "plates"
    plates.mkdir()
    for n in (1, 2, 3, 5, 6):
        write_plate_oiio(plates / f"p.{n:04d}.png", face_frame(n, None)[..., ::-1].copy(),
                         "uint8")
    line = bad(plates / "p.####.png", out_dir / "o.####.png")
    assert "gap" in line and "frame 4 missing" in line
    line = bad(plates / "p.####.png", out_dir / "o.####.png", "--frames", "2-5")
    assert "frame 4 missing" in line
    assert list(out_dir.iterdir()) == []
    # the ranges on either side of the gap render
    summary, _ = run_render(render_request(render_models, render_cache, media.source,
                                           plates / "p.####.png", out_dir / "o.####.png",
                                           frames=(5, 9)))
    assert (summary.frames, summary.no_face) == (2, 2)
    assert sorted(p.name for p in out_dir.iterdir()) == ["o.0005.png", "o.0006.png"]


def test_patterns_that_match_nothing_or_are_not_patterns(bad, tmp_path: Path,
                                                         out_dir: Path) -> None:
    assert "no frames match" in bad(tmp_path / "none.####.exr", out_dir / "o.####.exr")
    assert "2 frame tokens" in bad(tmp_path / "a.##.%04d.exr", out_dir / "o.####.exr")
    notes = tmp_path / "notes.txt"
    notes.write_text("not a shot")
    assert "neither a video" in bad(notes, out_dir / "o.####.exr")
    assert list(out_dir.iterdir()) == []


def test_image_output_without_a_frame_token(bad, media: Media, out_dir: Path) -> None:
    line = bad(media.clip, out_dir / "frame.png")
    assert "frame token" in line
    assert list(out_dir.iterdir()) == []


def test_chunk_with_a_video_output(bad, media: Media, out_dir: Path) -> None:
    line = bad(media.clip, out_dir / "out.mov", "--chunk", "1/2")
    assert "--chunk" in line and "sequence" in line
    assert list(out_dir.iterdir()) == []


def test_output_that_is_the_input(bad, media: Media, tmp_path: Path) -> None:
    copy = tmp_path / "shot.mp4"
    copy.write_bytes(media.clip.read_bytes())
    line = bad(copy, copy, "--overwrite")
    assert "is the input" in line
    assert copy.read_bytes() == media.clip.read_bytes()
    plates = tmp_path / "plates"
    plates.mkdir()
    for n in (1, 2):
        write_plate_oiio(plates / f"p.{n}.png", face_frame(n, None)[..., ::-1].copy(), "uint8")
    before = {p.name: p.read_bytes() for p in plates.iterdir()}
    line = bad(plates / "p.#.png", plates / "p.%d.png", "--overwrite")
    assert "overwrite the input" in line
    assert {p.name: p.read_bytes() for p in plates.iterdir()} == before


def test_existing_video_output_needs_overwrite(bad, media: Media, render_models: Path,
                                               out_dir: Path) -> None:
    existing = out_dir / "out.mov"
    existing.write_bytes(b"keep me")
    line = bad(media.clip, existing)
    assert "already exists" in line and "--overwrite" in line
    assert existing.read_bytes() == b"keep me"
    assert [p.name for p in out_dir.iterdir()] == ["out.mov"]
    assert cli.main(cli_args(render_models, media.source, media.clip, existing,
                             "--overwrite")) == 0
    assert [read_marker(f) for f in decode_video(existing)] == list(range(CLIP_FRAMES))
    assert [p.name for p in out_dir.iterdir()] == ["out.mov"]


def test_variable_frame_rate_needs_conform(bad, tmp_path: Path, out_dir: Path) -> None:
    vfr = make_vfr_clip(tmp_path / "vfr.mkv")
    line = bad(vfr, out_dir / "o.####.png")
    assert "variable frame rate" in line and "--conform-vfr" in line
    assert list(out_dir.iterdir()) == []


def test_frame_range_outside_the_input(bad, media: Media, out_dir: Path) -> None:
    line = bad(media.clip, out_dir / "o.####.png", "--frames", "100-120")
    assert f"frames 1-{CLIP_FRAMES}" in line
    assert list(out_dir.iterdir()) == []


def test_source_without_a_face_exits_3(media: Media, render_models: Path, cli_cache: Path,
                                       tmp_path: Path, out_dir: Path,
                                       capsys: pytest.CaptureFixture[str]) -> None:
    blank = tmp_path / "blank.png"
    write_plate_oiio(blank, np.full((200, 200, 3), 128, np.uint8), "uint8")
    rc = cli.main(cli_args(render_models, blank, media.clip, out_dir / "o.####.png"))
    line = one_line_error(capsys.readouterr().err)
    assert rc == 3 and "blank.png" in line
    assert list(out_dir.iterdir()) == []


def test_unknown_colorspace_and_missing_output_folder(bad, media: Media, tmp_path: Path,
                                                      out_dir: Path) -> None:
    line = bad(media.clip, out_dir / "o.####.png", "--colorspace", "Linear Rec709")
    assert "no colour space 'Linear Rec709'" in line and "Linear Rec.709 (sRGB)" in line
    line = bad(media.clip, tmp_path / "nowhere" / "o.####.png")
    assert "does not exist" in line and "nowhere" in line
    assert list(out_dir.iterdir()) == []
    assert not (tmp_path / "nowhere").exists()


def test_progress_bar_writes_to_the_current_stderr(monkeypatch: pytest.MonkeyPatch) -> None:
    import io

    stream = io.StringIO()
    monkeypatch.setattr(sys, "stderr", stream)
    progress = cli_render.Progress("bar")
    progress(FrameReport(1001, "swapped", 1))
    assert "frame 1001" in stream.getvalue()


def test_cli_subprocess_exit_code_and_stderr(media: Media, render_models: Path,
                                             tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    env = {**os.environ, "PYTHONPATH": str(Path(cli.__file__).resolve().parents[2])}
    done = subprocess.run([sys.executable, "-m", "facefuse",
                           *cli_args(render_models, media.source, tmp_path / "missing.mp4",
                                     out / "f.####.png")],
                          check=False, capture_output=True, text=True, timeout=120,
                          env=env)
    assert done.returncode == 2
    assert done.stdout == ""
    assert done.stderr.strip().splitlines() == [
        f"facefuse: error: {tmp_path / 'missing.mp4'} does not exist"]
    assert list(out.iterdir()) == []
