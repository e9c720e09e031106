import cv2
import numpy as np
import pytest

from facefuse.errors import InputError
from facefuse.io import files, images


def test_missing_empty_and_undecodable_files_are_user_errors(tmp_path):
    with pytest.raises(InputError, match="does not exist"):
        images.read_image(tmp_path / "nope.png")
    (tmp_path / "empty.png").write_bytes(b"")
    with pytest.raises(InputError, match="empty"):
        images.read_image(tmp_path / "empty.png")
    (tmp_path / "junk.jpg").write_bytes(b"not an image at all")
    with pytest.raises(InputError, match="not an image"):
        images.read_image(tmp_path / "junk.jpg")


@pytest.mark.parametrize("dtype,channels", [(np.uint8, 3), (np.uint8, 4), (np.uint16, 3),
                                            (np.uint16, 4)])
def test_png_round_trip_keeps_depth_and_alpha(tmp_path, dtype, channels):
    rng = np.random.default_rng(0)
    frame = rng.integers(0, np.iinfo(dtype).max, size=(20, 30, channels), dtype=dtype)
    path = tmp_path / "x.png"
    images.write_image(path, frame)
    back = images.read_image(path)
    assert back.dtype == dtype and back.shape == frame.shape
    np.testing.assert_array_equal(back, frame)


def test_grey_images_become_bgr(tmp_path):
    path = tmp_path / "g.png"
    cv2.imwrite(str(path), np.full((5, 5), 77, np.uint8))
    frame = images.read_image(path)
    assert frame.shape == (5, 5, 3) and frame[0, 0].tolist() == [77, 77, 77]


def test_write_is_atomic_and_leaves_no_temporary_files(tmp_path, monkeypatch):
    path = tmp_path / "out.png"
    images.write_image(path, np.zeros((4, 4, 3), np.uint8))
    before = path.read_bytes()

    def boom(*_args):
        raise OSError("disk full")

    monkeypatch.setattr(files.os, "replace", boom)  # images writes through io.files
    with pytest.raises(OSError):
        images.write_image(path, np.full((4, 4, 3), 255, np.uint8))
    assert path.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.png"]


def test_output_checks(tmp_path):
    images.check_writable_path(tmp_path / "missing" / "out.png")  # created when written
    assert not (tmp_path / "missing").exists()
    with pytest.raises(InputError, match="cannot write"):
        images.check_writable_path(tmp_path / "out.gif")
    images.check_writable_path(tmp_path / "out.jpg")


def test_jpeg_output_of_a_16_bit_frame_is_8_bit(tmp_path):
    frame = np.full((8, 8, 4), 65535, np.uint16)
    images.write_image(tmp_path / "o.jpg", frame)
    back = images.read_image(tmp_path / "o.jpg")
    assert back.dtype == np.uint8 and back.shape == (8, 8, 3) and back.min() >= 250
