"""Plates through OpenImageIO: exact round trips per format, metadata, atomic writes, damage."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import OpenImageIO as oiio
import pytest

from facefuse.errors import InputError
from facefuse.io import plates
from facefuse.io.plates import (
    PlateFormat,
    is_complete,
    plate_format_for,
    read_metadata,
    read_plate,
    write_plate,
)

H, W = 12, 20


def _rng() -> np.random.Generator:
    return np.random.default_rng(7)


def _oiio_read(path: Path) -> tuple[np.ndarray, oiio.ImageSpec]:
    """The file's pixels as OIIO stores them (RGB order, native type, no alpha conversion)."""
    config = oiio.ImageSpec()
    config.attribute("oiio:UnassociatedAlpha", 1)
    image = oiio.ImageInput.open(str(path), config)
    assert image is not None, oiio.geterror()
    spec = image.spec()
    pixels = image.read_image(format=spec.format)
    image.close()
    return pixels, spec


def _fmt(file_format: str, pixel_type: str, bits: int, names: str) -> PlateFormat:
    return PlateFormat(W, H, len(names), tuple(names), pixel_type, bits, file_format)


def _ten_bit(codes: np.ndarray) -> np.ndarray:
    """10-bit codes as OIIO reads them into uint16: bit replication (1023 -> 65535)."""
    return ((codes << 6) | (codes >> 4)).astype(np.uint16)


def _roundtrip(path: Path, frame: np.ndarray, fmt: PlateFormat) -> tuple[np.ndarray, PlateFormat]:
    write_plate(path, frame, fmt)
    return read_plate(path)


# --- exact round trips -------------------------------------------------------------------------

def test_exr_half_rgba_keeps_values_above_one_and_negative(tmp_path: Path) -> None:
    # k / 256 with |k| < 2048 is exact in half (11 significant bits)
    frame = (_rng().integers(-2047, 2048, (H, W, 4)) / 256.0).astype(np.float32)
    frame[0, 0] = (-3.5, 7.25, 1.5, 0.5)
    back, fmt = _roundtrip(tmp_path / "a.exr", frame, _fmt("openexr", "half", 16, "RGBA"))
    assert back.dtype == np.float32 and back.shape == (H, W, 4)
    np.testing.assert_array_equal(back, frame)
    assert (fmt.pixel_type, fmt.bits_per_sample, fmt.file_format) == ("half", 16, "openexr")
    stored, spec = _oiio_read(tmp_path / "a.exr")
    assert str(spec.format) == "half" and tuple(spec.channelnames) == ("R", "G", "B", "A")
    np.testing.assert_array_equal(stored[..., 0].astype(np.float32), frame[..., 2])


def test_exr_float_rgb_is_bit_exact(tmp_path: Path) -> None:
    frame = (_rng().standard_normal((H, W, 3)) * 10 + 1e-6).astype(np.float32)
    back, fmt = _roundtrip(tmp_path / "f.exr", frame, _fmt("openexr", "float", 32, "RGB"))
    np.testing.assert_array_equal(back, frame)
    assert fmt.pixel_type == "float" and fmt.channels == 3
    assert str(_oiio_read(tmp_path / "f.exr")[1].format) == "float"


def test_dpx_10bit_rgb_round_trip_stays_10bit(tmp_path: Path) -> None:
    frame = _ten_bit(_rng().integers(0, 1024, (H, W, 3)))
    back, fmt = _roundtrip(tmp_path / "p.dpx", frame, _fmt("dpx", "uint16", 10, "RGB"))
    assert back.dtype == np.uint16
    np.testing.assert_array_equal(back, frame)
    assert (fmt.file_format, fmt.pixel_type, fmt.bits_per_sample) == ("dpx", "uint16", 10)
    _, spec = _oiio_read(tmp_path / "p.dpx")
    assert spec.get_int_attribute("oiio:BitsPerSample") == 10
    # 10-bit filled method A packs an RGB pixel into 4 bytes, 16-bit takes 6
    write_plate(tmp_path / "p16.dpx", frame, _fmt("dpx", "uint16", 16, "RGB"))
    sizes = [(tmp_path / name).stat().st_size for name in ("p16.dpx", "p.dpx")]
    assert sizes[0] - sizes[1] == H * W * 2


