"""The clips, readers and capture of the pass-through tests (test_render_passthrough*.py,
test_render_rotated.py): an 8-bit h264 clip and 10-bit ProRes 422 HQ / HEVC Main10 ones with
frames without a face, their planes and frames as decoded, and the planes VideoSink composes.
"""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path
from typing import Any

import av
import numpy as np
import pytest

from facefuse.io.video import VideoSource
from facefuse.io.video import write as video_write
from facefuse.io.video.orientation import turned_size
from facefuse.io.video.yuv import (
    PLANAR,
    PLANAR_10BIT,
    YuvPlanes,
    matrix_for,
    picture_planes,
    yuv_to_bgr,
)
from facefuse.io.video.yuv_write import bgr_to_picture
from tests import media_factory
from tests.integration.render_helpers import FACE_BOX
from tests.render_media import arrays, face_frame

FRAMES = 6
WITHOUT_FACE = (0, 1)
BT709, LIMITED, FULL, UNTAGGED = 1, 1, 2, 2
BT601, BT2020, PQ = 6, 9, 16
# the 10-bit clips: frames, those without a face, (encoder, pixel format, options) per codec
DEEP_FRAMES = 5
DEEP_WITHOUT_FACE = (0,)
SOURCES = {"prores_422": ("prores_ks", "yuv422p10le", {"profile": "3"}),
            "h265": ("libx265", "yuv420p10le", {"x265-params": "log-level=error", "crf": "12"})}


def bt709_clip(path: Path, face: np.ndarray, colorspace: int = BT709,
                color_range: int = LIMITED, pixel_format: str = "yuv420p") -> Path:
    """An h264 clip tagged BT.709 limited range (as camera footage is) unless told otherwise
    (2 / 0: untagged, read as BT.601 limited; range 2: full), converted with the matrix it is
    read with, frames 0 and 1 without a face."""
    with av.open(str(path), "w") as container:
        stream = media_factory._video_stream(container, "h264", Fraction(24),
                                             (320, 240), 3, None)
        stream.pix_fmt = pixel_format
        stream.codec_context.colorspace, stream.codec_context.color_range = (colorspace,
                                                                             color_range)
        for i in range(FRAMES):
            bgr = face_frame(i, None if i in WITHOUT_FACE else face)
            picture = bgr_to_picture(bgr, pixel_format, colorspace, color_range == FULL)
            assert picture is not None
            picture.pts = i
            container.mux(stream.encode(picture))
        container.mux(stream.encode(None))
    return path


def deep_frame(index: int, face: np.ndarray | None) -> np.ndarray:
    """face_frame at 16 bits, with a fine ramp so the low two of the 10 bits vary too."""
    frame = face_frame(index, face).astype(np.uint16) * 257
    ramp = (np.arange(frame.shape[1], dtype=np.uint16) % 64 * 4)[None, :, None]
    return frame + np.minimum(ramp, 65535 - frame)


def deep_clip(path: Path, face: np.ndarray, codec: str, colorspace: int = BT709,
               turns: int = 0) -> Path:
    """A 10-bit clip (see SOURCES) tagged `colorspace`, limited range, converted with that
    matrix; frame 0 without a face. turns: stored that many quarter turns clockwise under a
    display rotation that shows it upright (as a phone or a rotated camera stores it)."""
    encoder, pixel_format, options = SOURCES[codec]
    with av.open(str(path), "w") as container:
        stream = container.add_stream(encoder, rate=Fraction(24), options=options)
        size = (240, 320) if turns % 2 else (320, 240)
        stream.width, stream.height, stream.pix_fmt = *size, pixel_format
        stream.codec_context.colorspace, stream.codec_context.color_range = colorspace, 1
        if colorspace == BT2020:  # HDR: BT.2020 primaries, PQ
            stream.codec_context.color_primaries, stream.codec_context.color_trc = BT2020, PQ
        if turns:
            stream.set_display_rotation(90 * turns)
        for i in range(DEEP_FRAMES):
            upright = deep_frame(i, None if i in DEEP_WITHOUT_FACE else face)
            picture = bgr_to_picture(np.ascontiguousarray(np.rot90(upright, -turns)),
                                     pixel_format, colorspace, False)
            picture.pts = i
            container.mux(stream.encode(picture))
        container.mux(stream.encode(None))
    return path


