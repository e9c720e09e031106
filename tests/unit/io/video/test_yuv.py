"""io.video.yuv and yuv_write: the matrix each tag names, rounded as the float64 formula rounds;
the reader's chroma upsampling next to swscale's (its own checks: test_yuv_chroma.py); the
writer's chroma subsampling at the MPEG-2 siting."""

from __future__ import annotations

from pathlib import Path

import av
import numpy as np
import pytest

from facefuse.io.video import yuv, yuv_write
from facefuse.io.video.read import VideoInfo, VideoSource
from facefuse.io.video.write import VideoSink
from tests.render_media import arrays

TAGS = (1, 2, 4, 5, 6, 7, 9)  # BT.709, unspecified, FCC, BT.470BG, SMPTE 170M, 240M, BT.2020
NEAR_TIE = 1e-4  # float32 may round the other way only this close to a half level


def _planes(seed: int, size: tuple[int, int] = (96, 128)) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [rng.integers(0, 256, size, np.uint8) for _ in range(3)]


def _exact_bgr(planes: list[np.ndarray], matrix: yuv.YuvMatrix) -> np.ndarray:
    """The formula in float64, unrounded, written out term by term (not via YuvMatrix)."""
    kr, kb = matrix.kr, matrix.kb
    kg = 1 - kr - kb
    y, cb, cr = (p.astype(np.float64) for p in planes)
    if matrix.full_range:
        luma, u, v = y, cb - 128, cr - 128
    else:
        luma, u, v = (y - 16) * 255 / 219, (cb - 128) * 255 / 224, (cr - 128) * 255 / 224
    bgr = np.stack([luma + 2 * (1 - kb) * u,
                    luma - (2 * kb * (1 - kb) * u + 2 * kr * (1 - kr) * v) / kg,
                    luma + 2 * (1 - kr) * v], axis=-1)
    return bgr


def _picture(planes: list[np.ndarray], fmt: str, colorspace: int,
             color_range: int) -> av.VideoFrame:
    height, width = planes[0].shape
    picture = av.VideoFrame(width, height, fmt)
    for plane, values in zip(picture.planes, planes, strict=True):
        plane.update(np.ascontiguousarray(values))
    picture.colorspace, picture.color_range = colorspace, color_range
    return picture


def _check_rounding(values: np.ndarray, exact: np.ndarray, top: int = 255,
                    tie: float = NEAR_TIE) -> None:
    """values == exact rounded to the nearest level and clipped, except a level off where the
    exact value lies within `tie` of a half level (a tie: the formulas' decimal weights make
    exact ties common, e.g. 0.299 R + 0.587 G + 0.114 B = n + 1/2)."""
    rounded = np.clip(np.rint(exact), 0, top)
    diff = np.abs(values.astype(int) - rounded)
    assert diff.max() <= 1
    near_tie = np.abs(np.abs(exact - np.floor(exact)) - 0.5) < tie
    assert not np.any(diff[~near_tie]), f"{np.count_nonzero(diff[~near_tie])} values off"


@pytest.mark.parametrize("full", [False, True])
@pytest.mark.parametrize("tag", TAGS)
def test_the_reader_matrix_is_the_tagged_one_correctly_rounded(tag: int, full: bool) -> None:
    planes = _planes(tag)
    picture = _picture(planes, "yuv444p", tag, 2 if full else 1)
    matrix = yuv.matrix_of(picture)
    assert matrix is not None and matrix.full_range == full
    new = yuv.picture_to_bgr(picture)
    assert new is not None and new.shape == (96, 128, 3) and new.dtype == np.uint8
    _check_rounding(new, _exact_bgr(planes, matrix))
    # swscale's conversion of the same tags is the same matrix, its fixed point a level off in
    # places, so the tag is read as swscale reads it (on legal levels: swscale wraps
    # some illegal limited-range ones, e.g. 255 off)
    legal = [np.clip(p, 16, 235 if i == 0 else 240) for i, p in enumerate(planes)]
    legal_picture = _picture(legal, "yuv444p", tag, 2 if full else 1)
    diff = np.abs(yuv.picture_to_bgr(legal_picture).astype(int)
                  - legal_picture.to_ndarray(format="bgr24"))
    assert diff.max() <= 1 and np.count_nonzero(diff) < 0.05 * diff.size


