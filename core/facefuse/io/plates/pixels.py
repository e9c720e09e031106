"""Pixel conversion between engine frames and the arrays OpenImageIO reads and writes.

Engine frames are (H, W, 3|4) BGR(A), uint8, uint16 or float32 (types.py); OIIO's arrays are
(H, W, C) in the file's channel order (RGB(A), Y(A), ...). Integer types are converted by
rounding to the nearest code of the plate's bit depth and, for uint16 plates of fewer than 16
bits, bit replication: OIIO reads a 10-bit code c as ``c << 6 | c >> 4`` and writes ``v >> 6``, so a
replicated value writes back the exact code (see write.py). No file access here.
"""

from __future__ import annotations

from collections.abc import Sequence
from types import MappingProxyType

import cv2
import numpy as np

PIXEL_TYPES = ("uint8", "uint16", "half", "float")
NATURAL_BITS = MappingProxyType({"uint8": 8, "uint16": 16, "half": 16, "float": 32})
REC709_LUMA_BGR = (0.0722, 0.7152, 0.2126)


def read_type(pixel_type: str) -> str:
    """The type to ask OIIO for when reading a plate of `pixel_type`: uint8, uint16 or float."""
    return pixel_type if pixel_type in ("uint8", "uint16") else "float"


def pixels_to_frame(pixels: np.ndarray, channel_names: tuple[str, ...],
                    alpha_channel: int) -> np.ndarray:
    """OIIO's (H, W, C) or (H, W) pixels -> BGR(A) frame (a new contiguous array, same dtype).

    `channel_names` and `alpha_channel` are the file's (OIIO's ``spec.channelnames`` and
    ``spec.alpha_channel``, -1 when none is flagged); grey becomes BGR, grey plus alpha BGRA.
    """
    if pixels.ndim == 2:
        pixels = pixels[..., np.newaxis]
    return pick_channels(pixels, _bgr_order(channel_names, alpha_channel))


def pick_channels(pixels: np.ndarray, order: Sequence[int]) -> np.ndarray:
    """A new contiguous (H, W, len(order)) array whose channel c is ``pixels[..., order[c]]``,
    for the uint8, uint16 and float32 arrays frames and plates hold.

    The same values as ``pixels[..., order]``, copied by OpenCV's channel mixer: numpy's fancy
    indexing takes 20-36 ms CPU for a 1080p frame here, this 0.5-5 ms (CHANGELOG.md)."""
    source = np.ascontiguousarray(pixels)
    out = np.empty(source.shape[:2] + (len(order),), source.dtype)
    pairs = [index for target, picked in enumerate(order) for index in (picked, target)]
    cv2.mixChannels([source], [out], pairs)
    return out


def _bgr_order(names: tuple[str, ...], alpha: int) -> tuple[int, ...]:
    """Channel indices that make B, G, R (and A when the plate has alpha)."""
    short = [name.rsplit(".", 1)[-1].upper() for name in names]
    if alpha < 0 and "A" in short:
        alpha = short.index("A")
    tail = (alpha,) if alpha >= 0 else ()
    if {"R", "G", "B"} <= set(short):
        return (short.index("B"), short.index("G"), short.index("R")) + tail
    if len(names) >= 3:
        return (2, 1, 0) + (tail if alpha > 2 else ())
    return (0, 0, 0) + (tail if alpha > 0 else ())


def frame_to_pixels(frame: np.ndarray, grey: bool, alpha: bool, pixel_type: str,
                    bits: int) -> np.ndarray:
    """BGR(A) frame -> OIIO's RGB(A) or Y(A) pixels in `pixel_type` (float32 for half/float).

    `grey` writes Rec.709 luma instead of RGB; `alpha` adds the frame's alpha (opaque when the
    frame has none). Integer types hold `bits`-bit codes, bit-replicated to 16 bits for uint16.
    """
    if grey:
        pixels = _luma(frame)
    else:  # one copy that reorders the channels
        pixels = pick_channels(frame, (2, 1, 0, 3) if alpha and frame.shape[2] == 4 else (2, 1, 0))
    if alpha and pixels.shape[2] in (1, 3):
        pixels = np.concatenate([pixels, frame[..., 3:] if frame.shape[2] == 4
                                 else _opaque(frame)], axis=2)
    return np.ascontiguousarray(_convert(pixels, pixel_type, bits))


def _luma(frame: np.ndarray) -> np.ndarray:
    """Rec.709 luma (H, W, 1) of a BGR(A) frame, in the frame's dtype."""
    luma = np.tensordot(_as_unit_float(frame[..., :3]), REC709_LUMA_BGR, axes=([2], [0]))
    return _from_unit_float(luma[..., np.newaxis].astype(np.float32), frame.dtype)


def _opaque(frame: np.ndarray) -> np.ndarray:
    top = 1.0 if frame.dtype == np.float32 else np.iinfo(frame.dtype).max
    return np.full(frame.shape[:2] + (1,), top, dtype=frame.dtype)


def _as_unit_float(pixels: np.ndarray) -> np.ndarray:
    if pixels.dtype == np.float32:
        return pixels
    return pixels.astype(np.float32) / float(np.iinfo(pixels.dtype).max)


def _from_unit_float(pixels: np.ndarray, dtype: np.dtype) -> np.ndarray:
    if dtype == np.float32:
        return pixels
    top = np.iinfo(dtype).max
    return np.rint(np.clip(pixels, 0.0, 1.0) * top).astype(dtype)


def _convert(pixels: np.ndarray, pixel_type: str, bits: int) -> np.ndarray:
    """Pixels to the array OIIO gets: uint8, uint16 (bit-replicated codes) or float32."""
    if pixel_type in ("half", "float"):
        return _as_unit_float(pixels)
    if pixels.dtype == np.dtype(pixel_type) and bits == NATURAL_BITS[pixel_type]:
        return pixels
    top = (1 << bits) - 1
    if pixels.dtype == np.uint16:  # integer rounding to the nearest code: exact and faster
        codes = (pixels.astype(np.uint32) * top + 32767) // 65535
    else:
        codes = np.rint(np.clip(_as_unit_float(pixels), 0.0, 1.0) * top).astype(np.uint32)
    if pixel_type == "uint8":
        return codes.astype(np.uint8)
    return _replicate(codes, bits).astype(np.uint16)


def _replicate(codes: np.ndarray, bits: int) -> np.ndarray:
    """`bits`-bit codes -> 16-bit values the way OIIO reads them (10-bit c -> c<<6 | c>>4)."""
    value = codes << (16 - bits)
    shift = 16 - bits
    while shift > 0:
        value |= codes >> (bits - shift) if bits > shift else codes << (shift - bits)
        shift -= bits
    return value