def planes_and_frames(path: Path) -> tuple[list[list[np.ndarray]], list[np.ndarray]]:
    """Every picture's planes (copies) and frame as the reader makes it (BGR uint16)."""
    with av.open(str(path)) as container:
        pictures = sorted(container.decode(video=0), key=lambda f: f.pts)
        planes = [[p.copy() for p in picture_planes(f)] for f in pictures]
    with VideoSource(path) as source:
        frames = [frame for _, frame in arrays(source.read(range(1, len(planes) + 1)))]
    return planes, frames


def outside_face() -> np.ndarray:
    outside = np.ones((240, 320), bool)
    x0, y0, x1, y1 = FACE_BOX
    outside[y0:y1, x0:x1] = False
    return outside


def planes_of(path: Path) -> list[list[np.ndarray]]:
    """Every picture's Y, Cb, Cr planes (copies), in presentation order."""
    with av.open(str(path)) as container:
        pictures = sorted(container.decode(video=0), key=lambda f: f.pts)
        return [[p.copy() for p in picture_planes(f)] for f in pictures]


def whole_frame(picture: Any, frame: np.ndarray, origin_xy: tuple[int, int] = (0, 0)) -> np.ndarray:
    """The whole frame compose() was given part of (a region frame, io.video.frame: the
    rest is the decoded picture as the reader converts it, turned upright by its turns; BGR
    uint8, or uint16 for a 10-bit picture)."""
    width, height = turned_size(picture.width, picture.height, picture.turns)
    if frame.shape[:2] == (height, width):
        return frame.copy()
    matrix = matrix_for(picture.colorspace, picture.color_range, picture.pixel_format)
    assert matrix is not None
    bits = 10 if picture.pixel_format in PLANAR_10BIT else 8
    planes = YuvPlanes(*picture.planes, *PLANAR[picture.pixel_format], False, matrix, bits=bits)
    whole = np.rot90(yuv_to_bgr(planes), picture.turns).copy()
    (x, y), (h, w) = origin_xy, frame.shape[:2]
    whole[y:y + h, x:x + w] = frame
    return whole


def paste_mask(pasted: Any, shape: tuple[int, ...]) -> np.ndarray:
    """Where the pastes' masks are > 0, as a frame-sized bool array."""
    changed = np.zeros(shape[:2], bool)
    for paste in pasted:
        changed[paste.roi.slices()] |= paste.mask > 0
    return changed



def stored_record(out: Any, picture: Any, frame: np.ndarray, pasted: Any, target: Any,
                  rest: tuple[Any, ...], colorspace: int, full_range: bool
                  ) -> tuple[list[np.ndarray], np.ndarray, list[np.ndarray]]:
    """In the picture's stored orientation: the planes compose() gave (`out`, copied), where
    the pastes' masks are > 0, and the planes of the whole frame converted as a whole
    (bgr_to_picture into `target`'s format with this matrix): the oracles of a passthrough."""
    width, height = turned_size(picture.width, picture.height, target.turns)
    upright = paste_mask(pasted, (height, width))
    stored = np.rot90(whole_frame(picture, frame, *rest), -target.turns)
    whole = bgr_to_picture(np.ascontiguousarray(stored), target.pixel_format, colorspace,
                           full_range)
    assert whole is not None
    return ([p.copy() for p in picture_planes(out)], np.rot90(upright, -target.turns),
            picture_planes(whole))


def capture_composed(monkeypatch: pytest.MonkeyPatch
                     ) -> list[tuple[np.ndarray, list[np.ndarray], np.ndarray]]:
    """(frame, planes composed for the encoder, where the paste masks are > 0) of every frame
    VideoSink passes through, from now on; a region frame made whole (whole_frame)."""
    seen: list[tuple[np.ndarray, list[np.ndarray], np.ndarray]] = []
    original = video_write.compose

    def capture(picture: Any, frame: np.ndarray, *rest: Any) -> Any:
        out = original(picture, frame, *rest)
        whole = whole_frame(picture, frame, *rest[2:])
        seen.append((whole, [p.copy() for p in picture_planes(out)],
                     paste_mask(rest[0], whole.shape)))
        return out

    monkeypatch.setattr(video_write, "compose", capture)
    return seen
