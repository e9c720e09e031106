"""io.video.passthrough: decoded planes (8-bit, and 10-bit planar YUV: ProRes 422 / 4444, DNxHR
444, HEVC Main10, uint16 planes) go to the encoder with only the pasted samples replaced, equal
to the whole-frame conversion there (bgr_to_picture's; BGR uint16 frames for 10-bit) and to the
decoded planes everywhere else; and the one function that refuses a picture for each condition
it cannot pass through."""

from __future__ import annotations

from pathlib import Path

import cv2
import numpy as np
import pytest

from facefuse.io.video.passthrough import DecodedPicture, EncoderTarget, compose, refusal
from facefuse.io.video.yuv import PLANAR, PLANAR_10BIT, picture_planes
from facefuse.io.video.yuv_write import bgr_to_picture
from facefuse.types import Pasted, Roi

_BT709, _BT601, _BT2020, _UNSPECIFIED, _LIMITED, _FULL = 1, 6, 9, 2, 1, 2
DEEP = sorted(PLANAR_10BIT)


def _picture(bgr: np.ndarray, fmt: str, colorspace: int = _BT709) -> DecodedPicture:
    """What a decoder would give for `bgr`: its whole-frame conversion, read-only views."""
    full = fmt.startswith("yuvj")
    frame = bgr_to_picture(bgr, fmt, colorspace, full)
    planes = picture_planes(frame)
    for plane in planes:
        plane.flags.writeable = False
    return DecodedPicture(tuple(planes), fmt, colorspace, _FULL if full else _LIMITED)


def _target(picture: DecodedPicture, **changes: object) -> EncoderTarget:
    fields = {"pixel_format": picture.pixel_format, "width": picture.width,
              "height": picture.height, "colorspace": picture.colorspace,
              "color_range": picture.color_range, **changes}
    return EncoderTarget(**fields)  # type: ignore[arg-type]


