"""YUV <-> BGR conversions rounded once: the reader's chroma upsampling and matrix (8-bit, and
10-bit limited range), the writer's matrix and chroma subsampling (at the siting the reader
reads, see subsample_chroma).

swscale converts 4:4:4 YUV to BGR in fixed point and rounds about 0.4 % of limited-range values
one level too high (and 1 % of BGR -> YUV values); its 4:4:4 -> BGR step is also the most costly
part of decoding a frame (about 15 ms CPU at 1080p). Here the matrix runs in float32 (OpenCV's
SIMD arithmetic; on upsampled chroma numpy's, one IEEE operation at a time, which no OpenCV
build fuses differently at the ragged end of a row) and rounds once to the nearest level (ties
to even), the same as the float64 formula rounded:

    limited range: Y' = (Y - 16) * 255/219, Cb' = (Cb - 128) * 255/224 (Cr' alike)
    full range:    Y' = Y,                  Cb' = Cb - 128
    R = Y' + 2(1 - Kr) Cr',  B = Y' + 2(1 - Kb) Cb'
    G = Y' - (2Kb(1 - Kb) Cb' + 2Kr(1 - Kr) Cr') / Kg

and its inverse for the writer. float32 can round a value the other way from float64 only
within about 3e-5 of a half level: measured 0 to 1e-5 of values on real clips
(docs/performance.md), 29 of 391 000 on uniformly random BT.601 full-range pictures, every one
a tie.

Reading, the chroma of 4:2:0 and 4:2:2 pictures is upsampled here too, bilinearly (the lowest
order filter that honours the chroma siting: it never overshoots, and each pixel depends only
on its two nearest samples each way, so any box converts from its own neighbourhood). The
siting is MPEG-2's, which H.264, HEVC and MPEG-4 decoders report when a stream does not signal
one: horizontally co-sited with the even luma columns, vertically (4:2:0) midway between the
two luma rows; JPEG-family codecs (mjpeg, ...) site chroma midway horizontally too. PyAV 18
exposes neither the frame's nor the stream's chroma location, so the siting follows the codec
(``chroma_centred``); a stream that signals another siting (e.g. BT.2020's top-left) is read
as MPEG-2's, a quarter chroma sample off vertically. Edges repeat the outermost sample. With
weights 1/2, 1/4 and 3/4 the upsampled chroma is exact in float32 (multiples of 1/16 below 256)
and goes into the matrix unrounded, so the whole conversion rounds once; and as every step is
elementwise, a box converted on its own (``yuv_to_bgr`` with a box) is bit-identical to the
same box of the whole picture.

The matrix is the one the picture is tagged with, read as swscale reads it: BT.709, BT.601
(BT.470BG, SMPTE 170M, and untagged), FCC, SMPTE 240M and BT.2020 non-constant luminance; full
range when tagged JPEG range or a ``yuvj`` format, else limited. Other tags return None: the
caller keeps swscale's conversion for them.

10-bit pictures (yuv420p10le, yuv422p10le, yuv444p10le: ProRes 422, DNxHR 444, HEVC Main10)
are read the same way to BGR uint16 at 16-bit scale (0..65535), limited range only: the same
formula on the levels divided by 4 and the result times 257, i.e.

    Y' = (Y - 64) * 65535/876,  Cb' = (Cb - 512) * 65535/896 (Cr' alike)

so Y 940 is 65535 and Y 64 is 0, the inverse of the writer's 10-bit matrix (bgr_to_yuv444).
(swscale's bgr48 gives Y 940 as 65283, 0.38 % short, so its round trips darkened white by up
to 3 levels.) The upsampled 10-bit chroma (less 512: integers below 512 in magnitude, weights
multiples of 1/4 applied twice) is a multiple of 1/16 below 512, 14 significant bits, so it
too is exact in float32 and the conversion rounds once. At 16-bit output scale float32 leaves
only 8 bits below a level, so ties are wider: float32 rounds a value the other way from
float64 only within about 0.01 of a half 16-bit level (a 16-bit level is 1/64 of a 10-bit
one): 0.15 % of values on a real clip, 0.1 % on random planes (docs/performance.md).
10-bit full range (Y 0..1023, whose scale is not four times 8-bit's) is left to swscale, as
the writer leaves it.
"""

