"""The writers' resume check (shot.output.writers): a frame written with a fingerprint reads
back as finished with that fingerprint and no other, in every plate format; a damaged file never
does. Also the matte and patch pictures the compositing outputs hold."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from facefuse.errors import InputError
from facefuse.shot.output.writers import SequenceOutput, matte_frame, patch_frame

FINGERPRINT = "f" * 64
FORMATS = ("exr", "dpx", "tif", "png", "jpg")


def _frame() -> np.ndarray:
    ramp = np.linspace(0, 255, 32 * 24, dtype=np.float32).reshape(24, 32)
    return np.dstack([ramp, ramp[::-1], np.full_like(ramp, 128)]).astype(np.uint8)


@pytest.mark.parametrize("suffix", FORMATS)
def test_the_fingerprint_round_trips_through_every_format(tmp_path: Path, suffix: str):
    out = SequenceOutput(str(tmp_path / f"shot.####.{suffix}"), None)
    out.write(1001, _frame(), {"facefuse:fingerprint": FINGERPRINT, "facefuse:input": "x.mov"})
    assert out.path(1001) == tmp_path / f"shot.1001.{suffix}"
    assert out.finished(1001, FINGERPRINT)
    assert not out.finished(1001, "0" * 64), "another fingerprint is another render"
    assert not out.finished(1002, FINGERPRINT), "a frame never written is not finished"


@pytest.mark.parametrize("suffix", ("exr", "png"))
def test_a_truncated_or_empty_file_is_not_finished(tmp_path: Path, suffix: str):
    out = SequenceOutput(str(tmp_path / f"shot.#.{suffix}"), None)
    out.write(1, _frame(), {"facefuse:fingerprint": FINGERPRINT})
    data = out.path(1).read_bytes()
    out.path(1).write_bytes(data[: len(data) // 2])
    assert not out.finished(1, FINGERPRINT)
    out.path(1).write_bytes(b"")
    assert not out.finished(1, FINGERPRINT)


def test_a_one_channel_matte_keeps_its_fingerprint(tmp_path: Path):
    out = SequenceOutput(str(tmp_path / "matte.####.exr"), None, channels=("Y",))
    out.write(5, matte_frame(np.full((24, 32), 0.5, np.float32), (24, 32, 3)),
              {"facefuse:fingerprint": FINGERPRINT})
    assert out.finished(5, FINGERPRINT)


def test_an_output_needs_a_frame_token_and_no_file_where_its_folder_goes(tmp_path: Path):
    with pytest.raises(InputError, match="needs a frame token"):
        SequenceOutput(str(tmp_path / "shot.exr"), None)
    out = SequenceOutput(str(tmp_path / "missing" / "shot.####.exr"), None)
    assert not (tmp_path / "missing").exists(), "the folder is made with the first frame"
    out.write(1, _frame(), {"facefuse:fingerprint": FINGERPRINT})
    assert out.finished(1, FINGERPRINT)
    (tmp_path / "file").write_bytes(b"")
    with pytest.raises(InputError, match="is a file"):
        SequenceOutput(str(tmp_path / "file" / "shot.####.exr"), None)


def test_matte_and_patch_pictures():
    matte = np.zeros((4, 6), np.float32)
    matte[1:3, 2:4] = 0.25
    grey = matte_frame(matte, (4, 6, 3))
    assert grey.shape == (4, 6, 3) and np.array_equal(grey[..., 1], matte)
    assert not matte_frame(None, (4, 6, 3)).any()
    frame = np.full((4, 6, 3), 200, np.uint8)
    patch = patch_frame(frame, matte)
    assert patch.shape == (4, 6, 4) and patch.dtype == np.float32
    np.testing.assert_allclose(patch[..., 3], matte)
    expected = np.repeat((200 / 255) * matte[..., None], 3, axis=2)
    np.testing.assert_allclose(patch[..., :3], expected, rtol=1e-6)
    assert not patch_frame(frame, None).any()
