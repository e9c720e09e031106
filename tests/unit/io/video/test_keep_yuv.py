"""io.video.keep_yuv: which sources a --keep-yuv ffv1 / rawvideo output keeps and why the others
are refused (one sentence each), and VideoSink with keep_yuv=True writing a source's decoded
planes back bit for bit, with its layout, bit depth, colour tags and display rotation. Small
random-plane FFV1 sources; the renders with faces pasted in are
tests/integration/test_render_keep_yuv.py's."""

from __future__ import annotations

import dataclasses
from fractions import Fraction
from pathlib import Path

import av
import numpy as np
import pytest

from facefuse.errors import InputError
from facefuse.io import video
from facefuse.io.video.encoders import check_container
from facefuse.io.video.keep_yuv import KeptYuv, check_kept_container, kept_yuv
from facefuse.io.video.yuv import PLANAR, PLANAR_10BIT, picture_planes

WIDTH, HEIGHT, FRAMES = 64, 48, 3
BT709, LIMITED, FULL = 1, 1, 2


def _info(fmt: str = "yuv420p", **changes: object) -> video.VideoInfo:
    info = video.VideoInfo(path=Path("shot.mp4"), frame_count=FRAMES, rate=Fraction(24),
                           width=WIDTH, height=HEIGHT, codec="h264", pixel_format=fmt,
                           bit_depth=10 if fmt in PLANAR_10BIT else 8, has_alpha=False,
                           timecode=None, audio_streams=0, duration_s=0.125,
                           variable_frame_rate=False, colour_tags=(BT709, LIMITED, 1, 1))
    return dataclasses.replace(info, **changes)  # type: ignore[arg-type]


@pytest.mark.parametrize(("codec", "fmt", "tags", "kept"), [
    ("ffv1", "yuv420p", (BT709, LIMITED, 1, 1), KeptYuv("yuv420p", BT709, LIMITED, 1, 1)),
    ("ffv1", "yuvj420p", (BT709, 0, 1, 1), KeptYuv("yuv420p", BT709, FULL, 1, 1)),
    ("ffv1", "yuv444p10le", (9, LIMITED, 9, 16), KeptYuv("yuv444p10le", 9, LIMITED, 9, 16)),
    ("rawvideo", "yuv422p", (2, 0, 2, 2), KeptYuv("yuv422p", 2, 0, 2, 2)),  # untagged
])
def test_a_planar_source_keeps_its_layout_and_tags(codec: str, fmt: str,
                                                   tags: tuple[int, int, int, int],
                                                   kept: KeptYuv) -> None:
    assert kept_yuv(_info(fmt, colour_tags=tags), codec, "shot.mp4") == kept


@pytest.mark.parametrize(("info", "codec", "words"), [
    (None, "ffv1", "shot.mp4 is an image sequence"),
    (_info("bgr0", bit_depth=8), "ffv1", "shot.mp4 is bgr0 (RGB)"),
    (_info("yuva420p", has_alpha=True), "ffv1", "is yuva420p (with alpha)"),
    (_info("yuv420p12le", bit_depth=12), "ffv1", "is yuv420p12le (12-bit)"),
    (_info("yuv444p"), "rawvideo", "holds 8-bit 4:2:0 and 4:2:2 YUV only"),
    (_info("yuv420p10le"), "rawvideo", "choose --codec ffv1"),
    (_info("yuv420p10le", colour_tags=(BT709, FULL, 1, 1)), "ffv1",
     "10-bit full-range pictures are converted by swscale"),
    (_info("yuvj420p", codec="mjpeg"), "ffv1", "chroma sits midway"),
    (_info("yuv420p", width=63), "ffv1", "of an odd size"),
    (_info("yuv420p", colour_tags=(8, LIMITED, 1, 1)), "ffv1", "another matrix"),  # YCgCo
])
def test_a_source_that_cannot_be_kept_is_refused_in_one_sentence(
        info: video.VideoInfo | None, codec: str, words: str) -> None:
    with pytest.raises(InputError) as caught:
        kept_yuv(info, codec, "shot.mp4")
    message = str(caught.value)
    assert words in message and message.count(". ") == 0 and "--keep-yuv" in message


def test_a_colour_transformed_render_is_refused() -> None:
    with pytest.raises(InputError, match="colour-transformed.*--colorspace none"):
        kept_yuv(_info(), "ffv1", "shot.mp4", colour_transform=True)


