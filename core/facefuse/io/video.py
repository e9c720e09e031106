"""Video files in and out with PyAV: frame-accurate reads by frame number, faithful writes.

Numbering: video frames are numbered from 1, like Blender's strips and ffmpeg's image sequences;
``VideoSource(path, start_number=0)`` (or any other number) overrides that. Frame ``n`` is the
``(n - start_number)``-th picture in presentation order.

Reading (``VideoSource``) demuxes the file once without decoding to index every video packet's
presentation timestamp: that gives the exact frame count and shows a variable frame rate. A read
seeks to the key frame a wanted frame depends on and decodes forward, recognising each picture by
its timestamp, never by counting. Frames come out in the engine convention (see types.py): BGR
uint8 for 8-bit sources, BGR uint16 for deeper ones, BGRA/uint16 BGRA when the source has alpha.

Writing (``VideoSink``) encodes engine frames with the source's exact rate (a Fraction) and
timecode, stores provenance as container metadata, and copies audio packet for packet (no
re-encode). The file is written under a temporary name in the same folder and renamed on a
successful ``close()``, so a failed render never leaves half a video under the final name.

What survives where (PyAV 18 / FFmpeg 8 muxers and demuxers):
    .mov/.mp4  timecode: a tmcd track, read back as the video stream's ``timecode``;
               metadata: every key as given (written as ``mdta`` tags, movflags=use_metadata_tags).
    .mkv       timecode: a ``TIMECODE`` stream tag; metadata: every key, but matroska upper-cases
               keys (``facefuse_version`` reads back as ``FACEFUSE_VERSION``; ``title`` stays).
Colour: output is tagged and converted as BT.709 limited range (mjpeg: BT.601 full range, as JPEG
defines); reads convert with the matrix and range the stream is tagged with.
"""

from __future__ import annotations

import itertools
import logging
import os
import re
import tempfile
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from types import MappingProxyType, TracebackType
from typing import Any, Self

import av
import numpy as np

from ..errors import InputError

logger = logging.getLogger(__name__)

VIDEO_EXTENSIONS = frozenset({".mov", ".mp4", ".mkv", ".avi", ".mxf", ".webm", ".m4v"})
VIDEO_CODECS = ("h264", "h265", "prores_422", "prores_4444", "dnxhr_hq", "dnxhr_444", "mjpeg")
STANDARD_RATES = (Fraction(24000, 1001), Fraction(24), Fraction(25), Fraction(30000, 1001),
                  Fraction(30), Fraction(48), Fraction(50), Fraction(60000, 1001), Fraction(60),
                  Fraction(100), Fraction(120000, 1001), Fraction(120))
_CONTAINER_FORMATS = MappingProxyType({".mov": "mov", ".mp4": "mp4", ".mkv": "matroska"})
_DECODE_THREADS = 4
_MAX_SKIP = 4  # decode through up to this many unwanted frames rather than seek (intra codecs)
_EMPTY: Mapping[str, str] = MappingProxyType({})
_TIMECODE = re.compile(r"^\d{2}:\d{2}:\d{2}[:;.]\d{2,3}$")
_BT709, _BT601, _RANGE_MPEG, _RANGE_JPEG = 1, 6, 1, 2  # AVColorSpace / AVColorRange values


def is_video_path(path: Path | str) -> bool:
    """True when the file name ends in an extension facefuse treats as a video container."""
    return Path(path).suffix.lower() in VIDEO_EXTENSIONS


@dataclass(frozen=True, slots=True)
class VideoInfo:
    """What a video holds. ``rate`` is exact (e.g. ``Fraction(30000, 1001)``); frames are numbered
    ``start_number .. start_number + frame_count - 1``. For a conformed variable-rate source,
    ``rate`` and ``frame_count`` describe the constant-rate grid the frames are delivered on.
    ``start_time_s`` is the first video frame's time in the container (for audio alignment)."""

    path: Path
    frame_count: int
    rate: Fraction
    width: int
    height: int
    codec: str
    pixel_format: str
    bit_depth: int
    has_alpha: bool
    timecode: str | None
    audio_streams: int
    duration_s: float
    variable_frame_rate: bool
    start_number: int = 1
    start_time_s: float = 0.0


@dataclass(frozen=True, slots=True)
class DecodeFailure:
    """Stands in for a frame that could not be decoded; ``reason`` is one sentence for the log."""

    reason: str


