"""How a plate is stored (`PlateFormat`) and the format an output plate is written in.

`plate_format_for` picks the format for a new file from the file name and a model plate;
`check_compression` and `with_compression` apply a sequence output's --compression.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import MappingProxyType
from typing import Any

import numpy as np
import OpenImageIO as oiio

from ...errors import InputError
from .pixels import NATURAL_BITS, PIXEL_TYPES

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
FLOAT_FORMATS = frozenset({"openexr", "tiff"})
HIGH_BIT_FORMATS = frozenset({"png", "tiff", "dpx"})
ALPHA_FREE_FORMATS = frozenset({"jpeg"})
# The compressions a sequence output may choose (OIIO's names), per format; the first is the
# default when neither the input plate nor the user names one (OIIO's own default).
# Lossy: EXR b44, b44a, dwaa, dwab (and pxr24 for float data; it is exact for half).
COMPRESSIONS = MappingProxyType({
    "openexr": ("zip", "none", "zips", "piz", "rle", "pxr24", "b44", "b44a", "dwaa", "dwab"),
    "tiff": ("zip", "none", "lzw"),
})


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


def output_file_format(path: Path) -> str:
    """OIIO's format name for writing `path` ("openexr", "dpx", ...); InputError if none."""
    writer = oiio.ImageOutput.create(str(path))
    if writer is None:
        oiio.geterror()
        kind = Path(path).suffix or "files without an extension"
        raise InputError(f"{path}: cannot write {kind}; use .exr, .dpx, .tif, .png or .jpg")
    return str(writer.format_name())


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
    return PlateFormat(width, height, channels, default_names(channels), pixel_type, bits,
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


def default_names(channels: int) -> tuple[str, ...]:
    """The channel names of a new plate of 1 to 4 channels: Y, YA, RGB or RGBA."""
    return {1: ("Y",), 2: ("Y", "A"), 3: ("R", "G", "B")}.get(channels, ("R", "G", "B", "A"))


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