def _scene(height: int = 96, width: int = 128, seed: int = 0, bits: int = 8) -> np.ndarray:
    """A smooth picture with noise (so every chroma filter tap matters): BGR uint8, or for
    `bits` 10 BGR uint16 with fine noise (every 10-bit level counts)."""
    rng = np.random.default_rng(seed)
    dtype, top, spread = (np.uint16, 65535, 3000) if bits == 10 else (np.uint8, 255, 12)
    base = cv2.resize(rng.integers(0, top + 1, (height // 8, width // 8, 3), dtype=dtype),
                      (width, height), interpolation=cv2.INTER_LINEAR)
    noise = rng.integers(-spread, spread + 1, base.shape)
    return np.clip(base.astype(int) + noise, 0, top).astype(dtype)


def _bits(fmt: str) -> int:
    return 10 if fmt in PLANAR_10BIT else 8


def _paste(frame: np.ndarray, roi: Roi, seed: int) -> Pasted:
    """Paint a soft blob into `frame` (uint8, or uint16) over `roi` IN PLACE, as
    paste.paste_into would (only where the mask is > 0); the Pasted record of it."""
    rng = np.random.default_rng(seed)
    h, w = roi.y1 - roi.y0, roi.x1 - roi.x0
    yy, xx = np.mgrid[0:h, 0:w]
    mask = np.clip(1.2 - np.hypot((yy - h / 2) / (h / 2), (xx - w / 2) / (w / 2)), 0, 1)
    mask = mask.astype(np.float32)
    region = frame[roi.slices()]
    colour = rng.integers(0, np.iinfo(frame.dtype).max + 1, 3).astype(np.float32)
    mixed = np.rint(region * (1 - mask[..., None]) + colour * mask[..., None])
    np.copyto(region, mixed.astype(frame.dtype), where=(mask > 0)[..., None])
    return Pasted(roi, mask)


def _changed(pasted: list[Pasted], shape: tuple[int, ...]) -> np.ndarray:
    union = np.zeros(shape[:2], bool)
    for paste in pasted:
        union[paste.roi.slices()] |= paste.mask > 0
    return union


def _footprints(changed: np.ndarray, fmt: str) -> np.ndarray:
    sx, sy = PLANAR[fmt]
    h, w = changed.shape
    return changed.reshape(h // sy, sy, w // sx, sx).any(axis=(1, 3))


@pytest.mark.parametrize("fmt", ["yuv420p", "yuvj420p", "yuv422p", "yuv444p", *DEEP])
def test_only_pasted_samples_change_and_they_equal_the_whole_frame_conversion(fmt: str) -> None:
    decoded_bgr = _scene(bits=_bits(fmt))
    picture = _picture(decoded_bgr, fmt)
    before = [plane.copy() for plane in picture.planes]
    frame = decoded_bgr.copy()
    # two faces that overlap, one at the frame's top-left edge with odd coordinates, one
    # at the bottom-right edge
    pasted = [_paste(frame, Roi(0, 0, 37, 41), 1), _paste(frame, Roi(21, 15, 69, 63), 2),
              _paste(frame, Roi(97, 71, 128, 96), 3)]
    target = _target(picture)
    composed = compose(picture, frame, pasted, target)
    assert composed.format.name == fmt
    out = picture_planes(composed)
    whole = picture_planes(bgr_to_picture(frame, fmt, _BT709, fmt.startswith("yuvj")))
    changed = _changed(pasted, frame.shape)
    for index, (got, decoded, today) in enumerate(zip(out, before, whole, strict=True)):
        if _bits(fmt) == 10:
            assert got.dtype == np.dtype("<u2") and got.max() <= 1023
        inside = changed if index == 0 else _footprints(changed, fmt)
        np.testing.assert_array_equal(got[~inside], decoded[~inside])  # the decoded input
        np.testing.assert_array_equal(got[inside], today[inside])  # measured: 0 values differ
        assert (got[inside] != decoded[inside]).sum() > 0.5 * inside.sum()
    for plane, original in zip(picture.planes, before, strict=True):  # never written into
        np.testing.assert_array_equal(plane, original)
    again = picture_planes(compose(picture, frame, pasted, target))
    for got, plane in zip(again, out, strict=True):
        np.testing.assert_array_equal(got, plane)


@pytest.mark.parametrize("turns", [1, 2, 3])
@pytest.mark.parametrize("part", [False, True], ids=["whole", "part"])
def test_a_turned_picture_takes_its_upright_pastes_turned_back(turns: int, part: bool) -> None:
    """A picture the reader turned upright (display rotation): the pastes lie in the upright
    frame, and the planes equal the decoded ones outside their stored-orientation samples and
    the whole-frame path (the upright frame turned back, converted whole) inside them."""
    stored_bgr = _scene(96, 128, seed=turns)
    picture = _picture(stored_bgr, "yuv420p")
    picture = DecodedPicture(picture.planes, "yuv420p", _BT709, _LIMITED, turns)
    before = [plane.copy() for plane in picture.planes]
    frame = np.ascontiguousarray(np.rot90(stored_bgr, turns))  # what the reader delivers
    height, width = frame.shape[:2]
    pasted = [_paste(frame, Roi(0, 1, 37, 40), 1), _paste(frame, Roi(21, 15, 60, 62), 2),
              _paste(frame, Roi(width - 29, height - 31, width, height), 3)]
    target = _target(picture, turns=turns)
    assert refusal(picture, target, frame) is None
    given, origin = frame, (0, 0)
    if part:  # only the part around the pastes converted (io.video.frame)
        given, origin = frame[1:, :].copy(), (0, 1)
        pasted = pasted[1:]
    out = picture_planes(compose(picture, given, pasted, target, origin))
    whole = picture_planes(bgr_to_picture(np.ascontiguousarray(np.rot90(frame, -turns)),
                                          "yuv420p", _BT709, False))
    changed = np.rot90(_changed(pasted, frame.shape), -turns)
    for index, (got, decoded, today) in enumerate(zip(out, before, whole, strict=True)):
        inside = changed if index == 0 else _footprints(changed, "yuv420p")
        np.testing.assert_array_equal(got[~inside], decoded[~inside])
        np.testing.assert_array_equal(got[inside], today[inside])  # measured: 0 values differ
        assert (got[inside] != decoded[inside]).sum() > 0.5 * inside.sum()
    for plane, original in zip(picture.planes, before, strict=True):
        np.testing.assert_array_equal(plane, original)


@pytest.mark.parametrize("fmt", ["yuv420p", "yuv420p10le"])
def test_a_frame_without_pastes_is_a_copy_of_the_decoded_planes(fmt: str) -> None:
    bgr = _scene(bits=_bits(fmt))
    picture = _picture(bgr, fmt)
    composed = compose(picture, bgr, (), _target(picture))
    out = picture_planes(composed)
    for got, decoded in zip(out, picture.planes, strict=True):
        np.testing.assert_array_equal(got, decoded)
        assert not np.shares_memory(got, decoded)
    assert (composed.colorspace, composed.color_range) == (_BT709, _LIMITED)


@pytest.mark.parametrize("fmt", ["yuv420p", "yuv420p10le"])
def test_it_counts_its_planes_for_the_queues(fmt: str) -> None:
    picture = _picture(_scene(bits=_bits(fmt)), fmt)
    assert picture.nbytes == 96 * 128 * 3 // 2 * (2 if _bits(fmt) == 10 else 1)


def test_the_same_picture_and_target_pass() -> None:
    bgr = _scene()
    picture = _picture(bgr, "yuv420p")
    assert refusal(picture, _target(picture), bgr) is None
    for turns in (1, 2, 3):  # turned upright by the reader and back by the writer
        turned = DecodedPicture(picture.planes, "yuv420p", _BT709, _LIMITED, turns)
        upright = np.ascontiguousarray(np.rot90(bgr, turns))
        assert refusal(turned, _target(turned, turns=turns + 4 * (turns == 3)), upright) is None
    # an untagged range reads as limited, as the encoder's limited tag does
    assert refusal(picture, _target(picture, color_range=0), bgr) is None


def test_a_full_range_yuvj_picture_passes_to_a_full_range_yuv_stream_only() -> None:
    bgr = _scene()
    picture = _picture(bgr, "yuvj420p")
    assert refusal(picture, _target(picture, pixel_format="yuv420p"), bgr) is None
    limited = refusal(picture, _target(picture, pixel_format="yuv420p", color_range=_LIMITED),
                      bgr)
    assert limited is not None and "another matrix" in limited
    frame = compose(picture, bgr, [], _target(picture, pixel_format="yuv420p"))
    assert frame.format.name == "yuv420p" and frame.color_range == _FULL
    for got, decoded in zip(picture_planes(frame), picture.planes, strict=True):
        np.testing.assert_array_equal(got, decoded)


@pytest.mark.parametrize(("case", "words"), [
    ("colour", "colour-transformed"), ("missing", "decoded planar"),
    ("rotated", "display rotation"), ("rotated_target", "display rotation"),
    ("turned_other_way", "turns them back by 3"),
    ("turned_size", "not the decoded picture's 96x128"),
    ("alpha", "alpha or deep"), ("deep", "alpha or deep"), ("10-bit", "yuv420p10le"),
    ("format", "yuv444p"), ("size", "64x48"), ("matrix", "another matrix"),
    ("range", "another matrix"), ("odd", "odd size"), ("jpeg_siting", "midway"),
])
def test_each_condition_it_cannot_pass_through_is_refused(case: str, words: str) -> None:
    bgr = _scene()
    picture = _picture(bgr, "yuv420p")
    target, frame, colour = _target(picture), bgr, False
    if case == "colour":
        colour = True
    elif case == "missing":
        picture = None  # type: ignore[assignment]
    elif case == "rotated":
        picture = DecodedPicture(picture.planes, "yuv420p", _BT709, _LIMITED, turns=1)
    elif case == "rotated_target":
        target = _target(picture, turns=3)
    elif case == "turned_other_way":  # the writer turns back by another angle
        picture = DecodedPicture(picture.planes, "yuv420p", _BT709, _LIMITED, turns=1)
        target, frame = _target(picture, turns=3), np.ascontiguousarray(np.rot90(bgr))
    elif case == "turned_size":  # a quarter-turned picture's frame is the upright size
        picture = DecodedPicture(picture.planes, "yuv420p", _BT709, _LIMITED, turns=1)
        target = _target(picture, turns=1)
    elif case == "alpha":
        frame = np.dstack([bgr, bgr[..., :1]])
    elif case == "deep":
        frame = bgr.astype(np.uint16) * 257
    elif case == "10-bit":
        target = _target(picture, pixel_format="yuv420p10le")
    elif case == "format":
        target = _target(picture, pixel_format="yuv444p")
    elif case == "size":
        target = _target(picture, width=64, height=48)
    elif case == "matrix":  # untagged is read as BT.601; the writer tags BT.709
        picture = DecodedPicture(picture.planes, "yuv420p", _UNSPECIFIED, _LIMITED)
    elif case == "range":
        target = _target(picture, color_range=_FULL)
    elif case == "jpeg_siting":  # an mjpeg yuvj420p clip to a full-range h264 stream
        picture = DecodedPicture(picture.planes, "yuv420p", _BT709, _LIMITED, centred=True)
    elif case == "odd":
        planes = (np.zeros((96, 125), np.uint8), *[np.zeros((96, 63), np.uint8)] * 2)
        picture = DecodedPicture(planes, "yuv422p", _BT709, _LIMITED)
        target, frame = _target(picture), np.zeros((96, 125, 3), np.uint8)
    reason = refusal(picture, target, frame, colour)
    assert reason is not None and words in reason, reason


def test_jpeg_siting_does_not_matter_without_subsampling() -> None:
    bgr = _scene()
    picture = _picture(bgr, "yuv444p")
    centred = DecodedPicture(picture.planes, "yuv444p", _BT709, _LIMITED, centred=True)
    assert refusal(centred, _target(picture), bgr) is None


def test_the_reader_marks_the_pictures_of_a_jpeg_family_codec_centred(tmp_path: Path) -> None:
    import av

    from facefuse.io.video.read import VideoSource

    for codec, suffix in (("mjpeg", ".avi"), ("libx264", ".mp4")):
        path = tmp_path / f"clip{suffix}"
        with av.open(str(path), "w") as container:
            stream = container.add_stream(codec, rate=24)
            stream.width, stream.height = 64, 48
            stream.pix_fmt = "yuvj420p" if codec == "mjpeg" else "yuv420p"
            for i in range(2):
                frame = av.VideoFrame.from_ndarray(np.full((48, 64, 3), 40 * i, np.uint8),
                                                   format="bgr24")
                frame.pts = i
                container.mux(stream.encode(frame.reformat(format=stream.pix_fmt)))
            container.mux(stream.encode(None))
        with VideoSource(path) as source:
            (_, frame), *_ = source.read([1, 2])
            decoded = frame.planes()  # type: ignore[union-attr]
        assert decoded is not None and decoded.centred == (codec == "mjpeg")


def test_the_queues_count_the_frame_and_the_pasted_masks() -> None:
    from facefuse.io.video import DecodedFrame
    from facefuse.shot.output.writers import FrameToWrite
    from facefuse.shot.run.streaming import payload_bytes

    bgr = _scene()
    pasted = (Pasted(Roi(0, 0, 10, 20), np.ones((20, 10), np.float32)),)
    item = FrameToWrite(1, DecodedFrame.of_array(bgr), None, 1, pasted=pasted)
    assert payload_bytes(item) == bgr.nbytes + 20 * 10 * 4


def test_padded_rows_are_read_and_written_as_samples() -> None:
    """A width whose rows the decoder pads (line_size past the samples): the views hold the
    samples only, and a composed frame copies them all."""
    bgr = _scene(height=40, width=200, bits=10)  # 200 * 2 bytes: padded to FFmpeg's row alignment
    frame = bgr_to_picture(bgr, "yuv422p10le", _BT709, False)
    assert any(p.line_size > 2 * p.width for p in frame.planes)
    picture = _picture(bgr, "yuv422p10le")
    assert [plane.shape for plane in picture.planes] == [(40, 200), (40, 100), (40, 100)]
    for got, decoded in zip(picture_planes(compose(picture, bgr, (), _target(picture))),
                            picture.planes, strict=True):
        np.testing.assert_array_equal(got, decoded)
        assert not np.shares_memory(got, decoded)


@pytest.mark.parametrize("fmt", DEEP)
def test_the_same_10_bit_picture_and_target_pass(fmt: str) -> None:
    bgr = _scene(bits=10)
    for colorspace in (_BT709, _BT601, _BT2020):  # a matrix io.video.yuv converts, tagged alike
        picture = _picture(bgr, fmt, colorspace)
        assert refusal(picture, _target(picture), bgr) is None


@pytest.mark.parametrize(("case", "words"), [
    ("8-bit output", "not the encoder's yuv422p"), ("4:2:0 output", "yuv420p10le"),
    ("8-bit frame", "not 16-bit BGR"), ("alpha", "not 16-bit BGR"),
    ("matrix", "another matrix"), ("untagged", "another matrix"),
    ("full range", "full-range"), ("odd", "odd size"),
])
def test_each_10_bit_condition_it_cannot_pass_through_is_refused(case: str, words: str) -> None:
    bgr = _scene(bits=10)
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
