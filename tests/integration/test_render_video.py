"""`facefuse render` into video files: rate, duration, timecode and audio kept (and shifted for
a sub-range), ProRes 4444 alpha, image sequences to video at a given rate, and variable
frame rate conformed on request.

The shot (`media`: a 23.976 fps h264 clip with a face in all but its first frames) and
`cli_cache` come from tests/integration/conftest.py, the models and the session's analysis cache
from tests/conftest.py; frames carry their index as a burned-in marker and a real face
(tests/render_media.py), and pixels are compared with the input decoded independently.
"""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path

import av
import numpy as np
import pytest

from facefuse.cli import main as cli  # imported here, while sys.stderr is pytest's own stream
from facefuse.shot.contract.request import OutputSpec
from tests import media_factory
from tests.integration.render_helpers import (
    CLIP_FRAMES,
    NO_FACE,
    NTSC_FILM,
    Media,
    assert_changes_confined,
    read_bgr,
    video_facts,
)
from tests.media_factory import make_vfr_clip, read_marker
from tests.render_media import (
    SIZE,
    cli_args,
    decode_video,
    face_frame,
    make_face_clip,
    read_plate_oiio,
    render_request,
    run_render,
    write_plate_oiio,
)


def test_video_to_mov_h264_keeps_rate_duration_timecode_audio(media: Media, render_models: Path,
                                                              render_cache: Path,
                                                              tmp_path: Path) -> None:
    out = tmp_path / "swapped.mov"
    request = render_request(render_models, render_cache, media.source, media.clip,
                             OutputSpec(str(out), matte=str(tmp_path / "matte.####.png")),
                             swapper="colour")
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
                                           plates / "p.####.png",
                                           OutputSpec(str(out), rate=Fraction(30000, 1001))))
    assert (summary.frames, summary.swapped) == (6, 6)
    facts = video_facts(out)
    assert facts["packets"] == 6 and facts["rate"] == Fraction(30000, 1001)
    assert facts["end_s"] - facts["start_s"] == pytest.approx(6 * 1001 / 30000, abs=1e-3)
    assert facts["timecode"] is None and facts["audio"] == 0
    assert [read_marker(f) for f in decode_video(out)] == list(range(6))


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