def test_dpx_10bit_reads_scaled_by_bit_replication(tmp_path: Path) -> None:
    frame = np.zeros((H, W, 3), np.uint16)
    frame[0, :3] = _ten_bit(np.array([[1023, 512, 1]]))
    write_plate(tmp_path / "s.dpx", frame, _fmt("dpx", "uint16", 10, "RGB"))
    back, _ = read_plate(tmp_path / "s.dpx")
    assert back[0, 0].tolist() == [65535, 32800, 64]


def test_dpx_10bit_write_rounds_to_nearest_code(tmp_path: Path) -> None:
    # OIIO alone truncates (v >> 6): 100 -> code 1, 127 -> code 1; rounding gives 2 and 2
    frame = np.zeros((H, W, 3), np.uint16)
    frame[0, 0] = (100, 65535, 32767)
    frame[0, 1] = (127, 0, 65472)
    write_plate(tmp_path / "r.dpx", frame, _fmt("dpx", "uint16", 10, "RGB"))
    back, _ = read_plate(tmp_path / "r.dpx")
    assert back[0, 0].tolist() == _ten_bit(np.array([2, 1023, 511])).tolist()
    assert back[0, 1].tolist() == _ten_bit(np.array([2, 0, 1022])).tolist()


def test_tiff_16bit_rgba_keeps_straight_alpha(tmp_path: Path) -> None:
    frame = _rng().integers(0, 65536, (H, W, 4)).astype(np.uint16)
    frame[0, 0] = (1000, 30000, 60000, 32768)  # colour above alpha: no (un)premultiplication
    back, fmt = _roundtrip(tmp_path / "t.tif", frame, _fmt("tiff", "uint16", 16, "RGBA"))
    np.testing.assert_array_equal(back, frame)
    assert fmt.file_format == "tiff" and fmt.channels == 4
    assert _oiio_read(tmp_path / "t.tif")[1].get_int_attribute("oiio:BitsPerSample") == 16


