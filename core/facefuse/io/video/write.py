"""Writing video files with PyAV: frames in, a faithful .mov, .mp4 or .mkv out.

``VideoSink`` encodes frames (the io.video.frame.DecodedFrame a read gave, or engine frames) with
the source's exact rate (a Fraction) and timecode, stores provenance as container metadata, and
copies audio packet for packet (no re-encode). The file is written under a temporary name in the
same folder, pushed to disk and out of the page cache as it grows (io.write_behind), synced and
renamed on a successful ``close()``, so a failed render never leaves half a video under the
final name, nor a renamed one that a crash could still lose.

What survives where (PyAV 18 / FFmpeg 8 muxers and demuxers):
    .mov/.mp4  timecode: a tmcd track, read back as the video stream's ``timecode``;
               metadata: every key as given (written as ``mdta`` tags, movflags=use_metadata_tags).
    .mkv       timecode: a ``TIMECODE`` stream tag; metadata: every key, but matroska upper-cases
               keys (``facefuse_version`` reads back as ``FACEFUSE_VERSION``; ``title`` stays).
Colour: an 8-bit h264 / h265 output of an 8-bit YUV source whose matrix io.video.yuv reads keeps the
source's own tags (matrix, range, primaries, transfer; an untagged source stays untagged and is
written back with the BT.601 matrix it was read with), so its frames go back in the encoding they
came in, as does a 10-bit h265 output of a 10-bit limited-range H.264 / HEVC source (HDR HEVC keeps
its BT.2020 matrix, primaries and PQ / HLG transfer); other outputs are tagged and converted as
BT.709 limited range (mjpeg: BT.601 full range, as JPEG defines; rawvideo and ffv1 store the frame's
RGB as it is, tagged RGB full range). YUV outputs of BGR frames (8-bit, and the 10-bit ProRes /
DNxHR / deep h265 ones) get io.video.yuv's correctly rounded matrix and its chroma subsampling
(io.video.yuv_write.subsample_chroma); frames with alpha go through swscale. A DecodedFrame goes to
the encoder as a copy of its decoded planes with only the pasted samples converted, where
io.video.passthrough.refusal allows (8-bit and 10-bit planar YUV, a source stored sideways too: the
pastes are turned back to its stored orientation; the 10-bit writers read back with the BT.709
limited-range matrix they convert with: ProRes keeps it in its frame header, HEVC in its VUI, and
FFmpeg's DNxHR decoder gives BT.709 pictures whatever the .mov says).
Lossless: rawvideo (.mov only: Matroska has no native raw RGB) stores bgr24, bgra (alpha) or
rgb48be (deep frames; a deep frame with alpha keeps the alpha in 8-bit bgra, as FFmpeg has no
16-bit RGBA raw tag for .mov); ffv1 (.mkv only: FFmpeg's mov muxer refuses it) is FFV1 level 3,
intra, 16 slices with CRCs, in bgr0, bgra, gbrp16le or gbrap16le. Both decode back bit-exactly.
With keep_yuv (--keep-yuv, io.video.keep_yuv) they store the source's own planar YUV instead, in
.mkv: ffv1 any 8-bit or 10-bit layout, rawvideo yuv420p and yuv422p; the stream keeps the
source's tags and display rotation, and every frame passes through (a first frame that cannot
is an InputError), so outside the pastes the file holds the decoded samples bit for bit.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import MappingProxyType, TracebackType
from typing import Any, Self

import av
import numpy as np

from ...errors import FacefuseError, InputError
from ...timebase import TIMECODE_PATTERN
from ...timing import ENCODER_THREAD_PREFIX, threads_named
from ...types import Pasted
from ..files import create_temporary, is_write_failure, write_error
from ..write_behind import WriteBehind
from .audio import AudioCopy
from .common import (
    CRF_CODECS,
    DEFAULT_PRESET,
    SUBSAMPLED_8BIT,
    check_encoder_options,
)
from .encoders import (
    CONTAINER_FORMATS,
    SWSCALE_COLORSPACES,
    as_writable,
    check_output,
    encoder_options,
)
from .frame import Frame
from .keep_yuv import kept_yuv
from .orientation import turned
from .passthrough import EncoderTarget, compose, refusal
from .read import VideoInfo
from .scaling import Scalers
from .stream_colour import BT709, RANGE_MPEG, stream_colour
from .yuv import RANGE_JPEG
from .yuv_write import bgr_to_picture

logger = logging.getLogger(__name__)

_EMPTY: Mapping[str, str] = MappingProxyType({})


def _whole(frame: Frame) -> np.ndarray:
    """The whole frame converted, its decoded picture let go (of no more use here)."""
    frame.drop_planes()
    return frame.to_ndarray()


class VideoSink:
    """Writes engine frames to a .mov, .mp4 or .mkv file (see the module docstring).

    ``info_like`` gives the rate, size and timecode (usually the source's VideoInfo; when a range
    is written, replace its timecode with ``offset_timecode(tc, rate, first - start_number)``).
    ``codec`` is one of VIDEO_CODECS; ``quality`` is the CRF for h264/h265 (0..51, defaults
    16/18) or the JPEG q-scale for mjpeg (2-31, default 3), ignored by ProRes, DNxHR, rawvideo
    and ffv1, whose profile (or losslessness) fixes the quality. ``preset``: the x264/x265
    preset (default medium; InputError for another codec). ``keep_yuv``: a rawvideo or ffv1
    stream of the source's own planar YUV (io.video.keep_yuv; InputError where it cannot be,
    also at the first frame when its picture cannot pass through). ``audio_from``: copy
    that file's audio streams packet for packet; with ``audio_start_s``/``audio_duration_s``
    (seconds on that file's timeline) only the packets overlapping that span are copied, shifted
    to start at 0 (exact to within half an audio packet, about 10 ms for AAC)."""

    def __init__(self, path: Path | str, info_like: VideoInfo, codec: str = "h264",
                 audio_from: Path | None = None, metadata: Mapping[str, str] = _EMPTY,
                 quality: int | None = None, preset: str | None = None,
                 audio_start_s: float = 0.0, audio_duration_s: float | None = None,
                 threads: int = 0, keep_yuv: bool = False) -> None:
        self._path = Path(path)
        self._threads = threads  # the encoder's thread_count (0: FFmpeg's choice)
        self._scalers = Scalers()  # swscale's contexts for frames it converts (io.video.scaling)
        self._spec = check_output(self._path, codec, info_like.width, info_like.height,
                                  keep_yuv)
        # the source's own YUV stream (io.video.keep_yuv), or None: the codec's
        self._kept = (kept_yuv(info_like, codec, info_like.path.name) if keep_yuv else None)
        self._rgb = self._spec.rgb and self._kept is None
        check_encoder_options(codec, quality if codec in CRF_CODECS else None, preset)
        self._info, self._codec = info_like, codec
        self._preset = DEFAULT_PRESET if preset is None else preset
        self._quality = self._spec.default_quality if quality is None else quality
        self._audio = (AudioCopy(Path(audio_from), audio_start_s, audio_duration_s)
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
        self._matrix = (BT709, False)  # (AVColorSpace, full range) frames are converted with
        self._count, self._done = 0, False
        # whether decoded pictures pass through (None: no frame yet; False: refused, for good)
        self.passes_through: bool | None = None

    def _make_temp(self) -> Path:
        """The hidden temporary beside the output (its mode follows the umask, as images'),
        followed by a io.write_behind.WriteBehind while FFmpeg writes it."""
        try:
            fd, name = create_temporary(self._path, keep_suffix=True)
        except OSError as exc:
            raise write_error(self._path, exc) from exc
        self._behind = WriteBehind(fd)
        return name

    def _failed(self, exc: Exception) -> FacefuseError:
        """Abort, and one sentence for an encoder or disk failure while writing."""
        self.abort()
        if isinstance(exc, OSError) and is_write_failure(exc):
            return write_error(self._path, exc)
        return InputError(f"cannot write {self._path}: {exc}")

    def _open_output(self, metadata: Mapping[str, str]) -> Any:
        suffix = self._path.suffix.lower()
        options = {"movflags": "use_metadata_tags"} if suffix in (".mov", ".mp4") else {}
        if suffix == ".mkv":  # no random segment id nor muxing date: the same render, same bytes
            options["fflags"] = "+bitexact"
        # a packet goes to the file as it is, not copied through the 32 KiB write buffer first
        # (a lossless 1080p frame is 6 MB); the bytes written are the same
        options["avioflags"] = "direct"
        try:
            container = av.open(str(self._tmp), "w", format=CONTAINER_FORMATS[suffix],
                                options=options)
        except (av.FFmpegError, OSError) as exc:
            self._tmp.unlink(missing_ok=True)
            raise InputError(f"cannot write {self._path} ({exc})") from exc
        for key, value in metadata.items():
            container.metadata[key] = str(value)
        return container

    def write(self, frame: Frame | np.ndarray, pasted: Sequence[Pasted] = (),
              colour_transform: bool = False) -> None:
        """Append one frame (the sink's size): a io.video.frame.DecodedFrame as read, with
        faces pasted into its conversions where `pasted` says (types.Pasted), or an engine
        frame ((H, W, 3|4) BGR(A), uint8/uint16/float32). Alpha is kept by prores_4444,
        rawvideo and ffv1 and dropped by the other codecs.

        Where io.video.passthrough.refusal lets the frame's decoded planes through
        (colour_transform: the frame's colours were transformed since it was read), the
        encoder gets a copy of its planes with only the pasted samples converted, from the
        part the frame converted (frame.converted()); otherwise the whole frame is converted
        (see the module docstring) and the frame lets its decoded picture go
        (frame.drop_planes())."""
        if self._done:
            raise ValueError("write() after close() or abort()")
        if frame.shape[:2] != (self._info.height, self._info.width):
            raise ValueError(f"frame is {frame.shape[1]}x{frame.shape[0]}, the video is "
                             f"{self._info.width}x{self._info.height}")
        if self._stream is None:
            self._open_streams(frame.shape[2] == 4, frame.dtype != np.uint8)
        picture = self._passed_through(frame, pasted, colour_transform)
        if picture is None:
            array = frame if isinstance(frame, np.ndarray) else _whole(frame)
            turns = self._info.rotation_deg // 90 % 4
            if turns:  # back to the source's stored orientation (lossless); see _open_streams
                array = turned(array, -turns)
            picture = self._picture(*as_writable(array, deep=self._deep))
        self._encode(picture)

    def _encode(self, picture: Any) -> None:
        picture.pts = self._count
        self._count += 1
        try:
            if self._count == 1:  # the first encode opens the encoder, which starts its threads
                with threads_named(ENCODER_THREAD_PREFIX + self._spec.encoder):
                    packets = self._stream.encode(picture)
            else:
                packets = self._stream.encode(picture)
            self._container.mux(packets)
            if self._audio is not None:
                self._audio.copy_until(self._container, float(self._count / self._info.rate))
            self._behind.advance()
        except (av.FFmpegError, OSError) as exc:
            raise self._failed(exc) from exc

    def _passed_through(self, frame: Frame | np.ndarray, pasted: Sequence[Pasted],
                        colour_transform: bool) -> Any | None:
        """The frame's decoded planes with the pasted samples replaced, or None where
        io.video.passthrough.refusal says no (an engine frame comes without its planes).
        The first frame decides for the stream (the conditions are the stream's): refused,
        every later frame is converted whole too; passed, a later frame refused on its own
        (it came without its planes) is converted whole and the stream goes on passing
        pictures through. Each is logged at debug."""
        if self.passes_through is False:
            return None
        cc = self._stream.codec_context
        target = EncoderTarget(self._pix_fmt, cc.width, cc.height, cc.colorspace,
                               cc.color_range, self._info.rotation_deg // 90 % 4)
        if isinstance(frame, np.ndarray):
            decoded, samples = None, frame
        else:  # the frame's size and sample type, without converting it
            decoded = frame.planes()
            samples = np.broadcast_to(np.zeros(frame.shape[2], frame.dtype), frame.shape)
        reason = refusal(decoded, target, samples, colour_transform)
        if reason is not None or decoded is None or isinstance(frame, np.ndarray):
            if self.passes_through is None and self._kept is not None:
                self.abort()
                raise InputError(f"--keep-yuv cannot keep {self._info.path.name}'s pictures "
                                 f"as decoded: {reason}; leave --keep-yuv out")
            if self.passes_through is None:
                self.passes_through = False
                logger.debug("%s: whole frames converted: %s", self._path, reason)
            else:
                logger.debug("%s: frame %d converted whole: %s", self._path, self._count,
                             reason)
            return None
        if self.passes_through is None:
            self.passes_through = True
            logger.debug("%s: decoded pictures pass through, only pasted samples converted",
                         self._path)
        part = frame.converted()
        if part is None:  # nothing converted, so nothing pasted
            return compose(decoded, samples[:0, :0], (), target, (0, 0))
        return compose(decoded, part.pixels, pasted, target, part.part.origin_xy)

    def _picture(self, array: np.ndarray, packed: str) -> Any:
        """The av.VideoFrame to encode, in the stream's pixel format. YUV targets of a BGR frame
        (8-bit, and 10-bit limited range): io.video.yuv's matrix (rounded once), then its chroma
        subsampling at the codec's siting (io.video.yuv_write.subsample_chroma); RGB targets: a
        repacking (exact), and where the array is packed as the stream stores it the array
        itself, uncopied; others: swscale, through 4:4:4 for 8-bit subsampled targets (its
        direct path truncates levels)."""
        colorspace, full_range = self._matrix
        if not self._rgb and packed in ("bgr24", "bgr48le"):
            fast = bgr_to_picture(array, self._pix_fmt, colorspace, full_range)
            if fast is not None:
                return fast
        if packed == self._pix_fmt:
            return av.VideoFrame.from_numpy_buffer(array, format=packed)
        picture = av.VideoFrame.from_ndarray(array, format=packed)
        if self._rgb:
            picture = self._scalers.reformat(picture, format=self._pix_fmt)
        else:
            picture = self._scalers.reformat(
                picture, format=SUBSAMPLED_8BIT.get(self._pix_fmt, self._pix_fmt),
                dst_colorspace=SWSCALE_COLORSPACES.get(colorspace, "itu709"),
                dst_color_range=RANGE_JPEG if full_range else RANGE_MPEG)
        if picture.format.name != self._pix_fmt:
            picture = self._scalers.reformat(picture, format=self._pix_fmt)
        return picture

    def _open_streams(self, alpha: bool, deep: bool) -> None:
        """Create the video stream (format chosen from the first frame: with `alpha`, `deep`
        samples) and the audio copies."""
        spec = self._spec
        if self._kept is not None:
            self._pix_fmt = self._kept.pixel_format
        elif alpha and deep and spec.pix_fmt_deep_alpha:
            self._pix_fmt = spec.pix_fmt_deep_alpha
        elif alpha and spec.pix_fmt_alpha:
            self._pix_fmt = spec.pix_fmt_alpha
        elif deep and spec.pix_fmt_deep:
            self._pix_fmt = spec.pix_fmt_deep
        self._deep = max(c.bits for c in av.VideoFormat(self._pix_fmt).components) > 8
        options = encoder_options(spec, self._preset, self._quality,
                                  min(self._info.width, self._info.height))
        stream = self._container.add_stream(spec.encoder, rate=self._info.rate, options=options)
        turns = self._info.rotation_deg // 90 % 4
        stream.width, stream.height = ((self._info.height, self._info.width) if turns % 2
                                       else (self._info.width, self._info.height))
        if turns:  # the source's display matrix: players show the upright frames written
            stream.set_display_rotation(90 * turns)
        stream.pix_fmt, stream.thread_type = self._pix_fmt, "AUTO"
        if self._threads > 0:
            stream.codec_context.thread_count = self._threads
        colour = stream_colour(spec, self._info, self._pix_fmt, self._rgb, self._kept)
        colour.tag(stream.codec_context)
        self._matrix = colour.matrix
        if spec.quality_option == "q":
            self._fix_qscale(stream.codec_context)
        if spec.encoder == "libx265" and self._path.suffix.lower() != ".mkv":
            stream.codec_context.codec_tag = "hvc1"  # what Apple players expect
        if self._info.timecode and TIMECODE_PATTERN.match(self._info.timecode):
            stream.metadata["timecode"] = self._info.timecode
        elif self._info.timecode:
            logger.warning("timecode %r is not HH:MM:SS:FF; not written", self._info.timecode)
        self._stream = stream
        if self._audio is not None:
            self._audio.add_streams(self._container)

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
            self._behind.finish()  # on disk before it takes the final name
            os.replace(self._tmp, self._path)
            self._done = True
            logger.info("wrote %s (%d frames, %s)", self._path, self._count, self._codec)
        except (av.FFmpegError, OSError) as exc:
            raise self._failed(exc) from exc
        except BaseException:
            self.abort()
            raise

    def abort(self) -> None:
        """Stop writing and delete the temporary file; the final path is left untouched."""
        if not self._done:
            self._done = True
            self._cleanup()

    def _cleanup(self) -> None:
        closers = [getattr(self, "_container", None), self._audio,
                   getattr(self, "_behind", None)]
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
