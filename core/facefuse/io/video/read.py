"""Reading video files with PyAV, frame-accurately by frame number.

Numbering: video frames are numbered from 1, like Blender's strips and ffmpeg's image sequences;
``VideoSource(path, start_number=0)`` (or any other number) overrides that. Frame ``n`` is the
``(n - start_number)``-th picture in presentation order.

``VideoSource`` demuxes the file once without decoding to index every video packet's
presentation timestamp (io.video.index): that gives the exact frame count and shows a variable
frame rate. A read seeks to the key frame a wanted frame depends on and decodes forward,
recognising each picture by its timestamp, never by counting. Each frame comes as one
io.video.frame.DecodedFrame, which converts to the engine convention (see types.py) when
asked: BGR uint8 for 8-bit sources, BGR uint16 for deeper ones, BGRA/uint16 BGRA when the
source has alpha. Colour: conversions use the matrix and range the stream is tagged with
(8-bit YUV and 10-bit limited-range planar YUV through io.video.yuv: its own chroma
upsampling at the codec's siting and the matrix, rounded once to the nearest level;
everything else through swscale).

Rotation: phone footage is often stored sideways with a display matrix telling players to turn it.
Frames are delivered upright (the stored picture turned by the display rotation with ``np.rot90``,
which is lossless, as each conversion is made), so detection, swapping and pasting all see the
picture as players show it; ``VideoInfo.width``/``height`` are the upright size and ``rotation_deg``
the rotation, for a writer to re-apply. A display matrix that mirrors or turns by other than a
multiple of 90 degrees is refused (InputError) rather than delivered the wrong way round.

Animated GIF: its frame durations are whole hundredths of a second and often vary, so a GIF
whose frames do not sit on one constant rate is conformed to its typical rate automatically
(as ``conform_vfr=True`` does for other files).
"""

from __future__ import annotations

import itertools
import logging
import struct
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from types import MappingProxyType
from typing import Any, Self

import av

from ...errors import InputError
from ...timebase import rate_text
from ...timing import DECODER_THREAD_PREFIX, StageClock, threads_named
from .common import open_input
from .frame import DecodedFrame
from .index import (
    Decoder,
    build_index,
    conform_slots,
    constant_rate,
    scan_packets,
    typical_rate,
)
from .scaling import Scalers
from .yuv import chroma_centred

logger = logging.getLogger(__name__)

_DECODE_THREADS = 4


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
    # side_data is a mapping by type (PyAV 18.1.1 iterates its keys, 18.1.0 its values)
    found = frame.side_data.get("DISPLAYMATRIX")
    matrix = bytes(found) if found is not None else None
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


def open_decoder(stream: Any) -> None:
    """Open the stream's decoder (as its first decode would) with the calling thread named
    DECODER_THREAD_PREFIX..., so the threads it starts are counted as the decoder's
    (timing.ThreadCpu). A decoder that cannot open is left to fail where the first decode
    fails (each frame a DecodeFailure)."""
    with threads_named(DECODER_THREAD_PREFIX + stream.codec_context.name):
        try:
            stream.codec_context.open(strict=False)
        except av.FFmpegError as exc:
            logger.debug("%s decoder did not open: %s", stream.codec_context.name, exc)


