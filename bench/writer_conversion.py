"""CPU milliseconds of the video writer's conversion per frame, before and after passthrough:
the whole BGR frame to yuv420p (io.yuv.bgr_to_picture, what every h264 frame cost before) against
the decoded planes copied with one pasted face converted (io.passthrough.compose), and a frame
without a face (the copy alone). 1080p and 4K; the face box is a fifth of the frame height
square, under a soft round mask like a swap's.

    python bench/writer_conversion.py [--rounds 50]

Prints one JSON object: the median CPU ms (process time, so other load counts less) per case.
"""

from __future__ import annotations

from functools import partial

import numpy as np
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
    np.copyto(region, (region * (1 - mask[..., None]) + 90 * mask[..., None]).astype(np.uint8),
              where=(mask > 0)[..., None])
    return Pasted(roi, mask)



def _measure(width: int, height: int, rounds: int) -> dict[str, float]:
    """The three cases' median CPU ms for one frame size."""
    decoded_bgr = smooth_scene(width, height)
    planes = picture_planes(bgr_to_picture(decoded_bgr, "yuv420p", _BT709, False))
    picture = DecodedPicture(tuple(planes), "yuv420p", _BT709, _LIMITED)
    target = EncoderTarget("yuv420p", width, height, _BT709, _LIMITED)
    frame = decoded_bgr.copy()
    pasted = (_face(frame),)
    return {
        "whole_frame_ms": cpu_ms(partial(bgr_to_picture, frame, "yuv420p", _BT709, False),
                                 rounds),
        "passthrough_one_face_ms": cpu_ms(partial(compose, picture, frame, pasted, target),
                                          rounds),
        "passthrough_no_face_ms": cpu_ms(partial(compose, picture, frame, (), target),
                                         rounds),
    }


def main() -> int:
    return per_size_main(__doc__.splitlines()[0], _measure, 50)


if __name__ == "__main__":
    raise SystemExit(main())
