"""`facefuse render` with encoder settings: the lossless video codecs (rawvideo in .mov, ffv1 in
.mkv) keep every pixel outside the face exactly when the input is lossless (a PNG sequence, 8 and
16 bits, with alpha), `--compression` reaches EXR and TIFF sequence outputs, and `--crf`,
`--preset` and `--compression` given where they do not apply are one-sentence usage errors.

The identity contract swapper changes only what lies under the matte (tests/render_media.py);
the models, the analysis cache and the shared shot come from the conftest fixtures."""

from __future__ import annotations

from pathlib import Path

import av
import numpy as np
import pytest

from facefuse.cli import main as cli  # imported here, while sys.stderr is pytest's own stream
from facefuse.errors import ExitCode, InputError
from facefuse.shot.contract.request import FrameSpec, OutputSpec
from tests.integration.render_helpers import Media, one_line_error, read_bgr
from tests.render_media import (
    cli_args,
    face_frame,
    read_plate_oiio,
    render_request,
    run_render,
    write_plate_oiio,
)

FRAMES = range(1, 5)


def _png_plates(folder: Path, media: Media, deep: bool = False,
                alpha: bool = False) -> dict[int, np.ndarray]:
    """A lossless PNG sequence p.1.png .. p.4.png of the face frames; returns each file's
    pixels as stored, BGR(A) (OIIO stores the colour of a partly transparent frame divided by
    its alpha, as PNG is straight)."""
    folder.mkdir()
    inputs = {}
    for n in FRAMES:
        frame = face_frame(n, media.face, alpha=alpha)
        if alpha:
            frame[..., 3] = np.uint8(200)  # a partly transparent plate: alpha must survive
        if deep:
            frame = frame.astype(np.uint16) * 257 + np.uint16(n)  # use the low bits too
        order = [2, 1, 0, 3] if alpha else [2, 1, 0]
        write_plate_oiio(folder / f"p.{n}.png", np.ascontiguousarray(frame[..., order]),
                         "uint16" if deep else "uint8")
        inputs[n] = read_bgr(folder / f"p.{n}.png")
    return inputs


def _decoded(path: Path, packed: str) -> tuple[list[np.ndarray], str]:
    with av.open(str(path)) as container:
        stream = container.streams.video[0]
        return ([f.to_ndarray(format=packed) for f in container.decode(stream)],
                stream.codec_context.name)


@pytest.mark.parametrize(("codec", "name", "deep", "alpha", "packed"), [
    ("rawvideo", "out.mov", False, False, "bgr24"),
    ("rawvideo", "out.mov", True, False, "bgr48le"),
    ("ffv1", "out.mkv", False, False, "bgr24"),
    ("ffv1", "out.mkv", True, True, "bgra64le"),
])
def test_lossless_video_keeps_the_pixels_outside_the_face_exactly(
        media: Media, render_models: Path, render_cache: Path, tmp_path: Path, codec: str,
        name: str, deep: bool, alpha: bool, packed: str) -> None:
    inputs = _png_plates(tmp_path / "plates", media, deep, alpha)
    out = tmp_path / name
    request = render_request(render_models, render_cache, media.source,
                             tmp_path / "plates" / "p.#.png",
                             OutputSpec(str(out), codec=codec, matte=str(tmp_path / "m.#.exr")))
    summary, _ = run_render(request)
    assert (summary.frames, summary.swapped, summary.failed) == (len(FRAMES), len(FRAMES), ())
    frames, written = _decoded(out, packed)
    assert written == codec and len(frames) == len(FRAMES)
    for n, got in zip(FRAMES, frames):
        matte = read_bgr(tmp_path / f"m.{n}.exr")[..., 0]
        assert matte.max() > 0.99  # the face was pasted: the check below is outside it
        np.testing.assert_array_equal(got[matte == 0], inputs[n][matte == 0])