@dataclass(frozen=True, slots=True)
class _Index:
    """Video packets in presentation order: ``pts`` ascending (stream time base ``time_base``);
    ``anchor[i]`` is the position of the key frame decoding must start from to get frame ``i``."""

    pts: tuple[int, ...]
    anchor: tuple[int, ...]
    time_base: Fraction
    end_pts: int


def _open_input(path: Path, what: str = "video") -> Any:
    """av.open for reading, with InputError for a missing, unreadable or non-media file."""
    if not path.exists():
        raise InputError(f"{path} does not exist")
    if not path.is_file():
        raise InputError(f"{path} is not a file")
    try:
        return av.open(str(path), "r")
    except (av.FFmpegError, OSError) as exc:
        raise InputError(f"{path} is not a {what} file facefuse can read ({exc})") from exc


def _scan_packets(container: Any, stream: Any, path: Path) -> list[tuple[int, int | None, bool, int]]:
    """(pts, dts, is_key, duration) of every video packet in file order, demuxed without decoding."""
    rows: list[tuple[int, int | None, bool, int]] = []
    try:
        for packet in container.demux(stream):
            if packet.size == 0 or packet.is_discard:
                continue
            ts = packet.pts if packet.pts is not None else packet.dts
            if ts is None:
                raise InputError(f"{path} has video packets without timestamps; remux it first")
            rows.append((ts, packet.dts, packet.is_keyframe, packet.duration or 0))
    except av.FFmpegError as exc:
        logger.warning("%s: reading stopped after %d video packets (%s)", path, len(rows), exc)
    if not rows:
        raise InputError(f"{path} holds no readable video frames (is it truncated or damaged?)")
    return rows


def _build_index(rows: list[tuple[int, int | None, bool, int]], time_base: Fraction) -> _Index:
    """Presentation-order index with, for each frame, the key frame that decoding must start at:
    the last key frame before it in decode order whose own pts is not later (open-GOP safe)."""
    keys: list[int] = []  # pts of the key frames in decode order
    anchor_of: dict[int, int] = {}
    for pts, _, is_key, _ in rows:
        if is_key:
            keys.append(pts)
        anchor_of[pts] = next((k for k in reversed(keys) if k <= pts), rows[0][0])
    ordered = sorted(anchor_of)
    if len(ordered) < len(rows):
        logger.warning("%d video packets share a timestamp; keeping one of each",
                       len(rows) - len(ordered))
    position = {pts: i for i, pts in enumerate(ordered)}
    last = max(rows, key=lambda row: row[0])
    step = last[3] or (ordered[-1] - ordered[-2] if len(ordered) > 1 else 1)
    return _Index(pts=tuple(ordered), anchor=tuple(position[anchor_of[p]] for p in ordered),
                  time_base=time_base, end_pts=ordered[-1] + step)


def _fits_grid(pts: tuple[int, ...], time_base: Fraction, rate: Fraction) -> bool:
    """True when every pts lies on the constant grid of ``rate`` from the first frame, allowing
    rounding of an eighth of a frame plus one tick (ms time bases, ms-rounded muxers). Integer
    arithmetic: the frame step is n/d ticks."""
    step = 1 / (rate * time_base)
    n, d = step.numerator, step.denominator
    tolerance = n + 8 * d  # (step / 8 + 1) * 8d
    return all(abs((p - pts[0]) * 8 * d - i * 8 * n) <= tolerance for i, p in enumerate(pts))


def _constant_rate(index: _Index, candidates: Iterable[Fraction | None]) -> Fraction | None:
    """The first candidate rate (positive, distinct) whose grid every frame sits on; else None."""
    seen: list[Fraction] = []
    for rate in candidates:
        if rate is None or rate <= 0 or rate in seen:
            continue
        seen.append(Fraction(rate))
        if _fits_grid(index.pts, index.time_base, Fraction(rate)):
            return Fraction(rate)
    return None