from __future__ import annotations

from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

import cv2
import numpy as np

from .common import SUBSAMPLED_8BIT

# AVColorSpace values -> (Kr, Kb); 2 is "unspecified", which swscale converts as BT.601.
_LUMA_WEIGHTS = MappingProxyType({
    1: (0.2126, 0.0722),  # BT.709
    2: (0.299, 0.114), 5: (0.299, 0.114), 6: (0.299, 0.114),  # BT.601
    4: (0.30, 0.11),  # FCC
    7: (0.212, 0.087),  # SMPTE 240M
    9: (0.2627, 0.0593),  # BT.2020 non-constant luminance
})
RANGE_JPEG = 2  # AVColorRange
# How the reader turns YUV into BGR: 8-bit YUV and 10-bit limited-range planar YUV through this
# module (its own chroma upsampling at the codec's siting, then the matrix, rounded once), the rest
# through swscale. Part of a render's fingerprint.
READER_VERSION = 4
STRIP_ROWS = 64  # the writer converts in strips of this many rows (stays in cache)
BAND_PIXELS = STRIP_ROWS * 1920  # the reader's bands: at least STRIP_ROWS rows, about this size


@dataclass(frozen=True, slots=True)
class YuvMatrix:
    """One YUV <-> RGB matrix: luma weights ``kr``, ``kb`` and the range (full: 0..255 for Y
    and 128 +- 127.5 for chroma; limited: Y 16..235, chroma 16..240)."""

    kr: float
    kb: float
    full_range: bool

    def to_bgr(self) -> np.ndarray:
        """float64 (3, 4): rows B, G, R; columns Y, Cb, Cr and the constant term."""
        kr, kb = self.kr, self.kb
        kg = 1.0 - kr - kb
        ys, cs, y0 = (1.0, 1.0, 0.0) if self.full_range else (255 / 219, 255 / 224, 16.0)
        rows = np.array([[ys, cs * 2 * (1 - kb), 0.0],
                         [ys, -cs * 2 * kb * (1 - kb) / kg, -cs * 2 * kr * (1 - kr) / kg],
                         [ys, 0.0, cs * 2 * (1 - kr)]])
        return np.hstack([rows, -(rows @ np.array([y0, 128.0, 128.0]))[:, None]])

    def from_bgr(self) -> np.ndarray:
        """float64 (3, 4): rows Y, Cb, Cr; columns B, G, R and the constant term."""
        kr, kb = self.kr, self.kb
        kg = 1.0 - kr - kb
        weights = np.array([[kb, kg, kr],
                            [0.5, -0.5 * kg / (1 - kb), -0.5 * kr / (1 - kb)],
                            [-0.5 * kb / (1 - kr), -0.5 * kg / (1 - kr), 0.5]])
        ys, cs, y0 = (1.0, 1.0, 0.0) if self.full_range else (219 / 255, 224 / 255, 16.0)
        return np.hstack([np.diag([ys, cs, cs]) @ weights, np.array([[y0], [128.0], [128.0]])])


def matrix_for(colorspace: int, color_range: int, pixel_format: str) -> YuvMatrix | None:
    """The matrix swscale applies to a picture with these tags (AVColorSpace, AVColorRange and
    the pixel format's name), or None for a tag this module does not convert."""
    weights = _LUMA_WEIGHTS.get(int(colorspace))
    if weights is None:
        return None
    full = int(color_range) == RANGE_JPEG or pixel_format.startswith("yuvj")
    return YuvMatrix(weights[0], weights[1], full)


