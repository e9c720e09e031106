"""The models-only GPU benchmark (stage 1 of bench/gpu.sh): needs onnxruntime(-gpu), numpy and
onnx, nothing of the media stack.

    python bench/gpu_models.py --out models.json [--providers cuda] [--light] [--runs 20]
                               [--batches 1,2,4,8] [--work DIR] [--roles swapper,enhancer,...]

For each stand-in (bench/standins.py, production compute unless --light) in fp32 and its fp16
twin, with the swapper, enhancer and recogniser built with a free batch: the session's creation
time, then per batch size the median latency of `--runs` runs with plain session.run and with
IOBinding (facefuse.runtime.binding.BoundSession), the TFLOP/s that is and the share of the
GPU's FLOP floor, the largest fp16-vs-fp32 difference (facefuse.runtime.precision.compare),
the device memory the process holds (nvidia-smi), and the host's minor page faults a run (the
allocation churn). TensorRT, where onnxruntime offers it and it loads, is timed the same way
with its engine build time. The detector (batch 1) is also run as a pool of `--pools` sessions
(facefuse.runtime.sessions.SessionPool replicas, pass 1's --detector-sessions) fed from as many
threads: frames/s, process CPU ms a frame and device memory per pool size ("pools" in the JSON).
Writes one JSON file and prints one line per measurement.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
import onnxruntime as ort

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "core"))
sys.path.insert(0, str(HERE))

import standins  # bench/ and core/ are on the path first

from facefuse.runtime.binding import BoundSession
from facefuse.runtime.precision import compare
from facefuse.runtime.sessions import SessionPool

CPU = "CPUExecutionProvider"
CUDA = "CUDAExecutionProvider"
TENSORRT = "TensorrtExecutionProvider"
SHORT = {"cuda": CUDA, "cpu": CPU, "tensorrt": TENSORRT}
ROLES = ("swapper", "enhancer", "detector", "recogniser")
FREE_BATCH = ("swapper", "enhancer", "recogniser")
# dense TFLOP/s by GPU name part: (fp32, fp16 tensor core), from the vendors' data sheets
PEAK_TFLOPS = {"H200": (67.0, 989.0), "H100": (67.0, 989.0), "A100": (19.5, 312.0),
               "L40S": (91.6, 362.0), "RTX 4090": (82.6, 165.0), "RTX 3090": (35.6, 71.0),
               "RTX 3060": (12.7, 25.4)}


def build(role: str, path: Path, light: bool, dtype: str) -> float:
    """One stand-in; returns its GFLOP per image."""
    batch: int | str = "batch" if role in FREE_BATCH else 1
    if role == "swapper":
        flops = standins.build_swapper(path, light=light, batch=batch, dtype=dtype)
    elif role == "enhancer":
        flops = standins.build_enhancer(path, light=light, batch=batch, dtype=dtype)
    elif role == "detector":
        flops = standins.build_detector(path, light=light, dtype=dtype)
    else:
        flops = standins.build_recogniser(path, light=light, dtype=dtype)
    return flops / 1e9


def feeds_for(session: Any, batch: int, seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    feeds = {}
    for node in session.get_inputs():
        shape = [d if isinstance(d, int) else batch for d in node.shape]
        dtype = np.float16 if node.type == "tensor(float16)" else np.float32
        feeds[node.name] = rng.uniform(-1.0, 1.0, shape).astype(dtype)
    return feeds


def provider_entries(provider: str, work: Path, fp16: bool) -> list[Any]:
    if provider == TENSORRT:
        folder = work / "trt" / ("fp16" if fp16 else "fp32")
        folder.mkdir(parents=True, exist_ok=True)
        options = {"trt_engine_cache_enable": "True", "trt_engine_cache_path": str(folder),
                   "trt_timing_cache_enable": "True", "trt_timing_cache_path": str(folder),
                   "trt_fp16_enable": "True" if fp16 else "False"}
        return [(TENSORRT, options), (CUDA, {}), CPU]
    if provider == CUDA:
        return [(CUDA, {"cudnn_conv_algo_search": "EXHAUSTIVE"}), CPU]
    return [CPU]


def device_mib() -> float | None:
    """Device memory this process holds (nvidia-smi), or None without an NVIDIA GPU."""
    smi = shutil.which("nvidia-smi")
    if smi is None:
        return None
    done = subprocess.run([smi, "--query-compute-apps=pid,used_memory",
                           "--format=csv,noheader,nounits"], capture_output=True, text=True,
                          timeout=10, check=False)
    for line in done.stdout.splitlines():
        pid, _, used = line.partition(",")
        if pid.strip() == str(os.getpid()):
            return float(used)
    return None


def gpu_name() -> str:
    smi = shutil.which("nvidia-smi")
    if smi is None:
        return "none"
    done = subprocess.run([smi, "--query-gpu=name", "--format=csv,noheader"],
                          capture_output=True, text=True, timeout=10, check=False)
    return (done.stdout.strip().splitlines() or ["unknown"])[0]


def peak_tflops(gpu: str, fp16: bool) -> float | None:
    for part, peaks in PEAK_TFLOPS.items():
        if part in gpu:
            return peaks[1 if fp16 else 0]
    return None


def timed(run: Callable[[], Any], runs: int) -> tuple[float, float, Any]:
    """(median ms, minor page faults a run, last result) over `runs` runs after 3 warm-ups."""
    for _ in range(3):
        result = run()
    faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        result = run()
        times.append((time.perf_counter() - start) * 1000.0)
    faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt - faults
    return statistics.median(times), faults / runs, result


def measure_model(role: str, gflop: float, path: Path, provider: str, fp16: bool,
                  batches: Sequence[int], runs: int, work: Path, gpu: str,
                  reference: dict[int, list[np.ndarray]]) -> list[dict[str, Any]]:
    """The rows for one model file on one provider (reference: fp32 outputs per batch, filled
    by the fp32 pass and compared against by the fp16 pass)."""
    options = ort.SessionOptions()
    options.log_severity_level = 3
    start = time.perf_counter()
    session = ort.InferenceSession(str(path), sess_options=options,
                                   providers=provider_entries(provider, work, fp16))
    created_ms = (time.perf_counter() - start) * 1000.0
    active = session.get_providers()[0]
    if active != provider:
        raise RuntimeError(f"{provider} did not load; {active} would run it")
    bound = BoundSession(session)
    peak = peak_tflops(gpu, fp16)
    rows = []
    for batch in batches if role in FREE_BATCH else [1]:
        feeds = feeds_for(session, batch)
        plain_ms, plain_faults, outputs = timed(partial(session.run, None, feeds), runs)
        bound_ms, bound_faults, _ = timed(partial(bound.run, None, feeds), runs)
        outputs = [np.array(o, np.float32) for o in outputs]
        row = {"role": role, "precision": "fp16" if fp16 else "fp32", "provider": active,
               "batch": batch, "session_ms": round(created_ms, 1),
               "run_ms": round(plain_ms, 3), "iobinding_ms": round(bound_ms, 3),
               "faults_per_run": round(plain_faults, 1),
               "iobinding_faults_per_run": round(bound_faults, 1),
               "gflop": round(gflop * batch, 2),
               "tflops": round(gflop * batch / min(plain_ms, bound_ms), 3),
               "device_mib": device_mib()}
        if peak is not None:
            floor_ms = gflop * batch / peak
            row["floor_ms"] = round(floor_ms, 4)
            row["share_of_floor"] = round(floor_ms / min(plain_ms, bound_ms), 3)
        if fp16 and batch in reference:
            check = compare(reference[batch], outputs)
            row["fp16_error"] = check.error
            row["fp16_ok"] = check.fp16
        elif not fp16:
            reference[batch] = outputs
        rows.append(row)
        print(line(row), flush=True)
    return rows


def measure_pool(path: Path, provider: str, pool: int, frames: int) -> dict[str, Any]:
    """`frames` runs of the detector on `pool` replicas, fed from `pool` threads (each frame
    its own input, as pass 1 has them): frames/s and process CPU ms a frame."""
    session = SessionPool(provider_entries_names(provider), threads=0).get(path, replicas=pool)
    feeds = [feeds_for(session, 1, seed) for seed in range(8)]
    with ThreadPoolExecutor(pool) as workers:
        list(workers.map(lambda f: session.run(None, f), feeds * pool))  # warm every replica
        cpu, start = os.times(), time.perf_counter()
        list(workers.map(lambda i: session.run(None, feeds[i % len(feeds)]), range(frames)))
        wall = time.perf_counter() - start
        used = os.times()
    cpu_s = used.user + used.system - cpu.user - cpu.system
    row = {"role": "detector", "precision": "fp32", "provider": provider, "pool": pool,
           "frames": frames, "frames_per_s": round(frames / wall, 1),
           "cpu_ms_per_frame": round(cpu_s * 1000.0 / frames, 3), "device_mib": device_mib()}
    print(f"detector   pool {pool} on {provider[:-17]}: {row['frames_per_s']:8.1f} frames/s, "
          f"{row['cpu_ms_per_frame']:.2f} CPU ms/frame, device {row['device_mib']} MiB",
          flush=True)
    return row


def provider_entries_names(provider: str) -> list[str]:
    """The provider list a render's SessionPool gets for `provider` (CPU last)."""
    return [provider, CPU] if provider != CPU else [CPU]


