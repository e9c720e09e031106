"""The facefuse modules one frame passes through from decode to encode, counted in a real render.

    python bench/frame_path.py --tree before=/path/to/old/checkout --tree after=. [--work DIR]

For each tree (its core/ first on PYTHONPATH, in a process of its own) it renders the first
3 frames of the test clip (asl_yes.mp4, h264 yuv420p) to an h264 .mp4 (the output that takes
the decoded planes through) with the bench's stand-in models, under a profiler
(sys.setprofile and threading.setprofile, every thread) that records each call of a Python
function of facefuse whose arguments (self included) hold the frame or its data: an object of
one of the frame classes (FRAME_CLASSES: the decoded frame and its parts, the decoded picture,
the analysis picture, the item pass 2 hands to the writer), PyAV's decoded picture of the
frame's size, or an array of the whole frame's size (H, W, 3|4), found in the arguments
themselves or one level into tuples and lists, and any array whose memory is a buffer seen in
one of those (a view of the frame, a region's pixels). A module counts once however often it is
called. Both passes count (pass 1 decodes and analyses the frame, pass 2 decodes, swaps and
encodes it; the selector is `one`, so pass 1 ends before pass 2 starts) and are also given
apart ("pass_2": from RenderJob._pass_two on); the render's set-up (opening, models,
planning) hands no frame and does not count. "frame_classes": the classes the frame came as.

Prints one JSON object: per tree, the count and the modules. This tree: 19 modules, 15 of them
in pass 2; the frame comes as io.video's DecodedFrame, with FrameRegion, DecodedPicture and
YuvPlanes its conversions' results inside io.video and the pipeline.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
FRAME_CLASSES = frozenset({"DecodedFrame", "FrameRegion", "SmallPicture", "PendingFrame",
                           "AnalysisPicture", "DecodedPicture", "YuvPlanes", "Processed"})
FRAMES = 3


class FrameData:
    """Recognises the frame or its data (see the module docstring) in a call's arguments, and
    remembers the pixel buffers seen in frame objects, so views of them and arrays cut from
    them later count too."""

    def __init__(self, size: tuple[int, int]) -> None:
        self.sizes = {size, size[::-1]}
        self._buffers: dict[int, Any] = {}  # id -> the buffer, kept so no id is reused
        self.classes: set[str] = set()  # the frame classes the frame came as

    def holds(self, value: Any, depth: int = 0) -> bool:
        kind = type(value)
        if kind.__name__ in FRAME_CLASSES:
            self.classes.add(kind.__name__)
            self._remember_parts(value)
            return True
        if kind.__name__ == "VideoFrame" and kind.__module__.startswith("av"):
            return (value.width, value.height) in self.sizes
        if kind.__name__ == "ndarray":
            if id(_root(value)) in self._buffers:
                return True
            if value.ndim == 3 and (value.shape[1], value.shape[0]) in self.sizes:
                self._remember(value)
                return True
            return False
        if depth == 0 and isinstance(value, tuple | list):
            return any(self.holds(part, 1) for part in value[:8])
        return False

    def _remember(self, array: Any) -> None:
        root = _root(array)
        self._buffers[id(root)] = root

    def _remember_parts(self, value: Any) -> None:
        names = getattr(type(value), "__slots__", ()) or tuple(getattr(value, "__dict__", {}))
        for name in names:
            part = getattr(value, name, None)
            if type(part).__name__ == "ndarray":
                self._remember(part)
            elif type(part).__name__ in FRAME_CLASSES and part is not value:
                for inner in getattr(type(part), "__slots__", ()):
                    if type(getattr(part, inner, None)).__name__ == "ndarray":
                        self._remember(getattr(part, inner))


def _root(array: Any) -> Any:
    """The array owning `array`'s memory (itself, or the base of a view)."""
    while type(array.base).__name__ == "ndarray":
        array = array.base
    return array


def _child(args: argparse.Namespace) -> int:
    """Render under the profiler (this process has the tree's facefuse on its path)."""
    import av

    import facefuse
    from facefuse.cli.main import main

    root = str(Path(facefuse.__file__).resolve().parent)
    clip = args.testdata / "media" / "asl_yes.mp4"
    with av.open(str(clip)) as container:
        stream = container.streams.video[0]
        size = (stream.width, stream.height)
    passes: dict[str, set[str]] = {"pass 1": set(), "pass 2": set()}
    current = ["pass 1"]  # pass 2 starts when RenderJob._pass_two is called
    data = FrameData(size)

    def profile(frame: Any, event: str, _arg: Any) -> None:
        if event != "call":
            return
        code = frame.f_code
        if not code.co_filename.startswith(root):
            return
        if code.co_name == "_pass_two":
            current[0] = "pass 2"
        names = code.co_varnames[:code.co_argcount + code.co_kwonlyargcount]
        if any(data.holds(frame.f_locals.get(name)) for name in names):
            relative = Path(code.co_filename).resolve().relative_to(root).with_suffix("")
            passes[current[0]].add(".".join(("facefuse", *relative.parts))
                                   .removesuffix(".__init__"))

    command = ["render", "-s", str(args.testdata / "media" / "obama.jpg"),
               "-i", str(clip), "-o", str(args.out),
               *json.loads(args.models), "--offline", "--frames", f"1-{FRAMES}", "--overwrite",
               "--models-dir", str(args.models_dir),
               "--cache-dir", str(args.cache)]
    threading.setprofile(profile)
    sys.setprofile(profile)
    try:
        code = main(command)
    finally:
        sys.setprofile(None)
        threading.setprofile(None)  # type: ignore[arg-type]
    modules = passes["pass 1"] | passes["pass 2"]
    print(json.dumps({"exit": code, "count": len(modules), "modules": sorted(modules),
                      "pass_2_count": len(passes["pass 2"]), "pass_2": sorted(passes["pass 2"]),
                      "frame_classes": sorted(data.classes)}))
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Count the modules one frame passes through.")
    parser.add_argument("--tree", action="append", default=[], metavar="NAME=PATH")
    parser.add_argument("--work", type=Path, default=Path("/tmp/facefuse-frame-path"))
    parser.add_argument("--testdata", type=Path, default=os.environ.get("FACEFUSE_TESTDATA"))
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--out", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--cache", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--models", default="[]", help=argparse.SUPPRESS)  # JSON: a list
    parser.add_argument("--models-dir", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.testdata is None:
        parser.error("set FACEFUSE_TESTDATA or give --testdata")
    args.testdata = Path(args.testdata)
    if args.child:
        return _child(args)
    import standins

    built = standins.build_all(args.work / "models", light=True)
    models = ["--detector", str(args.testdata / "models" / "face_detection_yunet_2023mar.onnx"),
              "--recogniser", str(built["recogniser"]["path"]),
              "--swapper", str(built["swapper"]["path"])]
    results = {}
    for name, tree in (t.split("=", 1) for t in args.tree):
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(Path(tree) / "core"), str(HERE)])}
        out = args.work / name
        shutil.rmtree(out, ignore_errors=True)  # no cached analysis: pass 1 runs
        out.mkdir(parents=True)
        done = subprocess.run([sys.executable, __file__, "--child", "--testdata",
                               str(args.testdata), "--out", str(out / "out.mp4"), "--cache",
                               str(out / "cache"), f"--models={json.dumps(models)}",
                               "--models-dir", str(args.work / "models")],
                              capture_output=True, text=True, check=False, env=env)
        if done.returncode != 0:
            results[name] = {"error": done.stderr.strip().splitlines()[-3:]}
            continue
        results[name] = json.loads(done.stdout.strip().splitlines()[-1])
    print(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
