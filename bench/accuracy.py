"""How far the analysis pass's small-picture path (io/analysis_pictures.py) is from converting
every picture at full resolution, in numbers, with the real detector and recogniser of the test
data (YuNet 2023mar, MobileFaceNet).

    python bench/accuracy.py [--work DIR] [--frames N]

For each clip (the test clips upscaled to 1080p and 4K with bench/run.py's clip builder) and
frame: faces found both ways, the largest landmark shift in pixels and as a share of the face
width, the lowest cosine similarity between the two embeddings of a face, and the CPU
milliseconds the conversion took each way. Prints one JSON list (one object per clip).
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
from facefuse.io.analysis_pictures import analysis_picture
from facefuse.pipeline import Pipeline
from facefuse.shot.analysis_pass import FrameAnalysis
from facefuse.timing import StageClock

CLIPS = (("asl_yes.mp4", "1080p"), ("asl_yes.mp4", "4k"),
         ("head-pose-face-detection-female.mp4", "1080p"),
         ("head-pose-face-detection-male.mp4", "1080p"))


def compare_clip(pipeline: Pipeline, clip: Path, frames: int) -> dict[str, Any]:
    """Full conversion vs the small-picture path over the first `frames` frames of `clip`."""
    side = max(pipeline.models.detector().input_size)
    fast = FrameAnalysis(pipeline, None, StageClock())
    shifts, shares, cosines, counts = [], [], [], [0, 0]
    full_ms, small_ms = [], []
    with av.open(str(clip)) as container:
        for _, picture in zip(range(frames), container.decode(video=0)):
            start = time.process_time()
            frame = picture.reformat(format="yuv444p").to_ndarray(format="bgr24")
            full_ms.append((time.process_time() - start) * 1000)
            start = time.process_time()
            small = analysis_picture(picture, side)
            small_ms.append((time.process_time() - start) * 1000)
            assert small is not None
            old = pipeline.embed_faces(frame, pipeline.detect(frame))
            new = fast.faces(small)
            counts[0] += len(old)
            counts[1] += len(new)
            for a, b in zip(old, new):
                shift = float(np.abs(a.kps5 - b.kps5).max())
                shifts.append(shift)
                shares.append(shift / float(a.bbox_xyxy[2] - a.bbox_xyxy[0]))
                cosines.append(float(a.embedding @ b.embedding))
    return {"clip": clip.name, "frames": frames, "faces_full": counts[0],
            "faces_small": counts[1], "max_landmark_shift_px": round(max(shifts), 3),
            "mean_landmark_shift_px": round(float(np.mean(shifts)), 3),
            "max_shift_share_of_face_width": round(max(shares), 5),
            "faces_shifted_over_2pct": sum(share > 0.02 for share in shares),
            "min_embedding_cosine": round(min(cosines), 6),
            "full_conversion_cpu_ms": round(float(np.median(full_ms)), 2),
            "small_conversion_cpu_ms": round(float(np.median(small_ms)), 2)}


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