def yuv444_to_bgr(y: np.ndarray, cb: np.ndarray, cr: np.ndarray,
                  matrix: YuvMatrix) -> np.ndarray:
    """BGR uint8 (H, W, 3) from three uint8 (H, W) planes of one 4:4:4 picture (views allowed),
    each value the formula of the module docstring rounded to the nearest level and clipped.
    Converted in bands of rows, so the temporaries stay in the CPU's cache."""
    out = np.empty((*y.shape, 3), np.uint8)
    coefficients = matrix.to_bgr()
    for top in range(0, y.shape[0], STRIP_ROWS):
        rows = slice(top, top + STRIP_ROWS)
        _matrix_into(y[rows], cb[rows], cr[rows], coefficients, out[rows])
    return out


def _matrix_into(luma: np.ndarray, cb: np.ndarray, cr: np.ndarray, coefficients: np.ndarray,
                 out: np.ndarray) -> None:
    """Write the BGR of one band of uint8 planes into `out` (h, w, 3); every step is
    elementwise, so a pixel's value does not depend on the band around it."""
    (by, bu, _, bc), (gy, gu, gv, gc), (ry, _, rv, rc) = coefficients
    chroma = cv2.addWeighted(cb, gu, cr, gv, gc, dtype=cv2.CV_32F)
    cv2.merge([cv2.addWeighted(luma, by, cb, bu, bc),
               cv2.addWeighted(luma, gy, chroma, 1.0, 0.0, dtype=cv2.CV_8U),
               cv2.addWeighted(luma, ry, cr, rv, rc)], dst=out)


def _centred_matrix_into(luma: np.ndarray, cb: np.ndarray, cr: np.ndarray,
                         weights: tuple[np.float32, ...], out: np.ndarray) -> None:
    """_matrix_into for float32 chroma less its zero (128, 10-bit 512; upsampled or not),
    `weights` from _centred_weights: luma (Y - 16) * 255/219 (limited range; full range: Y;
    10-bit: (Y - 64) * 65535/876) plus each chroma product, one IEEE operation at a time
    (numpy's products, OpenCV's sums to `out`'s uint8 or uint16, exact to the last bit on
    every build), so no OpenCV build's fused multiply-adds make a band's ragged end differ."""
    y_scale, y_zero, bu, gu, gv, rv = weights
    depth = cv2.CV_16U if out.dtype == np.uint16 else cv2.CV_8U
    scaled = np.subtract(luma, y_zero, dtype=np.float32)
    if y_scale != 1.0:
        scaled *= y_scale
    green = np.multiply(cb, gu)
    green += np.multiply(cr, gv)
    cv2.merge([cv2.add(scaled, term, dtype=depth)
               for term in (np.multiply(cb, bu), green, np.multiply(cr, rv))], dst=out)


def _centred_weights(matrix: YuvMatrix, bits: int = 8) -> tuple[np.float32, ...]:
    """float32 (luma scale, luma zero, Cb to B, Cb to G, Cr to G, Cr to R) of a matrix, for
    8-bit levels to 8-bit BGR, or (bits 10, limited range) 10-bit levels to 16-bit BGR: the
    8-bit weights times 257/4, the luma zero 64."""
    (ys, bu, _, _), (_, gu, gv, _), (_, _, rv, _) = matrix.to_bgr()
    zero = 0.0 if matrix.full_range else 16.0
    scale, levels = (257 / 4, 4.0) if bits == 10 else (1.0, 1.0)
    return tuple(np.float32(w) for w in (ys * scale, zero * levels, bu * scale, gu * scale,
                                         gv * scale, rv * scale))


# Chroma upsampling (see the module docstring) ---------------------------------------------------
Box = tuple[int, int, int, int]  # x0, y0, x1, y1 in picture pixels, x1/y1 exclusive
# JPEG-family decoders site 4:2:x chroma midway between luma columns; the others as MPEG-2 does.
_CENTRED_CODECS = frozenset({"mjpeg", "mjpegb", "jpegls", "ljpeg", "amv", "smvjpeg"})


