"""Plates (one frame of an image sequence) in and out through OpenImageIO, format kept.

`read_plate` gives a frame in the engine convention (types.py) plus the `PlateFormat` it was
stored in; `write_plate` writes a frame back in that format, so a 10-bit DPX plate comes out as
10-bit DPX, a half EXR as half EXR, with alpha, compression, colour space and timecode kept.

Pixel types. uint8 files -> uint8 frames. Integer files of 9..16 bits -> uint16 frames: OIIO
scales 10- and 12-bit codes to the full 16-bit range by bit replication (10-bit code c reads as
``c << 6 | c >> 4``, so 1023 -> 65535), and on writing it keeps the top bits (``v >> 6``),
which truncates. `write_plate` therefore rounds to the nearest code itself and hands OIIO the
replicated value, so a frame read from a 10-bit plate writes back bit-exact. half and float
files (and any other type: int16, uint32, double) -> float32 frames. The conversions live in
plate_pixels.py.

Alpha and colour values are kept exactly as stored, never (un)premultiplied: files are opened
with ``oiio:UnassociatedAlpha`` so OIIO does not premultiply straight (PNG, TGA, unassociated
TIFF) alpha on read, and the hint is passed on write so it does not divide by alpha either. A TIFF
keeps its associated/unassociated tag through the carried ``oiio:UnassociatedAlpha`` attribute.
EXR colour is premultiplied by that format's convention; converting EXR to PNG therefore stores
premultiplied colour: un-premultiply first if the PNG must be straight.
Only the first subimage (EXR part) and its R, G, B, A (or Y) channels are read.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import MappingProxyType
from typing import Any

import numpy as np
import OpenImageIO as oiio

from ..errors import InputError
from .files import create_temporary, is_write_failure, write_error
from .plate_pixels import (
    NATURAL_BITS,
    PIXEL_TYPES,
    REC709_LUMA_BGR,  # noqa: F401  (re-exported: part of this module's public API)
    frame_to_pixels,
    pixels_to_frame,
    read_type,
)

log = logging.getLogger(__name__)

# The attributes worth carrying from a plate to its output, with their OIIO types.
CARRIED_ATTRIBUTES = MappingProxyType({
    "compression": "string",
    "oiio:ColorSpace": "string",
    "oiio:UnassociatedAlpha": "int",
    "Orientation": "int",
    "PixelAspectRatio": "float",
    "smpte:TimeCode": "timecode",
    "FramesPerSecond": "rational",  # "rational2i" is not parsed by OIIO 3.0
    "dpx:FrameRate": "float",
    "dpx:Transfer": "string",
    "dpx:Colorimetric": "string",
})
# Kept when converting to another file format (the rest are specific to the format).
PORTABLE_ATTRIBUTES = frozenset({"oiio:ColorSpace", "oiio:UnassociatedAlpha", "Orientation",
                                 "PixelAspectRatio", "smpte:TimeCode", "FramesPerSecond"})
# Formats that drop arbitrary string attributes: our metadata goes into one JSON attribute.
METADATA_CARRIERS = MappingProxyType({"dpx": "dpx:UserData", "tiff": "ImageDescription",
                                      "jpeg": "ImageDescription"})
METADATA_PREFIX = "facefuse:"
FLOAT_FORMATS = frozenset({"openexr", "tiff"})
HIGH_BIT_FORMATS = frozenset({"png", "tiff", "dpx"})
ALPHA_FREE_FORMATS = frozenset({"jpeg"})
# The compressions a sequence output may choose (OIIO's names), per format; the first is the
# default when neither the input plate nor the user names one (OIIO's own default, as before).
# Lossy: EXR b44, b44a, dwaa, dwab (and pxr24 for float data; it is exact for half).
COMPRESSIONS = MappingProxyType({
    "openexr": ("zip", "none", "zips", "piz", "rle", "pxr24", "b44", "b44a", "dwaa", "dwab"),
    "tiff": ("zip", "none", "lzw"),
})
# Formats where OIIO stamps the clock time unless told otherwise: left out, so renders repeat
# byte for byte.
DATED_FORMATS = frozenset({"tiff", "openexr"})


@dataclass(frozen=True, slots=True)
class PlateFormat:
    """How a plate is stored on disk.

    width, height: pixels of the data window. channels, channel_names: as stored (("R", "G",
    "B", "A"), ("Y",), ...). pixel_type: "uint8" | "uint16" | "half" | "float".
    bits_per_sample: significant bits (10 for 10-bit DPX, 16 for half, 32 for float).
    file_format: OIIO's format name ("openexr", "dpx", "tiff", "png", "jpeg", ...).
    attributes: read-only name -> value of the CARRIED_ATTRIBUTES found in the file.
    origin: data window origin (x, y); display_window: (x, y, width, height) when it differs
    from the data window (EXR overscan), else None.
    """

    width: int
    height: int
    channels: int
    channel_names: tuple[str, ...]
    pixel_type: str
    bits_per_sample: int
    file_format: str
    attributes: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}),
                                          hash=False)
    origin: tuple[int, int] = (0, 0)
    display_window: tuple[int, int, int, int] | None = None

    def __post_init__(self) -> None:
        if self.pixel_type not in PIXEL_TYPES:
            raise ValueError(f"pixel_type {self.pixel_type!r} is not one of {PIXEL_TYPES}")
        if not isinstance(self.attributes, MappingProxyType):
            object.__setattr__(self, "attributes", MappingProxyType(dict(self.attributes)))


def read_plate(path: Path) -> tuple[np.ndarray, PlateFormat]:
    """Read a plate: (frame (H, W, 3|4) BGR(A), its PlateFormat).

    dtype uint8 (8-bit files), uint16 (9..16-bit integer files, scaled to 0..65535 as described
    in the module docstring) or float32 (half, float and other types). Grey becomes BGR (grey
    plus alpha BGRA). InputError for a missing, empty, unreadable or truncated file.
    """
    path = _check_input_file(Path(path))
    image = _open(path)
    try:
        spec = image.spec()
        fmt = _format_from_spec(spec, image.format_name())
        pixels = image.read_image(format=read_type(fmt.pixel_type))
        error = image.geterror()
    finally:
        image.close()
    if pixels is None or error:
        raise InputError(f"{path} is damaged or truncated: {_one_line(error)}")
    return pixels_to_frame(pixels, tuple(spec.channelnames), spec.alpha_channel), fmt


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
    the same bytes. A full disk or a permission problem is an InputError naming `path`.
    """
    path = Path(path)
    _check_output_path(path)
    _check_frame(frame)
    target = output_file_format(path)
    if fmt.file_format != target:
        log.debug("converting %s plate format to %s for %s", fmt.file_format, target, path)
        fmt = plate_format_for(path, fmt, frame)
    pixels = _frame_to_pixels(frame, fmt)
    spec = _spec_for(fmt, pixels.shape[1], pixels.shape[0], _prefixed(metadata))
    try:  # created here (O_EXCL) so no existing file is ever opened under a temporary name
        handle, tmp = create_temporary(path, keep_suffix=True)
    except OSError as exc:
        raise write_error(path, exc) from exc
    os.close(handle)
    try:
        _write_file(tmp, spec, pixels)
        os.replace(tmp, path)
    except InputError as exc:  # the message names the output, not its temporary name
        tmp.unlink(missing_ok=True)
        raise InputError(str(exc).replace(str(tmp), str(path))) from exc
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        if is_write_failure(exc):
            raise write_error(path, exc) from exc
        raise
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def plate_format_for(path: Path, like: PlateFormat | None, frame: np.ndarray) -> PlateFormat:
    """The format to write `frame` (H, W, 3|4) to `path` in, modelled on `like` when given.

    Same file format as `like`: `like` as it is (only the size follows the frame). Otherwise
    the pixel type is the closest the target holds, starting from `like`'s type (or the frame's
    dtype): float/half -> EXR keeps half/float (half for a bare float32 frame), TIFF float,
    PNG uint16, DPX 10-bit, JPEG and other formats uint8. uint16 (b bits) -> EXR half for
    b <= 10 else float, PNG 16-bit, TIFF/DPX b bits (10, 12 or 16), JPEG uint8. uint8 -> EXR
    half, everything else uint8. Grey stays grey; JPEG drops alpha. Only PORTABLE_ATTRIBUTES
    are carried to another format; without `like` a TIFF with alpha is tagged straight
    (unassociated), as the engine's frames are.
    """
    file_format = output_file_format(path)
    height, width, frame_channels = frame.shape
    if like is not None and like.file_format == file_format:
        return replace(like, width=width, height=height)
    pixel_type, bits = _pixel_type_for(file_format, like, frame.dtype)
    has_alpha = frame_channels == 4 and file_format not in ALPHA_FREE_FORMATS
    grey = like is not None and like.channels in (1, 2)
    channels = (1 if grey else 3) + int(has_alpha)
    return PlateFormat(width, height, channels, _default_names(channels), pixel_type, bits,
                       file_format, _portable_attributes(like, file_format, has_alpha))


