"""Reading video files with PyAV, frame-accurately by frame number.

Numbering: video frames are numbered from 1, like Blender's strips and ffmpeg's image sequences;
``VideoSource(path, start_number=0)`` (or any other number) overrides that. Frame ``n`` is the
``(n - start_number)``-th picture in presentation order.

``VideoSource`` demuxes the file once without decoding to index every video packet's
presentation timestamp: that gives the exact frame count and shows a variable frame rate. A read
seeks to the key frame a wanted frame depends on and decodes forward, recognising each picture by
its timestamp, never by counting. Frames come out in the engine convention (see types.py): BGR
uint8 for 8-bit sources, BGR uint16 for deeper ones, BGRA/uint16 BGRA when the source has alpha.
Colour: reads convert with the matrix and range the stream is tagged with (8-bit YUV and
10-bit limited-range planar YUV through io.yuv: its own chroma upsampling at the codec's
siting and the matrix, rounded once to the nearest level; everything else through swscale).

Rotation: phone footage is often stored sideways with a display matrix telling players to turn
it. Frames are delivered upright (the stored picture turned by the display rotation with
``np.rot90``, which is lossless), so detection, swapping and pasting all see the picture as
players show it; ``VideoInfo.width``/``height`` are the upright size and ``rotation_deg`` the
rotation, for a writer to re-apply. A display matrix that mirrors or turns by other than a
multiple of 90 degrees is refused (InputError) rather than delivered the wrong way round.

Animated GIF: its frame durations are whole hundredths of a second and often vary, so a GIF
whose frames do not sit on one constant rate is conformed to its typical rate automatically
(as ``conform_vfr=True`` does for other files).
"""

from __future__ import annotations

import itertools
import logging
import struct
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from types import MappingProxyType
from typing import Any, Self

import av
import numpy as np

from ...errors import InputError
from ...timing import StageClock
from .analysis_pictures import AnalysisPicture, analysis_picture
from .common import SUBSAMPLED_8BIT, format_rate, open_input
from .frame_regions import PendingFrame
from .index import (
    Decoder,
    build_index,
    conform_slots,
    constant_rate,
    scan_packets,
    typical_rate,
)
from .orientation import turned
from .passthrough import DecodedPicture, decoded_picture
from .yuv import YuvPlanes, chroma_centred, yuv_planes, yuv_to_bgr

logger = logging.getLogger(__name__)

_DECODE_THREADS = 4
# The bit depth of the pictures io.yuv converts for each array format (see _to_array).
_IO_YUV_BITS = MappingProxyType({"bgr24": 8, "bgr48le": 10})


@dataclass(frozen=True, slots=True)
class VideoInfo:
    """What a video holds. ``rate`` is exact (e.g. ``Fraction(30000, 1001)``); frames are numbered
    ``start_number .. start_number + frame_count - 1``. For a conformed variable-rate source,
    ``rate`` and ``frame_count`` describe the constant-rate grid the frames are delivered on.
    ``start_time_s`` is the first video frame's time in the container (for audio alignment).
    ``rotation_deg`` is the counter-clockwise turn (0, 90, 180 or 270) the file's display matrix
    asks players to give its stored pictures; the frames are delivered already turned, and
    ``width``/``height`` are their (upright) size. A video written from them keeps the source's
    orientation by storing ``np.rot90(frame, -rotation_deg // 90)`` with the same display
    rotation (``VideoStream.set_display_rotation(rotation_deg)``). ``colour_tags`` are the
    stream's (AVColorSpace, AVColorRange, AVColorPrimaries, AVColorTransferCharacteristic) as
    stored, 2 / 0 / 2 / 2 when untagged (None: not known, e.g. a new video)."""

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
    rotation_deg: int = 0
    colour_tags: tuple[int, int, int, int] | None = None


@dataclass(frozen=True, slots=True)
class DecodeFailure:
    """Stands in for a frame that could not be decoded; ``reason`` is one sentence for the log."""

    reason: str