def line(row: dict[str, Any]) -> str:
    share = f" {row['share_of_floor']:.0%} of floor" if "share_of_floor" in row else ""
    fp16 = f" fp16 err {row['fp16_error']:.2%}" if row.get("fp16_error") is not None else ""
    return (f"{row['role']:10} {row['precision']} {row['provider'][:-17]:8} batch "
            f"{row['batch']:2}: {row['run_ms']:9.3f} ms run, {row['iobinding_ms']:9.3f} ms "
            f"bound, {row['tflops']:8.2f} TFLOP/s{share}, session {row['session_ms']:.0f} ms, "
            f"faults/run {row['faults_per_run']}->{row['iobinding_faults_per_run']}, "
            f"device {row['device_mib']} MiB{fp16}")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--providers", default="cuda",
                        help="comma list of cuda, tensorrt, cpu (default cuda)")
    parser.add_argument("--light", action="store_true", help="light stand-ins (no compute)")
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--batches", default="1,2,4,8")
    parser.add_argument("--roles", default=",".join(ROLES))
    parser.add_argument("--pools", default="1,2,4",
                        help="detector pool sizes to time (empty: none)")
    parser.add_argument("--pool-frames", type=int, default=200)
    parser.add_argument("--work", type=Path, default=Path("/tmp/facefuse-gpu-models"))
    args = parser.parse_args(argv)
    offered = ort.get_available_providers()
    if hasattr(ort, "preload_dlls") and CUDA in offered:
        ort.preload_dlls()  # the CUDA and cuDNN libraries of the nvidia-* pip packages
    batches = [int(b) for b in args.batches.split(",")]
    gpu = gpu_name()
    rows: list[dict[str, Any]] = []
    pools: list[dict[str, Any]] = []
    skipped: list[str] = []
    args.work.mkdir(parents=True, exist_ok=True)
    def save() -> None:  # after every model: a run stopped by its time limit keeps its rows
        result = {"machine": {"gpu": gpu, "onnxruntime": ort.__version__, "offered": offered,
                              "python": platform.python_version(), "light": args.light},
                  "rows": rows, "pools": pools, "skipped": skipped}
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(result, indent=1))

    for name in args.providers.split(","):
        provider = SHORT.get(name.strip(), name.strip())
        if provider not in offered:
            skipped.append(f"{provider}: not offered by onnxruntime {ort.__version__}")
            continue
        for role in args.roles.split(","):
            reference: dict[int, list[np.ndarray]] = {}
            for dtype in ("float32", "float16"):
                path = args.work / f"{role}_{dtype}{'_light' if args.light else ''}.onnx"
                gflop = build(role, path, args.light, dtype)
                try:
                    rows += measure_model(role, gflop, path, provider, dtype == "float16",
                                          batches, args.runs, args.work, gpu, reference)
                except Exception as exc:  # noqa: BLE001 - a provider refusing a model is a row
                    skipped.append(f"{provider} {role} {dtype}: {str(exc).splitlines()[0]}")
                    print(f"{role} {dtype} on {provider}: skipped ({skipped[-1]})", flush=True)
                save()
        if "detector" in args.roles.split(","):
            path = args.work / f"detector_float32{'_light' if args.light else ''}.onnx"
            for pool in [int(n) for n in args.pools.split(",") if n.strip()]:
                try:
                    pools.append(measure_pool(path, provider, pool, args.pool_frames))
                except Exception as exc:  # noqa: BLE001 - a pool that fails is a row
                    skipped.append(f"{provider} detector pool {pool}: "
                                   f"{str(exc).splitlines()[0]}")
                save()
    save()
    print(f"{len(rows)} measurements -> {args.out}" + (f"; skipped: {skipped}" if skipped else ""))
    return 0 if rows else 3


if __name__ == "__main__":
    sys.exit(main())
