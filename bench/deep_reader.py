"""The 10-bit reader on a clip: io.video.yuv's conversion (BGR uint16, Y 940 = 65535) against its
float64 formula and against swscale's bgr48le conversion, the whole-frame round trip through the
writer's 10-bit conversion with each reader, and the CPU cost of both readers.

    python bench/deep_reader.py --clip plate.mov [--frames 4] [--rounds 15]

Accuracy ("vs_reference"): the share of BGR values that differ from the float64 formula rounded, the
largest difference (16-bit levels) and, for those that differ, the largest distance of the formula's
value from a half level (float32 ties). Round trip: each reader's frame converted back to the clip's
own pixel format (io.video.yuv_write.bgr_to_picture, as a whole-frame 10-bit write does) against the
decoded planes: per plane the mean signed and mean absolute difference, the largest, in 10-bit
levels, and the share of samples changed; "white" is luma where the decoded Y is at least 900. Cost:
median CPU ms (process time) of converting the first picture, on one OpenCV thread. Prints one JSON
object.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import av
import cv2
import numpy as np
from colour import cpu_ms, io_yuv_pictures, reference_upsampled_bgr

from facefuse.io.video import yuv, yuv_write


def _round_trip(frame: np.ndarray, picture: Any) -> dict[str, Any]:
    """The decoded planes against `frame` written back to them with the writer's matrix."""
    back = yuv_write.bgr_to_picture(frame, picture.format.name, int(picture.colorspace), False)
    assert back is not None
    out: dict[str, Any] = {}
    decoded = yuv.picture_planes(picture)
    for name, new, old in zip(("Y", "Cb", "Cr"), yuv.picture_planes(back), decoded,
                                  strict=True):
        diff = new.astype(np.int32) - old
        out[name] = {"mean_signed": float(diff.mean()), "mean_abs": float(np.abs(diff).mean()),
                     "max_abs": int(np.abs(diff).max()),
                     "share_changed": float(np.count_nonzero(diff) / diff.size)}
        if name == "Y":
            white = old >= 900
            out["white"] = {"samples": int(white.sum()),
                            "mean_signed": float(diff[white].mean()) if white.any() else None}
    return out


def _accuracy(frame: np.ndarray, planes: yuv.YuvPlanes) -> dict[str, Any]:
    exact = reference_upsampled_bgr(planes, rounded=False)
    rounded = np.clip(np.rint(exact), 0, 65535)
    off = frame != rounded
    distance = np.abs(np.abs(exact - np.floor(exact)) - 0.5)
    return {"share_off": float(off.mean()),
            "max_error": int(np.abs(frame.astype(np.int64) - rounded).max()),
            "max_tie_distance_of_those_off": float(distance[off].max()) if off.any() else None}


def measure(clip: Path, frames: int, rounds: int) -> dict[str, Any]:
    """The figures of the module docstring for the clip's first `frames` pictures."""
    out: dict[str, Any] = {"clip": str(clip), "frames": []}
    with av.open(str(clip)) as container:
        for index, (picture, planes) in enumerate(io_yuv_pictures(container, clip, frames, 10)):
            new, old = yuv.yuv_to_bgr(planes), picture.to_ndarray(format="bgr48le")
            out["frames"].append({
                "vs_reference": _accuracy(new, planes),
                "swscale_vs_io_yuv": {"mean_signed": float((old.astype(np.int64) - new).mean()),
                                      "white_value": int(old[planes.y >= 940].min(initial=65535))
                                      if (planes.y >= 940).any() else None},
                "round_trip_swscale": _round_trip(old, picture),
                "round_trip_io_yuv": _round_trip(new, picture)})
            if index == 0:
                out["format"] = picture.format.name
                out["cpu_ms"] = {
                    "swscale_bgr48le": cpu_ms(lambda p=picture: p.to_ndarray(format="bgr48le"),
                                              rounds),
                    "io_yuv": cpu_ms(lambda p=planes: yuv.yuv_to_bgr(p), rounds)}
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clip", type=Path, required=True)
    parser.add_argument("--frames", type=int, default=4)
    parser.add_argument("--rounds", type=int, default=15)
    args = parser.parse_args()
    cv2.setNumThreads(1)
    print(json.dumps(measure(args.clip, args.frames, args.rounds), indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