class VideoSource:
    """A video file read by frame number. ``conform_vfr=True`` accepts a variable-rate source and
    delivers it on the constant grid of its typical rate (see typical_rate): each slot
    shows the last frame that starts before the middle of the slot, so frames are repeated or
    dropped as needed. Use as a context manager or call ``close()``."""

    def __init__(self, path: Path | str, start_number: int = 1, conform_vfr: bool = False,
                 decode_threads: int = _DECODE_THREADS) -> None:
        self._path = Path(path)
        self._decode_threads = max(1, decode_threads)
        self._scalers = Scalers()  # swscale's contexts for its frames (io.video.scaling)
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
        fmt, bits, alpha = self._info.pixel_format, self._info.bit_depth, self._info.has_alpha
        self._array_format = ("bgra" if alpha else "bgr24") if bits <= 8 else (
            "bgra64le" if alpha else "bgr48le")
        logger.debug("%s: %d frames at %s fps, %s (%s)", path, self._info.frame_count,
                     rate_text(rate), fmt, self._array_format)

    def _find_turns(self) -> int:
        """Quarter turns from the display matrix the decoder attaches to the first picture it
        gives (the stream's side data reaches every decoded frame; PyAV has no stream-level
        reader). Decodes from the first key frame; reads seek afresh, so nothing is kept."""
        container, stream = self._container, self._stream
        container.seek(self._index.pts[0], stream=stream, backward=True, any_frame=False)
        try:
            open_decoder(stream)
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
            raise InputError(f"{self._path} has a variable frame rate, which facefuse cannot "
                             f"render frame-accurately; re-run with --conform-vfr to conform it to "
                             f"{rate_text(grid)} fps")
        logger.info("%s: variable frame rate conformed to %s fps", self._path, rate_text(grid))
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
             ) -> Iterator[tuple[int, DecodedFrame | DecodeFailure]]:
        """Yield ``(number, frame)`` for each wanted frame number (ascending, repeats allowed), in
        the source's numbering: a io.video.frame.DecodedFrame, which converts when asked
        (to_ndarray() gives the (H, W, 3|4) BGR(A) uint8 or uint16 engine frame, see the
        module docstring), or a DecodeFailure for a frame that cannot be decoded.
        InputError (raised here, before any decoding) for a number outside the clip.
        clock: when given, decoding is timed into its "decode" stage and the reader's own
        conversions into "colour" (take() it after each frame for per-frame figures).
        Every frame is an object of its own, a repeated number included (sharing the decoded
        picture, which is never written), so the caller may paste into its conversions. Each
        read decodes from a container of its own, so reads may run on several threads at
        once (a render's pass 1 beside its pass 2)."""
        wanted = list(numbers)
        first, last = self._info.start_number, self._info.start_number + self._info.frame_count - 1
        for a, b in itertools.pairwise(wanted):
            if b < a:
                raise ValueError(f"frame numbers must be ascending ({a} then {b})")
        outside = [n for n in wanted if not first <= n <= last]
        if outside:
            raise InputError(f"frame {outside[0]} is outside {self._path.name} "
                             f"(frames {first}-{last})")
        return self._deliver(wanted, clock if clock is not None else StageClock())

    def _deliver(self, wanted: list[int], clock: StageClock
                 ) -> Iterator[tuple[int, DecodedFrame | DecodeFailure]]:
        """One read's frames, from a container of its own (the index is this source's: same
        file), closed when the read ends."""
        container = open_input(self._path)
        try:
            stream = container.streams.video[0]
            stream.thread_type = "AUTO"
            stream.codec_context.thread_count = self._decode_threads
            open_decoder(stream)
            decoder = Decoder(container, stream, self._index, self._position)
            held: tuple[int, Any] | None = None  # the last decoded (position, VideoFrame)
            for number in wanted:
                pos = self._source_position(number)
                if held is None or held[0] < pos:
                    with clock.measure("decode"):
                        held = decoder.frame_at(pos)
                if held is None or held[0] != pos:
                    yield number, DecodeFailure(decoder.failure_reason())
                    continue
                yield number, self._frame(held[1], clock)
        finally:
            container.close()

    def _frame(self, picture: Any, clock: StageClock) -> DecodedFrame:
        """The frame of a decoded picture, upright. One that io.video.yuv does not convert by
        parts is converted at once, timed as "colour": every use of it needs the whole frame
        (8-bit YUV with a matrix io.video.yuv knows and 10-bit limited-range planar YUV stay
        unconverted until asked; other 8-bit subsampled pictures go through swscale's 4:4:4,
        deep and alpha pictures through swscale)."""
        frame = DecodedFrame.of_picture(picture, self._array_format, self._turns,
                                        chroma_centred(self._info.codec), self._scalers)
        if not frame.by_parts:
            with clock.measure("colour"):
                frame.to_ndarray()
        return frame

    def _source_position(self, number: int) -> int:
        slot = number - self._info.start_number
        return self._slots[slot] if self._slots is not None else slot

    def close(self) -> None:
        """Release the file."""
        self._container.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