def _find_timecode(container: Any, stream: Any) -> str | None:
    """The start timecode from the video stream, another stream (tmcd) or the container tags."""
    for tags in [stream.metadata, *(s.metadata for s in container.streams), container.metadata]:
        for key, value in tags.items():
            if key.lower() == "timecode" and value:
                return str(value)
    return None


def _display_turn(frame: Any, path: Path) -> int:
    """How many quarter turns counter-clockwise (0-3) the frame's display matrix asks for.
    InputError for a matrix that mirrors the picture or turns it by another angle."""
    matrix = next((bytes(sd) for sd in frame.side_data
                   if getattr(sd.type, "name", "") == "DISPLAYMATRIX"), None)
    if matrix is None or len(matrix) < 36:
        return 0
    a, b, _, c, d = struct.unpack("=9i", matrix[:36])[:5]
    degrees = float(frame.rotation)
    if a * d - b * c < 0 or abs(degrees / 90 - round(degrees / 90)) > 0.01:
        raise InputError(f"{path} has a display matrix that "
                         f"{'mirrors' if a * d - b * c < 0 else 'turns'} the picture "
                         f"({degrees:g} degrees), which facefuse cannot follow; re-encode it "
                         "upright first (e.g. ffmpeg -i in.mp4 -c:v libx264 out.mp4)")
    return round(degrees / 90) % 4


def _pixel_traits(codec_context: Any) -> tuple[str, int, bool]:
    """(pixel format name, bit depth, has alpha) of a decoder's output format."""
    fmt = codec_context.format
    if fmt is None:
        return "unknown", 8, False
    bits = max((c.bits for c in fmt.components), default=8)
    return fmt.name, max(8, bits), any(c.is_alpha for c in fmt.components)


