"""io.video.yuv's chroma upsampling: bilinear at the stream's siting, edges repeated, exactly the
float64 formula rounded once (but for float32 ties), and a box converted on its own
bit-identical to the same box of the whole picture, 8-bit and 10-bit."""

from __future__ import annotations

import av
import numpy as np
import pytest

from facefuse.io.video import yuv
from tests.unit.io.video.test_yuv import _check_rounding

LAYOUTS = {"4:2:0": (2, 2), "4:2:2": (2, 1)}
STEPS = {**LAYOUTS, "4:4:4": (1, 1)}
MATRICES = (yuv.YuvMatrix(0.299, 0.114, False), yuv.YuvMatrix(0.299, 0.114, True),
            yuv.YuvMatrix(0.2126, 0.0722, False), yuv.YuvMatrix(0.2126, 0.0722, True))


def _random_planes(seed: int, size: tuple[int, int], layout: str, centred: bool,
                   matrix: yuv.YuvMatrix, bits: int = 8) -> yuv.YuvPlanes:
    """Uniformly random planes of an (H, W) picture, odd sizes allowed (chroma ceil'd): 8-bit
    levels, or 10-bit ones (0..1023, illegal levels too) in uint16."""
    rng = np.random.default_rng(seed)
    across, down = STEPS[layout]
    height, width = size
    chroma = (-(-height // down), -(-width // across))
    dtype, top = (np.uint8, 256) if bits == 8 else (np.uint16, 1024)
    cb, cr = (rng.integers(0, top, chroma).astype(dtype) for _ in range(2))
    return yuv.YuvPlanes(rng.integers(0, top, size).astype(dtype), cb, cr, across, down,
                         centred, matrix, bits=bits)


def _linear(plane: np.ndarray, positions: np.ndarray, axis: int) -> np.ndarray:
    """float64 linear interpolation of `plane` along `axis` at fractional sample `positions`,
    the samples beyond each edge repeating it."""
    low = np.floor(positions).astype(int)
    weight = positions - low
    last = plane.shape[axis] - 1
    a = np.take(plane, np.clip(low, 0, last), axis=axis)
    b = np.take(plane, np.clip(low + 1, 0, last), axis=axis)
    shape = [1, 1]
    shape[axis] = -1
    return a * (1 - weight.reshape(shape)) + b * weight.reshape(shape)


def _exact_upsampled(plane: np.ndarray, planes: yuv.YuvPlanes) -> np.ndarray:
    """float64 chroma at every luma pixel, from where each sample sits in luma pixels: chroma
    row i at luma row 2i + 1/2 (4:2:0), column j at luma column 2j (MPEG-2) or 2j + 1/2
    (JPEG, centred); 4:4:4 chroma as it is."""
    height, width = planes.y.shape
    values = plane.astype(np.float64)
    if planes.down == 2:
        values = _linear(values, (np.arange(height) - 0.5) / 2, axis=0)
    if planes.across == 2:
        offset = 0.5 if planes.centred else 0.0
        values = _linear(values, (np.arange(width) - offset) / 2, axis=1)
    return values


def _exact_bgr(planes: yuv.YuvPlanes) -> np.ndarray:
    coefficients = planes.matrix.to_bgr()
    stacked = np.stack([planes.y.astype(np.float64), _exact_upsampled(planes.cb, planes),
                        _exact_upsampled(planes.cr, planes)], axis=-1)
    return stacked @ coefficients[:, :3].T + coefficients[:, 3]


@pytest.mark.parametrize("size", [(96, 130), (37, 51)])
@pytest.mark.parametrize("centred", [False, True])
@pytest.mark.parametrize("layout", list(LAYOUTS))
def test_the_upsampling_is_the_bilinear_formula_at_its_siting_rounded_once(
        layout: str, centred: bool, size: tuple[int, int]) -> None:
    for seed, matrix in enumerate(MATRICES):
        planes = _random_planes(seed, size, layout, centred, matrix)
        bgr = yuv.yuv_to_bgr(planes)
        assert bgr.shape == (*size, 3) and bgr.dtype == np.uint8 and bgr.flags.c_contiguous
        _check_rounding(bgr, _exact_bgr(planes))


# per bit depth: the seed of the boxes, the matrices (one plane seed each), the random boxes
BOX_DRAWS = {8: (11, MATRICES, 25),
             10: (3, (yuv.YuvMatrix(0.2126, 0.0722, False), yuv.YuvMatrix(0.299, 0.114, False)),
                  20)}


BOX_CASES = [pytest.param(layout, centred, bits)
             for bits in (8, 10) for layout in STEPS for centred in (False, True)]


@pytest.mark.parametrize(("layout", "centred", "bits"), BOX_CASES)
def test_a_box_converts_bit_identically_to_the_same_box_of_the_whole_picture(
        layout: str, centred: bool, bits: int) -> None:
    box_seed, matrices, draws = BOX_DRAWS[bits]
    rng = np.random.default_rng(box_seed)
    for seed, matrix in enumerate(matrices):
        planes = _random_planes(seed, (133, 150), layout, centred, matrix, bits)  # > one band
        whole = yuv.yuv_to_bgr(planes)
        height, width = planes.y.shape
        boxes = [(0, 0, width, height), (0, 0, 1, 1), (width - 1, height - 1, width, height),
                 (0, 5, 7, height), (width - 3, 0, width, 9), (1, 1, width - 1, height - 1)]
        for _ in range(draws):  # odd and even coordinates alike
            (x0, x1), (y0, y1) = (np.sort(rng.choice(n + 1, 2, replace=False)).tolist()
                                  for n in (width, height))
            boxes.append((x0, y0, x1, y1))
        for x0, y0, x1, y1 in boxes:
            np.testing.assert_array_equal(yuv.yuv_to_bgr(planes, (x0, y0, x1, y1)),
                                          whole[y0:y1, x0:x1], err_msg=f"{(x0, y0, x1, y1)}")


@pytest.mark.parametrize(("fmt", "codec"), [("yuv420p", "h264"), ("yuvj422p", "mjpeg"),
                                            ("nv12", "hevc")])
def test_pictures_give_their_planes_and_the_codec_its_siting(fmt: str, codec: str) -> None:
    rng = np.random.default_rng(5)
    picture = av.VideoFrame.from_ndarray(rng.integers(0, 256, (48, 64, 3), np.uint8),
                                         format="bgr24").reformat(format=fmt)
    planes = yuv.yuv_planes(picture, yuv.chroma_centred(codec))
    assert planes is not None and planes.centred == (codec == "mjpeg")
    assert (planes.across, planes.down) == ((2, 1) if "422" in fmt else (2, 2))
    assert planes.cb.shape == planes.cr.shape == (48 // planes.down, 32)
    assert planes.matrix.full_range == fmt.startswith("yuvj")
    converted = yuv.picture_to_bgr(picture, planes.centred)
    assert converted is not None
    np.testing.assert_array_equal(converted, yuv.yuv_to_bgr(planes))
    _check_rounding(converted, _exact_bgr(planes))
