"""How far one read -> write generation moves a clip's chroma: the first frames of each clip are
read (io.video.read, BGR), written whole (no passthrough) to h264 at --crf 0 (lossless in YUV)
and decoded again; the written Y, Cb and Cr planes are compared with the clip's own.

    python bench/writer_siting.py --clip a.mp4 [--clip b.mp4] [--frames 10]

Prints one JSON object per clip: the mean and largest difference in levels per plane. With the
writer's own chroma subsampling at the reader's siting (io.video.yuv_write.subsample_chroma) the
chroma stays where it was; swscale's, centred, moves it a quarter sample each generation.
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path

import av
import numpy as np

from facefuse.io.video.read import VideoSource
from facefuse.io.video.write import VideoSink
from facefuse.io.video.yuv import picture_planes


def _planes(path: Path, frames: int) -> list[list[np.ndarray]]:
    with av.open(str(path)) as container:
        pictures = zip(range(frames), container.decode(video=0), strict=False)
        return [[plane.copy() for plane in picture_planes(picture)] for _, picture in pictures]


def generation(clip: Path, frames: int, work: Path) -> dict[str, dict[str, float]]:
    """The planes' differences after one whole-frame write of `clip`'s first `frames`."""
    out = work / f"{clip.stem}.mp4"
    with VideoSource(clip) as source:
        count = min(frames, source.info.frame_count)
        arrays = [frame.to_ndarray() for _, frame in source.read(range(1, count + 1))]  # type: ignore[union-attr]
        with VideoSink(out, source.info, quality=0) as sink:
            for frame in arrays:
                assert isinstance(frame, np.ndarray), f"{clip.name}: a frame did not decode"
                sink.write(frame)
    report = {}
    for index, name in enumerate(("y", "cb", "cr")):
        errors = np.concatenate([np.abs(a[index].astype(int) - b[index]).ravel() for a, b in
                                 zip(_planes(clip, count), _planes(out, count), strict=True)])
        report[name] = {"mean": round(float(errors.mean()), 3), "max": int(errors.max())}
    return report


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--clip", type=Path, action="append", required=True)
    parser.add_argument("--frames", type=int, default=10)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as work:
        for clip in args.clip:
            print(json.dumps({"clip": clip.name, **generation(clip, args.frames, Path(work))}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