def test_full_range_follows_the_yuvj_format_and_the_range_tag() -> None:
    assert yuv.matrix_for(2, 0, "yuvj420p") == yuv.YuvMatrix(0.299, 0.114, True)
    assert yuv.matrix_for(2, 2, "yuv420p") == yuv.YuvMatrix(0.299, 0.114, True)
    assert yuv.matrix_for(1, 0, "yuv420p") == yuv.YuvMatrix(0.2126, 0.0722, False)
    for tag in (0, 3, 8, 10, 14):  # RGB, reserved, YCgCo, BT.2020 CL, ICtCp: swscale's path
        assert yuv.matrix_for(tag, 1, "yuv420p") is None


@pytest.mark.parametrize("fmt", ["yuv420p", "yuv422p", "yuvj420p", "nv12"])
def test_centred_chroma_upsampling_matches_swscales_bilinear(fmt: str) -> None:
    """swscale upsamples (as PyAV calls it) bilinearly with chroma centred between luma
    columns: at that siting io.video.yuv's conversion is a level or two off it on noise (swscale's
    fixed point), while the MPEG-2 siting the reader uses for H.264 is tens of levels off there
    (a quarter chroma sample's shift; test_yuv_chroma.py checks each siting against
    its float64 formula)."""
    rng = np.random.default_rng(3)
    bgr = rng.integers(0, 256, (64, 96, 3), np.uint8)
    picture = av.VideoFrame.from_ndarray(bgr, format="bgr24").reformat(format=fmt)
    swscale = picture.reformat(format=yuv.FAST_FORMATS[fmt]).to_ndarray(format="bgr24")
    centred, cosited = yuv.picture_to_bgr(picture, True), yuv.picture_to_bgr(picture)
    assert centred is not None and cosited is not None
    diff = np.abs(centred.astype(int) - swscale)
    assert diff.max() <= 2 and diff.mean() < 0.5
    assert np.abs(cosited.astype(int) - swscale).max() > 20


def test_other_pictures_are_left_to_swscale() -> None:
    deep = av.VideoFrame(16, 16, "yuv420p10le")  # limited range: io.video.yuv's (test_yuv_deep)
    deep.color_range = 2
    assert yuv.picture_to_bgr(deep) is None  # 10-bit full range
    assert yuv.picture_to_bgr(av.VideoFrame(16, 16, "yuv444p12le")) is None
    assert yuv.picture_to_bgr(av.VideoFrame(16, 16, "rgb24")) is None
    assert yuv.picture_to_bgr(_picture(_planes(1, (16, 16)), "yuv444p", 8, 1)) is None
    bgra = np.zeros((16, 16, 4), np.uint8)
    assert yuv_write.bgr_to_picture(bgra, "yuv420p", 1, False) is None
    assert yuv_write.bgr_to_picture(bgra[..., :3].copy(), "yuv410p", 1, False) is None


@pytest.mark.parametrize(("tag", "full"), [(1, False), (6, True)])  # h264 and mjpeg's
def test_the_writer_matrix_is_correctly_rounded(tag: int, full: bool) -> None:
    rng = np.random.default_rng(4)
    bgr = rng.integers(0, 256, (96, 128, 3), np.uint8)
    matrix = yuv.matrix_for(tag, 2 if full else 1, "yuv444p")
    assert matrix is not None
    kr, kb = matrix.kr, matrix.kb
    b, g, r = (bgr[..., i].astype(np.float64) / 255 for i in range(3))
    luma = kr * r + (1 - kr - kb) * g + kb * b
    chroma = ((b - luma) / (2 * (1 - kb)), (r - luma) / (2 * (1 - kr)))
    y_scale, c_scale, y_zero = (255, 255, 0) if full else (219, 224, 16)
    reference = [y_zero + y_scale * luma, *(128 + c_scale * c for c in chroma)]
    for plane, expected in zip(yuv_write.bgr_to_yuv444(bgr, matrix), reference, strict=True):
        _check_rounding(plane, expected)


