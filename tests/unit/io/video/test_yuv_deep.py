"""io.video.yuv's 10-bit reader: planar 10-bit limited-range YUV (4:2:0, 4:2:2, 4:4:4) to BGR uint16 at
16-bit scale is the float64 formula (Y' = (Y - 64) * 65535/876, Cb' = (Cb - 512) * 65535/896,
chroma upsampled bilinearly at the siting) rounded once, but for float32 ties; a box converts
bit-identically to the same box of the whole picture; Y 940 is 65535 and Y 64 is 0 (swscale's
bgr48 gives 65283), so the writer's 10-bit matrix reads back unbiased."""

from __future__ import annotations

import av
import numpy as np
import pytest

from facefuse.io.video import yuv, yuv_write
from tests.unit.test_yuv import _check_rounding
from tests.unit.test_yuv_chroma import _linear, _random_planes

LAYOUTS = {"4:2:0": (2, 2), "4:2:2": (2, 1), "4:4:4": (1, 1)}
FORMATS = {"4:2:0": "yuv420p10le", "4:2:2": "yuv422p10le", "4:4:4": "yuv444p10le"}
MATRICES = (yuv.YuvMatrix(0.2126, 0.0722, False), yuv.YuvMatrix(0.299, 0.114, False),
            yuv.YuvMatrix(0.2627, 0.0593, False))
# float32 keeps 8 bits below a 16-bit level: measured ties lie within 0.009 of a half level
NEAR_TIE_16 = 0.02


def _exact_chroma(plane: np.ndarray, planes: yuv.YuvPlanes) -> np.ndarray:
    """float64 chroma at every luma pixel (row i of 4:2:0 at luma row 2i + 1/2; column j at
    luma column 2j, or 2j + 1/2 centred)."""
    height, width = planes.y.shape
    values = plane.astype(np.float64)
    if planes.down == 2:
        values = _linear(values, (np.arange(height) - 0.5) / 2, axis=0)
    if planes.across == 2:
        offset = 0.5 if planes.centred else 0.0
        values = _linear(values, (np.arange(width) - offset) / 2, axis=1)
    return values


def _exact_bgr16(planes: yuv.YuvPlanes) -> np.ndarray:
    """The formula of the module docstring in float64, written out (not io.video.yuv's matrix)."""
    kr, kb = planes.matrix.kr, planes.matrix.kb
    kg = 1.0 - kr - kb
    luma = (planes.y.astype(np.float64) - 64.0) * 65535.0 / 876.0
    cb, cr = ((_exact_chroma(p, planes) - 512.0) * 65535.0 / 896.0 for p in (planes.cb, planes.cr))
    return np.stack([luma + 2 * (1 - kb) * cb,
                     luma - (2 * kb * (1 - kb) * cb + 2 * kr * (1 - kr) * cr) / kg,
                     luma + 2 * (1 - kr) * cr], axis=-1)


@pytest.mark.parametrize("centred", [False, True])
@pytest.mark.parametrize("layout", list(LAYOUTS))
def test_10_bit_planes_convert_as_the_float64_formula_rounded_once(layout: str,
                                                                   centred: bool) -> None:
    for seed, matrix in enumerate(MATRICES):
        planes = _random_planes(seed, (75, 131), layout, centred, matrix, bits=10)  # > a band
        bgr = yuv.yuv_to_bgr(planes)
        assert bgr.shape == (75, 131, 3) and bgr.dtype == np.uint16 and bgr.flags.c_contiguous
        _check_rounding(bgr, _exact_bgr16(planes), top=65535, tie=NEAR_TIE_16)


@pytest.mark.parametrize("layout", list(LAYOUTS))
def test_a_10_bit_box_converts_bit_identically_to_the_same_box_of_the_whole(layout: str) -> None:
    rng = np.random.default_rng(3)
    for seed, matrix in enumerate(MATRICES[:2]):
        planes = _random_planes(seed, (133, 150), layout, False, matrix, bits=10)
        whole = yuv.yuv_to_bgr(planes)
        height, width = planes.y.shape
        boxes = [(0, 0, width, height), (0, 0, 1, 1), (width - 1, height - 1, width, height),
                 (0, 5, 7, height), (width - 3, 0, width, 9)]
        for _ in range(20):
            (x0, x1), (y0, y1) = (np.sort(rng.choice(n + 1, 2, replace=False)).tolist()
                                  for n in (width, height))
            boxes.append((x0, y0, x1, y1))
        for x0, y0, x1, y1 in boxes:
            np.testing.assert_array_equal(yuv.yuv_to_bgr(planes, (x0, y0, x1, y1)),
                                          whole[y0:y1, x0:x1], err_msg=f"{(x0, y0, x1, y1)}")


def _picture(fmt: str, luma: np.ndarray, chroma: int = 512, colorspace: int = 1) -> av.VideoFrame:
    """A limited-range 10-bit picture of `fmt` with these luma levels and flat chroma."""
    picture = av.VideoFrame(luma.shape[1], luma.shape[0], fmt)
    y, cb, cr = yuv.picture_planes(picture)
    y[:], cb[:], cr[:] = luma, chroma, chroma
    picture.colorspace, picture.color_range = colorspace, 1
    return picture


@pytest.mark.parametrize("layout", list(LAYOUTS))
def test_10_bit_white_and_black_are_the_whole_16_bit_range(layout: str) -> None:
    luma = np.full((16, 34), 940, np.uint16)  # 34: the planes' rows are padded past their samples
    luma[:, 17:] = 64
    picture = _picture(FORMATS[layout], luma)
    planes = yuv.yuv_planes(picture)
    assert planes is not None and planes.bits == 10 and (planes.across, planes.down) == (
        LAYOUTS[layout])
    bgr = yuv.picture_to_bgr(picture)
    assert bgr is not None and bgr.dtype == np.uint16
    assert np.all(bgr[:, :17] == 65535) and np.all(bgr[:, 17:] == 0)
    # swscale's bgr48 (the reader before) is 0.38 % short at white
    assert 65200 < int(picture.to_ndarray(format="bgr48le")[0, 0, 0]) < 65400


def test_the_writer_s_10_bit_levels_read_back_to_the_same_samples() -> None:
    """bgr_to_picture's 10-bit matrix then this reader: luma and chroma come back unchanged
    (4:4:4, no subsampling in between), so a whole-frame round trip is unbiased at white."""
    rng = np.random.default_rng(8)
    bgr = rng.integers(0, 65536, (32, 48, 3)).astype(np.uint16)
    bgr[:8] = 65535
    picture = yuv_write.bgr_to_picture(bgr, "yuv444p10le", 1, False)
    assert picture is not None
    back = yuv.picture_to_bgr(picture)
    assert back is not None and np.all(back[:8] == 65535)
    again = yuv_write.bgr_to_picture(back, "yuv444p10le", 1, False)
    for first, second in zip(yuv.picture_planes(picture), yuv.picture_planes(again), strict=True):
        np.testing.assert_array_equal(first, second)


def test_10_bit_full_range_and_12_bit_pictures_are_left_to_swscale() -> None:
    full = _picture("yuv422p10le", np.full((8, 8), 500, np.uint16))
    full.color_range = 2
    assert yuv.yuv_planes(full) is None and yuv.picture_to_bgr(full) is None
    assert yuv.picture_to_bgr(av.VideoFrame(8, 8, "yuv444p12le")) is None
    assert yuv.picture_to_bgr(_picture("yuv420p10le", np.zeros((8, 8), np.uint16), 512, 8)) is None