def check_compression(path: Path, compression: str) -> None:
    """InputError unless the file format of `path` can be written with `compression`
    (COMPRESSIONS; formats without a choice, such as PNG, DPX and JPEG, take none)."""
    file_format = output_file_format(path)
    names = COMPRESSIONS.get(file_format)
    if names is None:
        raise InputError(f"--compression applies to EXR and TIFF sequences only, and "
                         f"{Path(path).name} is {file_format}, whose compression is fixed; "
                         "leave --compression out")
    if compression not in names:
        raise InputError(f"--compression {compression!r} is not one {file_format} takes; choose "
                         f"one of {', '.join(sorted(names))}")


def with_compression(fmt: PlateFormat, compression: str | None) -> PlateFormat:
    """`fmt` written with `compression` (an OIIO name checked by `check_compression`); None:
    `fmt` unchanged (the input plate's compression, or OIIO's default zip)."""
    if compression is None:
        return fmt
    return replace(fmt, attributes={**fmt.attributes, "compression": compression})


def read_metadata(path: Path) -> dict[str, str]:
    """Our metadata written by `write_plate`: key (without "facefuse:") -> value."""
    path = _check_input_file(Path(path))
    image = _open(path)
    try:
        spec = image.spec()
        found = {p.name: p.value for p in spec.extra_attribs}
    finally:
        image.close()
    ours = {k: str(v) for k, v in found.items() if k.startswith(METADATA_PREFIX)}
    for carrier in set(METADATA_CARRIERS.values()) & found.keys():
        ours.update(_decode_carrier(found[carrier]))
    return {k[len(METADATA_PREFIX):]: v for k, v in sorted(ours.items())}


