"""io.video's encoder settings: VideoSink's lossless codecs (rawvideo in .mov, ffv1 in .mkv)
decode back bit-exactly at 8 and 16 bits and with alpha, and x264/x265 take --crf and --preset
(and nothing else does). Small generated frames, written and read back directly with PyAV (the
plates' compression choices: tests/unit/io/plates/test_formats.py)."""

from __future__ import annotations

import dataclasses
from fractions import Fraction
from pathlib import Path

import av
import numpy as np
import pytest

from facefuse.errors import InputError
from facefuse.io import video
from facefuse.io.video.common import PRESETS, check_encoder_options

WIDTH, HEIGHT = 64, 48


def _info(path: Path) -> video.VideoInfo:
    return video.VideoInfo(path=path, frame_count=3, rate=Fraction(24), width=WIDTH,
                           height=HEIGHT, codec="", pixel_format="", bit_depth=8,
                           has_alpha=False, timecode=None, audio_streams=0, duration_s=0.125,
                           variable_frame_rate=False)


def _frames(dtype: type, channels: int, count: int = 3) -> list[np.ndarray]:
    rng = np.random.default_rng(7)
    high = 65536 if dtype is np.uint16 else 256
    return [rng.integers(0, high, (HEIGHT, WIDTH, channels)).astype(dtype) for _ in range(count)]


def _write(path: Path, codec: str, frames: list[np.ndarray], **options: object) -> None:
    with video.VideoSink(path, _info(path), codec=codec, **options) as sink:  # type: ignore[arg-type]
        for frame in frames:
            sink.write(frame)


def _decode(path: Path, packed: str) -> tuple[list[np.ndarray], str, str]:
    with av.open(str(path)) as container:
        stream = container.streams.video[0]
        frames = [f.to_ndarray(format=packed) for f in container.decode(stream)]
        return frames, stream.codec_context.name, stream.codec_context.pix_fmt


@pytest.mark.parametrize(("codec", "suffix", "dtype", "channels", "packed", "stored"), [
    ("rawvideo", ".mov", np.uint8, 3, "bgr24", "bgr24"),
    ("rawvideo", ".mov", np.uint8, 4, "bgra", "bgra"),
    ("rawvideo", ".mov", np.uint16, 3, "bgr48le", "rgb48be"),
    ("ffv1", ".mkv", np.uint8, 3, "bgr24", "bgr0"),
    ("ffv1", ".mkv", np.uint8, 4, "bgra", "bgra"),
    ("ffv1", ".mkv", np.uint16, 3, "bgr48le", "gbrp16le"),
    ("ffv1", ".mkv", np.uint16, 4, "bgra64le", "gbrap16le"),
])
def test_lossless_codecs_decode_back_bit_exact(tmp_path: Path, codec: str, suffix: str,
                                               dtype: type, channels: int, packed: str,
                                               stored: str) -> None:
    path = tmp_path / f"out{suffix}"
    frames = _frames(dtype, channels)
    _write(path, codec, frames)
    decoded, name, pix_fmt = _decode(path, packed)
    assert (name, pix_fmt) == (codec, stored)
    assert len(decoded) == len(frames)
    for got, want in zip(decoded, frames):
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize(("codec", "name", "size"), [
    ("rawvideo", "odd.mov", (7, 5)), ("rawvideo", "odd.mov", (1, 3)),
    # ffv1 cuts frames into 16 slices, which frames this small cannot take
    ("ffv1", "tiny.mkv", (1, 1)), ("ffv1", "tiny.mkv", (16, 2)), ("ffv1", "tiny.mkv", (7, 5))])
def test_lossless_writers_store_odd_and_tiny_frames_exactly(
        tmp_path: Path, codec: str, name: str, size: tuple[int, int]) -> None:
    path = tmp_path / name
    width, height = size
    info = dataclasses.replace(_info(path), width=width, height=height)
    frame = np.arange(width * height * 3, dtype=np.uint8).reshape(height, width, 3)
    with video.VideoSink(path, info, codec=codec) as sink:
        sink.write(frame)
    np.testing.assert_array_equal(_decode(path, "bgr24")[0][0], frame)


