"""io.passthrough for 10-bit planar YUV (ProRes 422 / 4444, DNxHR 444, HEVC Main10): the decoded
uint16 planes go to the encoder with only the pasted samples replaced, those equal to
bgr_to_picture's whole-frame 10-bit conversion of the BGR uint16 frame; and what it refuses."""

from __future__ import annotations

import cv2
import numpy as np
import pytest

from facefuse.io.video.passthrough import DecodedPicture, EncoderTarget, compose, refusal
from facefuse.io.video.yuv import PLANAR_10BIT, picture_planes
from facefuse.io.video.yuv_write import bgr_to_picture
from facefuse.types import Pasted, Roi
from tests.unit.test_passthrough import _paste

_BT709, _BT601, _BT2020, _LIMITED, _FULL = 1, 6, 9, 1, 2
DEEP = sorted(PLANAR_10BIT)


def _scene(height: int = 96, width: int = 128, seed: int = 0) -> np.ndarray:
    """A smooth BGR uint16 picture with fine noise (every 10-bit level and filter tap counts)."""
    rng = np.random.default_rng(seed)
    base = cv2.resize(rng.integers(0, 65536, (height // 8, width // 8, 3), dtype=np.uint16),
                      (width, height), interpolation=cv2.INTER_LINEAR)
    noise = rng.integers(-3000, 3001, base.shape)
    return np.clip(base.astype(int) + noise, 0, 65535).astype(np.uint16)


def _picture(bgr: np.ndarray, fmt: str, colorspace: int = _BT709) -> DecodedPicture:
    """What a decoder would give for `bgr`: its whole-frame conversion, read-only views."""
    frame = bgr_to_picture(bgr, fmt, colorspace, False)
    planes = picture_planes(frame)
    for plane in planes:
        plane.flags.writeable = False
    return DecodedPicture(tuple(planes), fmt, colorspace, _LIMITED)


def _target(picture: DecodedPicture, **changes: object) -> EncoderTarget:
    fields = {"pixel_format": picture.pixel_format, "width": picture.width,
              "height": picture.height, "colorspace": picture.colorspace,
              "color_range": picture.color_range, **changes}
    return EncoderTarget(**fields)  # type: ignore[arg-type]


def _inside(pasted: list[Pasted], shape: tuple[int, ...], fmt: str) -> list[np.ndarray]:
    """Per plane, the samples a paste touches: luma where a mask is > 0, chroma footprints."""
    union = np.zeros(shape[:2], bool)
    for paste in pasted:
        union[paste.roi.slices()] |= paste.mask > 0
    sx, sy = PLANAR_10BIT[fmt]
    h, w = union.shape
    chroma = union.reshape(h // sy, sy, w // sx, sx).any(axis=(1, 3))
    return [union, chroma, chroma]


@pytest.mark.parametrize("fmt", DEEP)
def test_only_pasted_samples_change_and_they_equal_the_whole_frame_conversion(fmt: str) -> None:
    decoded_bgr = _scene()
    picture = _picture(decoded_bgr, fmt)
    before = [plane.copy() for plane in picture.planes]
    frame = decoded_bgr.copy()
    # two faces that overlap, one at the top-left edge with odd coordinates, one at the
    # bottom-right edge
    pasted = [_paste(frame, Roi(0, 0, 37, 41), 1), _paste(frame, Roi(21, 15, 69, 63), 2),
              _paste(frame, Roi(97, 71, 128, 96), 3)]
    composed = compose(picture, frame, pasted, _target(picture))
    assert composed.format.name == fmt
    out = picture_planes(composed)
    whole = picture_planes(bgr_to_picture(frame, fmt, _BT709, False))
    for got, decoded, today, inside in zip(out, before, whole, _inside(pasted, frame.shape, fmt),
                                           strict=True):
        assert got.dtype == np.dtype("<u2") and got.max() <= 1023
        np.testing.assert_array_equal(got[~inside], decoded[~inside])  # the decoded input
        np.testing.assert_array_equal(got[inside], today[inside])  # measured: 0 values differ
        assert (got[inside] != decoded[inside]).sum() > 0.5 * inside.sum()
    for plane, original in zip(picture.planes, before, strict=True):  # never written into
        np.testing.assert_array_equal(plane, original)
    again = picture_planes(compose(picture, frame, pasted, _target(picture)))
    for got, plane in zip(again, out, strict=True):
        np.testing.assert_array_equal(got, plane)


def test_padded_rows_are_read_and_written_as_samples() -> None:
    """A width whose rows the decoder pads (line_size past the samples): the views hold the
    samples only, and a composed frame copies them all."""
    bgr = _scene(height=40, width=200)  # 200 * 2 bytes: padded to FFmpeg's row alignment
    frame = bgr_to_picture(bgr, "yuv422p10le", _BT709, False)
    assert any(p.line_size > 2 * p.width for p in frame.planes)
    picture = _picture(bgr, "yuv422p10le")
    assert [plane.shape for plane in picture.planes] == [(40, 200), (40, 100), (40, 100)]
    for got, decoded in zip(picture_planes(compose(picture, bgr, (), _target(picture))),
                            picture.planes, strict=True):
        np.testing.assert_array_equal(got, decoded)
        assert not np.shares_memory(got, decoded)


def test_a_frame_without_pastes_is_a_copy_of_the_decoded_planes() -> None:
    bgr = _scene()
    picture = _picture(bgr, "yuv420p10le")
    composed = compose(picture, bgr, (), _target(picture))
    for got, decoded in zip(picture_planes(composed), picture.planes, strict=True):
        np.testing.assert_array_equal(got, decoded)
    assert (composed.colorspace, composed.color_range) == (_BT709, _LIMITED)
    assert picture.nbytes == 96 * 128 * 2 * 3 // 2


@pytest.mark.parametrize("fmt", DEEP)
def test_the_same_10_bit_picture_and_target_pass(fmt: str) -> None:
    bgr = _scene()
    for colorspace in (_BT709, _BT601, _BT2020):  # a matrix io.yuv converts, tagged alike
        picture = _picture(bgr, fmt, colorspace)
        assert refusal(picture, _target(picture), bgr) is None


@pytest.mark.parametrize(("case", "words"), [
    ("8-bit output", "not the encoder's yuv422p"), ("4:2:0 output", "yuv420p10le"),
    ("8-bit frame", "not 16-bit BGR"), ("alpha", "not 16-bit BGR"),
    ("matrix", "another matrix"), ("untagged", "another matrix"),
    ("full range", "full-range"), ("odd", "odd size"),
])
def test_each_10_bit_condition_it_cannot_pass_through_is_refused(case: str, words: str) -> None:
    bgr = _scene()
    picture = _picture(bgr, "yuv422p10le")
    target, frame = _target(picture), bgr
    if case == "8-bit output":  # dnxhr_hq of a 10-bit source
        target = _target(picture, pixel_format="yuv422p")
    elif case == "4:2:0 output":  # deep h265 of a 4:2:2 source
        target = _target(picture, pixel_format="yuv420p10le")
    elif case == "8-bit frame":
        frame = np.rint(bgr / 257).astype(np.uint8)
    elif case == "alpha":
        frame = np.dstack([bgr, bgr[..., :1]])
    elif case == "matrix":  # a BT.601 source to a writer that tags BT.709
        picture = DecodedPicture(picture.planes, "yuv422p10le", _BT601, _LIMITED)
    elif case == "untagged":  # read as BT.601 by swscale
        picture = DecodedPicture(picture.planes, "yuv422p10le", 2, 0)
    elif case == "full range":
        picture = DecodedPicture(picture.planes, "yuv422p10le", _BT709, _FULL)
        target = _target(picture)
    elif case == "odd":
        planes = (np.zeros((96, 125), "<u2"), *[np.zeros((96, 63), "<u2")] * 2)
        picture = DecodedPicture(planes, "yuv422p10le", _BT709, _LIMITED)
        target, frame = _target(picture), np.zeros((96, 125, 3), np.uint16)
    reason = refusal(picture, target, frame)
    assert reason is not None and words in reason, reason
