"""CPU milliseconds of the video writer's conversion per frame, whole-frame conversion against
passthrough: the whole BGR frame to yuv420p (io.video.yuv_write.bgr_to_picture, what a frame
passthrough refuses costs) against the decoded planes copied with one pasted face converted
(io.video.passthrough.compose), and a frame without a face (the copy alone). 1080p and 4K; the
face box is a fifth of the frame height square, under a soft round mask like a swap's. The
rotated_ cases are the same upright frame of a clip stored sideways (display rotation 90): the
frame turned back whole and converted (with numpy's turn and with OpenCV's, the writer's for a
refused frame) against the paste turned back with the pixels around it and composed into the
stored planes. --bits 10: the same for a 10-bit ProRes
422 output (BGR uint16 frames to yuv422p10le, whole against the decoded 10-bit planes passed
through; no rotated cases).

    python bench/writer_conversion.py [--rounds 50] [--bits 10]

Prints one JSON object: the median CPU ms (process time, so other load counts less) per case.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

import numpy as np
from colour import cpu_ms, per_size_main, smooth_scene

from facefuse.io.video.orientation import turned
from facefuse.io.video.passthrough import DecodedPicture, EncoderTarget, compose
from facefuse.io.video.yuv import picture_planes
from facefuse.io.video.yuv_write import bgr_to_picture
from facefuse.types import Pasted, Roi

_BT709, _LIMITED = 1, 1


def _face(frame: np.ndarray) -> Pasted:
    """A soft round paste of a fifth of the frame height, painted into `frame` in place."""
    height, width = frame.shape[:2]
    side = height // 5
    roi = Roi(width // 2 - side // 2 + 1, height // 3 + 1, width // 2 + side // 2 + 1,
              height // 3 + side + 1)  # odd corners, as a real ROI has
    yy, xx = np.mgrid[0:side, 0:side]
    mask = np.clip(1.3 - np.hypot(yy - side / 2, xx - side / 2) / (side / 2), 0, 1)
    mask = mask.astype(np.float32)
    region = frame[roi.slices()]
    grey = 90 * (257 if frame.dtype == np.uint16 else 1)
    np.copyto(region, (region * (1 - mask[..., None]) + grey * mask[..., None]).astype(
        frame.dtype), where=(mask > 0)[..., None])
    return Pasted(roi, mask)


def _measure(width: int, height: int, rounds: int, bits: int = 8) -> dict[str, float]:
    """The three cases' median CPU ms for one frame size (bits 10: ProRes 422's yuv422p10le
    from BGR uint16, else h264's yuv420p from BGR uint8)."""
    fmt = "yuv422p10le" if bits == 10 else "yuv420p"
    decoded_bgr = smooth_scene(width, height)
    if bits == 10:
        decoded_bgr = decoded_bgr.astype(np.uint16) * 257
    planes = picture_planes(bgr_to_picture(decoded_bgr, fmt, _BT709, False))
    picture = DecodedPicture(tuple(planes), fmt, _BT709, _LIMITED)
    target = EncoderTarget(fmt, width, height, _BT709, _LIMITED)
    frame = decoded_bgr.copy()
    pasted = (_face(frame),)
    rotated = _rotated(decoded_bgr, frame, pasted, rounds) if bits == 8 else {}
    return {**rotated,
        "whole_frame_ms": cpu_ms(partial(bgr_to_picture, frame, fmt, _BT709, False), rounds),
        "passthrough_one_face_ms": cpu_ms(partial(compose, picture, frame, pasted, target),
                                          rounds),
        "passthrough_no_face_ms": cpu_ms(partial(compose, picture, frame, (), target),
                                         rounds),
    }


def _rotated(decoded_bgr: np.ndarray, frame: np.ndarray, pasted: tuple[Pasted, ...],
             rounds: int) -> dict[str, float]:
    """The rotated cases: `frame` (with `pasted`) upright, its picture stored a quarter turn
    clockwise (np.rot90(frame, -1)) and turned upright by the reader (turns 1)."""
    stored = np.ascontiguousarray(np.rot90(decoded_bgr, -1))
    height, width = stored.shape[:2]
    planes = picture_planes(bgr_to_picture(stored, "yuv420p", _BT709, False))
    picture = DecodedPicture(tuple(planes), "yuv420p", _BT709, _LIMITED, turns=1)
    target = EncoderTarget("yuv420p", width, height, _BT709, _LIMITED, turns=1)

    def whole(turn: Callable[[np.ndarray], np.ndarray]) -> object:
        return bgr_to_picture(turn(frame), "yuv420p", _BT709, False)

    def numpy_turn(upright: np.ndarray) -> np.ndarray:  # numpy's turn of the whole frame
        return np.ascontiguousarray(np.rot90(upright, -1))

    return {"rotated_whole_frame_numpy_turn_ms": cpu_ms(partial(whole, numpy_turn), rounds),
            "rotated_whole_frame_ms": cpu_ms(partial(whole, partial(turned, turns=-1)),
                                             rounds),
            "rotated_passthrough_one_face_ms": cpu_ms(partial(
                compose, picture, frame, pasted, target), rounds)}


def main() -> int:
    return per_size_main(__doc__.splitlines()[0], _measure, 50)


if __name__ == "__main__":
    raise SystemExit(main())
