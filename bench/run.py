"""Run the benchmark scenarios of bench/scenarios.toml and write their figures as JSON.

    python bench/run.py --providers cpu --out results/ [--only NAME ...] [--work DIR]
                        [--swap-workers 1,2,4]

It builds what the scenarios need in the work folder (never in the repository): the stand-in
models (bench/standins.py, full and light), and 1080p / 4K clips made from the test clip
asl_yes.mp4 (upscaled with OpenCV, looped to the length needed, encoded with PyAV as h264 4:2:0).
Then it runs `python -m facefuse bench ... --json` once per scenario, each in a fresh process
(so every one is cold: new sessions, empty caches), and writes OUT/results.json (all scenarios,
plus the machine) and one OUT/<scenario>.json each. Needs FACEFUSE_TESTDATA (or --testdata)
pointing at the test data folder. --swap-workers runs every scenario once per count given
(`facefuse bench --swap-workers N`), each named NAME-wN.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tomllib
from collections.abc import Sequence
from fractions import Fraction
from pathlib import Path
from typing import Any

import av
import cv2
import numpy as np
import standins

HERE = Path(__file__).resolve().parent
SIZES = {"1080p": (1920, 1080), "4k": (3840, 2160)}
CLIP_RATE = Fraction(30)
YUNET = "face_detection_yunet_2023mar.onnx"


def build_clip(source: Path, out: Path, size: tuple[int, int], frames: int,
               bt709: bool = False, rotation: int = 0, codec: str = "h264") -> Path:
    """`source` resized to `size` (width, height) and looped to `frames` frames, h264 4:2:0;
    untagged (read as BT.601), or with `bt709` converted and tagged BT.709 limited range, as
    HD camera footage is. rotation (90, 180 or 270): stored sideways as phones store it, each
    picture turned by -rotation under a display rotation that shows it upright at `size`.
    codec "prores_422": a 10-bit ProRes 422 HQ (yuv422p10le) .mov tagged BT.709 limited range
    instead (upright), resized at 16 bits (so the low bits vary), as plates from a camera or a
    grade are."""
    if out.is_file():
        with av.open(str(out)) as existing:
            if existing.streams.video[0].frames >= frames:
                return out
    with av.open(str(source)) as clip:
        pictures = [f.to_ndarray(format="bgr24") for f in clip.decode(video=0)]
    out.parent.mkdir(parents=True, exist_ok=True)
    partial = out.with_name(f".{out.stem}.partial{out.suffix}")  # renamed once complete
    if codec == "prores_422":
        if rotation:
            raise ValueError("a ProRes scenario clip is built upright: leave out its rotation")
        return _build_prores(pictures, partial, size, frames).replace(out)
    with av.open(str(partial), "w") as container:
        stream = container.add_stream("libx264", rate=CLIP_RATE)
        turns = rotation // 90 % 4
        stored = size[::-1] if turns % 2 else size
        stream.width, stream.height, stream.pix_fmt = stored[0], stored[1], "yuv420p"
        stream.options = {"preset": "ultrafast", "crf": "18"}
        if turns:
            stream.set_display_rotation(rotation)
        if bt709:
            stream.codec_context.colorspace, stream.codec_context.color_range = 1, 1
        for i in range(frames):
            picture = cv2.resize(pictures[i % len(pictures)], size, interpolation=cv2.INTER_LINEAR)
            picture = np.rot90(picture, -turns)
            frame = av.VideoFrame.from_ndarray(np.ascontiguousarray(picture), format="bgr24")
            if bt709:
                frame = frame.reformat(format="yuv420p", dst_colorspace="itu709",
                                       dst_color_range=1)
            container.mux(stream.encode(frame))
        container.mux(stream.encode())
    partial.replace(out)
    return out


def _build_prores(pictures: list[np.ndarray], out: Path, size: tuple[int, int],
                  frames: int) -> Path:
    """`pictures` as a ProRes 422 HQ clip (see build_clip) at `out`."""
    with av.open(str(out), "w") as container:
        stream = container.add_stream("prores_ks", rate=CLIP_RATE, options={"profile": "3"})
        stream.width, stream.height, stream.pix_fmt = size[0], size[1], "yuv422p10le"
        stream.codec_context.colorspace, stream.codec_context.color_range = 1, 1
        for i in range(frames):
            deep = pictures[i % len(pictures)].astype(np.uint16) * 257
            picture = cv2.resize(deep, size, interpolation=cv2.INTER_LINEAR)
            frame = av.VideoFrame.from_ndarray(np.ascontiguousarray(picture), format="bgr48le")
            frame = frame.reformat(format="yuv422p10le", dst_colorspace="itu709",
                                   dst_color_range=1)
            container.mux(stream.encode(frame))
        container.mux(stream.encode())
    return out


def models_for(scenario: dict[str, Any], built: dict[str, dict[str, dict[str, Any]]],
               testdata: Path) -> list[str]:
    """The model options of a scenario."""
    kind = scenario.get("models", "standin")
    models = built["light" if kind == "same-work" else kind]
    three = scenario.get("faces", 1) == 3
    detector = (str(testdata / "models" / YUNET) if kind == "same-work"
                else models["detector_3faces" if three else "detector"]["path"])
    args = ["--detector", detector, "--recogniser", models["recogniser"]["path"],
            "--swapper", models["swapper"]["path"]]
    if scenario.get("enhancer"):
        args += ["--enhancer", models["enhancer"]["path"]]
    return args


def run_scenario(scenario: dict[str, Any], clip: Path, source: Path, models: list[str],
                 work: Path, env: dict[str, str] | None = None) -> dict[str, Any]:
    """One `facefuse bench` process (environment `env`, default this one's); its figures with
    the scenario added."""
    out_dir = work / "out" / scenario["name"]
    out_dir.mkdir(parents=True, exist_ok=True)
    command = [sys.executable, "-m", "facefuse", "bench", "-s", str(source), "-i", str(clip),
               "-o", str(out_dir / scenario["output"]), *models,
               "--providers", scenario["providers"], "--offline",
               "--models-dir", str(work / "models"), "--frames", str(scenario["frames"]),
               "--json", *scenario.get("extra", [])]
    done = subprocess.run(command, capture_output=True, text=True, check=False, env=env)
    if done.returncode != 0:
        return {"scenario": scenario, "error": done.stderr.strip().splitlines()[-1:]}
    figures = json.loads(done.stdout.strip().splitlines()[-1])["bench"]
    return {"scenario": scenario, **figures}


def load_scenarios(path: Path, providers: str,
                   only: Sequence[str] | None = None) -> list[dict[str, Any]]:
    """The scenarios of `path` for `providers`, all or those named in `only`."""
    return [s for s in tomllib.loads(path.read_text())["scenario"]
            if s["providers"] == providers and (not only or s["name"] in only)]


def with_workers(scenarios: Sequence[dict[str, Any]],
                 counts: Sequence[int]) -> list[dict[str, Any]]:
    """Each scenario once per swap-worker count (named NAME-wN), or as it is without counts."""
    if not counts:
        return list(scenarios)
    return [{**s, "name": f"{s['name']}-w{n}", "swap_workers": n,
             "extra": [*s.get("extra", []), "--swap-workers", str(n)]}
            for s in scenarios for n in counts]


def worker_counts(text: str) -> list[int]:
    """`--swap-workers`: comma-separated counts, e.g. "1,2,4"."""
    return [int(part) for part in text.split(",") if part.strip()]


def clip_for(scenario: dict[str, Any], scenarios: Sequence[dict[str, Any]], testdata: Path,
             work: Path) -> Path:
    """The scenario's clip, built in `work` long enough for every scenario using it."""
    base = testdata / "media" / "asl_yes.mp4"
    if scenario["clip"] == "480p":
        return base
    colour, rotation = scenario.get("colour", ""), scenario.get("rotation", 0)
    codec = scenario.get("source", "h264")
    frames = max(s["frames"] for s in scenarios
                 if s["clip"] == scenario["clip"] and s.get("colour", "") == colour
                 and s.get("rotation", 0) == rotation and s.get("source", "h264") == codec)
    name = "-".join([scenario["clip"], *([colour] if colour else []),
                     *([codec] if codec != "h264" else [])])
    name += f"-rot{rotation}" if rotation else ""
    suffix = ".mp4" if codec == "h264" else ".mov"
    return build_clip(base, work / "clips" / f"{name}{suffix}", SIZES[scenario["clip"]], frames,
                      bt709=colour == "bt709", rotation=rotation, codec=codec)


def machine() -> dict[str, Any]:
    import onnxruntime

    return {"platform": platform.platform(), "processor": platform.processor(),
            "cpus": os.cpu_count(), "python": platform.python_version(),
            "onnxruntime": onnxruntime.__version__,
            "available_providers": onnxruntime.get_available_providers()}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Run bench/scenarios.toml.")
    parser.add_argument("--providers", default="cpu", help="run the scenarios of these "
                        "providers (cpu or cuda)")
    parser.add_argument("--out", type=Path, required=True, help="folder for the JSON results")
    parser.add_argument("--only", nargs="*", help="scenario names to run (default: all)")
    parser.add_argument("--work", type=Path, default=Path("/tmp/facefuse-bench-work"))
    parser.add_argument("--testdata", type=Path, default=os.environ.get("FACEFUSE_TESTDATA"))
    parser.add_argument("--scenarios", type=Path, default=HERE / "scenarios.toml")
    parser.add_argument("--swap-workers", type=worker_counts, default=[],
                        help="run each scenario with these swap-worker counts (e.g. 1,2,4)")
    args = parser.parse_args(argv)
    if args.testdata is None:
        parser.error("set FACEFUSE_TESTDATA or give --testdata")
    scenarios = with_workers(load_scenarios(args.scenarios, args.providers, args.only),
                             args.swap_workers)
    built = {kind: standins.build_all(args.work / "models", light=kind == "light")
             for kind in ("standin", "light")}
    testdata = Path(args.testdata)
    source = testdata / "media" / "obama.jpg"
    results = []
    args.out.mkdir(parents=True, exist_ok=True)
    for scenario in scenarios:
        clip = clip_for(scenario, scenarios, testdata, args.work)
        result = run_scenario(scenario, clip, source, models_for(scenario, built, testdata),
                              args.work)
        result["standins"] = built["light" if scenario.get("models") == "same-work"
                                   else "standin"]
        results.append(result)
        (args.out / f"{scenario['name']}.json").write_text(json.dumps(result, indent=1))
        print(summary_line(result), flush=True)
    (args.out / "results.json").write_text(json.dumps({"machine": machine(),
                                                       "results": results}, indent=1))
    return 1 if any("error" in r for r in results) else 0


def summary_line(result: dict[str, Any]) -> str:
    name = result["scenario"]["name"]
    if "error" in result:
        return f"{name}: failed: {' '.join(result['error'])}"
    return (f"{name}: {result['frames']} frames, {result['fps']:.2f} fps, "
            f"{result.get('swap_workers')} swap workers, "
            f"{result['cpu_s_per_frame']:.3f} CPU s/frame, first output "
            f"{result['first_output_s']} s, outside onnxruntime "
            f"{result['outside_onnxruntime'] * 100:.1f}%, peak RSS {result['peak_rss_mib']} MiB, "
            f"device {result['peak_device_mib']} MiB")


if __name__ == "__main__":
    sys.exit(main())
