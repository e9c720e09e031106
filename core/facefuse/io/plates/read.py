"""Reading plates: a frame in the engine convention with its PlateFormat, facefuse's metadata,
and whether a file is whole."""

from __future__ import annotations

from pathlib import Path
from types import MappingProxyType
from typing import Any

import numpy as np
import OpenImageIO as oiio

from ...errors import InputError
from .formats import CARRIED_ATTRIBUTES, PlateFormat
from .metadata import found_metadata
from .pixels import NATURAL_BITS, PIXEL_TYPES, pixels_to_frame, read_type


def read_plate(path: Path) -> tuple[np.ndarray, PlateFormat]:
    """Read a plate: (frame (H, W, 3|4) BGR(A), its PlateFormat).

    dtype uint8 (8-bit files), uint16 (9..16-bit integer files, scaled to 0..65535 as described
    in the package docstring) or float32 (half, float and other types). Grey becomes BGR (grey
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
        raise InputError(f"{path} is damaged or truncated: {one_line(error)}")
    return pixels_to_frame(pixels, tuple(spec.channelnames), spec.alpha_channel), fmt


def read_metadata(path: Path) -> dict[str, str]:
    """Our metadata written by `write_plate`: key (without "facefuse:") -> value."""
    path = _check_input_file(Path(path))
    image = _open(path)
    try:
        spec = image.spec()
        found = {p.name: p.value for p in spec.extra_attribs}
    finally:
        image.close()
    return found_metadata(found)


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


def one_line(message: str, limit: int = 200) -> str:
    """The first non-blank line of an OIIO error message, cut to `limit` characters."""
    lines = [line.strip() for line in str(message).splitlines() if line.strip()]
    text = lines[0] if lines else "unknown error"
    return text if len(text) <= limit else text[:limit - 3] + "..."


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
        raise InputError(f"{path} is not an image facefuse can read: {one_line(oiio.geterror())}")
    return image


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