@pytest.mark.parametrize(("name", "compression"), [
    ("o.#.exr", "piz"), ("o.#.exr", "dwaa"), ("o.#.exr", "none"),
    ("o.#.tif", "lzw"), ("o.#.tif", "none"),
])
def test_compression_reaches_the_sequence_output(media: Media, render_models: Path,
                                                 render_cache: Path, tmp_path: Path, name: str,
                                                 compression: str) -> None:
    _png_plates(tmp_path / "plates", media)
    out = tmp_path / "out"
    request = render_request(render_models, render_cache, media.source,
                             tmp_path / "plates" / "p.#.png",
                             OutputSpec(str(out / name), compression=compression,
                                        matte=str(out / "m.#.exr")),
                             frames=FrameSpec(range=(1, 2)))
    summary, _ = run_render(request)
    assert (summary.swapped, summary.failed) == (2, ())
    for n in (1, 2):
        written = out / name.replace("#", str(n))
        assert read_plate_oiio(written)[1].getattribute("compression") == compression
        matte = read_plate_oiio(out / f"m.{n}.exr")[1]
        assert matte.getattribute("compression") == "zip"  # the matte keeps the default


def test_default_compression_of_a_converted_sequence_stays_zip(
        media: Media, render_models: Path, render_cache: Path, tmp_path: Path) -> None:
    _png_plates(tmp_path / "plates", media)
    out = tmp_path / "out"
    request = render_request(render_models, render_cache, media.source,
                             tmp_path / "plates" / "p.#.png", out / "o.#.exr",
                             frames=FrameSpec(range=(1, 1)))
    assert run_render(request)[0].failed == ()
    assert read_plate_oiio(out / "o.1.exr")[1].getattribute("compression") == "zip"


def test_crf_and_preset_reach_an_h264_render(media: Media, render_models: Path,
                                             render_cache: Path, tmp_path: Path) -> None:
    _png_plates(tmp_path / "plates", media)
    out = tmp_path / "out.mp4"
    request = render_request(render_models, render_cache, media.source,
                             tmp_path / "plates" / "p.#.png",
                             OutputSpec(str(out), crf=30, preset="ultrafast"))
    assert run_render(request)[0].failed == ()
    sei = out.read_bytes()  # x264 records its settings in the stream
    assert b"crf=30.0" in sei and b"subme=0" in sei


@pytest.mark.parametrize(("output", "extra", "words"), [
    ("out.mov", ("--codec", "prores_422", "--crf", "10"), "--crf applies to h264 and h265"),
    ("out.mkv", ("--codec", "ffv1", "--preset", "fast"), "--preset applies to h264 and h265"),
    ("out.mp4", ("--crf", "60"), "outside 0..51"),
    ("out.mp4", ("--preset", "fastest"), "not an x264/x265 preset"),
    ("out.mkv", ("--codec", "rawvideo"), "Matroska has no native raw RGB"),
    ("out.mov", ("--codec", "ffv1"), "does not take FFV1"),
    ("out.mp4", ("--compression", "zip"), "--compression applies to EXR and TIFF sequence"),
    ("o.#.png", ("--compression", "zip"), "--compression applies to EXR and TIFF sequences"),
    ("o.#.dpx", ("--compression", "none"), "--compression applies to EXR and TIFF sequences"),
    ("o.#.exr", ("--compression", "lzw"), "not one openexr takes"),
    ("o.#.tif", ("--compression", "piz"), "not one tiff takes"),
    ("o.#.exr", ("--crf", "18"), "--crf applies to h264 and h265 video outputs only"),
])
def test_settings_that_do_not_apply_are_one_sentence_usage_errors(
        media: Media, render_models: Path, tmp_path: Path, cli_cache: Path,
        capsys: pytest.CaptureFixture[str], output: str, extra: tuple[str, ...],
        words: str) -> None:
    out = tmp_path / "out"
    rc = cli.main(cli_args(render_models, media.source, media.clip, out / output, *extra))
    assert rc == ExitCode.USAGE == InputError.exit_code
    assert words in one_line_error(capsys.readouterr().err)
    assert not out.exists()  # refused up front: nothing written, no folder made
