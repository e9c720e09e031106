"""Helpers for the whole-render tests (tests/integration/test_render_*.py): the shared shot's
facts, reading outputs back (OpenImageIO, PyAV) and the checks every render must pass."""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path

import av
import numpy as np

from tests.render_media import FACE_SIZE, FACE_XY, read_plate_oiio

NTSC_FILM = Fraction(24000, 1001)
CLIP_FRAMES = 16
NO_FACE = range(4)  # clip frames (0-based) without a face: a run longer than the gap filler's 3
FACE_BOX = (FACE_XY[0] - 45, FACE_XY[1] - 45, FACE_XY[0] + FACE_SIZE[0] + 45,
            FACE_XY[1] + FACE_SIZE[1] + 45)  # x0, y0, x1, y1: where any paste must stay


@dataclass(frozen=True)
class Media:
    """The shared shot of the render tests (the `media` fixture, tests/integration/conftest.py)."""

    root: Path
    face: np.ndarray
    source: Path
    clip: Path  # h264 .mp4, 23.976 fps, AAC tone, timecode 01:00:00:00, no face in NO_FACE
    clip_frames: list[np.ndarray]  # the clip decoded with PyAV (BGR uint8)
    nose_xy: tuple[int, int]  # YuNet's nose landmark on the face frames
    colour_rgb: np.ndarray  # what the colour swapper paints for this source (display, 0..1)


def read_bgr(path: Path) -> np.ndarray:
    """An image file's pixels as stored, in B, G, R(, A) order (or (H, W, 1) grey)."""
    pixels, _ = read_plate_oiio(path)
    if pixels.shape[2] >= 3:
        order = [2, 1, 0] + ([3] if pixels.shape[2] == 4 else [])
        pixels = pixels[..., order]
    return np.ascontiguousarray(pixels)


def changed(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """(H, W) True where any colour channel differs (NaN-free inputs)."""
    return np.any(a[..., :3] != b[..., :3], axis=2)


def assert_changes_confined(out: np.ndarray, ref: np.ndarray, matte: np.ndarray,
                            min_changed: int) -> None:
    """Bit-identical where the matte is 0; the face really changed; the matte sits on the face."""
    assert out.shape == ref.shape and out.dtype == ref.dtype
    np.testing.assert_array_equal(out[matte == 0], ref[matte == 0])
    diff = changed(out, ref)
    assert diff.sum() >= min_changed, f"only {diff.sum()} pixels changed under the face"
    ys, xs = np.nonzero(matte > 0)
    x0, y0, x1, y1 = FACE_BOX
    assert xs.min() >= x0 and xs.max() < x1 and ys.min() >= y0 and ys.max() < y1, (
        f"matte spans x {xs.min()}..{xs.max()}, y {ys.min()}..{ys.max()}: outside the face")


def one_line_error(captured: str) -> str:
    lines = [line for line in captured.splitlines() if line.strip()]
    assert "Traceback" not in captured
    assert len(lines) == 1 and lines[0].startswith("facefuse: error: "), captured
    return lines[0]


def video_facts(path: Path) -> dict:
    """What PyAV reads back: frames, rate, duration, timecode, audio span, tags."""
    with av.open(str(path)) as container:
        stream = container.streams.video[0]
        packets = [p for p in container.demux(stream) if p.size]
        tags = {k.lower(): v for k, v in container.metadata.items()}
        timecode = next((str(v) for s in container.streams for k, v in s.metadata.items()
                         if k.lower() == "timecode"), None)
        facts = {"codec": stream.codec_context.name, "rate": stream.average_rate,
                 "packets": len(packets),
                 "end_s": float(max(p.pts + p.duration for p in packets) * stream.time_base),
                 "start_s": float(min(p.pts for p in packets) * stream.time_base),
                 "timecode": timecode, "tags": tags, "audio": len(container.streams.audio)}
    if facts["audio"]:
        with av.open(str(path)) as container:
            audio = container.streams.audio[0]
            pk = [p for p in container.demux(audio) if p.size]
            facts["audio_codec"] = audio.codec_context.name
            facts["audio_end_s"] = float(max(p.pts + p.duration for p in pk) * audio.time_base)
            facts["audio_packet_s"] = float(pk[1].duration * audio.time_base)
    return facts
