"""CPU milliseconds of the video writer's conversion per frame, before and after passthrough:
the whole BGR frame to yuv420p (io.yuv.bgr_to_picture, what every h264 frame cost before) against
the decoded planes copied with one pasted face converted (io.passthrough.compose), and a frame
without a face (the copy alone). 1080p and 4K; the face box is a fifth of the frame height
square, under a soft round mask like a swap's. --bits 10: the same for a 10-bit ProRes 422
output (BGR uint16 frames to yuv422p10le, whole against the decoded 10-bit planes passed
through).

    python bench/writer_conversion.py [--rounds 50] [--bits 10]

Prints one JSON object: the median CPU ms (process time, so other load counts less) per case.
"""

from __future__ import annotations

from functools import partial

import numpy as np
from av.video.reformatter import VideoReformatter
from colour import cpu_ms, per_size_main, smooth_scene

from facefuse.io.passthrough import DecodedPicture, EncoderTarget, compose
from facefuse.io.yuv import bgr_to_picture, picture_planes
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
    reformatter = VideoReformatter()  # the writer keeps one (io.video_write.VideoSink)
    return {
        "whole_frame_ms": cpu_ms(partial(bgr_to_picture, frame, fmt, _BT709, False), rounds),
        "passthrough_one_face_ms": cpu_ms(partial(compose, picture, frame, pasted, target,
                                                  reformatter), rounds),
        "passthrough_no_face_ms": cpu_ms(partial(compose, picture, frame, (), target),
                                         rounds),
    }


def main() -> int:
    return per_size_main(__doc__.splitlines()[0], _measure, 50, bits=True)


if __name__ == "__main__":
    raise SystemExit(main())
