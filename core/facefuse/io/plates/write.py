"""Writing plates: a frame in the engine convention to a file of a given PlateFormat, atomically
and without clock time, so the same frame writes the same bytes.

A file system that refuses the bytes (full, over quota, read-only) is an OSError with its errno,
which `write_plate` turns into an OutputError (exit 6) naming the plate. OpenImageIO reports
such failures only as text, so when it fails the folder is probed with a write of our own,
whose errno says whether the storage is the cause; when the folder takes those bytes (another
writer may have freed space meanwhile) the plate is encoded once more into memory (Linux; a
second direct write elsewhere) and copied with our own writes, so a second failure is either
OpenImageIO's own (an InputError) or the storage's errno. libjpeg ends the process when a
write fails, so JPEG plates are encoded into a pipe that a thread drains into the file (where
/dev/fd exists), and the thread's own write errors are raised instead.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Mapping
from pathlib import Path
from types import MappingProxyType
from typing import Any

import numpy as np
import OpenImageIO as oiio

from ...errors import InputError
from ..files import create_temporary, is_write_failure, write_error
from ..write_behind import sync_and_release
from .formats import (
    CARRIED_ATTRIBUTES,
    PlateFormat,
    default_names,
    output_file_format,
    plate_format_for,
)
from .metadata import add_carrier, prefixed
from .pixels import NATURAL_BITS, frame_to_pixels
from .read import one_line

log = logging.getLogger(__name__)

# Formats where OIIO stamps the clock time unless told otherwise: left out, so renders repeat
# byte for byte.
DATED_FORMATS = frozenset({"tiff", "openexr"})
# Formats whose library ends the process when a write fails: encoded into a pipe instead.
STREAMED_FORMATS = frozenset({"jpeg"})
DPX_NAME_OFFSET, DPX_NAME_BYTES = 36, 100  # the image file name of a DPX file's header
FD_FOLDER = "/dev/fd"
PROC_FD_FOLDER = "/proc/self/fd"  # Linux: where a memory file can be opened by name
DRAIN_CHUNK = 1 << 16
PROBE_BLOCKS = 2  # more than the slack in the last block of a partly written file


def write_plate(path: Path, frame: np.ndarray, fmt: PlateFormat,
                metadata: Mapping[str, str] = MappingProxyType({})) -> None:
    """Write `frame` (H, W, 3|4) BGR(A) uint8/uint16/float32 to `path` in the format `fmt`.

    Pixel type, bit depth and channel layout follow `fmt` (a grey `fmt` gets Rec.709 luma; a
    4-channel `fmt` gets the frame's alpha, or opaque alpha if the frame has none); its
    attributes are written too. If the path's extension names another file format than
    `fmt.file_format`, the format is converted with `plate_format_for`. `metadata` keys are
    stored as "facefuse:<key>" string attributes (read them back with `read_metadata`).
    Atomic: written under a temporary name in the same folder, then renamed over `path`.
    No clock time is written (TIFF and EXR DateTime are left out), so the same frame writes
    the same bytes. A full disk, a quota, a read-only file system or a permission problem is
    an OutputError naming `path`; anything else OpenImageIO refuses is an InputError.
    """
    path = Path(path)
    _check_output_path(path)
    _check_frame(frame)
    target = output_file_format(path)
    if fmt.file_format != target:
        log.debug("converting %s plate format to %s for %s", fmt.file_format, target, path)
        fmt = plate_format_for(path, fmt, frame)
    pixels = _frame_to_pixels(frame, fmt)
    spec = _spec_for(fmt, pixels.shape[1], pixels.shape[0], prefixed(metadata))
    _write_atomically(path, spec, pixels)


def _write_atomically(path: Path, spec: Any, pixels: np.ndarray) -> None:
    """Write through a temporary beside `path`, renamed over it; errors name `path`."""
    try:  # created here (O_EXCL) so no existing file is ever opened under a temporary name
        handle, tmp = create_temporary(path, keep_suffix=True)
    except OSError as exc:
        raise write_error(path, exc) from exc
    os.close(handle)
    try:
        _write_file(tmp, spec, pixels)
        if output_file_format(path) == "dpx":
            _name_dpx_file(tmp, path)
        os.replace(tmp, path)
    except InputError as exc:  # the message names the output, not its temporary name
        _discard(tmp)
        raise InputError(str(exc).replace(str(tmp), str(path))) from exc
    except OSError as exc:
        _discard(tmp)
        if is_write_failure(exc):
            raise write_error(path, exc) from exc
        raise
    except BaseException:
        _discard(tmp)
        raise


def _name_dpx_file(tmp: Path, path: Path) -> None:
    """Put `path`'s name in the DPX header's file name field (SMPTE 268M: 100 bytes at offset
    36), where OpenImageIO wrote the temporary's path it was given."""
    field = path.name.encode("utf-8")[:DPX_NAME_BYTES - 1].ljust(DPX_NAME_BYTES, b"\0")
    with open(tmp, "r+b") as header:
        header.seek(DPX_NAME_OFFSET)
        header.write(field)
        header.flush()
        os.fsync(header.fileno())


def _discard(tmp: Path) -> None:
    """Remove a failed write's temporary; where the storage refuses even that (read-only), it
    stays for the next render's sweep, and the write's own error is what is raised."""
    try:
        tmp.unlink(missing_ok=True)
    except OSError as exc:
        log.warning("could not remove the temporary %s: %s", tmp, exc.strerror or exc)


def _check_output_path(path: Path) -> None:
    if not path.parent.is_dir():
        raise InputError(f"the output folder {path.parent} does not exist")
    if path.is_dir():
        raise InputError(f"{path} is a folder, not a file name")


def _check_frame(frame: np.ndarray) -> None:
    if frame.ndim != 3 or frame.shape[2] not in (3, 4):
        raise ValueError(f"a frame is (H, W, 3|4); got shape {frame.shape}")
    if frame.dtype not in (np.uint8, np.uint16, np.float32):
        raise ValueError(f"a frame is uint8, uint16 or float32; got {frame.dtype}")


def _frame_to_pixels(frame: np.ndarray, fmt: PlateFormat) -> np.ndarray:
    """BGR(A) frame -> OIIO's RGB(A) or Y(A) pixels in fmt's type (float32 for half/float)."""
    grey, alpha = _layout(fmt)
    if fmt.channels > 4:
        log.warning("only R, G, B and A are written; the %s plate had %d channels",
                    fmt.file_format, fmt.channels)
    return frame_to_pixels(frame, grey, alpha, fmt.pixel_type, fmt.bits_per_sample)


def _spec_for(fmt: PlateFormat, width: int, height: int, metadata: Mapping[str, str]) -> Any:
    grey, alpha = _layout(fmt)
    count = (1 if grey else 3) + int(alpha)
    names = default_names(count)
    short = tuple(name.rsplit(".", 1)[-1].upper() for name in fmt.channel_names)
    spec = oiio.ImageSpec(width, height, count, fmt.pixel_type)
    spec.channelnames = fmt.channel_names if short == names else names
    spec.alpha_channel = count - 1 if alpha else -1
    spec.x, spec.y = fmt.origin
    if fmt.display_window is not None:
        spec.full_x, spec.full_y, spec.full_width, spec.full_height = fmt.display_window
    if fmt.bits_per_sample != NATURAL_BITS[fmt.pixel_type]:
        spec.attribute("oiio:BitsPerSample", fmt.bits_per_sample)
    for name, value in fmt.attributes.items():
        _set_attribute(spec, name, value)
    if fmt.file_format != "tiff":  # values as they are; in TIFF the attribute picks the tag
        spec.attribute("oiio:UnassociatedAlpha", 1)
    for name, value in metadata.items():
        spec.attribute(name, value)
    if fmt.file_format in DATED_FORMATS:
        spec.attribute("DateTime", "")  # an empty DateTime is left out (not the clock time)
    add_carrier(spec, fmt.file_format, metadata)
    return spec


def _layout(fmt: PlateFormat) -> tuple[bool, bool]:
    """(grey, alpha) of what `write_plate` writes for `fmt`: at most Y/RGB plus A."""
    if fmt.channels <= 4:
        return fmt.channels in (1, 2), fmt.channels in (2, 4)
    return False, any(name.rsplit(".", 1)[-1].upper() == "A" for name in fmt.channel_names)


def _set_attribute(spec: Any, name: str, value: Any) -> None:
    kind = CARRIED_ATTRIBUTES.get(name)
    if kind is None or kind in ("string", "int", "float"):
        spec.attribute(name, value)
    else:
        spec.attribute(name, oiio.TypeDesc(kind), tuple(value))


def _write_file(path: Path, spec: Any, pixels: np.ndarray) -> None:
    """Encode `pixels` into the existing file `path` and fsync it. OSError (with its errno)
    when the storage refuses the bytes, InputError for anything else OIIO refuses."""
    writer = oiio.ImageOutput.create(str(path))
    if writer is None:
        raise InputError(f"cannot write {path}: {one_line(oiio.geterror())}")
    if str(writer.format_name()) in STREAMED_FORMATS and Path(FD_FOLDER).is_dir():
        _write_streamed(writer, path, spec, pixels)
        return
    error = _encode(writer, str(path), spec, pixels)
    if error is not None:
        # The folder takes more bytes now: either OIIO failed for another reason, or space was
        # freed meanwhile (another writer's temporary removed). One more try tells which.
        _probe_room(path)
        if hasattr(os, "memfd_create") and Path(PROC_FD_FOLDER).is_dir():
            _encode_in_memory(path, spec, pixels)
            return
        error = _encode(oiio.ImageOutput.create(str(path)), str(path), spec, pixels)
    if error is not None:
        _probe_room(path)
        raise InputError(f"cannot write {path}: {error}")
    with open(path, "rb") as written:
        sync_and_release(written.fileno())


def _encode_in_memory(path: Path, spec: Any, pixels: np.ndarray) -> None:
    """Encode into an anonymous memory file, then copy its bytes to `path` (and fsync) with
    our own writes: an OIIO failure is then OIIO's own (InputError), and the storage's is an
    OSError with its errno, whatever other writers do meanwhile."""
    memory = os.memfd_create("facefuse-plate", os.MFD_CLOEXEC)
    try:
        error = _encode(oiio.ImageOutput.create(str(path)), f"{PROC_FD_FOLDER}/{memory}",
                        spec, pixels)
        if error is not None:
            raise InputError(f"cannot write {path}: {error}")
        with open(path, "wb", buffering=0) as out:
            offset = 0
            while chunk := os.pread(memory, DRAIN_CHUNK, offset):
                _write_all(out, chunk)
                offset += len(chunk)
            sync_and_release(out.fileno())
    finally:
        os.close(memory)


def _encode(writer: Any, target: str, spec: Any, pixels: np.ndarray) -> str | None:
    """Write the image through `writer` to `target`; OIIO's error (one line), None if none."""
    if not writer.open(target, spec):
        return one_line(writer.geterror())
    ok = writer.write_image(pixels)
    error = writer.geterror()
    ok = writer.close() and ok
    if ok and not error:
        return None
    return one_line(error or writer.geterror() or "the writer failed")


def _probe_room(path: Path) -> None:
    """Raise the OSError the file system gives for a few more blocks appended to `path` (full,
    quota, read-only), or return when it takes them (then OIIO failed for another reason)."""
    try:
        block = max(os.statvfs(path.parent).f_bsize, 4096) if hasattr(os, "statvfs") else 4096
    except OSError:
        block = 4096
    with open(path, "ab", buffering=0) as probe:
        _write_all(probe, bytes(PROBE_BLOCKS * block))
        os.fsync(probe.fileno())


def _write_streamed(writer: Any, path: Path, spec: Any, pixels: np.ndarray) -> None:
    """Encode into a pipe whose bytes a thread writes to `path` (see the module docstring)."""
    read_end, write_end = os.pipe()
    drain = _Drain(read_end, path)
    thread = threading.Thread(target=drain.run, name="facefuse-plate-drain", daemon=True)
    thread.start()
    try:
        error = _encode(writer, f"{FD_FOLDER}/{write_end}", spec, pixels)
    finally:
        os.close(write_end)
        thread.join()
    if drain.error is not None:
        raise drain.error
    if error is not None:
        raise InputError(f"cannot write {path}: {error}")


class _Drain:
    """Copies a pipe into a file until the pipe closes, keeping the first write error (and
    reading on after it, so the encoder on the other end never blocks)."""

    def __init__(self, read_end: int, path: Path) -> None:
        self.read_end = read_end
        self.path = path
        self.error: OSError | None = None

    def run(self) -> None:
        try:
            with open(self.path, "wb", buffering=0) as out:
                while chunk := os.read(self.read_end, DRAIN_CHUNK):
                    _write_all(out, chunk)
                sync_and_release(out.fileno())
        except OSError as exc:
            self.error = exc
        finally:
            while os.read(self.read_end, DRAIN_CHUNK):
                pass
            os.close(self.read_end)


def _write_all(out: Any, data: bytes) -> None:
    """Write every byte through an unbuffered file (short writes continued)."""
    view = memoryview(data)
    while view:
        view = view[out.write(view):]
