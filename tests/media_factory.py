"""Generate small test clips with PyAV, each frame carrying its own index as a burned-in marker.

The marker is a row of ``MARKER_BITS`` blocks of ``MARKER_BLOCK_PX`` square pixels at the top-left
corner (away from any face): white is 1, black is 0, most significant bit first, on a moving
gradient background. It survives lossy compression, colour conversion and 8/10/16-bit round
trips; ``read_marker(frame)`` decodes it back and raises when a block is ambiguous.

This module writes with PyAV directly, not with facefuse.io.video, so that a bug in the code
under test cannot hide in the clips it is tested with.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from functools import cache
from pathlib import Path
from types import MappingProxyType
from typing import Any

import av
import numpy as np

MARKER_BITS = 12
MARKER_BLOCK_PX = 16
MARKER_ORIGIN_PX = (8, 8)  # (x, y) of the first block's top-left corner
_BLACK, _WHITE = 16, 240
AUDIO_RATE = 48000
TONE_HZ = 440.0


@dataclass(frozen=True, slots=True)
class _Codec:
    encoder: str
    pix_fmt: str
    options: tuple[tuple[str, str], ...] = ()


_CODECS = MappingProxyType({
    "h264": _Codec("libx264", "yuv420p"),
    "mjpeg": _Codec("mjpeg", "yuvj444p"),
    "prores_422": _Codec("prores_ks", "yuv422p10le", (("profile", "3"),)),
    "prores_4444": _Codec("prores_ks", "yuva444p10le", (("profile", "4"),)),
    "ffv1": _Codec("ffv1", "yuv444p10le"),
})


def marked_frame(index: int, size: tuple[int, int] = (320, 240), alpha: bool = False) -> np.ndarray:
    """One synthetic BGR(A) uint8 frame (H, W, 3|4) with ``index`` burned in as the marker."""
    width, height = size
    x, y, diagonal, x_plus_y = _grid(width, height)
    shift = 3.0 * index
    frame = np.empty((height, width, 4 if alpha else 3), np.uint8)
    # each channel varies along x, y or x + y only: computed once per value and broadcast, in
    # the float32 maths of the whole (H, W) grid, so every pixel is the same
    frame[..., 0] = (40 + 150 * ((x + shift) % width) / width).astype(np.uint8)
    frame[..., 1] = (40 + 150 * y / height).astype(np.uint8)[:, None]
    levels = (40 + 150 * ((diagonal + 2 * shift) % (width + height)) / (width + height))
    frame[..., 2] = levels.astype(np.uint8)[x_plus_y]
    if alpha:
        frame[..., 3] = np.clip(255 * (x / max(1, width - 1)), 0, 255).astype(np.uint8)
    _burn_marker(frame, index)
    return frame


@cache
def _grid(width: int, height: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """float32 column and row coordinates, every value of x + y, and x + y per pixel (H, W)."""
    x = np.arange(width, dtype=np.float32)
    y = np.arange(height, dtype=np.float32)
    diagonal = np.arange(width + height - 1, dtype=np.float32)
    x_plus_y = np.add.outer(np.arange(height), np.arange(width))
    for array in (x, y, diagonal, x_plus_y):
        array.setflags(write=False)
    return x, y, diagonal, x_plus_y


def _burn_marker(frame: np.ndarray, index: int) -> None:
    ox, oy = MARKER_ORIGIN_PX
    b = MARKER_BLOCK_PX
    for bit in range(MARKER_BITS):
        on = (index >> (MARKER_BITS - 1 - bit)) & 1
        x0 = ox + bit * b
        frame[oy:oy + b, x0:x0 + b, :3] = _WHITE if on else _BLACK
        if frame.shape[2] == 4:
            frame[oy:oy + b, x0:x0 + b, 3] = 255


def read_marker(frame: np.ndarray) -> int:
    """The index burned into a frame (any engine dtype, BGR or BGRA). ValueError when a block is
    neither clearly black nor clearly white (the frame is not a marked one, or badly damaged)."""
    ox, oy = MARKER_ORIGIN_PX
    if frame.shape[1] < ox + MARKER_BITS * MARKER_BLOCK_PX or frame.shape[0] < oy + MARKER_BLOCK_PX:
        raise ValueError(f"a {frame.shape[1]}x{frame.shape[0]} frame is too small for the marker")
    scale = {np.dtype(np.uint8): 1.0, np.dtype(np.uint16): 1 / 257.0,
             np.dtype(np.float32): 255.0}[frame.dtype]
    b, m = MARKER_BLOCK_PX, MARKER_BLOCK_PX // 4
    value = 0
    for bit in range(MARKER_BITS):
        x0 = ox + bit * b
        block = frame[oy + m:oy + b - m, x0 + m:x0 + b - m, :3].astype(np.float64) * scale
        level = float(block.mean())
        if 70 < level < 186:
            raise ValueError(f"marker block {bit} is ambiguous (mean level {level:.0f})")
        value = (value << 1) | int(level >= 128)
    return value


def _video_stream(container: Any, codec: str, rate: Fraction, size: tuple[int, int],
                  gop: int | None, time_base: Fraction | None) -> Any:
    spec = _CODECS[codec]
    options = dict(spec.options)
    if spec.encoder == "libx264" and gop is not None:
        options["x264-params"] = f"keyint={gop}:min-keyint={gop}:scenecut=0"
        options["preset"], options["crf"] = "veryfast", "18"
    stream = container.add_stream(spec.encoder, rate=rate, options=options)
    stream.width, stream.height, stream.pix_fmt = size[0], size[1], spec.pix_fmt
    if gop is not None:  # None: the encoder's own
        stream.codec_context.gop_size = gop
    if time_base is not None:
        stream.codec_context.time_base = time_base
    return stream


def _add_audio(container: Any, codec: str, seconds: float) -> Any:
    stream = container.add_stream(codec, rate=AUDIO_RATE, layout="mono")
    stream.format = "fltp" if codec == "aac" else "s16"
    return stream


def _encode_tone(container: Any, stream: Any, seconds: float) -> None:
    """A 440 Hz sine at -10 dBFS for ``seconds``, in 1024-sample frames."""
    total = round(seconds * AUDIO_RATE)
    t = np.arange(total) / AUDIO_RATE
    tone = 0.3 * np.sin(2 * np.pi * TONE_HZ * t)
    for start in range(0, total, 1024):
        chunk = tone[start:start + 1024]
        if stream.format.name == "s16":
            samples = (chunk * 32767).astype(np.int16)[None, :]
        else:
            samples = chunk.astype(np.float32)[None, :]
        frame = av.AudioFrame.from_ndarray(samples, format=stream.format.name, layout="mono")
        frame.sample_rate, frame.pts = AUDIO_RATE, start
        container.mux(stream.encode(frame))
    container.mux(stream.encode(None))


def make_marked_clip(path: Path, frames: int = 48, rate: Fraction = Fraction(24),
                     size: tuple[int, int] = (320, 240), codec: str = "h264",
                     start_timecode: str | None = "01:00:00:00", with_audio: bool = True,
                     audio_codec: str = "aac", gop: int = 12) -> Path:
    """Write a clip whose frame i shows marker i. codec: h264 (B-frames, fixed GOP of ``gop``,
    no scene-cut key frames), mjpeg, prores_422, prores_4444 (with a gradient alpha), ffv1.
    Audio: a mono 48 kHz tone as long as the video, AAC or PCM (``audio_codec='pcm_s16le'``)."""
    path = Path(path)
    alpha = codec == "prores_4444"
    with av.open(str(path), "w") as container:
        video = _video_stream(container, codec, Fraction(rate), size, gop, None)
        if start_timecode:
            video.metadata["timecode"] = start_timecode
        audio = _add_audio(container, audio_codec, frames / rate) if with_audio else None
        for i in range(frames):
            packed = "bgra" if alpha else "bgr24"
            picture = av.VideoFrame.from_ndarray(marked_frame(i, size, alpha), format=packed)
            picture = picture.reformat(format=video.pix_fmt, dst_colorspace="itu709",
                                       dst_color_range=2 if video.pix_fmt.startswith("yuvj") else 1)
            picture.pts = i
            container.mux(video.encode(picture))
        container.mux(video.encode(None))
        if audio is not None:
            _encode_tone(container, audio, float(frames / Fraction(rate)))
    return path


def make_vfr_clip(path: Path, pts_ms: Sequence[int] = (),
                  size: tuple[int, int] = (224, 128)) -> Path:
    """Write an mjpeg .mkv whose frame i (marker i) starts at ``pts_ms[i]`` milliseconds.
    Default: 30 frames at a nominal 30 fps where every third step is doubled (a dropped frame)."""
    if not pts_ms:
        pts_ms = tuple(vfr_default_times_ms())
    path = Path(path)
    with av.open(str(path), "w") as container:
        video = _video_stream(container, "mjpeg", Fraction(30), size, 1, Fraction(1, 1000))
        for i, ms in enumerate(pts_ms):
            picture = av.VideoFrame.from_ndarray(marked_frame(i, size), format="bgr24")
            picture = picture.reformat(format=video.pix_fmt, dst_color_range=2)
            picture.pts, picture.time_base = ms, Fraction(1, 1000)
            container.mux(video.encode(picture))
        container.mux(video.encode(None))
    return path


def vfr_default_times_ms(frames: int = 30) -> list[int]:
    """The start times used by make_vfr_clip: 1/30 s steps, every third one doubled."""
    times, t = [], Fraction(0)
    for i in range(frames):
        times.append(round(t * 1000))
        t += Fraction(2 if i % 3 == 2 else 1, 30)
    return times


def write_h264_clip(path: Path, frames: Sequence[np.ndarray], rate: Fraction,
                    gop: int = 12) -> Path:
    """BGR frames as an H.264 clip (B-frames, a key frame every `gop` frames, no scene-cut key
    frames, BT.709 limited range) written with PyAV; `path`."""
    height, width = frames[0].shape[:2]
    with av.open(str(path), "w") as container:
        stream = _video_stream(container, "h264", rate, (width, height), gop, None)
        for i, frame in enumerate(frames):
            picture = av.VideoFrame.from_ndarray(frame, format="bgr24").reformat(
                format=stream.pix_fmt, dst_colorspace="itu709", dst_color_range=1)
            picture.pts = i
            container.mux(stream.encode(picture))
        container.mux(stream.encode(None))
    return path