def is_complete(path: Path) -> bool:
    """Whether `path` is a non-empty file OIIO opens and whose pixels all read without error."""
    path = Path(path)
    try:
        if not path.is_file() or path.stat().st_size == 0:
            return False
    except OSError:
        return False
    image = oiio.ImageInput.open(str(path))
    if image is None:
        oiio.geterror()
        return False
    try:
        pixels = image.read_image(format=image.spec().format)
        error = image.geterror()
    finally:
        image.close()
    return pixels is not None and not error


def output_file_format(path: Path) -> str:
    """OIIO's format name for writing `path` ("openexr", "dpx", ...); InputError if none."""
    writer = oiio.ImageOutput.create(str(path))
    if writer is None:
        oiio.geterror()
        kind = Path(path).suffix or "files without an extension"
        raise InputError(f"{path}: cannot write {kind}; use .exr, .dpx, .tif, .png or .jpg")
    return str(writer.format_name())


# --- reading -----------------------------------------------------------------------------------

def _check_input_file(path: Path) -> Path:
    if not path.exists():
        raise InputError(f"{path} does not exist")
    if path.is_dir():
        raise InputError(f"{path} is a folder, not an image")
    if path.stat().st_size == 0:
        raise InputError(f"{path} is empty (0 bytes)")
    return path


def _open(path: Path) -> Any:
    config = oiio.ImageSpec()
    config.attribute("oiio:UnassociatedAlpha", 1)
    image = oiio.ImageInput.open(str(path), config)
    if image is None:
        raise InputError(f"{path} is not an image facefuse can read: {_one_line(oiio.geterror())}")
    return image


def _one_line(message: str, limit: int = 200) -> str:
    lines = [line.strip() for line in str(message).splitlines() if line.strip()]
    text = lines[0] if lines else "unknown error"
    return text if len(text) <= limit else text[:limit - 3] + "..."


def _format_from_spec(spec: Any, file_format: str) -> PlateFormat:
    stored = str(spec.format)
    pixel_type = stored if stored in PIXEL_TYPES else "float"
    bits = spec.get_int_attribute("oiio:BitsPerSample", 0) or NATURAL_BITS[pixel_type]
    # extra_attribs, not getattribute(): OIIO 3.0's binding returns None for rational values
    attributes = {attr.name: _plain(attr.value) for attr in spec.extra_attribs
                  if attr.name in CARRIED_ATTRIBUTES and attr.value is not None}
    data_window = (spec.x, spec.y, spec.width, spec.height)
    display = (spec.full_x, spec.full_y, spec.full_width, spec.full_height)
    return PlateFormat(spec.width, spec.height, spec.nchannels, tuple(spec.channelnames),
                       pixel_type, bits, file_format, MappingProxyType(attributes),
                       (spec.x, spec.y), None if display == data_window else display)


def _plain(value: Any) -> Any:
    if isinstance(value, (tuple, list, np.ndarray)):
        return tuple(v.item() if isinstance(v, np.generic) else v for v in value)
    return value.item() if isinstance(value, np.generic) else value


