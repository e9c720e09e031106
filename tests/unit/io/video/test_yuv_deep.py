"""io.video.yuv's 10-bit reader: planar 10-bit limited-range YUV (4:2:0, 4:2:2, 4:4:4) to BGR
uint16 at 16-bit scale is the float64 formula (Y' = (Y - 64) * 65535/876,
Cb' = (Cb - 512) * 65535/896, chroma upsampled bilinearly at the siting) rounded once, but for
float32 ties (a box on its own: test_yuv_chroma.py); Y 940 is 65535 and Y 64 is 0 (swscale's
bgr48 gives 65283), so the writer's 10-bit matrix reads back unbiased."""

from __future__ import annotations

import av
import numpy as np
import pytest

from facefuse.io.video import yuv, yuv_write
from tests.unit.io.video.test_yuv import _check_rounding
from tests.unit.io.video.test_yuv_chroma import _exact_upsampled, _random_planes

LAYOUTS = {"4:2:0": (2, 2), "4:2:2": (2, 1), "4:4:4": (1, 1)}
FORMATS = {"4:2:0": "yuv420p10le", "4:2:2": "yuv422p10le", "4:4:4": "yuv444p10le"}
MATRICES = (yuv.YuvMatrix(0.2126, 0.0722, False), yuv.YuvMatrix(0.299, 0.114, False),
            yuv.YuvMatrix(0.2627, 0.0593, False))
# float32 keeps 8 bits below a 16-bit level: measured ties lie within 0.009 of a half level
NEAR_TIE_16 = 0.02


def _exact_bgr16(planes: yuv.YuvPlanes) -> np.ndarray:
    """The formula of the module docstring in float64, written out (not io.video.yuv's matrix)."""
    kr, kb = planes.matrix.kr, planes.matrix.kb
    kg = 1.0 - kr - kb
    luma = (planes.y.astype(np.float64) - 64.0) * 65535.0 / 876.0
    cb, cr = ((_exact_upsampled(p, planes) - 512.0) * 65535.0 / 896.0
              for p in (planes.cb, planes.cr))
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
    # swscale's bgr48 is 0.38 % short at white
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
