"""How far the analysis pass's small-picture path (io.video.frame.DecodedFrame.small) is from
converting every picture at full resolution, in numbers, with the real detector and recogniser
of the test data (YuNet 2023mar, MobileFaceNet).

    python bench/accuracy.py [--work DIR] [--frames N]

For each clip (the test clips upscaled to 1080p and 4K with bench/run.py's clip builder) and frame,
three ways of finding the faces: on the reader's full conversion ("full"), through the analysis
picture ("planes": `small` straight from the decoded 4:2:0 picture, regions from io.video.yuv's own
upsampling) and through an analysis picture made by swscale's 4:4:4 path ("swscale444": swscale's
4:4:4 picture, `small` shrunk from it). Per pair: the largest and mean landmark shift and the
largest box shift in frame pixels, the shift as a share of the face width, the largest score change
and the lowest embedding cosine; and the CPU milliseconds of making the analysis picture both ways.
Prints one JSON list (one object per clip).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import av
import numpy as np
import run

from facefuse.config import Settings
from facefuse.io.video import DecodedFrame, SmallPicture, yuv
from facefuse.pipeline import Pipeline
from facefuse.shot.run.pass_one import FrameAnalysis
from facefuse.timing import StageClock
from facefuse.types import Face

CLIPS = (("asl_yes.mp4", "1080p"), ("asl_yes.mp4", "4k"),
         ("head-pose-face-detection-female.mp4", "1080p"),
         ("head-pose-face-detection-male.mp4", "1080p"))


class Swscale444Frame(DecodedFrame):
    """The analysis picture by swscale's 4:4:4 path: swscale's 4:4:4 picture kept, `small` shrunk
    from it (its regions are then io.video.yuv's matrix on swscale's upsampled planes)."""

    __slots__ = ("_small",)

    def __init__(self, picture: Any, side: int) -> None:
        full = picture.reformat(format="yuv444p")
        super().__init__(full, "bgr24", 0, False)
        scale = side / max(picture.height, picture.width)
        size = (max(1, round(picture.width * scale)), max(1, round(picture.height * scale)))
        small = full.reformat(format="bgr24", width=size[0], height=size[1],
                              interpolation="AREA").to_ndarray()
        self._small = SmallPicture(np.ascontiguousarray(small),
                                      (size[0] / picture.width, size[1] / picture.height))

    def small(self, max_side_px: int) -> SmallPicture | None:
        return self._small


def planes_frame(picture: Any, side: int, centred: bool) -> DecodedFrame:
    """The frame as the reader makes it, its small picture made."""
    frame = DecodedFrame.of_picture(picture, "bgr24", centred=centred)
    frame.small(side)
    return frame


def _cpu_ms(work: Any, *args: Any) -> tuple[Any, float]:
    start = time.process_time()
    value = work(*args)
    return value, (time.process_time() - start) * 1000


def _pairs(first: Sequence[Face], second: Sequence[Face]) -> dict[str, list[float]]:
    """Per face (best first, paired in order): landmark and box shifts in frame pixels, the
    shift as a share of the face width, the score change and the embeddings' cosine."""
    out: dict[str, list[float]] = {"shift": [], "box": [], "share": [], "score": [], "cos": []}
    for a, b in zip(first, second):
        out["shift"].append(float(np.abs(a.kps5 - b.kps5).max()))
        out["box"].append(float(np.abs(a.bbox_xyxy - b.bbox_xyxy).max()))
        out["share"].append(out["shift"][-1] / float(a.bbox_xyxy[2] - a.bbox_xyxy[0]))
        out["score"].append(abs(float(a.score) - float(b.score)))
        assert a.embedding is not None and b.embedding is not None
        out["cos"].append(float(a.embedding @ b.embedding))
    return out


def _summary(pairs: dict[str, list[float]]) -> dict[str, float]:
    return {"max_landmark_shift_px": round(max(pairs["shift"]), 3),
            "mean_landmark_shift_px": round(float(np.mean(pairs["shift"])), 3),
            "max_box_shift_px": round(max(pairs["box"]), 3),
            "max_shift_share_of_face_width": round(max(pairs["share"]), 5),
            "max_score_change": round(max(pairs["score"]), 5),
            "min_embedding_cosine": round(min(pairs["cos"]), 6)}


def compare_clip(pipeline: Pipeline, clip: Path, frames: int) -> dict[str, Any]:
    """Over the first `frames` frames of `clip`: the analysis path (small + face regions) from
    the planes and by swscale's 4:4:4 path, each against the reader's full conversion, and the
    one against the other; CPU ms of making the analysis picture both ways."""
    side = max(pipeline.models.detector().input_size)
    fast = FrameAnalysis(pipeline, None, StageClock())
    pairs: dict[str, dict[str, list[float]]] = {"planes_vs_full": {}, "swscale444_vs_full": {},
                                                 "planes_vs_swscale444": {}}
    counts = {"full": 0, "planes": 0, "swscale444": 0}
    ms: dict[str, list[float]] = {"swscale444": [], "planes": []}
    with av.open(str(clip)) as container:
        centred = yuv.chroma_centred(container.streams.video[0].codec_context.name)
        for _, picture in zip(range(frames), container.decode(video=0)):
            frame = yuv.picture_to_bgr(picture, centred)
            assert frame is not None
            full = pipeline.embed_faces(frame, pipeline.detect(frame))
            swscale444_pic, swscale444_ms = _cpu_ms(Swscale444Frame, picture, side)
            planes_pic, planes_ms = _cpu_ms(planes_frame, picture, side, centred)
            assert planes_pic.small(side) is not None
            ms["swscale444"].append(swscale444_ms)
            ms["planes"].append(planes_ms)
            found = {"full": full, "planes": fast.faces(planes_pic),
                     "swscale444": fast.faces(swscale444_pic)}
            for name, faces in found.items():
                counts[name] += len(faces)
            for key, lists in pairs.items():
                first, second = key.split("_vs_")
                for name, values in _pairs(found[first], found[second]).items():
                    lists.setdefault(name, []).extend(values)
    return {"clip": clip.name, "frames": frames, "faces": counts,
            **{key: _summary(values) for key, values in pairs.items()},
            "analysis_picture_cpu_ms": {name: round(float(np.median(values)), 2)
                                        for name, values in ms.items()}}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Accuracy of the analysis pass's fast path.")
    parser.add_argument("--work", type=Path, default=Path("/tmp/facefuse-bench-work"))
    parser.add_argument("--frames", type=int, default=30)
    parser.add_argument("--testdata", type=Path, default=os.environ.get("FACEFUSE_TESTDATA"))
    args = parser.parse_args(argv)
    models = args.testdata / "models"
    settings = Settings(detector=str(models / run.YUNET),
                        recogniser=str(models / "mobilefacenet_128d.onnx"),
                        swapper=str(models / run.YUNET), providers=("CPUExecutionProvider",),
                        models_dir=args.work / "models", cache_dir=args.work / "cache",
                        offline=True)
    results = []
    with Pipeline(settings) as pipeline:
        for name, size in CLIPS:
            clip = run.build_clip(args.testdata / "media" / name,
                                  args.work / "clips" / f"{Path(name).stem}-{size}.mp4",
                                  run.SIZES[size], args.frames)
            results.append({"size": size, **compare_clip(pipeline, clip, args.frames)})
    print(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