# --- writing -----------------------------------------------------------------------------------

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
    names = _default_names(count)
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
    if metadata and fmt.file_format in METADATA_CARRIERS:
        _set_carrier(spec, METADATA_CARRIERS[fmt.file_format], metadata)
    return spec


def _layout(fmt: PlateFormat) -> tuple[bool, bool]:
    """(grey, alpha) of what `write_plate` writes for `fmt`: at most Y/RGB plus A."""
    if fmt.channels <= 4:
        return fmt.channels in (1, 2), fmt.channels in (2, 4)
    return False, any(name.rsplit(".", 1)[-1].upper() == "A" for name in fmt.channel_names)


def _default_names(channels: int) -> tuple[str, ...]:
    return {1: ("Y",), 2: ("Y", "A"), 3: ("R", "G", "B")}.get(channels, ("R", "G", "B", "A"))


def _set_attribute(spec: Any, name: str, value: Any) -> None:
    kind = CARRIED_ATTRIBUTES.get(name)
    if kind is None or kind in ("string", "int", "float"):
        spec.attribute(name, value)
    else:
        spec.attribute(name, oiio.TypeDesc(kind), tuple(value))


def _prefixed(metadata: Mapping[str, str]) -> dict[str, str]:
    return {(k if k.startswith(METADATA_PREFIX) else METADATA_PREFIX + k): str(v)
            for k, v in metadata.items()}


def _set_carrier(spec: Any, name: str, metadata: Mapping[str, str]) -> None:
    blob = json.dumps(dict(metadata), sort_keys=True)
    if name == "dpx:UserData":
        data = np.frombuffer(blob.encode("utf-8"), dtype=np.uint8)
        spec.attribute(name, oiio.TypeDesc(f"uint8[{data.size}]"), data)
    else:
        spec.attribute(name, blob)


def _decode_carrier(value: Any) -> dict[str, str]:
    """The facefuse:* entries of a JSON carrier attribute, {} if it holds something else."""
    if isinstance(value, (np.ndarray, tuple, list)):
        value = bytes(np.asarray(value, dtype=np.uint8)).rstrip(b"\0").decode("utf-8", "replace")
    try:
        found = json.loads(value)
    except (TypeError, ValueError):
        return {}
    if not isinstance(found, dict):
        return {}
    return {k: str(v) for k, v in found.items() if str(k).startswith(METADATA_PREFIX)}


def _write_file(path: Path, spec: Any, pixels: np.ndarray) -> None:
    writer = oiio.ImageOutput.create(str(path))
    if writer is None or not writer.open(str(path), spec):
        error = writer.geterror() if writer is not None else oiio.geterror()
        raise InputError(f"cannot write {path}: {_one_line(error)}")
    ok = writer.write_image(pixels)
    error = writer.geterror()
    ok = writer.close() and ok
    if not ok or error:
        raise InputError(f"cannot write {path}: {_one_line(error or writer.geterror())}")
    with open(path, "rb") as written:
        os.fsync(written.fileno())


# --- converting --------------------------------------------------------------------------------

def _pixel_type_for(file_format: str, like: PlateFormat | None,
                    dtype: np.dtype) -> tuple[str, int]:
    """(pixel_type, bits) for a new file of `file_format` (rules in plate_format_for)."""
    if like is not None:
        source, bits = like.pixel_type, like.bits_per_sample
    else:
        source = {"uint8": "uint8", "uint16": "uint16"}.get(np.dtype(dtype).name, "float")
        bits = NATURAL_BITS[source]
    if file_format == "openexr":
        if source in ("half", "float"):
            return ("half", 16) if like is None else (source, NATURAL_BITS[source])
        return ("half", 16) if bits <= 10 else ("float", 32)
    if source in ("half", "float"):
        if file_format in FLOAT_FORMATS:
            return "float", 32
        return {"png": ("uint16", 16), "dpx": ("uint16", 10)}.get(file_format, ("uint8", 8))
    if source == "uint16" and file_format in HIGH_BIT_FORMATS:
        keeps_bits = file_format != "png" and bits in (10, 12, 16)
        return "uint16", bits if keeps_bits else 16
    return "uint8", 8


def _portable_attributes(like: PlateFormat | None, file_format: str,
                         has_alpha: bool) -> MappingProxyType[str, Any]:
    if like is None:
        straight = has_alpha and file_format == "tiff"
        return MappingProxyType({"oiio:UnassociatedAlpha": 1} if straight else {})
    return MappingProxyType({k: v for k, v in like.attributes.items()
                             if k in PORTABLE_ATTRIBUTES})