class VideoSource:
    """A video file read by frame number. ``conform_vfr=True`` accepts a variable-rate source and
    delivers it on the constant grid of its typical rate (see typical_rate): each slot
    shows the last frame that starts before the middle of the slot, so frames are repeated or
    dropped as needed. Use as a context manager or call ``close()``."""

    def __init__(self, path: Path | str, start_number: int = 1, conform_vfr: bool = False,
                 decode_threads: int = _DECODE_THREADS) -> None:
        self._path = Path(path)
        self._decode_threads = max(1, decode_threads)
        self._container = open_input(self._path)
        try:
            self._setup(start_number, conform_vfr)
        except BaseException:
            self._container.close()
            raise

    def _setup(self, start_number: int, conform_vfr: bool) -> None:
        container, path = self._container, self._path
        if container.format.name == "image2" or container.format.name.endswith("_pipe"):
            raise InputError(f"{path} is a single still image, not a video; give an image "
                             "sequence as a pattern (name.####.png) or a video file")
        if not container.streams.video:
            raise InputError(f"{path} has no video stream; give a video file or an image "
                             "sequence pattern (name.####.exr)")
        self._stream = container.streams.video[0]
        self._stream.thread_type = "AUTO"
        self._stream.codec_context.thread_count = self._decode_threads
        rows = scan_packets(container, self._stream, path)
        self._index = build_index(rows, Fraction(self._stream.time_base))
        self._position = MappingProxyType({p: i for i, p in enumerate(self._index.pts)})
        self._refuse_if_truncated()
        self._turns = self._find_turns()
        rate, self._slots = self._choose_rate(conform_vfr or container.format.name == "gif")
        self._info = self._describe(rate, start_number)
        self._reader: Decoder | None = None
        fmt, bits, alpha = self._info.pixel_format, self._info.bit_depth, self._info.has_alpha
        self._array_format = ("bgra" if alpha else "bgr24") if bits <= 8 else (
            "bgra64le" if alpha else "bgr48le")
        logger.debug("%s: %d frames at %s fps, %s (%s)", path, self._info.frame_count,
                     format_rate(rate), fmt, self._array_format)

    def _find_turns(self) -> int:
        """Quarter turns from the display matrix the decoder attaches to the first picture it
        gives (the stream's side data reaches every decoded frame; PyAV has no stream-level
        reader). Decodes from the first key frame; reads seek afresh, so nothing is kept."""
        container, stream = self._container, self._stream
        container.seek(self._index.pts[0], stream=stream, backward=True, any_frame=False)
        try:
            for packet in container.demux(stream):
                for frame in stream.codec_context.decode(packet):
                    return _display_turn(frame, self._path)
        except av.FFmpegError as exc:
            logger.debug("%s: no first picture for the display matrix (%s)", self._path, exc)
        return 0

    def _declared_duration_s(self) -> float | None:
        """How long the header says the video stream (else the container) lasts."""
        stream = self._stream
        if stream.duration:
            return float(stream.duration * Fraction(stream.time_base))
        if self._container.duration:
            return self._container.duration / 1_000_000
        return None

    def _refuse_if_truncated(self) -> None:
        """InputError when the header promises clearly more than the packets hold (a cut file:
        the missing tail would otherwise vanish silently or look like a variable frame rate)."""
        declared = self._declared_duration_s()
        pts, time_base = self._index.pts, self._index.time_base
        if declared is None or len(pts) < 2:
            return
        step = float((pts[-1] - pts[0]) * time_base) / (len(pts) - 1)
        found = float((pts[-1] - pts[0]) * time_base) + step
        if declared - found > 1.5 * step:
            raise InputError(f"{self._path} looks truncated: its header says {declared:.2f} s "
                             f"but only {len(pts)} frames ({found:.2f} s) are in the file")

    def _choose_rate(self, conform_vfr: bool) -> tuple[Fraction, tuple[int, ...] | None]:
        """The exact constant rate, or for a conformed VFR source the grid rate and slot map."""
        s = self._stream
        declared = (s.base_rate, s.guessed_rate, s.average_rate, s.codec_context.framerate)
        rate = constant_rate(self._index, declared)
        if rate is not None:
            return rate, None
        grid = typical_rate(self._index, declared)
        if len(self._index.pts) < 2:
            return grid, None
        if not conform_vfr:
            raise InputError(f"{self._path} has a variable frame rate, which facefuse cannot render "
                             f"frame-accurately; re-run with --conform-vfr to conform it to "
                             f"{format_rate(grid)} fps")
        logger.info("%s: variable frame rate conformed to %s fps", self._path, format_rate(grid))
        return grid, conform_slots(self._index, grid)

    def _describe(self, rate: Fraction, start_number: int) -> VideoInfo:
        cc = self._stream.codec_context
        fmt, bits, alpha = _pixel_traits(cc)
        count = len(self._slots) if self._slots is not None else len(self._index.pts)
        width, height = (cc.height, cc.width) if self._turns % 2 else (cc.width, cc.height)
        return VideoInfo(
            path=self._path, frame_count=count, rate=rate, width=width, height=height,
            codec=cc.name, pixel_format=fmt, bit_depth=bits, has_alpha=alpha,
            timecode=_find_timecode(self._container, self._stream),
            audio_streams=len(self._container.streams.audio), duration_s=float(count / rate),
            variable_frame_rate=self._slots is not None, start_number=start_number,
            start_time_s=float(self._index.pts[0] * self._index.time_base),
            rotation_deg=90 * self._turns,
            colour_tags=(int(cc.colorspace), int(cc.color_range), int(cc.color_primaries),
                         int(cc.color_trc)))

    @property
    def info(self) -> VideoInfo:
        """What the file holds (see VideoInfo)."""
        return self._info

    def read(self, numbers: Iterable[int], clock: StageClock | None = None
             ) -> Iterator[tuple[int, np.ndarray | DecodeFailure]]:
        """Yield ``(number, frame)`` for each wanted frame number (ascending, repeats allowed), in
        the source's numbering. A frame is an (H, W, 3|4) BGR(A) uint8 or uint16 array (see the
        module docstring); one that cannot be decoded comes as ``DecodeFailure`` instead.
        InputError (raised here, before any decoding) for a number outside the clip.
        clock: when given, decoding is timed into its "decode" stage and the conversion to an
        array into "colour" (take() it after each frame for per-frame figures).
        Every frame is an array of its own, a repeated number included, so the caller may
        modify it in place (pass 2 pastes into it)."""
        return self._start(numbers, self._to_array, clock, shared=False)

    def read_decoded(self, numbers: Iterable[int], clock: StageClock | None = None,
                     pending: Callable[[], bool] | None = None
                     ) -> Iterator[tuple[int, np.ndarray | PendingFrame | DecodeFailure,
                                         DecodedPicture | None]]:
        """As read(), with each frame the decoded picture it was made from (read-only views of
        the decoder's planes, io.passthrough; None for a failure and for pictures that are not
        8-bit or 10-bit planar YUV), for a writer that encodes the decoded planes where it can.
        pending: asked before each frame is converted; while it says True, a picture that
        _to_array converts with io.yuv (tags io.yuv reads; upright or turned) comes
        unconverted, as an io.frame_regions.PendingFrame, for a caller that converts only the
        boxes it needs."""
        def convert(picture: Any) -> tuple[np.ndarray | PendingFrame, DecodedPicture | None]:
            decoded = decoded_picture(picture, self._turns, chroma_centred(self._info.codec))
            later = self._pending(picture) if pending is not None and pending() else None
            return (later if later is not None else self._to_array(picture)), decoded

        frames = self._start(numbers, convert, clock, shared=False)
        return ((number, got, None) if isinstance(got, DecodeFailure) else (number, *got)
                for number, got in frames)

    def read_analysis(self, numbers: Iterable[int], max_side_px: int | None,
                      clock: StageClock | None = None
                      ) -> Iterator[tuple[int, AnalysisPicture | np.ndarray | DecodeFailure]]:
        """As read(), for shot analysis: 8-bit YUV pictures (and 10-bit planar ones io.yuv
        reads) come as AnalysisPicture (small
        for a detector of `max_side_px`, full size only where asked; see analysis_pictures),
        other pictures (all of them when max_side_px is None) as frames; a repeated number
        gives the same object again. The conversion is timed as "colour".
        An analysis read decodes from a container of its own, so it may run on one thread
        while a read() runs on another (a render's pass 1 beside its pass 2)."""
        def convert(picture: Any) -> AnalysisPicture | np.ndarray:
            fast = (None if max_side_px is None
                    else analysis_picture(picture, max_side_px, chroma_centred(self._info.codec),
                                          self._turns))
            return fast if fast is not None else self._to_array(picture)

        return self._start(numbers, convert, clock, shared=True)

    def _start(self, numbers: Iterable[int], convert: Callable[[Any], Any],
               clock: StageClock | None, shared: bool) -> Iterator[tuple[int, Any]]:
        """Check the numbers (see read) and start a read that converts with `convert`;
        shared: a repeated number yields the same object again (else a new conversion), and
        the read has a container of its own (closed when the read ends); otherwise it takes
        over this source's container from any earlier read."""
        wanted = list(numbers)
        first, last = self._info.start_number, self._info.start_number + self._info.frame_count - 1
        for a, b in itertools.pairwise(wanted):
            if b < a:
                raise ValueError(f"frame numbers must be ascending ({a} then {b})")
        outside = [n for n in wanted if not first <= n <= last]
        if outside:
            raise InputError(f"frame {outside[0]} is outside {self._path.name} "
                             f"(frames {first}-{last})")
        clock = clock if clock is not None else StageClock()
        if shared:
            return self._deliver_own(wanted, convert, clock)
        self._reader = Decoder(self._container, self._stream, self._index, self._position)
        return self._deliver(wanted, self._reader, convert, clock, shared)

    def _deliver_own(self, wanted: list[int], convert: Callable[[Any], Any],
                     clock: StageClock) -> Iterator[tuple[int, Any]]:
        """A read from a container of its own (the index is this source's: same file)."""
        container = open_input(self._path)
        try:
            stream = container.streams.video[0]
            stream.thread_type = "AUTO"
            stream.codec_context.thread_count = self._decode_threads
            decoder = Decoder(container, stream, self._index, self._position)
            yield from self._deliver(wanted, decoder, convert, clock, shared=True)
        finally:
            container.close()

    def _source_position(self, number: int) -> int:
        slot = number - self._info.start_number
        return self._slots[slot] if self._slots is not None else slot

    def _deliver(self, wanted: list[int], decoder: Decoder, convert: Callable[[Any], Any],
                 clock: StageClock, shared: bool) -> Iterator[tuple[int, Any]]:
        """One read's frames. A later read() takes over the file, so this one then stops."""
        held: tuple[int, Any] | None = None  # the last decoded (position, VideoFrame)
        array: tuple[int, Any] | None = None  # the last converted (position, picture)
        for number in wanted:
            if not shared and self._reader is not decoder:
                raise RuntimeError("another read() started on this VideoSource; "
                                   "finish one read before starting the next")
            pos = self._source_position(number)
            if held is None or held[0] < pos:
                with clock.measure("decode"):
                    held = decoder.frame_at(pos)
            if held is None or held[0] != pos:
                yield number, DecodeFailure(decoder.failure_reason())
                continue
            if array is None or array[0] != pos or not shared:
                with clock.measure("colour"):
                    array = (pos, convert(held[1]))
            yield number, array[1]

    def _pending(self, picture: Any) -> PendingFrame | None:
        """The picture as a PendingFrame (turned upright as _to_array turns it), or None where
        _to_array would not convert it with io.yuv (an alpha, 12-bit, 10-bit full-range or
        otherwise tagged picture)."""
        planes = self._yuv_planes(picture)
        return PendingFrame(planes, self._turns) if planes is not None else None

    def _yuv_planes(self, picture: Any) -> YuvPlanes | None:
        """The planes io.yuv converts `picture` from, when its depth is the stream's (8-bit
        pictures of a bgr24 stream, 10-bit ones of a bgr48le one), else None."""
        bits = _IO_YUV_BITS.get(self._array_format)
        planes = (yuv_planes(picture, chroma_centred(self._info.codec))
                  if bits is not None else None)
        return planes if planes is not None and planes.bits == bits else None

    def _to_array(self, frame: Any) -> np.ndarray:
        """A decoded VideoFrame as an engine frame (BGR(A), uint8 or uint16, C-contiguous).

        8-bit YUV pictures with a matrix io.yuv knows, and 10-bit limited-range planar ones
        (BGR uint16, Y 940 = 65535): io.yuv upsamples the chroma (at the codec's siting) and
        applies the matrix, rounded once, exactly as regions are converted
        (io.analysis_pictures, io.frame_regions). Other 8-bit subsampled pictures (other tags,
        rows stored bottom-up) are upsampled to 4:4:4 by swscale first (its direct 4:2:0 -> BGR
        path truncates levels), then converted by swscale, as are other deep (12-bit, 10-bit
        full range) and alpha pictures. A stored-sideways picture is turned upright (see the
        module docstring)."""
        planes = self._yuv_planes(frame)
        array = yuv_to_bgr(planes) if planes is not None else self._swscale_array(frame)
        return turned(array, self._turns)  # C-contiguous, upright

    def _swscale_array(self, frame: Any) -> np.ndarray:
        """swscale's conversion (through 4:4:4 for 8-bit subsampled pictures)."""
        if frame.format.name in SUBSAMPLED_8BIT:
            frame = frame.reformat(format=SUBSAMPLED_8BIT[frame.format.name])
        return frame.to_ndarray(format=self._array_format)

    def close(self) -> None:
        """Release the file."""
        self._container.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