def _typical_rate(index: _Index, declared: Iterable[Fraction | None]) -> Fraction:
    """The grid for a variable-rate source: the rate of the typical frame step (steps near the
    median, averaged, which cancels millisecond rounding). Unlike frames / duration it is not
    lowered by dropped frames. A declared stream rate within 1 % wins (it is exact), else the
    nearest standard rate within 0.5 %, else the measured rate itself."""
    steps = sorted(b - a for a, b in itertools.pairwise(index.pts))
    median = steps[len(steps) // 2] if steps else 0
    near = [s for s in steps if abs(s - median) * 4 <= median]
    if median <= 0:
        return Fraction(24)
    rate = len(near) / (sum(near) * index.time_base)
    for known, tolerance in ((declared, Fraction(1, 100)), (STANDARD_RATES, Fraction(1, 200))):
        close = [Fraction(r) for r in known if r and abs(r - rate) <= rate * tolerance]
        if close:
            return min(close, key=lambda r: abs(r - rate))
    return rate.limit_denominator(1001)


def _conform_slots(index: _Index, rate: Fraction) -> tuple[int, ...]:
    """Source position for each slot of the constant ``rate`` grid: the last frame that starts
    before the middle of the slot (nearest-earlier, as FFmpeg's fps filter with round=near)."""
    step = 1 / (rate * index.time_base)
    n, d = step.numerator, step.denominator
    count = max(1, round((index.end_pts - index.pts[0]) / step))
    slots, j = [], 0
    for k in range(count):  # frame j+1 starts before the slot middle: 2d(pts - p0) <= (2k+1)n
        while (j + 1 < len(index.pts)
               and 2 * d * (index.pts[j + 1] - index.pts[0]) <= (2 * k + 1) * n):
            j += 1
        slots.append(j)
    return tuple(slots)


def format_rate(rate: Fraction) -> str:
    """A rate for messages: '24', '29.97', '23.976'."""
    return f"{float(rate):.3f}".rstrip("0").rstrip(".")


def offset_timecode(timecode: str, rate: Fraction, frames: int) -> str:
    """``timecode`` moved on by ``frames`` frames at ``rate`` (wrapping at 24 h). Drop-frame
    timecodes (';' or '.' before the frames, 29.97 or 59.94) skip frame numbers as SMPTE 12M
    says. For the sink's timecode when a range of the source is written."""
    if not _TIMECODE.match(timecode):
        raise ValueError(f"{timecode!r} is not a HH:MM:SS:FF timecode")
    fps = round(rate)
    drop = 2 * (fps // 30) if timecode[8] in ";." and rate.denominator == 1001 else 0
    hh, mm, ss, ff = (int(part) for part in re.split(r"[:;.]", timecode))
    minutes = 60 * hh + mm
    count = (60 * minutes + ss) * fps + ff - drop * (minutes - minutes // 10) + frames
    count %= 24 * 3600 * fps - drop * 24 * 6 * 9
    if drop:
        tens, rest = divmod(count, 600 * fps - 9 * drop)
        count += 9 * drop * tens + (drop * ((rest - drop) // (60 * fps - drop)) if rest > drop else 0)
    ff, seconds = count % fps, count // fps
    return (f"{seconds // 3600 % 24:02d}:{seconds // 60 % 60:02d}:{seconds % 60:02d}"
            f"{timecode[8]}{ff:02d}")


def _find_timecode(container: Any, stream: Any) -> str | None:
    """The start timecode from the video stream, another stream (tmcd) or the container tags."""
    for tags in [stream.metadata, *(s.metadata for s in container.streams), container.metadata]:
        for key, value in tags.items():
            if key.lower() == "timecode" and value:
                return str(value)
    return None


def _pixel_traits(codec_context: Any) -> tuple[str, int, bool]:
    """(pixel format name, bit depth, has alpha) of a decoder's output format."""
    fmt = codec_context.format
    if fmt is None:
        return "unknown", 8, False
    bits = max((c.bits for c in fmt.components), default=8)
    return fmt.name, max(8, bits), any(c.is_alpha for c in fmt.components)


class VideoSource:
    """A video file read by frame number. ``conform_vfr=True`` accepts a variable-rate source and
    delivers it on the constant grid of its typical rate (see _typical_rate): each slot
    shows the last frame that starts before the middle of the slot, so frames are repeated or
    dropped as needed. Use as a context manager or call ``close()``."""

    def __init__(self, path: Path | str, start_number: int = 1, conform_vfr: bool = False) -> None:
        self._path = Path(path)
        self._container = _open_input(self._path)
        try:
            self._setup(start_number, conform_vfr)
        except BaseException:
            self._container.close()
            raise

    def _setup(self, start_number: int, conform_vfr: bool) -> None:
        container, path = self._container, self._path
        if container.format.name == "image2" or container.format.name.endswith("_pipe"):
            raise InputError(f"{path} is a still image, not a video")
        if not container.streams.video:
            raise InputError(f"{path} has no video stream")
        self._stream = container.streams.video[0]
        self._stream.thread_type = "AUTO"
        self._stream.codec_context.thread_count = _DECODE_THREADS
        rows = _scan_packets(container, self._stream, path)
        self._index = _build_index(rows, Fraction(self._stream.time_base))
        self._position = MappingProxyType({p: i for i, p in enumerate(self._index.pts)})
        rate, self._slots = self._choose_rate(conform_vfr)
        self._info = self._describe(rate, start_number)
        self._reader: _Decoder | None = None
        fmt, bits, alpha = self._info.pixel_format, self._info.bit_depth, self._info.has_alpha
        self._array_format = ("bgra" if alpha else "bgr24") if bits <= 8 else (
            "bgra64le" if alpha else "bgr48le")
        logger.debug("%s: %d frames at %s fps, %s (%s)", path, self._info.frame_count,
                     format_rate(rate), fmt, self._array_format)

    def _choose_rate(self, conform_vfr: bool) -> tuple[Fraction, tuple[int, ...] | None]:
        """The exact constant rate, or for a conformed VFR source the grid rate and slot map."""
        s = self._stream
        declared = (s.base_rate, s.guessed_rate, s.average_rate, s.codec_context.framerate)
        rate = _constant_rate(self._index, declared)
        if rate is not None:
            return rate, None
        grid = _typical_rate(self._index, declared)
        if len(self._index.pts) < 2:
            return grid, None
        if not conform_vfr:
            raise InputError(f"{self._path} has a variable frame rate, which facefuse cannot render "
                             f"frame-accurately; re-run with --conform-vfr to conform it to "
                             f"{format_rate(grid)} fps")
        logger.info("%s: variable frame rate conformed to %s fps", self._path, format_rate(grid))
        return grid, _conform_slots(self._index, grid)

    def _describe(self, rate: Fraction, start_number: int) -> VideoInfo:
        cc = self._stream.codec_context
        fmt, bits, alpha = _pixel_traits(cc)
        count = len(self._slots) if self._slots is not None else len(self._index.pts)
        return VideoInfo(
            path=self._path, frame_count=count, rate=rate, width=cc.width, height=cc.height,
            codec=cc.name, pixel_format=fmt, bit_depth=bits, has_alpha=alpha,
            timecode=_find_timecode(self._container, self._stream),
            audio_streams=len(self._container.streams.audio), duration_s=float(count / rate),
            variable_frame_rate=self._slots is not None, start_number=start_number,
            start_time_s=float(self._index.pts[0] * self._index.time_base))

    @property
    def info(self) -> VideoInfo:
        """What the file holds (see VideoInfo)."""
        return self._info

    def read(self, numbers: Iterable[int]) -> Iterator[tuple[int, np.ndarray | DecodeFailure]]:
        """Yield ``(number, frame)`` for each wanted frame number (ascending, repeats allowed), in
        the source's numbering. A frame is an (H, W, 3|4) BGR(A) uint8 or uint16 array (see the
        module docstring); one that cannot be decoded comes as ``DecodeFailure`` instead.
        InputError (raised here, before any decoding) for a number outside the clip."""
        wanted = list(numbers)
        first, last = self._info.start_number, self._info.start_number + self._info.frame_count - 1
        for a, b in itertools.pairwise(wanted):
            if b < a:
                raise ValueError(f"frame numbers must be ascending ({a} then {b})")
        outside = [n for n in wanted if not first <= n <= last]
        if outside:
            raise InputError(f"frame {outside[0]} is outside {self._path.name} "
                             f"(frames {first}-{last})")
        self._reader = _Decoder(self._container, self._stream, self._index, self._position)
        return self._deliver(wanted, self._reader)

    def _source_position(self, number: int) -> int:
        slot = number - self._info.start_number
        return self._slots[slot] if self._slots is not None else slot

    def _deliver(self, wanted: list[int],
                 decoder: _Decoder) -> Iterator[tuple[int, np.ndarray | DecodeFailure]]:
        """One read's frames. A later read() takes over the file, so this one then stops."""
        held: tuple[int, Any] | None = None  # the last decoded (position, VideoFrame)
        array: tuple[int, np.ndarray] | None = None  # the last converted (position, array)
        for number in wanted:
            if self._reader is not decoder:
                raise RuntimeError("another read() started on this VideoSource; "
                                   "finish one read before starting the next")
            pos = self._source_position(number)
            if held is None or held[0] < pos:
                held = decoder.frame_at(pos)
            if held is None or held[0] != pos:
                yield number, DecodeFailure(decoder.failure_reason())
                continue
            if array is None or array[0] != pos:
                array = (pos, self._to_array(held[1]))
            yield number, array[1]

    def _to_array(self, frame: Any) -> np.ndarray:
        """A decoded VideoFrame as an engine frame (BGR(A), uint8 or uint16, C-contiguous)."""
        return np.ascontiguousarray(frame.to_ndarray(format=self._array_format))

    def close(self) -> None:
        """Release the file."""
        self._container.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class _Decoder:
    """Decodes forward from key frames and recognises pictures by pts through the index."""

    def __init__(self, container: Any, stream: Any, index: _Index,
                 position: Mapping[int, int]) -> None:
        self._container, self._stream, self._index, self._position = (
            container, stream, index, position)
        self._packets: Iterator[Any] | None = None
        self._pending: list[Any] = []
        self._last = -1  # position of the last picture taken from the decoder
        self._error = ""

    def frame_at(self, pos: int) -> tuple[int, Any] | None:
        """The first picture at or after ``pos`` (position, VideoFrame); None at the end. Seeks
        only when the key frame ``pos`` needs lies more than _MAX_SKIP frames ahead."""
        if self._packets is None or self._index.anchor[pos] > self._last + _MAX_SKIP:
            got = self._seek_for(pos)
        else:
            got = self._next()
        while got is not None and got[0] < pos:
            got = self._next()
        return got

    def failure_reason(self) -> str:
        detail = f" ({self._error})" if self._error else ""
        return f"the decoder produced no picture for this frame{detail}"

    def _seek_for(self, pos: int) -> tuple[int, Any] | None:
        """Seek to the key frame ``pos`` needs; if the demuxer lands later than asked, fall back
        to the key frame before it and finally to the start of the stream."""
        anchor = self._index.anchor[pos]
        earlier = self._index.anchor[anchor - 1] if anchor > 0 else 0
        got = None
        for start in dict.fromkeys((anchor, earlier, 0)):
            self._seek(self._index.pts[start])
            got = self._next()
            if got is None or got[0] <= pos:
                return got
            logger.debug("seek for frame %d landed at %d; seeking earlier", pos, got[0])
        return got

    def _seek(self, timestamp: int) -> None:
        """Seek to the key frame at or before ``timestamp`` (a pts: FFmpeg's demuxers, mov's
        included, seek in presentation time; a landing too early only costs decoding time)."""
        self._container.seek(timestamp, stream=self._stream, backward=True, any_frame=False)
        self._packets = self._container.demux(self._stream)
        self._pending, self._last, self._error = [], -1, ""

    def _next(self) -> tuple[int, Any] | None:
        """The next picture the decoder gives that the index knows, or None at the end."""
        while True:
            while not self._pending:
                if not self._feed():
                    return None
            frame = self._pending.pop(0)
            pos = self._position.get(frame.pts) if frame.pts is not None else None
            if pos is not None:
                self._last = pos
                return pos, frame
            logger.debug("decoded picture with unknown pts %s skipped", frame.pts)

    def _feed(self) -> bool:
        """Decode one more packet into the pending list; False at the end of the stream."""
        assert self._packets is not None
        try:
            packet = next(self._packets)
        except StopIteration:
            return False
        except av.FFmpegError as exc:
            self._error = f"reading stopped: {exc}"
            return False
        try:
            self._pending.extend(self._stream.codec_context.decode(packet))
        except av.FFmpegError as exc:
            self._error = str(exc)
            logger.debug("decode error at pts %s: %s", packet.pts, exc)
        return True


@dataclass(frozen=True, slots=True)
class _CodecSpec:
    """How one VIDEO_CODECS name is encoded."""

    encoder: str
    pix_fmt: str
    containers: frozenset[str]
    pix_fmt_alpha: str | None = None
    pix_fmt_deep: str | None = None
    options: tuple[tuple[str, str], ...] = ()
    quality_option: str | None = None
    default_quality: int = 0
    jpeg_range: bool = False


_ALL = frozenset(_CONTAINER_FORMATS)
_CODECS: Mapping[str, _CodecSpec] = MappingProxyType({
    "h264": _CodecSpec("libx264", "yuv420p", _ALL, quality_option="crf", default_quality=16),
    "h265": _CodecSpec("libx265", "yuv420p", _ALL, pix_fmt_deep="yuv420p10le",
                       options=(("x265-params", "log-level=error"),),
                       quality_option="crf", default_quality=18),
    "prores_422": _CodecSpec("prores_ks", "yuv422p10le", frozenset({".mov", ".mkv"}),
                             options=(("profile", "3"),)),
    "prores_4444": _CodecSpec("prores_ks", "yuv444p10le", frozenset({".mov", ".mkv"}),
                              pix_fmt_alpha="yuva444p10le", options=(("profile", "4"),)),
    "dnxhr_hq": _CodecSpec("dnxhd", "yuv422p", frozenset({".mov"}),
                           options=(("profile", "dnxhr_hq"),)),
    "dnxhr_444": _CodecSpec("dnxhd", "yuv444p10le", frozenset({".mov"}),
                            options=(("profile", "dnxhr_444"),)),
    "mjpeg": _CodecSpec("mjpeg", "yuvj444p", _ALL, quality_option="q", default_quality=3,
                        jpeg_range=True),
})


def _check_output(path: Path, codec: str, width: int, height: int) -> _CodecSpec:
    """InputError unless ``codec`` can be written to ``path`` at this size."""
    suffix = path.suffix.lower()
    if codec not in _CODECS:
        raise InputError(f"unknown video codec {codec!r}; choose one of {', '.join(VIDEO_CODECS)}")
    if suffix not in _CONTAINER_FORMATS:
        raise InputError(f"{path}: cannot write {suffix or 'files without an extension'} videos; "
                         f"use one of {', '.join(sorted(_CONTAINER_FORMATS))}")
    spec = _CODECS[codec]
    if suffix not in spec.containers:
        raise InputError(f"{codec} cannot be stored in {suffix}; "
                         f"use {' or '.join(sorted(spec.containers))}")
    if spec.pix_fmt.startswith("yuv420") and (width % 2 or height % 2):
        raise InputError(f"{codec} needs an even width and height, and the frames are "
                         f"{width}x{height}; choose prores_422, prores_4444 or mjpeg")
    if spec.encoder == "dnxhd" and (width < 256 or height < 120):
        raise InputError(f"{codec} needs frames of at least 256x120, and these are "
                         f"{width}x{height}; choose prores_422 or prores_4444")
    if not path.parent.is_dir():
        raise InputError(f"the output folder {path.parent} does not exist")
    if path.is_dir():
        raise InputError(f"{path} is a folder, not a file name")
    return spec


def _as_writable(frame: np.ndarray, deep: bool) -> tuple[np.ndarray, str]:
    """An engine frame as (C-contiguous array, PyAV packed format): uint8 for 8-bit codecs,
    uint16 (little-endian) for deeper ones; float32 (1.0 = white) is scaled and rounded."""
    if frame.ndim != 3 or frame.shape[2] not in (3, 4):
        raise ValueError(f"a frame must be (H, W, 3|4), got {frame.shape}")
    if frame.dtype == np.float32:
        scale = 65535.0 if deep else 255.0
        frame = np.clip(np.rint(frame * scale), 0, scale).astype(np.uint16 if deep else np.uint8)
    elif frame.dtype == np.uint16 and not deep:
        frame = np.rint(frame / 257.0).astype(np.uint8)
    elif frame.dtype not in (np.uint8, np.uint16):
        raise ValueError(f"frames must be uint8, uint16 or float32, got {frame.dtype}")
    alpha = frame.shape[2] == 4
    if frame.dtype == np.uint8:
        return np.ascontiguousarray(frame), "bgra" if alpha else "bgr24"
    return np.ascontiguousarray(frame, dtype="<u2"), "bgra64le" if alpha else "bgr48le"


class VideoSink:
    """Writes engine frames to a .mov, .mp4 or .mkv file (see the module docstring).

    ``info_like`` gives the rate, size and timecode (usually the source's VideoInfo; when a range
    is written, replace its timecode with ``offset_timecode(tc, rate, first - start_number)``). ``codec`` is one of VIDEO_CODECS;
    ``quality`` is the CRF for h264/h265 (defaults 16/18) or the JPEG q-scale for mjpeg (2-31,
    default 3), ignored by ProRes and DNxHR, whose profile fixes the quality. ``audio_from``: copy
    that file's audio streams packet for packet; with ``audio_start_s``/``audio_duration_s``
    (seconds on that file's timeline) only the packets overlapping that span are copied, shifted
    to start at 0 (exact to within half an audio packet, about 10 ms for AAC)."""

    def __init__(self, path: Path | str, info_like: VideoInfo, codec: str = "h264",
                 audio_from: Path | None = None, metadata: Mapping[str, str] = _EMPTY,
                 quality: int | None = None, preset: str = "medium",
                 audio_start_s: float = 0.0, audio_duration_s: float | None = None) -> None:
        self._path = Path(path)
        self._spec = _check_output(self._path, codec, info_like.width, info_like.height)
        self._info, self._codec, self._preset = info_like, codec, preset
        self._quality = self._spec.default_quality if quality is None else quality
        self._audio = (_AudioCopy(Path(audio_from), audio_start_s, audio_duration_s)
                       if audio_from is not None else None)
        try:
            self._tmp = self._make_temp()
            self._container = self._open_output(metadata)
            if self._audio is not None:
                self._audio.check_fits(self._container, self._path.suffix)
        except BaseException:
            self._cleanup()
            raise
        self._stream: Any = None
        self._pix_fmt, self._deep = self._spec.pix_fmt, False
        self._count, self._done = 0, False

    def _make_temp(self) -> Path:
        fd, name = tempfile.mkstemp(prefix=f".{self._path.stem}.", suffix=f".tmp{self._path.suffix}",
                                    dir=self._path.parent)
        os.close(fd)
        return Path(name)

    def _open_output(self, metadata: Mapping[str, str]) -> Any:
        suffix = self._path.suffix.lower()
        options = {"movflags": "use_metadata_tags"} if suffix in (".mov", ".mp4") else {}
        try:
            container = av.open(str(self._tmp), "w", format=_CONTAINER_FORMATS[suffix],
                                options=options)
        except (av.FFmpegError, OSError) as exc:
            self._tmp.unlink(missing_ok=True)
            raise InputError(f"cannot write {self._path} ({exc})") from exc
        for key, value in metadata.items():
            container.metadata[key] = str(value)
        return container

    @property
    def frames_written(self) -> int:
        return self._count

    def write(self, frame: np.ndarray) -> None:
        """Append one engine frame ((H, W, 3|4) BGR(A), uint8/uint16/float32, the sink's size).
        Alpha is kept by prores_4444 and dropped by the other codecs."""
        if self._done:
            raise ValueError("write() after close() or abort()")
        if frame.shape[:2] != (self._info.height, self._info.width):
            raise ValueError(f"frame is {frame.shape[1]}x{frame.shape[0]}, the video is "
                             f"{self._info.width}x{self._info.height}")
        if self._stream is None:
            self._open_streams(frame)
        array, packed = _as_writable(frame, deep=self._deep)
        picture = av.VideoFrame.from_ndarray(array, format=packed)
        jpeg = self._spec.jpeg_range
        picture = picture.reformat(format=self._pix_fmt,
                                   dst_colorspace="itu601" if jpeg else "itu709",
                                   dst_color_range=_RANGE_JPEG if jpeg else _RANGE_MPEG)
        picture.pts = self._count
        self._count += 1
        self._container.mux(self._stream.encode(picture))
        if self._audio is not None:
            self._audio.copy_until(self._container, float(self._count / self._info.rate))

    def _open_streams(self, frame: np.ndarray) -> None:
        """Create the video stream (format chosen from the first frame) and the audio copies."""
        spec = self._spec
        if frame.shape[2] == 4 and spec.pix_fmt_alpha:
            self._pix_fmt = spec.pix_fmt_alpha
        elif frame.dtype != np.uint8 and spec.pix_fmt_deep:
            self._pix_fmt = spec.pix_fmt_deep
        self._deep = max(c.bits for c in av.VideoFormat(self._pix_fmt).components) > 8
        options = dict(spec.options)
        if spec.encoder in ("libx264", "libx265"):
            options["preset"] = self._preset
        if spec.quality_option == "crf":
            options["crf"] = str(self._quality)
        stream = self._container.add_stream(spec.encoder, rate=self._info.rate, options=options)
        stream.width, stream.height = self._info.width, self._info.height
        stream.pix_fmt, stream.thread_type = self._pix_fmt, "AUTO"
        self._tag_colour(stream.codec_context)
        if spec.quality_option == "q":
            self._fix_qscale(stream.codec_context)
        if spec.encoder == "libx265" and self._path.suffix.lower() != ".mkv":
            stream.codec_context.codec_tag = "hvc1"  # what Apple players expect
        if self._info.timecode and _TIMECODE.match(self._info.timecode):
            stream.metadata["timecode"] = self._info.timecode
        elif self._info.timecode:
            logger.warning("timecode %r is not HH:MM:SS:FF; not written", self._info.timecode)
        self._stream = stream
        if self._audio is not None:
            self._audio.add_streams(self._container)

    def _tag_colour(self, cc: Any) -> None:
        jpeg = self._spec.jpeg_range
        cc.colorspace = _BT601 if jpeg else _BT709
        cc.color_range = _RANGE_JPEG if jpeg else _RANGE_MPEG
        if not jpeg:
            cc.color_primaries, cc.color_trc = _BT709, _BT709

    def _fix_qscale(self, cc: Any) -> None:
        """A constant JPEG q-scale: the flag alone is not enough, the range must be pinned too."""
        cc.qscale = True
        cc.global_quality = 118 * self._quality  # FF_QP2LAMBDA
        cc.qmin = cc.qmax = self._quality

    def close(self) -> None:
        """Finish the file and move it onto the final name. InputError when no frame was written
        (the temporary file is removed)."""
        if self._done:
            return
        try:
            if self._count == 0:
                raise InputError(f"no frames were written, so {self._path} was not created")
            self._container.mux(self._stream.encode(None))
            if self._audio is not None:
                self._audio.copy_until(self._container, None)
                self._audio.close()
            self._container.close()
            os.replace(self._tmp, self._path)
            self._done = True
            logger.info("wrote %s (%d frames, %s)", self._path, self._count, self._codec)
        except BaseException:
            self.abort()
            raise

    def abort(self) -> None:
        """Stop writing and delete the temporary file; the final path is left untouched."""
        if not self._done:
            self._done = True
            self._cleanup()

    def _cleanup(self) -> None:
        closers = [getattr(self, "_container", None), self._audio]
        for closer in (c for c in closers if c is not None):
            try:
                closer.close()
            except (av.FFmpegError, OSError) as exc:
                logger.debug("ignored while aborting %s: %s", self._path, exc)
        tmp = getattr(self, "_tmp", None)
        if tmp is not None:
            tmp.unlink(missing_ok=True)

    def __enter__(self) -> Self:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        if exc_type is None:
            self.close()
        else:
            self.abort()


class _AudioCopy:
    """Copies the audio streams of one file packet for packet into an output container."""

    def __init__(self, path: Path, start_s: float, duration_s: float | None) -> None:
        self._path = path
        self._container = _open_input(path, "media")
        self._streams = list(self._container.streams.audio)
        self._packets: Iterator[Any] = (self._container.demux(*self._streams)
                                        if self._streams else iter(()))
        self._start_s, self._end_s = start_s, (None if duration_s is None else start_s + duration_s)
        self._out: dict[int, Any] = {}
        self._drop_priming = False
        self._held: Any = None

    def check_fits(self, container: Any, suffix: str) -> None:
        """InputError when the output container cannot hold one of the audio codecs. Matroska
        cannot start below zero: there the priming packet (negative time, flagged discard, as
        AAC in mp4 has) is left out rather than shifting every stream later."""
        self._drop_priming = suffix.lower() == ".mkv"
        for stream in self._streams:
            name = stream.codec_context.name
            if name not in container.supported_codecs:
                raise InputError(f"the {name} audio of {self._path.name} cannot be stored in "
                                 f"{suffix}; write .mov or .mkv instead")

    def add_streams(self, container: Any) -> None:
        for stream in self._streams:
            self._out[stream.index] = container.add_stream_from_template(stream)

    def copy_until(self, container: Any, until_s: float | None) -> None:
        """Mux the packets that start before ``until_s`` seconds (None: all the rest)."""
        while True:
            packet = self._held if self._held is not None else self._next_packet()
            self._held = None
            if packet is None:
                return
            start = float(packet.pts * packet.time_base)
            if until_s is not None and start - self._start_s > until_s:
                self._held = packet
                return
            if self._keep(packet, start):
                self._mux(container, packet)

    def _next_packet(self) -> Any:
        try:
            while (packet := next(self._packets, None)) is not None:
                if packet.size and packet.pts is not None:
                    return packet
        except av.FFmpegError as exc:
            logger.warning("%s: audio copy stopped early (%s)", self._path, exc)
        return None

    def _keep(self, packet: Any, start: float) -> bool:
        if self._drop_priming and packet.is_discard and start < 0:
            return False
        half = float((packet.duration or 0) * packet.time_base) / 2
        after_start = self._start_s <= 0 or start + half >= self._start_s  # 0: keep priming too
        return after_start and (self._end_s is None or start < self._end_s)

    def _mux(self, container: Any, packet: Any) -> None:
        if self._start_s:
            shift = round(self._start_s / packet.time_base)
            packet.pts = max(0, packet.pts - shift)
            packet.dts = packet.pts
        packet.stream = self._out[packet.stream.index]
        container.mux(packet)

    def close(self) -> None:
        self._container.close()
