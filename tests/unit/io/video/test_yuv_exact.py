"""io.video.yuv's reader conversion is bit-identical to its float32 steps taken one at a time in
strips of 64 rows (yuv_reference): whole pictures, boxes, boxes converted into a larger frame,
whatever rows a band holds; random planes of every layout, siting, range and depth, and real
decoded frames."""

from __future__ import annotations

from pathlib import Path

import av
import numpy as np
import pytest

from facefuse.io.video import yuv
from tests.unit.io.video.test_yuv_chroma import MATRICES, STEPS, _random_planes
from tests.unit.io.video.yuv_reference import reference_bgr


def _random_boxes(rng: np.random.Generator, size: tuple[int, int], count: int
                  ) -> list[tuple[int, int, int, int]]:
    height, width = size
    boxes = []
    while len(boxes) < count:
        x0, x1 = sorted(int(v) for v in rng.integers(0, width + 1, 2))
        y0, y1 = sorted(int(v) for v in rng.integers(0, height + 1, 2))
        if x1 > x0 and y1 > y0:
            boxes.append((x0, y0, x1, y1))
    return boxes


def _check(planes: yuv.YuvPlanes, boxes: list[tuple[int, int, int, int]]) -> None:
    whole = yuv.yuv_to_bgr(planes)
    assert whole.flags.c_contiguous and np.array_equal(whole, reference_bgr(planes))
    height, width = planes.y.shape
    for box in boxes:
        assert np.array_equal(yuv.yuv_to_bgr(planes, box), reference_bgr(planes, box)), box
        x0, y0, x1, y1 = box
        x0, y0 = x0 - x0 % planes.across, y0 - y0 % planes.down
        into, expected = (np.zeros((height, width, 3), whole.dtype) for _ in range(2))
        yuv.yuv_to_bgr(planes, (x0, y0, x1, y1), into[y0:y1, x0:x1])
        reference_bgr(planes, (x0, y0, x1, y1), expected[y0:y1, x0:x1])
        assert np.array_equal(into, expected), box


@pytest.mark.parametrize("band_pixels", [yuv.BAND_PIXELS, 64 * 24])
@pytest.mark.parametrize("bits", [8, 10])
@pytest.mark.parametrize("centred", [False, True])
@pytest.mark.parametrize("layout", list(STEPS))
def test_random_planes_convert_bit_identically_to_the_reference(
        layout: str, centred: bool, bits: int, band_pixels: int,
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(yuv, "BAND_PIXELS", band_pixels)  # 64 * 24: several bands a box
    rng = np.random.default_rng(11)
    for seed, matrix in enumerate(MATRICES):
        if bits == 10 and matrix.full_range:
            continue
        for size in ((150, 203), (37, 51), (2, 1)):
            planes = _random_planes(seed, size, layout, centred, matrix, bits)
            _check(planes, _random_boxes(rng, size, 12))


@pytest.mark.parametrize("clip", ["asl_yes.mp4", "head-pose-face-detection-female.mp4"])
def test_real_frames_convert_bit_identically_to_the_reference(testdata: Path, clip: str) -> None:
    rng = np.random.default_rng(2)
    with av.open(str(testdata / "media" / clip)) as container:
        for index, picture in enumerate(container.decode(video=0)):
            if index % 7:
                continue
            planes = yuv.yuv_planes(picture)
            assert planes is not None
            _check(planes, _random_boxes(rng, planes.y.shape, 4))
            if index >= 21:
                break