@dataclass(frozen=True, slots=True, eq=False)
class YuvPlanes:
    """One YUV picture as planes (views of the picture's buffers where they can be): luma `y`
    (H, W); `cb`, `cr` (ceil(H / down), ceil(W / across)); uint8, or for `bits` 10 uint16
    10-bit levels (limited range only; converted to BGR uint16); `across`, `down`: the chroma
    subsampling (2 or 1 each way: 4:2:0 is 2, 2); `centred`: chroma sits midway between luma
    columns (JPEG) rather than on the even ones (MPEG-2); `matrix`: the conversion."""

    y: np.ndarray
    cb: np.ndarray
    cr: np.ndarray
    across: int
    down: int
    centred: bool
    matrix: YuvMatrix
    bits: int = 8


def chroma_centred(codec_name: str) -> bool:
    """Whether a decoder of this codec (e.g. "h264", "mjpeg") sites 4:2:x chroma midway between
    luma columns (the JPEG family) rather than on the even ones (MPEG-2, H.264, HEVC, ...)."""
    return codec_name in _CENTRED_CODECS


def yuv_to_bgr(planes: YuvPlanes, box: Box | None = None,
               out: np.ndarray | None = None) -> np.ndarray:
    """BGR (h, w, 3) of the whole picture or of `box` (inside the picture), uint8 (uint16 at
    16-bit scale for 10-bit planes): the chroma upsampled bilinearly at the planes' siting,
    edges repeated, then the matrix, rounded once and clipped. A box comes out bit-identical to
    the same pixels of the whole conversion: it is widened to the chroma grid, read with the
    one chroma sample of margin the filter needs, and every step is elementwise.
    out: where to write them instead of a new array ((h, w, 3) of that type, a view of a larger
    frame allowed), for a box that starts on the chroma grid (ValueError otherwise).
    Converted in bands of rows (_band_rows), so the temporaries stay in the CPU's cache."""
    height, width = planes.y.shape
    x0, y0, x1, y1 = box if box is not None else (0, 0, width, height)
    left, top = x0 - x0 % planes.across, y0 - y0 % planes.down
    deep = planes.bits == 10
    if out is not None and (left, top) != (x0, y0):
        raise ValueError(f"a box converted into `out` starts on the chroma grid, not at {x0, y0}")
    if out is None:
        out = np.empty((y1 - top, x1 - left, 3), np.uint16 if deep else np.uint8)
    weights = _centred_weights(planes.matrix, planes.bits)
    rows = _band_rows(x1 - left)
    for first in range(top, y1, rows):
        last = min(first + rows, y1)
        luma, band = planes.y[first:last, left:x1], out[first - top:last - top]
        cb, cr = (_upsampled(plane, planes, (left, first, x1, last))
                  for plane in (planes.cb, planes.cr))
        _centred_matrix_into(luma, cb, cr, weights, band)
    return out[y0 - top:, x0 - left:]


