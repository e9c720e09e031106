"""Still images in and out: bytes on disk <-> frames (see types.py for the frame convention)."""

from __future__ import annotations

from pathlib import Path

import cv2
import numpy as np

from ..errors import InputError
from .files import (
    atomic_write_bytes,
    check_folder_writable,
    check_regular_file,
    is_write_failure,
    make_folder,
    write_error,
)

EIGHT_BIT_ONLY = frozenset({".jpg", ".jpeg", ".webp", ".bmp"})
WRITABLE = EIGHT_BIT_ONLY | frozenset({".png", ".tif", ".tiff"})


def read_image_bytes(path: Path) -> bytes:
    """The file's bytes; InputError for a missing, unreadable or empty file."""
    path = Path(path)
    if not path.exists():
        raise InputError(f"{path} does not exist")
    if path.is_dir():
        raise InputError(f"{path} is a folder, not an image")
    check_regular_file(path, "image")
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise InputError(f"{path} cannot be read: {exc.strerror or exc}") from exc
    if not data:
        raise InputError(f"{path} is empty (0 bytes)")
    return data


def decode_image(data: bytes, label: str) -> np.ndarray:
    """Decode bytes to a frame: BGR or BGRA, uint8/uint16/float32 as stored (grey becomes BGR)."""
    frame = cv2.imdecode(np.frombuffer(data, dtype=np.uint8), cv2.IMREAD_UNCHANGED)
    if frame is None:
        raise InputError(f"{label} is not an image facefuse can read")
    if frame.ndim == 2:
        frame = cv2.cvtColor(frame, cv2.COLOR_GRAY2BGR)
    elif frame.shape[2] == 2:
        frame = cv2.cvtColor(frame[..., 0], cv2.COLOR_GRAY2BGR)
    if frame.dtype not in (np.uint8, np.uint16, np.float32):
        frame = frame.astype(np.float32)
    return frame


def read_image(path: Path) -> np.ndarray:
    """Read an image file into a frame (never modifies the file)."""
    return decode_image(read_image_bytes(path), str(path))


def check_writable_path(path: Path) -> None:
    """InputError unless `path` can be written as an image: a known extension, not a folder,
    and a folder that is writable or, when missing, can be created (write_image creates it;
    this check creates nothing)."""
    path = Path(path)
    if path.suffix.lower() not in WRITABLE:
        raise InputError(f"{path}: cannot write {path.suffix or 'files without an extension'}; "
                         f"use one of {', '.join(sorted(WRITABLE))}")
    if path.is_dir():
        raise InputError(f"{path} is a folder, not a file name")
    check_folder_writable(path.parent)


def encode_image(frame: np.ndarray, suffix: str) -> bytes:
    """Encode a frame for the given extension; 8-bit-only formats get an 8-bit frame."""
    suffix = suffix.lower()
    if suffix in EIGHT_BIT_ONLY and frame.dtype != np.uint8:
        frame = _to_uint8(frame)
    if suffix == ".png" and frame.dtype == np.float32:
        frame = np.clip(np.rint(frame * 65535.0), 0, 65535).astype(np.uint16)
    if suffix in {".jpg", ".jpeg"} and frame.shape[2] == 4:
        frame = frame[..., :3]
    ok, buffer = cv2.imencode(suffix, frame)
    if not ok:
        raise InputError(f"OpenCV cannot encode a {frame.dtype} image as {suffix}")
    return buffer.tobytes()


def write_image(path: Path, frame: np.ndarray) -> None:
    """Write atomically: encode, write a temporary file beside `path`, then rename over it.
    A missing folder is created; a full disk or a permission problem is an InputError."""
    path = Path(path)
    check_writable_path(path)
    data = encode_image(frame, path.suffix)
    make_folder(path.parent)
    try:
        atomic_write_bytes(path, data)
    except OSError as exc:
        if is_write_failure(exc):
            raise write_error(path, exc) from exc
        raise


def _to_uint8(frame: np.ndarray) -> np.ndarray:
    if frame.dtype == np.uint16:
        return np.rint(frame.astype(np.float32) / 257.0).astype(np.uint8)
    return np.clip(np.rint(frame.astype(np.float32) * 255.0), 0, 255).astype(np.uint8)