@pytest.mark.parametrize(("name", "codec", "words"), [
    ("out.mkv", "h264", "applies to the lossless codecs ffv1 and rawvideo"),
    ("out.mkv", "prores_422", "choose --codec ffv1"),
    ("out.mov", "ffv1", "does not take FFV1"),
    ("out.mov", "rawvideo", "no tag for planar YUV raw video"),
    ("out.mp4", "ffv1", "name the output .mkv"),
])
def test_a_codec_or_container_that_cannot_keep_yuv_is_refused(name: str, codec: str,
                                                              words: str) -> None:
    with pytest.raises(InputError, match=words):
        check_kept_container(Path(name), codec)
    with pytest.raises(InputError, match=words):
        check_container(Path(name), codec, keep_yuv=True)


def test_rawvideo_in_mkv_is_written_only_with_keep_yuv() -> None:
    check_container(Path("out.mkv"), "rawvideo", keep_yuv=True)
    with pytest.raises(InputError, match="rawvideo cannot be stored in .mkv"):
        check_container(Path("out.mkv"), "rawvideo")


def _source(path: Path, fmt: str, color_range: int = LIMITED, rotation: int = 0) -> Path:
    """An FFV1 .mkv of random planes in `fmt`, tagged BT.709 (`color_range`), stored as it is
    under a display rotation of `rotation` degrees."""
    rng = np.random.default_rng(3)
    high = 1024 if fmt in PLANAR_10BIT else 256
    stored = (HEIGHT, WIDTH) if rotation % 180 else (WIDTH, HEIGHT)
    with av.open(str(path), "w") as container:
        stream = container.add_stream("ffv1", rate=Fraction(24))
        stream.width, stream.height, stream.pix_fmt = *stored, fmt
        cc = stream.codec_context
        cc.colorspace, cc.color_range, cc.color_primaries, cc.color_trc = (
            BT709, color_range, BT709, BT709)
        if rotation:
            stream.set_display_rotation(rotation)
        for i in range(FRAMES):
            picture = av.VideoFrame(*stored, fmt)
            for plane in picture_planes(picture):
                plane[...] = rng.integers(0, high, plane.shape)
            picture.pts = i
            container.mux(stream.encode(picture))
        container.mux(stream.encode(None))
    return path


def _planes(path: Path) -> list[list[np.ndarray]]:
    with av.open(str(path)) as container:
        return [[p.copy() for p in picture_planes(f)] for f in container.decode(video=0)]


@pytest.mark.parametrize(("codec", "fmt", "color_range", "rotation"), [
    ("ffv1", "yuv420p", LIMITED, 0), ("ffv1", "yuv422p", LIMITED, 0),
    ("ffv1", "yuv444p", FULL, 0), ("ffv1", "yuv420p10le", LIMITED, 0),
    ("ffv1", "yuv422p10le", LIMITED, 90), ("ffv1", "yuv444p10le", LIMITED, 0),
    ("rawvideo", "yuv420p", LIMITED, 270), ("rawvideo", "yuv422p", FULL, 0),
])
def test_the_sink_writes_the_decoded_planes_back_bit_for_bit(
        tmp_path: Path, codec: str, fmt: str, color_range: int, rotation: int) -> None:
    """Frames without pastes: the file holds the source's planes, layout, tags and rotation."""
    source = _source(tmp_path / "in.mkv", fmt, color_range, rotation)
    out = tmp_path / "out.mkv"
    with video.VideoSource(source) as reader:
        info = reader.info
        with video.VideoSink(out, info, codec=codec, keep_yuv=True) as sink:
            for _, frame in reader.read(range(1, FRAMES + 1)):
                assert isinstance(frame, video.DecodedFrame)
                sink.write(frame)
            assert sink.passes_through is True
    assert not list(tmp_path.glob(".*"))  # the temporary was renamed
    before, after = _planes(source), _planes(out)
    assert len(after) == FRAMES
    for planes, back in zip(before, after, strict=True):
        for plane, got in zip(planes, back, strict=True):
            np.testing.assert_array_equal(got, plane)
    with video.VideoSource(out) as written:
        assert written.info.pixel_format == fmt and fmt in PLANAR
        assert written.info.colour_tags == (BT709, color_range, BT709, BT709)
        assert written.info.rotation_deg == rotation
        assert (written.info.width, written.info.height) == (info.width, info.height)


def test_a_frame_that_cannot_pass_through_first_is_refused_and_nothing_is_left(
        tmp_path: Path) -> None:
    source = _source(tmp_path / "in.mkv", "yuv420p")
    out = tmp_path / "out.mkv"
    with video.VideoSource(source) as reader:
        sink = video.VideoSink(out, reader.info, codec="ffv1", keep_yuv=True)
        frame = next(iter(reader.read([1])))[1]
        assert isinstance(frame, video.DecodedFrame)
        with pytest.raises(InputError, match="--keep-yuv cannot keep in.mkv's pictures"):
            sink.write(frame.to_ndarray())  # an engine frame comes without its picture
    assert list(tmp_path.iterdir()) == [source]