def test_a_frame_converted_whole_lets_its_decoded_picture_go(tmp_path: Path) -> None:
    """rawvideo takes no decoded planes: the sink converts the frame and drops its picture."""
    path = tmp_path / "out.mov"
    picture = av.VideoFrame.from_ndarray(_frames(np.uint8, 3, 1)[0], format="bgr24")
    picture = picture.reformat(format="yuv420p")
    frame = video.DecodedFrame.of_picture(picture, "bgr24")
    want = video.DecodedFrame.of_picture(picture, "bgr24").to_ndarray()
    with video.VideoSink(path, _info(path), codec="rawvideo") as sink:
        sink.write(frame)
        assert frame.planes() is None and frame.nbytes == want.nbytes
    np.testing.assert_array_equal(_decode(path, "bgr24")[0][0], want)


def test_rawvideo_keeps_alpha_of_a_deep_frame_in_8_bits(tmp_path: Path) -> None:
    """.mov has no 16-bit RGBA raw tag: alpha wins, in bgra (documented in video_write)."""
    path = tmp_path / "deep_alpha.mov"
    frames = _frames(np.uint16, 4, count=1)
    _write(path, "rawvideo", frames)
    decoded, _, pix_fmt = _decode(path, "bgra")
    assert pix_fmt == "bgra"
    np.testing.assert_array_equal(decoded[0], np.rint(frames[0] / 257.0).astype(np.uint8))


@pytest.mark.parametrize(("codec", "suffix", "words"), [
    ("rawvideo", ".mkv", "Matroska has no native raw RGB"),
    ("rawvideo", ".mp4", "use .mov"),
    ("ffv1", ".mov", "does not take FFV1"),
    ("ffv1", ".mp4", "use .mkv"),
])
def test_lossless_codecs_refuse_containers_that_cannot_hold_them(tmp_path: Path, codec: str,
                                                                 suffix: str, words: str) -> None:
    path = tmp_path / f"out{suffix}"
    with pytest.raises(InputError, match=words) as caught:
        video.VideoSink(path, _info(path), codec=codec)
    assert "\n" not in str(caught.value)
    assert list(tmp_path.iterdir()) == []


def test_crf_and_preset_reach_x264(tmp_path: Path) -> None:
    """The CRF and preset given are the ones x264 used (its own record of its settings, written
    into the stream), and a higher CRF makes a smaller file."""
    frames = _frames(np.uint8, 3)
    sizes = {}
    for crf, preset in ((16, None), (40, "ultrafast")):
        path = tmp_path / f"crf{crf}.mkv"
        _write(path, "h264", frames, quality=crf, preset=preset)
        sizes[crf] = path.stat().st_size
        with open(path, "rb") as data:  # x264 writes its options into the stream as SEI text
            sei = data.read()
        assert f"crf={crf}.0".encode() in sei
        assert (b"subme=0" in sei) == (preset == "ultrafast")  # ultrafast: no subpel search
    assert sizes[40] < sizes[16]


@pytest.mark.parametrize(("codec", "crf", "preset", "words"), [
    ("prores_422", 18, None, "--crf applies to h264 and h265 only"),
    ("ffv1", None, "fast", "--preset applies to h264 and h265 only"),
    ("mjpeg", None, "slow", "--preset applies"),
    ("h264", 52, None, "outside 0..51"),
    ("h265", -1, None, "outside 0..51"),
    ("h264", None, "quick", "not an x264/x265 preset"),
])
def test_bad_encoder_settings_are_one_sentence_input_errors(codec: str, crf: int | None,
                                                            preset: str | None,
                                                            words: str) -> None:
    with pytest.raises(InputError, match=words) as caught:
        check_encoder_options(codec, crf, preset)
    assert "\n" not in str(caught.value)


def test_every_preset_and_the_crf_bounds_are_accepted() -> None:
    for preset in PRESETS:
        check_encoder_options("h264", 0, preset)
        check_encoder_options("h265", 51, preset)
    check_encoder_options("prores_4444", None, None)


# --- plate compression -------------------------------------------------------------------------
