"""io.plates' compression choices: EXR and TIFF written with each read back with that compression
and the same pixels (the lossy EXR ones within a tolerance), zip by default, and a compression
the format has no such choice for refused in one sentence. Small generated frames, read back
with OIIO."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from facefuse.errors import InputError
from facefuse.io import plates
from tests.render_media import read_plate_oiio

WIDTH, HEIGHT = 64, 48
EXR_LOSSLESS = ("none", "zip", "zips", "piz", "rle", "pxr24")  # pxr24 is exact for half
EXR_LOSSY = ("b44", "b44a", "dwaa", "dwab")
TIFF = ("none", "lzw", "zip")


def _frame(dtype: type) -> np.ndarray:
    rng = np.random.default_rng(7)
    high = 65536 if dtype is np.uint16 else 256
    return rng.integers(0, high, (HEIGHT, WIDTH, 3)).astype(dtype)


def _half_frame() -> np.ndarray:
    rng = np.random.default_rng(3)
    smooth = np.linspace(0.0, 1.5, WIDTH * HEIGHT * 3, dtype=np.float32).reshape(HEIGHT, WIDTH, 3)
    noise = rng.normal(0.0, 0.01, smooth.shape).astype(np.float32)
    return (smooth + noise).astype(np.float16).astype(np.float32)  # representable in half


@pytest.mark.parametrize("name", EXR_LOSSLESS + EXR_LOSSY)
def test_exr_compressions_read_back_with_their_name_and_pixels(tmp_path: Path,
                                                               name: str) -> None:
    frame = _half_frame()
    path = tmp_path / "f.exr"
    fmt = plates.with_compression(plates.plate_format_for(path, None, frame), name)
    plates.check_compression(path, name)
    plates.write_plate(path, frame, fmt)
    pixels, spec = read_plate_oiio(path)
    assert spec.getattribute("compression") == name
    assert str(spec.format) == "half"
    rgb = frame[..., ::-1]
    if name in EXR_LOSSLESS:
        np.testing.assert_array_equal(pixels, rgb)
    else:
        assert name in EXR_LOSSY
        np.testing.assert_allclose(pixels, rgb, atol=0.06)


@pytest.mark.parametrize("name", TIFF)
@pytest.mark.parametrize("dtype", [np.uint8, np.uint16])
def test_tiff_compressions_read_back_with_their_name_and_exact_pixels(tmp_path: Path,
                                                                      name: str,
                                                                      dtype: type) -> None:
    frame = _frame(dtype)
    path = tmp_path / "f.tif"
    plates.check_compression(path, name)
    fmt = plates.with_compression(plates.plate_format_for(path, None, frame), name)
    plates.write_plate(path, frame, fmt)
    pixels, spec = read_plate_oiio(path)
    assert spec.getattribute("compression") == name
    np.testing.assert_array_equal(pixels, frame[..., ::-1])


def test_default_compression_is_zip(tmp_path: Path) -> None:
    frame = _half_frame()
    for name in ("f.exr", "f.tif"):
        path = tmp_path / name
        fmt = plates.with_compression(plates.plate_format_for(path, None, frame), None)
        plates.write_plate(path, frame, fmt)
        assert read_plate_oiio(path)[1].getattribute("compression") == "zip"


@pytest.mark.parametrize(("name", "compression", "words"), [
    ("f.png", "zip", "applies to EXR and TIFF sequences only"),
    ("f.dpx", "none", "applies to EXR and TIFF sequences only"),
    ("f.jpg", "none", "applies to EXR and TIFF sequences only"),
    ("f.exr", "lzw", "not one openexr takes"),
    ("f.tif", "dwaa", "not one tiff takes"),
])
def test_compression_refused_where_the_format_has_no_such_choice(name: str, compression: str,
                                                                 words: str) -> None:
    with pytest.raises(InputError, match=words) as caught:
        plates.check_compression(Path(name), compression)
    assert "\n" not in str(caught.value)


def test_a_dpx_header_names_the_file_not_its_temporary(tmp_path: Path) -> None:
    """DPX keeps an image file name in its header (SMPTE 268M, offset 36): the plate's own name,
    not the temporary it was written under before the rename."""
    fmt = plates.PlateFormat(8, 6, 3, ("R", "G", "B"), "uint16", 10, "dpx")
    path = tmp_path / "plate.1001.dpx"
    plates.write_plate(path, np.full((6, 8, 3), 512, np.uint16), fmt)
    header = path.read_bytes()[36:136]
    assert header.rstrip(b"\0") == b"plate.1001.dpx"
    assert b".tmp" not in path.read_bytes()
    frame, stored = plates.read_plate(path)
    assert stored.bits_per_sample == 10 and frame.shape == (6, 8, 3)