def _band_rows(width: int) -> int:
    """Rows per band of a conversion `width` pixels wide: STRIP_ROWS, or for a narrower box
    (a face's region) as many as make about STRIP_ROWS rows of 1080p, so a box takes few
    calls (an even count: every band starts on the chroma grid)."""
    return max(STRIP_ROWS, BAND_PIXELS // max(width, 1) // 2 * 2)


def _upsampled(plane: np.ndarray, planes: YuvPlanes, box: Box) -> np.ndarray:
    """The chroma `plane` less its zero (128; 10-bit 512) at luma resolution over `box` (whose
    x0, y0 lie on the chroma grid): float32, exact (4:4:4: the plane's box itself)."""
    x0, y0, x1, y1 = box
    zero = 512 if planes.bits == 10 else 128
    if planes.across == 1:  # 4:4:4 (the only layout without horizontal subsampling here)
        return np.subtract(plane[y0:y1, x0:x1], zero, dtype=np.float32)
    rows = ((y0 // 2 - 1, (y1 + 1) // 2 + 1) if planes.down == 2 else (y0, y1))
    window = np.subtract(_window(plane, rows, (x0 // 2 - 1, (x1 + 1) // 2 + 1)), zero,
                         dtype=np.float32)
    tall = _doubled_rows(window) if planes.down == 2 else window
    return _doubled_columns(tall, planes.centred)[:y1 - y0, :x1 - x0]


def _window(plane: np.ndarray, rows: tuple[int, int], columns: tuple[int, int]) -> np.ndarray:
    """plane[rows, columns], the rows and columns beyond the plane (one at most each side)
    repeating its edge."""
    height, width = plane.shape
    (r0, r1), (c0, c1) = rows, columns
    view = plane[max(r0, 0):min(r1, height), max(c0, 0):min(c1, width)]
    borders = (max(0, -r0), max(0, r1 - height), max(0, -c0), max(0, c1 - width))
    return cv2.copyMakeBorder(view, *borders, cv2.BORDER_REPLICATE) if any(borders) else view


def _doubled_rows(window: np.ndarray) -> np.ndarray:
    """float32 (2n, w) from float32 (n + 2, w) rows with a margin row each side: chroma sited
    midway between two luma rows gives them 3/4 of its own value and 1/4 of the nearer
    neighbour's."""
    inner = window[1:-1]
    tall = np.empty((2 * inner.shape[0], window.shape[1]), np.float32)
    cv2.addWeighted(inner, 0.75, window[:-2], 0.25, 0.0, dst=tall[0::2])
    cv2.addWeighted(inner, 0.75, window[2:], 0.25, 0.0, dst=tall[1::2])
    return tall


def _doubled_columns(rows: np.ndarray, centred: bool) -> np.ndarray:
    """float32 (h, 2m) from float32 (h, m + 2) with a margin column each side. Co-sited
    (MPEG-2): even columns take the sample, odd ones the mean of it and the next; centred
    (JPEG): each column 3/4 of its sample and 1/4 of the nearer neighbour."""
    inner = rows[:, 1:-1]
    near, far = (0.75, 0.25) if centred else (0.5, 0.5)
    even = cv2.addWeighted(inner, near, rows[:, :-2], far, 0.0) if centred else inner
    odd = cv2.addWeighted(inner, near, rows[:, 2:], far, 0.0)
    return cv2.merge([even, odd]).reshape(rows.shape[0], -1)


# PyAV pictures ----------------------------------------------------------------------------------
# 8-bit YUV formats the fast path takes, and the 4:4:4 format swscale resamples each to first.
FAST_FORMATS = MappingProxyType({**SUBSAMPLED_8BIT, "yuv444p": "yuv444p", "yuvj444p": "yuvj444p"})


# 4:4:4 pictures and chroma subsampling (across, down) of the 8-bit formats the fast path takes.
_SUBSAMPLING = MappingProxyType({"yuv420p": (2, 2), "yuvj420p": (2, 2), "nv12": (2, 2),
                                 "yuv422p": (2, 1), "yuvj422p": (2, 1),
                                 "yuv444p": (1, 1), "yuvj444p": (1, 1)})


# 8-bit planar YUV formats a writer may start from the decoded picture for, and their chroma
# subsampling (horizontal, vertical).
PLANAR_8BIT = MappingProxyType({name: step for name, step in _SUBSAMPLING.items()
                                if name != "nv12"})  # nv12 interleaves its chroma
# The 10-bit (limited-range) planar formats alike: ProRes 422 and 4444, DNxHR 444, HEVC Main10.
PLANAR_10BIT = MappingProxyType({"yuv420p10le": (2, 2), "yuv422p10le": (2, 1),
                                 "yuv444p10le": (1, 1)})
PLANAR = MappingProxyType({**PLANAR_8BIT, **PLANAR_10BIT})
# What the writer converts: each target format's bit depth and chroma subsampling (across,
# down). The subsampled ones are those of MPEG-2-sited codecs (H.264, HEVC, ProRes, DNxHR):
# yuvj420p is H.264's full-range 4:2:0 here (the mjpeg writer is 4:4:4, yuvj444p).
WRITER_FORMATS = MappingProxyType({
    name: (10 if name in PLANAR_10BIT else 8, PLANAR[name])
    for name in ("yuv420p", "yuv422p", "yuv444p", "yuvj444p", "yuvj420p", *PLANAR_10BIT)})


def picture_planes(picture: Any) -> list[np.ndarray]:
    """(h, w) views of a planar av.VideoFrame's planes (no copy): uint8 for an 8-bit format,
    little-endian uint16 for a deeper one (yuv422p10le, ...: line_size counts bytes, and a
    row may be padded past its samples)."""
    deep = max(c.bits for c in picture.format.components) > 8
    dtype = np.dtype("<u2") if deep else np.dtype(np.uint8)
    return [np.frombuffer(p, dtype).reshape(p.height, p.line_size // dtype.itemsize)[:, :p.width]
            for p in picture.planes]


def yuv_planes(picture: Any, centred: bool = False) -> YuvPlanes | None:
    """The planes of a decoded 8-bit YUV av.VideoFrame, or of a 10-bit limited-range one
    (PLANAR_10BIT) (see YuvPlanes; `centred`: see chroma_centred), or None when it is not one
    with a matrix this module converts (or it stores its rows bottom-up): use swscale's
    conversion then."""
    name = picture.format.name
    matrix = matrix_of(picture)
    deep = name in PLANAR_10BIT
    if ((name not in _SUBSAMPLING and not deep) or matrix is None
            or (deep and matrix.full_range) or any(p.line_size < 0 for p in picture.planes)):
        return None
    if deep:
        y, cb, cr = picture_planes(picture)
        return YuvPlanes(y, cb, cr, *PLANAR_10BIT[name], centred, matrix, bits=10)
    across, down = _SUBSAMPLING[name]
    if name == "nv12":  # one plane of interleaved Cb, Cr
        uv = picture.planes[1]
        interleaved = np.frombuffer(uv, np.uint8).reshape(uv.height, uv.line_size)
        y = picture_planes(picture)[0]
        cb, cr = cv2.split(interleaved[:, :2 * uv.width].reshape(uv.height, uv.width, 2))
    else:
        y, cb, cr = picture_planes(picture)
    return YuvPlanes(y, cb, cr, across, down, centred, matrix)


def full_chroma(picture: Any) -> Any | None:
    """The picture at 4:4:4 by swscale's chroma upsampling (swscale's upsampling, for the bench's
    comparisons), or None as for yuv_planes."""
    if yuv_planes(picture) is None:
        return None
    name = picture.format.name
    return picture if FAST_FORMATS[name] == name else picture.reformat(format=FAST_FORMATS[name])


def matrix_of(picture: Any) -> YuvMatrix | None:
    """The matrix of an av.VideoFrame's tags (see matrix_for)."""
    return matrix_for(picture.colorspace, picture.color_range, picture.format.name)


def picture_to_bgr(picture: Any, centred: bool = False) -> np.ndarray | None:
    """A decoded 8-bit YUV av.VideoFrame as BGR uint8 (H, W, 3), a 10-bit limited-range one
    as BGR uint16 (yuv_to_bgr; `centred`: the chroma siting, see chroma_centred), or None
    where this module does not convert it (other formats and tags: use swscale's
    conversion)."""
    planes = yuv_planes(picture, centred)
    return None if planes is None else yuv_to_bgr(planes)
