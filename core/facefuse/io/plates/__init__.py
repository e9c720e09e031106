"""Plates (one frame of an image sequence) in and out through OpenImageIO, format kept.

`read_plate` gives a frame in the engine convention (types.py) plus the `PlateFormat` it was
stored in; `write_plate` writes a frame back in that format, so a 10-bit DPX plate comes out as
10-bit DPX, a half EXR as half EXR, with alpha, compression, colour space and timecode kept.

Pixel types. uint8 files -> uint8 frames. Integer files of 9..16 bits -> uint16 frames: OIIO
scales 10- and 12-bit codes to the full 16-bit range by bit replication (10-bit code c reads as
``c << 6 | c >> 4``, so 1023 -> 65535), and on writing it keeps the top bits (``v >> 6``),
which truncates. `write_plate` therefore rounds to the nearest code itself and hands OIIO the
replicated value, so a frame read from a 10-bit plate writes back bit-exact. half and float
files (and any other type: int16, uint32, double) -> float32 frames.

Alpha and colour values are kept exactly as stored, never (un)premultiplied: files are opened
with ``oiio:UnassociatedAlpha`` so OIIO does not premultiply straight (PNG, TGA, unassociated
TIFF) alpha on read, and the hint is passed on write so it does not divide by alpha either. A TIFF
keeps its associated/unassociated tag through the carried ``oiio:UnassociatedAlpha`` attribute.
EXR colour is premultiplied by that format's convention; converting EXR to PNG therefore stores
premultiplied colour: un-premultiply first if the PNG must be straight.
Only the first subimage (EXR part) and its R, G, B, A (or Y) channels are read.

The modules: formats (PlateFormat, the format chosen for an output, compressions), read
(pixels, metadata, completeness), write (atomic writes), metadata (facefuse's own attributes),
pixels (the array conversions, no file access).
"""

from .formats import (
    COMPRESSIONS,
    PlateFormat,
    check_compression,
    output_file_format,
    plate_format_for,
    with_compression,
)
from .read import is_complete, read_metadata, read_plate
from .write import write_plate

__all__ = ["COMPRESSIONS", "PlateFormat", "check_compression", "is_complete",
           "output_file_format", "plate_format_for", "read_metadata", "read_plate",
           "with_compression", "write_plate"]
