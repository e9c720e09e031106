"""Writing video files with PyAV: engine frames in, a faithful .mov, .mp4 or .mkv out.

``VideoSink`` encodes engine frames with the source's exact rate (a Fraction) and
timecode, stores provenance as container metadata, and copies audio packet for packet (no
re-encode). The file is written under a temporary name in the same folder and renamed on a
successful ``close()``, so a failed render never leaves half a video under the final name.

What survives where (PyAV 18 / FFmpeg 8 muxers and demuxers):
    .mov/.mp4  timecode: a tmcd track, read back as the video stream's ``timecode``;
               metadata: every key as given (written as ``mdta`` tags, movflags=use_metadata_tags).
    .mkv       timecode: a ``TIMECODE`` stream tag; metadata: every key, but matroska upper-cases
               keys (``facefuse_version`` reads back as ``FACEFUSE_VERSION``; ``title`` stays).
Colour: an 8-bit h264 / h265 output of an 8-bit YUV source whose matrix io.yuv reads keeps the
source's own tags (matrix, range, primaries, transfer; an untagged source stays untagged and is
written back with the BT.601 matrix it was read with), so its frames go back in the encoding
they came in, as does a 10-bit h265 output of a 10-bit limited-range H.264 / HEVC source (HDR
HEVC keeps its BT.2020 matrix, primaries and PQ / HLG transfer); other outputs are tagged and
converted as BT.709 limited range (mjpeg: BT.601 full range, as JPEG defines; rawvideo and
ffv1 store the frame's RGB as it is, tagged RGB full range). YUV outputs
of BGR frames (8-bit, and the 10-bit ProRes / DNxHR / deep h265 ones) get io.yuv's correctly
rounded matrix and its chroma subsampling (io.yuv.subsample_chroma); frames with alpha go
through swscale. A frame
written with the decoded picture it came from goes to the encoder as a copy of that picture's
planes with only the pasted samples converted, where io.passthrough.refusal allows (8-bit
and 10-bit planar YUV, a source stored sideways too: the pastes are turned back to its stored
orientation; the 10-bit writers read back with the BT.709 limited-range matrix they convert
with: ProRes keeps it in its frame header, HEVC in its VUI, and FFmpeg's DNxHR decoder gives
BT.709 pictures whatever the .mov says).
Lossless: rawvideo (.mov only: Matroska has no native raw RGB) stores bgr24, bgra (alpha) or
rgb48be (deep frames; a deep frame with alpha keeps the alpha in 8-bit bgra, as FFmpeg has no
16-bit RGBA raw tag for .mov); ffv1 (.mkv only: FFmpeg's mov muxer refuses it) is FFV1 level 3,
intra, 16 slices with CRCs, in bgr0, bgra, gbrp16le or gbrap16le. Both decode back bit-exactly.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType, TracebackType
from typing import Any, Self

import av
import numpy as np

from ..errors import FacefuseError, InputError
from ..types import Pasted
from .files import create_temporary, is_write_failure, write_error
from .frame_regions import FrameRegion
from .orientation import turned
from .passthrough import DecodedPicture, EncoderTarget, compose, refusal
from .video_common import (
    CRF_CODECS,
    DEFAULT_CRF,
    DEFAULT_PRESET,
    SUBSAMPLED_8BIT,
    TIMECODE_PATTERN,
    VIDEO_CODECS,
    check_encoder_options,
    open_input,
)
from .video_read import VideoInfo
from .yuv import PLANAR_8BIT, PLANAR_10BIT, bgr_to_picture, matrix_for

logger = logging.getLogger(__name__)

_CONTAINER_FORMATS = MappingProxyType({".mov": "mov", ".mp4": "mp4", ".mkv": "matroska"})
_EMPTY: Mapping[str, str] = MappingProxyType({})
_RGB, _BT709, _BT601, _RANGE_MPEG, _RANGE_JPEG = 0, 1, 6, 1, 2  # AVColorSpace / AVColorRange
_VUI_DECODERS = frozenset({"h264", "hevc"})  # decoders whose pictures carry the stream's tags
# AVColorSpace -> swscale's name for it, for the frames io.yuv does not convert (alpha)
_SWSCALE_COLORSPACES = MappingProxyType({1: "itu709", 2: "default", 4: "fcc", 5: "itu601",
                                         6: "itu601", 7: "smpte240m", 9: "bt2020"})


@dataclass(frozen=True, slots=True)
class _CodecSpec:
    """How one VIDEO_CODECS name is encoded."""

    encoder: str
    pix_fmt: str
    containers: frozenset[str]
    pix_fmt_alpha: str | None = None
    pix_fmt_deep: str | None = None
    pix_fmt_deep_alpha: str | None = None
    options: tuple[tuple[str, str], ...] = ()
    quality_option: str | None = None
    default_quality: int = 0
    jpeg_range: bool = False
    rgb: bool = False  # stores RGB as it is: no YUV conversion, tagged RGB full range
    # the bitstream carries the colour tags (H.264 / HEVC VUI), so a source's own can be kept;
    # DNxHR's .mov has no colour atom from FFmpeg and reads back as BT.709
    keeps_source_tags: bool = False
    container_note: str = ""  # why the containers are limited, for the refusal


_ALL = frozenset(_CONTAINER_FORMATS)
_CODECS: Mapping[str, _CodecSpec] = MappingProxyType({
    "h264": _CodecSpec("libx264", "yuv420p", _ALL, quality_option="crf",
                       default_quality=DEFAULT_CRF["h264"], keeps_source_tags=True),
    "h265": _CodecSpec("libx265", "yuv420p", _ALL, pix_fmt_deep="yuv420p10le",
                       options=(("x265-params", "log-level=error"),),
                       quality_option="crf", default_quality=DEFAULT_CRF["h265"],
                       keeps_source_tags=True),
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
    "rawvideo": _CodecSpec("rawvideo", "bgr24", frozenset({".mov"}), pix_fmt_alpha="bgra",
                           pix_fmt_deep="rgb48be", rgb=True,
                           container_note=" (Matroska has no native raw RGB; ffv1 in .mkv is "
                           "lossless too)"),
    "ffv1": _CodecSpec("ffv1", "bgr0", frozenset({".mkv"}), pix_fmt_alpha="bgra",
                       pix_fmt_deep="gbrp16le", pix_fmt_deep_alpha="gbrap16le",
                       options=(("level", "3"), ("slicecrc", "1"), ("g", "1")),
                       rgb=True, container_note=" (FFmpeg's .mov muxer does not take FFV1)"),
})


def check_container(path: Path, codec: str) -> None:
    """InputError unless ``codec`` is one facefuse writes and ``path``'s container holds it
    (checked before a render starts; the frame size is checked when the first frame comes)."""
    _spec_for(Path(path), codec)


def _spec_for(path: Path, codec: str) -> _CodecSpec:
    suffix = path.suffix.lower()
    if codec not in _CODECS:
        raise InputError(f"unknown video codec {codec!r}; choose one of {', '.join(VIDEO_CODECS)}")
    if suffix not in _CONTAINER_FORMATS:
        raise InputError(f"{path}: cannot write {suffix or 'files without an extension'} videos; "
                         f"use one of {', '.join(sorted(_CONTAINER_FORMATS))}")
    spec = _CODECS[codec]
    if suffix not in spec.containers:
        raise InputError(f"{codec} cannot be stored in {suffix}{spec.container_note}; "
                         f"use {' or '.join(sorted(spec.containers))}")
    return spec


def _check_output(path: Path, codec: str, width: int, height: int) -> _CodecSpec:
    """InputError unless ``codec`` can be written to ``path`` at this size."""
    spec = _spec_for(path, codec)
    if spec.pix_fmt.startswith("yuv420") and (width % 2 or height % 2):
        raise InputError(f"{codec} needs an even width and height, and the frames are "
                         f"{width}x{height}; choose prores_4444 or mjpeg")
    if spec.encoder == "prores_ks" and spec.pix_fmt.startswith("yuv422") and width % 2:
        # FFmpeg's ProRes encoder garbles the last chroma column of an odd width (green)
        raise InputError(f"{codec} needs an even width, and the frames are {width}x{height}; "
                         f"choose prores_4444 or mjpeg")
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


def _tags_travel(pixel_format: str, info: VideoInfo) -> bool:
    """Whether a stream of `pixel_format` may keep the colour tags of `info`'s source: both
    8-bit planar YUV, or both 10-bit with the source decoded from H.264 / HEVC, whose
    pictures carry the four tags of the stream (FFmpeg's DNxHR decoder gives BT.709 pictures
    whatever its .mov says, and ProRes primaries and transfer read back unspecified)."""
    if pixel_format in PLANAR_8BIT:
        return info.pixel_format in PLANAR_8BIT
    return (pixel_format in PLANAR_10BIT and info.pixel_format in PLANAR_10BIT
            and info.codec in _VUI_DECODERS)


class VideoSink:
    """Writes engine frames to a .mov, .mp4 or .mkv file (see the module docstring).

    ``info_like`` gives the rate, size and timecode (usually the source's VideoInfo; when a range
    is written, replace its timecode with ``offset_timecode(tc, rate, first - start_number)``).
    ``codec`` is one of VIDEO_CODECS; ``quality`` is the CRF for h264/h265 (0..51, defaults
    16/18) or the JPEG q-scale for mjpeg (2-31, default 3), ignored by ProRes, DNxHR, rawvideo
    and ffv1, whose profile (or losslessness) fixes the quality. ``preset``: the x264/x265
    preset (default medium; InputError for another codec). ``audio_from``: copy
    that file's audio streams packet for packet; with ``audio_start_s``/``audio_duration_s``
    (seconds on that file's timeline) only the packets overlapping that span are copied, shifted
    to start at 0 (exact to within half an audio packet, about 10 ms for AAC)."""

    def __init__(self, path: Path | str, info_like: VideoInfo, codec: str = "h264",
                 audio_from: Path | None = None, metadata: Mapping[str, str] = _EMPTY,
                 quality: int | None = None, preset: str | None = None,
                 audio_start_s: float = 0.0, audio_duration_s: float | None = None,
                 threads: int = 0) -> None:
        self._path = Path(path)
        self._threads = threads  # the encoder's thread_count (0: FFmpeg's choice)
        self._spec = _check_output(self._path, codec, info_like.width, info_like.height)
        check_encoder_options(codec, quality if codec in CRF_CODECS else None, preset)
        self._info, self._codec = info_like, codec
        self._preset = DEFAULT_PRESET if preset is None else preset
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
        self._matrix = (_BT709, False)  # (AVColorSpace, full range) frames are converted with
        self._count, self._done = 0, False
        # whether decoded pictures pass through (None: no frame yet; False: refused, for good)
        self.passes_through: bool | None = None

    def _make_temp(self) -> Path:
        """The hidden temporary beside the output; its mode follows the umask, as images'."""
        try:
            fd, name = create_temporary(self._path, keep_suffix=True)
        except OSError as exc:
            raise write_error(self._path, exc) from exc
        os.close(fd)
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
        try:
            container = av.open(str(self._tmp), "w", format=_CONTAINER_FORMATS[suffix],
                                options=options)
        except (av.FFmpegError, OSError) as exc:
            self._tmp.unlink(missing_ok=True)
            raise InputError(f"cannot write {self._path} ({exc})") from exc
        for key, value in metadata.items():
            container.metadata[key] = str(value)
        return container

    def write(self, frame: np.ndarray, decoded: DecodedPicture | None = None,
              pasted: Sequence[Pasted] = (), colour_transform: bool = False) -> None:
        """Append one engine frame ((H, W, 3|4) BGR(A), uint8/uint16/float32, the sink's size).
        Alpha is kept by prores_4444, rawvideo and ffv1 and dropped by the other codecs.

        decoded: the picture `frame` was decoded from, and pasted: where faces were pasted into
        `frame` since; when io.passthrough.refusal lets it through (colour_transform: the frame's
        colours were transformed since), the encoder gets a copy of its planes with only the
        pasted samples replaced instead of the whole frame converted (see io.passthrough)."""
        if self._done:
            raise ValueError("write() after close() or abort()")
        if frame.shape[:2] != (self._info.height, self._info.width):
            raise ValueError(f"frame is {frame.shape[1]}x{frame.shape[0]}, the video is "
                             f"{self._info.width}x{self._info.height}")
        if self._stream is None:
            self._open_streams(frame)
        picture = self._passed_through(frame, decoded, pasted, colour_transform)
        if picture is None:
            turns = self._info.rotation_deg // 90 % 4
            if turns:  # back to the source's stored orientation (lossless); see _open_streams
                frame = turned(frame, -turns)
            picture = self._picture(*_as_writable(frame, deep=self._deep))
        self._encode(picture)

    def write_region(self, region: FrameRegion, decoded: DecodedPicture,
                     pasted: Sequence[Pasted] = ()) -> None:
        """Append one frame given as `region` (only the part around the pastes converted to
        BGR; io.frame_regions) of the picture `decoded`, for a stream whose decoded pictures
        already pass through (passes_through True, else ValueError): the encoder gets them
        as write() gives them. Should io.passthrough.refusal turn this picture down, the
        region's whole frame is converted and written instead."""
        if self._done or self.passes_through is not True:
            raise ValueError("write_region() needs an open stream that passes decoded "
                             "pictures through")
        cc = self._stream.codec_context
        target = EncoderTarget(self._pix_fmt, cc.width, cc.height, cc.colorspace,
                               cc.color_range, self._info.rotation_deg // 90 % 4)
        shape = np.broadcast_to(np.zeros(3, region.pixels.dtype), region.shape)  # no pixels
        if refusal(decoded, target, shape) is not None:
            self.write(region.whole(), decoded, pasted)
            return
        self._encode(compose(decoded, region.pixels, pasted, target,
                             region.part.origin_xy))

    def _encode(self, picture: Any) -> None:
        picture.pts = self._count
        self._count += 1
        try:
            self._container.mux(self._stream.encode(picture))
            if self._audio is not None:
                self._audio.copy_until(self._container, float(self._count / self._info.rate))
        except (av.FFmpegError, OSError) as exc:
            raise self._failed(exc) from exc

    def _passed_through(self, frame: np.ndarray, decoded: DecodedPicture | None,
                        pasted: Sequence[Pasted], colour_transform: bool) -> Any | None:
        """The decoded picture with the pasted samples replaced, or None where
        io.passthrough.refusal says no. The first frame decides for the stream (the conditions
        are the stream's): refused, every later frame is converted whole too; passed, a later
        frame refused on its own (it came without its picture) is converted whole and the
        stream goes on passing pictures through. Each is logged at debug."""
        if self.passes_through is False:
            return None
        cc = self._stream.codec_context
        target = EncoderTarget(self._pix_fmt, cc.width, cc.height, cc.colorspace,
                               cc.color_range, self._info.rotation_deg // 90 % 4)
        reason = refusal(decoded, target, frame, colour_transform)
        if reason is not None or decoded is None:
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
        return compose(decoded, frame, pasted, target)

    def _picture(self, array: np.ndarray, packed: str) -> Any:
        """The av.VideoFrame to encode, in the stream's pixel format. YUV targets of a BGR frame
        (8-bit, and 10-bit limited range): io.yuv's matrix (rounded once), then its chroma
        subsampling at the codec's siting (io.yuv.subsample_chroma); RGB targets: a repacking
        (exact); others: swscale, through 4:4:4 for 8-bit subsampled targets (its direct path
        truncates levels)."""
        colorspace, full_range = self._matrix
        if not self._spec.rgb and packed in ("bgr24", "bgr48le"):
            fast = bgr_to_picture(array, self._pix_fmt, colorspace, full_range)
            if fast is not None:
                return fast
        picture = av.VideoFrame.from_ndarray(array, format=packed)
        if self._spec.rgb:
            picture = picture.reformat(format=self._pix_fmt)
        else:
            picture = picture.reformat(format=SUBSAMPLED_8BIT.get(self._pix_fmt, self._pix_fmt),
                                       dst_colorspace=_SWSCALE_COLORSPACES.get(colorspace,
                                                                               "itu709"),
                                       dst_color_range=_RANGE_JPEG if full_range
                                       else _RANGE_MPEG)
        if picture.format.name != self._pix_fmt:
            picture = picture.reformat(format=self._pix_fmt)
        return picture

    def _open_streams(self, frame: np.ndarray) -> None:
        """Create the video stream (format chosen from the first frame) and the audio copies."""
        spec = self._spec
        alpha, deep = frame.shape[2] == 4, frame.dtype != np.uint8
        if alpha and deep and spec.pix_fmt_deep_alpha:
            self._pix_fmt = spec.pix_fmt_deep_alpha
        elif alpha and spec.pix_fmt_alpha:
            self._pix_fmt = spec.pix_fmt_alpha
        elif deep and spec.pix_fmt_deep:
            self._pix_fmt = spec.pix_fmt_deep
        self._deep = max(c.bits for c in av.VideoFormat(self._pix_fmt).components) > 8
        options = dict(spec.options)
        if spec.encoder in ("libx264", "libx265"):
            options["preset"] = self._preset
        if spec.quality_option == "crf":
            options["crf"] = str(self._quality)
        if spec.encoder == "ffv1":  # 16 slices (4x4) for threads; tiny frames cannot be cut so
            side = min(self._info.width, self._info.height)
            options["slices"] = "16" if side >= 8 else "4" if side >= 2 else "1"
        stream = self._container.add_stream(spec.encoder, rate=self._info.rate, options=options)
        turns = self._info.rotation_deg // 90 % 4
        stream.width, stream.height = ((self._info.height, self._info.width) if turns % 2
                                       else (self._info.width, self._info.height))
        if turns:  # the source's display matrix: players show the upright frames written
            stream.set_display_rotation(90 * turns)
        stream.pix_fmt, stream.thread_type = self._pix_fmt, "AUTO"
        if self._threads > 0:
            stream.codec_context.thread_count = self._threads
        self._tag_colour(stream.codec_context)
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

    def _tag_colour(self, cc: Any) -> None:
        """Tag the stream (see the module docstring) and remember the matrix frames are
        converted with: (AVColorSpace, full range)."""
        jpeg, rgb = self._spec.jpeg_range, self._spec.rgb
        kept = self._source_tags()
        if kept is not None:
            cc.colorspace, cc.color_range, cc.color_primaries, cc.color_trc = kept
            self._matrix = (kept[0], kept[1] == _RANGE_JPEG)
            return
        cc.colorspace = _RGB if rgb else _BT601 if jpeg else _BT709
        cc.color_range = _RANGE_JPEG if jpeg or rgb else _RANGE_MPEG
        if not jpeg:
            cc.color_primaries, cc.color_trc = _BT709, _BT709
        self._matrix = (_BT601 if jpeg else _BT709, jpeg)

    def _source_tags(self) -> tuple[int, int, int, int] | None:
        """The source's (colorspace, range, primaries, transfer) for this stream, range made
        explicit for a full-range (yuvj) source, or None where the stream takes its own tags:
        a codec other than h264 / h265, an output and source not both 8-bit YUV or both 10-bit
        YUV (_tags_travel), a source whose matrix io.yuv does not read, or 10-bit full range."""
        info, spec = self._info, self._spec
        if (not spec.keeps_source_tags or info.colour_tags is None
                or not _tags_travel(self._pix_fmt, info)):
            return None
        colorspace, color_range, primaries, trc = info.colour_tags
        matrix = matrix_for(colorspace, color_range, info.pixel_format)
        if matrix is None or (matrix.full_range and self._pix_fmt in PLANAR_10BIT):
            return None
        return colorspace, _RANGE_JPEG if matrix.full_range else color_range, primaries, trc

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
        self._container = open_input(path, "media")
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
