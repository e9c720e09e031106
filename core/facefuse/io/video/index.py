"""The packet index of a video stream, its rates, and decoding by presentation time.

A video is demuxed once without decoding to index every video packet's presentation timestamp
(`scan_packets`, `build_index`): that gives the exact frame count, shows a variable frame rate
(`constant_rate`, `typical_rate`, `conform_slots`) and tells, for each frame, the key frame its
decoding starts at. `Decoder` seeks to that key frame and decodes forward, recognising each
picture by its timestamp, never by counting (io.video.read).
"""

from __future__ import annotations

import itertools
import logging
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import Any

import av

from ...errors import InputError

logger = logging.getLogger(__name__)

STANDARD_RATES = (Fraction(24000, 1001), Fraction(24), Fraction(25), Fraction(30000, 1001),
                  Fraction(30), Fraction(48), Fraction(50), Fraction(60000, 1001), Fraction(60),
                  Fraction(100), Fraction(120000, 1001), Fraction(120))
_MAX_SKIP = 4  # decode through up to this many unwanted frames rather than seek (intra codecs)


@dataclass(frozen=True, slots=True)
class Index:
    """Video packets in presentation order: ``pts`` ascending (stream time base ``time_base``);
    ``anchor[i]`` is the position of the key frame decoding must start from to get frame ``i``."""

    pts: tuple[int, ...]
    anchor: tuple[int, ...]
    time_base: Fraction
    end_pts: int


def scan_packets(container: Any, stream: Any,
                 path: Path) -> list[tuple[int, int | None, bool, int]]:
    """(pts, dts, is_key, duration) of every video packet in file order, demuxed without
    decoding."""
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


def build_index(rows: list[tuple[int, int | None, bool, int]], time_base: Fraction) -> Index:
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
    return Index(pts=tuple(ordered), anchor=tuple(position[anchor_of[p]] for p in ordered),
                  time_base=time_base, end_pts=ordered[-1] + step)


def fits_grid(pts: tuple[int, ...], time_base: Fraction, rate: Fraction) -> bool:
    """True when every pts lies on the constant grid of ``rate`` from the first frame, allowing
    rounding of an eighth of a frame plus one tick (ms time bases, ms-rounded muxers). Integer
    arithmetic: the frame step is n/d ticks."""
    step = 1 / (rate * time_base)
    n, d = step.numerator, step.denominator
    tolerance = n + 8 * d  # (step / 8 + 1) * 8d
    return all(abs((p - pts[0]) * 8 * d - i * 8 * n) <= tolerance for i, p in enumerate(pts))


def constant_rate(index: Index, candidates: Iterable[Fraction | None]) -> Fraction | None:
    """The first candidate rate (positive, distinct) whose grid every frame sits on; else None."""
    seen: list[Fraction] = []
    for rate in candidates:
        if rate is None or rate <= 0 or rate in seen:
            continue
        seen.append(Fraction(rate))
        if fits_grid(index.pts, index.time_base, Fraction(rate)):
            return Fraction(rate)
    return None


def typical_rate(index: Index, declared: Iterable[Fraction | None]) -> Fraction:
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


def conform_slots(index: Index, rate: Fraction) -> tuple[int, ...]:
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



class Decoder:
    """Decodes forward from key frames and recognises pictures by pts through the index."""

    def __init__(self, container: Any, stream: Any, index: Index,
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