def test_ten_bit_targets_take_deep_frames_at_four_times_the_levels() -> None:
    """ProRes / DNxHR 444 / deep h265: a uint16 frame to 10-bit limited-range levels."""
    rng = np.random.default_rng(7)
    deep = rng.integers(0, 65536, (64, 96, 3), np.uint16)
    matrix = yuv.matrix_for(1, 1, "yuv444p10le")
    assert matrix is not None
    coefficients = matrix.from_bgr()
    exact = 4 * (deep.astype(np.float64) / 257 @ coefficients[:, :3].T + coefficients[:, 3])
    for k, plane in enumerate(yuv_write.bgr_to_yuv444(deep, matrix, bits=10)):
        assert plane.dtype == np.uint16
        _check_rounding(plane, exact[..., k], top=1023)
    picture = yuv_write.bgr_to_picture(deep, "yuv422p10le", 1, False)
    assert picture is not None and picture.format.name == "yuv422p10le"
    luma = np.frombuffer(picture.planes[0], "<u2").reshape(64, -1)[:, :96]
    np.testing.assert_array_equal(luma, yuv_write.bgr_to_yuv444(deep, matrix, bits=10)[0])
    # an 8-bit frame (an 8-bit clip written to ProRes) takes the same path, rounded to 10 bits
    eight = (deep // 257).astype(np.uint8)
    picture = yuv_write.bgr_to_picture(eight, "yuv422p10le", 1, False)
    assert picture is not None
    luma = np.frombuffer(picture.planes[0], "<u2").reshape(64, -1)[:, :96]
    exact = 4 * (eight.astype(np.float64) @ coefficients[:, :3].T + coefficients[:, 3])
    _check_rounding(luma, exact[..., 0], top=1023)
    assert yuv_write.bgr_to_picture(deep.astype(np.float32), "yuv422p10le", 1, False) is None


def _cosited(plane: np.ndarray, down: int) -> np.ndarray:
    """MPEG-2-sited 2:1 chroma by the formula, in Python integers: [1 2 1] across on the even
    columns (the first repeated to its left), [1 1] down for 4:2:0, rounded half up."""
    values = np.pad(plane.astype(np.int64), ((0, plane.shape[0] % down), (0, plane.shape[1] % 2)),
                    mode="edge")  # an odd last column (and 4:2:0 row) repeats itself
    left = np.concatenate([values[:, :1], values[:, :-1]], axis=1)
    across = left[:, 0::2] + 2 * values[:, 0::2] + values[:, 1::2]
    weight = 4
    if down == 2:
        across, weight = across[0::2] + across[1::2], 8
    return (across + weight // 2) // weight


@pytest.mark.parametrize("size", [(64, 96), (63, 95), (131, 97)], ids=["even", "odd", "bands"])
@pytest.mark.parametrize(("fmt", "down", "bits"), [("yuv420p", 2, 8), ("yuv422p", 1, 8),
                                                    ("yuv420p10le", 2, 10),
                                                    ("yuv422p10le", 1, 10)])
def test_the_writer_subsamples_chroma_at_the_mpeg2_siting_and_tags_the_picture(
        fmt: str, down: int, bits: int, size: tuple[int, int]) -> None:
    rng = np.random.default_rng(5)
    bgr = rng.integers(0, 256, (*size, 3), np.uint8)
    if bits == 10:
        bgr = bgr.astype(np.uint16) * 257 + rng.integers(0, 257, bgr.shape).astype(np.uint16)
    picture = yuv_write.bgr_to_picture(bgr, fmt, 1, False)
    assert picture is not None and picture.format.name == fmt
    assert (picture.colorspace, picture.color_range) == (1, 1)
    matrix = yuv.matrix_for(1, 1, "yuv444p")
    assert matrix is not None
    full = yuv_write.bgr_to_yuv444(bgr, matrix, bits)
    dtype = "<u2" if bits == 10 else np.uint8
    got = [np.frombuffer(plane, dtype).reshape(plane.height, -1)[:, :plane.width]
           for plane in picture.planes]
    np.testing.assert_array_equal(got[0], full[0])
    for plane, values in zip(got[1:], full[1:], strict=True):
        np.testing.assert_array_equal(plane, _cosited(values, down))


def test_read_and_write_cycles_keep_the_chroma_where_it_was() -> None:
    """The reader upsamples at the MPEG-2 siting and the writer subsamples at it: five
    generations of a smooth chroma wave come back within 3 levels (mean 0.26). swscale's
    writer, which averages column pairs, moved it a quarter sample each time (max 10, mean
    5.1 levels)."""
    height, width = 64, 128
    x, y = np.arange(width // 2), np.arange(height // 2)[:, None]
    cb = np.rint(128 + 60 * np.sin(2 * np.pi * x / 48.0) + 0 * y).astype(np.uint8)
    cr = np.rint(128 + 50 * np.cos(2 * np.pi * (x + 2 * y) / 56.0)).astype(np.uint8)
    picture = _picture([np.full((height, width), 120, np.uint8), cb, cr], "yuv420p", 1, 1)
    for _ in range(5):
        bgr = yuv.picture_to_bgr(picture)
        assert bgr is not None
        picture = yuv_write.bgr_to_picture(bgr, "yuv420p", 1, False)
    inner = (slice(4, -4), slice(4, -4))
    drift = [np.abs(plane[inner].astype(int) - start[inner])
             for plane, start in zip(yuv.picture_planes(picture)[1:], (cb, cr), strict=True)]
    assert max(int(d.max()) for d in drift) <= 3
    assert np.mean([d.mean() for d in drift]) < 0.5


def test_a_lossless_h264_round_trip_carries_the_writers_levels(tmp_path: Path) -> None:
    """crf 0 is lossless in YUV: the file holds exactly the levels io.video.yuv computed, and the
    reader turns them back with its own matrix."""
    rng = np.random.default_rng(6)
    frames = [rng.integers(0, 256, (64, 96, 3), np.uint8) for _ in range(2)]
    info = VideoInfo(path=tmp_path / "in.mp4", frame_count=2, rate=25, width=96, height=64,
                     codec="h264", pixel_format="yuv420p", bit_depth=8, has_alpha=False,
                     timecode=None, audio_streams=0, duration_s=0.08,
                     variable_frame_rate=False)
    with VideoSink(tmp_path / "out.mp4", info, quality=0) as sink:
        for frame in frames:
            sink.write(frame)
    with av.open(str(tmp_path / "out.mp4")) as container:
        stored = [picture for picture in container.decode(video=0)]
    for frame, picture in zip(frames, stored, strict=True):
        expected = yuv_write.bgr_to_picture(frame, "yuv420p", 1, False)
        assert expected is not None
        for got, want in zip(yuv.picture_planes(picture), yuv.picture_planes(expected),
                             strict=True):
            np.testing.assert_array_equal(got, want)
    with VideoSource(tmp_path / "out.mp4") as source:
        for (_, frame), picture in zip(arrays(source.read([1, 2])), stored, strict=True):
            np.testing.assert_array_equal(frame, yuv.picture_to_bgr(picture))


def test_a_yuvj_target_is_tagged_full_range_as_it_is_converted() -> None:
    grey = np.full((16, 16, 3), 200, np.uint8)
    picture = yuv_write.bgr_to_picture(grey, "yuvj420p", 1, False)  # yuvj: full range regardless
    assert picture is not None and picture.color_range == 2
    assert int(yuv.picture_planes(picture)[0][0, 0]) == 200  # full-range luma of grey 200