@pytest.mark.parametrize(("pixel_type", "dtype"), [("uint8", np.uint8), ("uint16", np.uint16)])
def test_png_rgba_is_bit_exact(tmp_path: Path, pixel_type: str, dtype: type) -> None:
    top = np.iinfo(dtype).max
    frame = _rng().integers(0, top + 1, (H, W, 4)).astype(dtype)
    frame[0, 0] = (top, top // 2, 10, top // 4)
    bits = np.iinfo(dtype).bits
    back, fmt = _roundtrip(tmp_path / "p.png", frame, _fmt("png", pixel_type, bits, "RGBA"))
    assert back.dtype == dtype
    np.testing.assert_array_equal(back, frame)
    assert fmt.pixel_type == pixel_type
    assert _oiio_read(tmp_path / "p.png")[0].dtype == dtype


def test_png_rgb_without_alpha(tmp_path: Path) -> None:
    frame = _rng().integers(0, 256, (H, W, 3)).astype(np.uint8)
    back, fmt = _roundtrip(tmp_path / "p.png", frame, _fmt("png", "uint8", 8, "RGB"))
    np.testing.assert_array_equal(back, frame)
    assert fmt.channels == 3


def test_jpeg_is_close(tmp_path: Path) -> None:
    y, x = np.mgrid[0:H, 0:W]
    frame = np.stack([x * 12, y * 20, x * 5 + y * 5], axis=2).astype(np.uint8)
    back, fmt = _roundtrip(tmp_path / "j.jpg", frame, _fmt("jpeg", "uint8", 8, "RGB"))
    assert back.dtype == np.uint8 and back.shape == frame.shape
    assert np.abs(back.astype(int) - frame.astype(int)).mean() < 4
    assert fmt.file_format == "jpeg"


def test_bgr_red_is_stored_as_red(tmp_path: Path) -> None:
    frame = np.zeros((H, W, 3), np.uint8)
    frame[..., 2] = 255
    write_plate(tmp_path / "red.png", frame, _fmt("png", "uint8", 8, "RGB"))
    stored, _ = _oiio_read(tmp_path / "red.png")
    assert stored[0, 0].tolist() == [255, 0, 0]
    assert read_plate(tmp_path / "red.png")[0][0, 0].tolist() == [0, 0, 255]


def test_grey_plate_reads_as_bgr_and_writes_grey(tmp_path: Path) -> None:
    grey = _rng().integers(0, 65536, (H, W, 1)).astype(np.uint16)
    out = oiio.ImageOutput.create(str(tmp_path / "g.png"))
    assert out.open(str(tmp_path / "g.png"), oiio.ImageSpec(W, H, 1, "uint16"))
    assert out.write_image(grey)
    out.close()
    frame, fmt = read_plate(tmp_path / "g.png")
    assert frame.shape == (H, W, 3) and fmt.channels == 1
    np.testing.assert_array_equal(frame, np.repeat(grey, 3, axis=2))
    write_plate(tmp_path / "g2.png", frame, fmt)
    stored, spec = _oiio_read(tmp_path / "g2.png")
    assert spec.nchannels == 1
    np.testing.assert_array_equal(stored.reshape(H, W), grey[..., 0])


def test_frame_without_alpha_gets_opaque_alpha_for_rgba_format(tmp_path: Path) -> None:
    frame = np.full((H, W, 3), 0.25, np.float32)
    back, _ = _roundtrip(tmp_path / "o.exr", frame, _fmt("openexr", "half", 16, "RGBA"))
    assert back.shape == (H, W, 4) and (back[..., 3] == 1.0).all() and (back[..., :3] == 0.25).all()


# --- attributes and metadata -------------------------------------------------------------------

def test_exr_attributes_carry_over(tmp_path: Path) -> None:
    attributes = {"compression": "piz", "smpte:TimeCode": (0x01020304, 0),
                  "FramesPerSecond": (24000, 1001), "PixelAspectRatio": 2.0}
    fmt = PlateFormat(W, H, 3, ("R", "G", "B"), "half", 16, "openexr", attributes)
    _, back = _roundtrip(tmp_path / "a.exr", np.zeros((H, W, 3), np.float32), fmt)
    for name, value in attributes.items():
        assert back.attributes[name] == value, name
    with pytest.raises(TypeError):
        back.attributes["compression"] = "zip"  # type: ignore[index]


def test_dpx_attributes_carry_over(tmp_path: Path) -> None:
    attributes = {"dpx:Transfer": "Printing density", "dpx:Colorimetric": "Printing density",
                  "dpx:FrameRate": 24.0}
    fmt = PlateFormat(W, H, 3, ("R", "G", "B"), "uint16", 10, "dpx", attributes)
    _, back = _roundtrip(tmp_path / "a.dpx", np.zeros((H, W, 3), np.uint16), fmt)
    for name, value in attributes.items():
        assert back.attributes[name] == value, name


@pytest.mark.parametrize(("name", "fmt"), [
    ("m.exr", _fmt("openexr", "half", 16, "RGB")), ("m.png", _fmt("png", "uint16", 16, "RGB")),
    ("m.tif", _fmt("tiff", "uint16", 16, "RGB")), ("m.dpx", _fmt("dpx", "uint16", 10, "RGB")),
    ("m.jpg", _fmt("jpeg", "uint8", 8, "RGB"))])
def test_metadata_round_trip(tmp_path: Path, name: str, fmt: PlateFormat) -> None:
    metadata = {"source": "shot_010/plate.1001.dpx", "facefuse:model": "inswapper é", "n": "3"}
    write_plate(tmp_path / name, np.zeros((H, W, 3), np.uint8), fmt, metadata)
    assert read_metadata(tmp_path / name) == {"source": "shot_010/plate.1001.dpx",
                                              "model": "inswapper é", "n": "3"}


def test_metadata_absent_is_empty(tmp_path: Path) -> None:
    write_plate(tmp_path / "m.tif", np.zeros((H, W, 3), np.uint8), _fmt("tiff", "uint8", 8, "RGB"))
    assert read_metadata(tmp_path / "m.tif") == {}


# --- converting between formats ----------------------------------------------------------------

def test_plate_format_for_conversions(tmp_path: Path) -> None:
    half = _fmt("openexr", "half", 16, "RGBA")
    frame = np.zeros((H, W, 4), np.float32)
    png = plate_format_for(tmp_path / "x.png", half, frame)
    assert (png.file_format, png.pixel_type, png.bits_per_sample, png.channels) == (
        "png", "uint16", 16, 4)
    dpx = plate_format_for(tmp_path / "x.dpx", half, frame)
    assert (dpx.pixel_type, dpx.bits_per_sample) == ("uint16", 10)
    jpg = plate_format_for(tmp_path / "x.jpg", half, frame)
    assert (jpg.pixel_type, jpg.channels) == ("uint8", 3)
    ten = _fmt("dpx", "uint16", 10, "RGB")
    exr = plate_format_for(tmp_path / "x.exr", ten, frame[..., :3])
    assert (exr.pixel_type, exr.channels) == ("half", 3)
    same = plate_format_for(tmp_path / "y.dpx", ten, np.zeros((4, 6, 3), np.uint16))
    assert (same.width, same.height, same.bits_per_sample) == (6, 4, 10)
    bare = plate_format_for(tmp_path / "x.tif", None, frame)
    assert (bare.pixel_type, bare.channels) == ("float", 4)


def test_write_plate_converts_to_the_extension(tmp_path: Path) -> None:
    frame = np.array([[[0.0, 0.5, 1.0]]], np.float32).repeat(H, 0).repeat(W, 1)
    write_plate(tmp_path / "c.png", frame, _fmt("openexr", "half", 16, "RGB"))
    back, fmt = read_plate(tmp_path / "c.png")
    assert (fmt.file_format, fmt.pixel_type) == ("png", "uint16")
    assert back[0, 0].tolist() == [0, 32768, 65535]


# --- atomic writes and damaged files -----------------------------------------------------------

def test_write_leaves_no_temporary_files(tmp_path: Path) -> None:
    fmt = _fmt("openexr", "half", 16, "RGB")
    for _ in range(2):
        write_plate(tmp_path / "shot.1001.exr", np.zeros((H, W, 3), np.float32), fmt)
    assert [p.name for p in tmp_path.iterdir()] == ["shot.1001.exr"]


def test_interrupted_write_keeps_the_old_file(tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    target = tmp_path / "shot.1001.exr"
    fmt = _fmt("openexr", "half", 16, "RGB")
    write_plate(target, np.zeros((H, W, 3), np.float32), fmt)
    before = target.read_bytes()

    def fail(src: str, dst: str) -> None:
        raise OSError("disk went away")

    monkeypatch.setattr(plates.write.os, "replace", fail)
    with pytest.raises(OSError):
        write_plate(target, np.ones((H, W, 3), np.float32), fmt)
    assert target.read_bytes() == before
    assert [p.name for p in tmp_path.iterdir()] == ["shot.1001.exr"]


def test_is_complete(tmp_path: Path) -> None:
    rng = _rng()
    good = tmp_path / "good.exr"
    write_plate(good, rng.random((64, 64, 3), dtype=np.float32),
                PlateFormat(64, 64, 3, ("R", "G", "B"), "half", 16, "openexr"))
    assert is_complete(good)
    cut = tmp_path / "cut.exr"
    data = good.read_bytes()
    cut.write_bytes(data[:len(data) // 2])
    assert not is_complete(cut)
    (tmp_path / "zero.exr").write_bytes(b"")
    assert not is_complete(tmp_path / "zero.exr")
    assert not is_complete(tmp_path / "missing.exr")
    (tmp_path / "junk.exr").write_bytes(b"not an image at all" * 10)
    assert not is_complete(tmp_path / "junk.exr")
    assert not is_complete(tmp_path)


def test_truncated_jpeg_is_not_complete(tmp_path: Path) -> None:
    # libjpeg hands back grey-filled pixels for a cut file; only the error tells
    path = tmp_path / "cut.jpg"
    write_plate(path, _rng().integers(0, 256, (64, 64, 3)).astype(np.uint8),
                PlateFormat(64, 64, 3, ("R", "G", "B"), "uint8", 8, "jpeg"))
    assert is_complete(path)
    data = path.read_bytes()
    path.write_bytes(data[:len(data) // 2])
    assert not is_complete(path)
    with pytest.raises(InputError, match="damaged or truncated"):
        read_plate(path)


@pytest.mark.parametrize("content", [None, b"", b"not an image at all" * 10, "truncated"])
def test_read_errors_are_one_line_input_errors(tmp_path: Path, content: bytes | str | None) -> None:
    path = tmp_path / "bad.exr"
    if content == "truncated":
        write_plate(path, np.ones((64, 64, 3), np.float32),
                    PlateFormat(64, 64, 3, ("R", "G", "B"), "float", 32, "openexr"))
        data = path.read_bytes()
        path.write_bytes(data[:len(data) // 2])
    elif isinstance(content, bytes):
        path.write_bytes(content)
    with pytest.raises(InputError) as caught:
        read_plate(path)
    message = str(caught.value)
    assert "\n" not in message and str(path) in message and len(message) < 400


def test_unknown_extension_is_an_input_error(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="cannot write"):
        write_plate(tmp_path / "x.unknownext", np.zeros((H, W, 3), np.uint8),
                    _fmt("png", "uint8", 8, "RGB"))
    with pytest.raises(InputError, match="does not exist"):
        write_plate(tmp_path / "nope" / "x.png", np.zeros((H, W, 3), np.uint8),
                    _fmt("png", "uint8", 8, "RGB"))
    assert list(tmp_path.iterdir()) == []


def test_plate_format_is_frozen_and_checked() -> None:
    fmt = PlateFormat(1, 1, 3, ("R", "G", "B"), "uint16", 10, "dpx", {"Orientation": 1})
    assert fmt == PlateFormat(1, 1, 3, ("R", "G", "B"), "uint16", 10, "dpx", {"Orientation": 1})
    with pytest.raises(AttributeError):
        fmt.width = 2  # type: ignore[misc]
    with pytest.raises(ValueError):
        PlateFormat(1, 1, 3, ("R", "G", "B"), "int32", 32, "tiff")


def test_read_does_not_leave_an_oiio_error_pending(tmp_path: Path) -> None:
    (tmp_path / "junk.exr").write_bytes(b"x" * 50)
    with pytest.raises(InputError):
        read_plate(tmp_path / "junk.exr")
    assert not is_complete(tmp_path / "junk.exr")
    assert oiio.geterror() == ""


def test_failed_write_removes_the_temporary_file(tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    def boom(path: Path, spec: object, pixels: np.ndarray) -> None:
        Path(path).write_bytes(b"partial")
        raise InputError("cannot write: disk full")

    monkeypatch.setattr(plates.write, "_write_file", boom)
    with pytest.raises(InputError):
        write_plate(tmp_path / "a.png", np.zeros((H, W, 3), np.uint8),
                    _fmt("png", "uint8", 8, "RGB"))
    assert list(tmp_path.iterdir()) == []


def test_os_replace_is_what_publishes(tmp_path: Path) -> None:
    # the temporary name keeps the real extension and hides from sequence scans
    seen: list[str] = []
    real = os.replace

    def spy(src: str, dst: str) -> None:
        seen.append(Path(src).name)
        real(src, dst)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(plates.write.os, "replace", spy)
        write_plate(tmp_path / "shot.1001.dpx", np.zeros((H, W, 3), np.uint16),
                    _fmt("dpx", "uint16", 10, "RGB"))
    assert len(seen) == 1 and seen[0].startswith(".shot.1001.") and seen[0].endswith(".dpx")


def test_float_frame_to_10bit_dpx_rounds_and_clips(tmp_path: Path) -> None:
    frame = np.zeros((H, W, 3), np.float32)
    frame[0, 0] = (2.0, 0.5, -1.0)  # BGR
    frame[0, 1] = (1.0, 1 / 1023, 0.25)
    write_plate(tmp_path / "f.dpx", frame, _fmt("dpx", "uint16", 10, "RGB"))
    back, _ = read_plate(tmp_path / "f.dpx")
    assert back[0, 0].tolist() == _ten_bit(np.array([1023, 512, 0])).tolist()
    assert back[0, 1].tolist() == _ten_bit(np.array([1023, 1, 256])).tolist()


def test_exr_overscan_windows_survive(tmp_path: Path) -> None:
    fmt = PlateFormat(W, H, 3, ("R", "G", "B"), "half", 16, "openexr",
                      origin=(-4, -2), display_window=(0, 0, W - 8, H - 4))
    frame = np.full((H, W, 3), 0.5, np.float32)
    back, got = _roundtrip(tmp_path / "o.exr", frame, fmt)
    assert (got.origin, got.display_window, got.width) == ((-4, -2), (0, 0, W - 8, H - 4), W)
    np.testing.assert_array_equal(back, frame)
