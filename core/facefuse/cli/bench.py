"""`facefuse bench`: time the real render path on a clip and say where the time goes.

It renders with shot.run.render.render and a RenderRequest, like `facefuse render`, and reads the
figures from the timing.RenderTimings the render fills in as it works: frames per second end to
end, milliseconds per frame of every stage of both passes (median and p95), time to the first
output frame, session creation, time inside ONNX Runtime, CPU seconds per frame, peak memory.
CPU time is split into ONNX Runtime's (the calling threads' CPU inside each run() plus its own
thread pools') and the host's (the rest of the process), and per thread (a stage that runs on
a thread of its own: the render's reader, writer, pass 1's decoder...), sampled from
/proc/self/task every CPU_POLL_S (timing.ThreadCpu; Linux only, elsewhere those are null).

Cold by default: the render gets a fresh, empty cache folder, so nothing (source embedding,
shot analysis, file hashes) is reused. --warm renders the same frames once first, untimed, into
that folder, then times a second render that finds everything cached (its analysis pass is
skipped: the figures say so). --cache-dir names the cache folder instead (what it holds is
used, and the figures' `analysis_cached` says how much). The output goes to a temporary file
unless -o names one (which is overwritten).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager
from dataclasses import replace
from pathlib import Path
from types import MappingProxyType
from typing import Any

from ..errors import ExitCode, InputError
from ..io.files import scratch_folder
from ..io.sequences import parse_frame_range
from ..io.video.common import VIDEO_CODECS
from ..periodic import every
from ..runtime.threads import detector_sessions, swap_workers, thread_budget
from ..shot.contract.option_types import usage_type
from ..shot.contract.request import FrameSpec, InputSpec, OutputSpec, RenderRequest, RenderSummary
from ..stopping import stop_signals
from ..timing import (
    INFERENCE,
    INFERENCE_BUSY,
    INFERENCE_CPU,
    ONNX_RUNTIME,
    SESSIONS,
    RenderTimings,
    StageStats,
    TimingReport,
)
from .options import engine_options, settings_from_args

# The stages each pass reports (a stage that did not run, e.g. enhance without an enhancer,
# is null), in the order a frame goes through them.
PASS_STAGES = MappingProxyType({
    "analysis": ("decode", "colour", "detect", "embed"),
    "swap": ("decode", "colour", "swap", "enhance", "paste", "encode"),
})
DEVICE_POLL_S = 0.05
CPU_POLL_S = 0.1  # how often every thread's CPU is read (a thread's last 100 ms may be missed)
CPU_THREAD = "facefuse-bench-cpu"
BENCH_THREADS = (CPU_THREAD, "facefuse-bench-gpu")  # the bench's own: not the render's CPU


def add_parser(commands: Any) -> None:
    p = commands.add_parser("bench", help="time a render of a clip, stage by stage",
                            description="Render a clip through the real render path and report "
                            "frames/s, ms per frame of every stage of both passes (median, "
                            "p95), time to the first output frame, session creation, the share "
                            "of time outside ONNX Runtime and peak memory. Cold (empty caches) "
                            "unless --warm.")
    p.add_argument("-i", "--input", required=True, help="video file or image-sequence pattern")
    p.add_argument("-o", "--output", help="where to write the render (overwritten; default: a "
                   "temporary .mp4, removed afterwards)")
    engine_options(p)
    p.add_argument("--frames", type=usage_type(frames_option), metavar="N|A-B",
                   help="time the first N frames, or the inclusive range A-B as render's "
                   "--frames (default: all)")
    p.add_argument("--warm", action="store_true", help="render once untimed first, then time "
                   "a render that reuses the caches (analysis, embeddings, hashes)")
    p.add_argument("--codec", choices=VIDEO_CODECS, default="h264", help="for video outputs")
    p.add_argument("--keep-yuv", action="store_true", help="ffv1 or rawvideo (.mkv): keep "
                   "the input's own YUV pictures, as render's --keep-yuv")
    p.add_argument("--crf", type=int, metavar="N", help="h264/h265 constant rate factor")
    p.add_argument("--preset", metavar="NAME", help="h264/h265 speed preset")
    p.add_argument("--compression", metavar="NAME", help="EXR or TIFF sequence compression")
    p.add_argument("--json", action="store_true", help="print the figures as one JSON line")
    p.set_defaults(handler=cmd_bench)


def frames_option(text: str) -> int | tuple[int, int]:
    """`--frames`: a count of frames ("30") or an inclusive range ("1001-1100")."""
    if text.strip().isdigit():
        count = int(text)
        if count < 1:
            raise InputError(f"--frames {text} must be at least 1 frame")
        return count
    return parse_frame_range(text)


def _frame_range(spec: str, frames: int | tuple[int, int] | None) -> tuple[int, int] | None:
    """The inclusive range to render: `frames` itself, or the input's first `frames` frames
    (None: all of them)."""
    if frames is None or isinstance(frames, tuple):
        return frames
    from ..shot.contract.inputs import open_input

    shot = open_input(spec)
    try:
        numbers = shot.frame_numbers
    finally:
        shot.close()
    return numbers[0], numbers[min(frames, len(numbers)) - 1]


def request_from_args(args: argparse.Namespace, work: Path) -> RenderRequest:
    """The render a bench times; caches in --cache-dir when given (the caches found there
    are used), else in `work`/cache (cold); output in `work` unless -o."""
    given = settings_from_args(args)
    settings = replace(given, cache_dir=given.cache_dir or work / "cache")
    if settings.selector == "reference" and not settings.reference_images:
        raise InputError("--selector reference needs --reference IMAGE (the person to replace)")
    output = args.output or str(work / "bench.mp4")
    return RenderRequest(
        sources=tuple(args.source), input=InputSpec(args.input), settings=settings,
        frames=FrameSpec(range=_frame_range(args.input, args.frames)),
        output=OutputSpec(output, codec=args.codec, overwrite=True, crf=args.crf,
                          preset=args.preset, compression=args.compression,
                          keep_yuv=args.keep_yuv))


def cmd_bench(args: argparse.Namespace) -> int:
    """Measure one render in a scratch folder, removed however the bench ends (and swept by a
    later run when it was killed: io.files.scratch_folder): SIGTERM or SIGINT cancels the
    render between frames and exits 143 or 130 (stopping.stop_signals)."""
    figures: dict[str, Any] | None = None
    with stop_signals() as stop, scratch_folder(Path(tempfile.gettempdir()),
                                                "facefuse-bench") as work:
        request = request_from_args(args, work)
        if args.warm:
            from ..shot.run.render import render

            render(request, cancel=stop.is_set)
        if not stop.is_set():
            figures = measure(request, warm=args.warm, cancel=stop.is_set)
    if stop.is_set() or figures is None:
        print(f"facefuse: bench stopped by {stop.name}; nothing was measured", file=sys.stderr)
        return stop.exit_code
    if args.json:
        print(json.dumps({"bench": figures}), flush=True)
    else:
        print(format_figures(figures))
    return ExitCode.FRAMES_FAILED if figures["failed"] else ExitCode.OK


def measure(request: RenderRequest, warm: bool = False,
            cancel: Callable[[], bool] | None = None) -> dict[str, Any]:
    """Render `request` once with timings on; the bench figures (see format_figures)."""
    from ..runtime.sessions import resolve_providers  # the engine loads when a bench runs
    from ..shot.run.render import render

    providers = resolve_providers(request.settings.providers)
    timings = RenderTimings()
    timings.sample_threads()  # what every thread used so far is left out
    cpu_start = _cpu_seconds()
    with _device_peak(providers) as device_mib, _thread_sampling(timings):
        summary = render(request, timings=timings, cancel=cancel)
    cpu_s = _cpu_seconds() - cpu_start
    return _figures(request, summary, timings.report(), providers, cpu_s, warm,
                    device_mib[0] if device_mib else None)


def _figures(request: RenderRequest, summary: RenderSummary, report: TimingReport,
             providers: tuple[str, ...], cpu_s: float, warm: bool,
             device_mib: float | None) -> dict[str, Any]:
    frames = max(summary.done, 1)
    wall_ms = summary.seconds * 1000.0
    inside_ms = report.totals_ms.get(INFERENCE, 0.0)
    busy_ms = min(report.totals_ms.get(INFERENCE_BUSY, 0.0), wall_ms)
    cpu = _cpu_split(report, cpu_s, frames)
    return {
        "input": request.input.path, "output": request.output.path, "frames": summary.done,
        "failed": len(summary.failed), "cache": "warm" if warm else "cold",
        "analysis_cached": summary.analysis_cached, "decoded_once": summary.decoded_once,
        "held_mib": summary.held_mib, "providers": list(providers),
        "models": {role: getattr(request.settings, role) for role in
                   ("detector", "recogniser", "swapper", "enhancer")},
        **_workers(request, providers),
        "seconds": round(summary.seconds, 3), "fps": round(summary.done / summary.seconds, 3)
        if summary.seconds > 0 else 0.0,
        "ms_per_frame": round(wall_ms / frames, 3),
        "cpu_s_per_frame": round(cpu_s / frames, 4),
        **cpu,
        "first_output_s": report.marks_s.get("first_output"),
        "sessions_ms": report.totals_ms.get(SESSIONS, 0.0),
        "onnxruntime_ms_per_frame": round(inside_ms / frames, 3),
        "outside_onnxruntime": round(1.0 - busy_ms / wall_ms, 4) if wall_ms > 0 else None,
        "track_ms_per_frame": round(report.totals_ms.get("track", 0.0) / frames, 3),
        "encode_finish_ms": report.totals_ms.get("encode_finish", 0.0),
        "peak_rss_mib": _peak_rss_mib(), "peak_device_mib": device_mib,
        "stages": {name: {stage: _stats(report.stages.get(name, {}).get(stage))
                          for stage in stages} for name, stages in PASS_STAGES.items()},
    }


def _workers(request: RenderRequest, providers: tuple[str, ...]) -> dict[str, int]:
    """The render's pass-1 detector sessions and pass-2 swap workers, as its settings,
    providers and thread budget make them (runtime.threads)."""
    settings = request.settings
    budget = thread_budget(settings.threads).inference
    return {"detector_sessions": detector_sessions(settings.detector_sessions, providers,
                                                   budget),
            "swap_workers": swap_workers(settings.swap_workers, providers, budget)}


def _cpu_split(report: TimingReport, cpu_s: float, frames: int) -> dict[str, Any]:
    """onnxruntime_cpu_ms_per_frame, host_cpu_ms_per_frame (the process's CPU less ONNX
    Runtime's and the bench's own threads') and threads_cpu_ms_per_frame: per thread group,
    its CPU, the part inside session.run() and the rest (host); "unsampled" is the process
    CPU no sampled thread accounts for (threads' last moments between samples). All null
    where threads cannot be read (not Linux)."""
    threads = dict(report.threads_cpu_ms)
    if not threads:
        return {"onnxruntime_cpu_ms_per_frame": None, "host_cpu_ms_per_frame": None,
                "threads_cpu_ms_per_frame": None}
    own_ms = sum(threads.pop(name, 0.0) for name in BENCH_THREADS)
    process_ms = cpu_s * 1000.0 - own_ms
    ort_ms = report.totals_ms.get(INFERENCE_CPU, 0.0) + threads.get(ONNX_RUNTIME, 0.0)
    per_thread: dict[str, dict[str, float]] = {}
    for name, ms in sorted(threads.items(), key=lambda kv: -kv[1]):
        inside = ms if name == ONNX_RUNTIME else report.run_cpu_ms.get(name, 0.0)
        per_thread[name] = {"cpu": round(ms / frames, 3), "onnxruntime": round(inside / frames, 3),
                            "host": round((ms - inside) / frames, 3)}
    unsampled = max(0.0, process_ms - sum(threads.values()))
    per_thread["unsampled"] = {"cpu": round(unsampled / frames, 3), "onnxruntime": 0.0,
                               "host": round(unsampled / frames, 3)}
    return {"onnxruntime_cpu_ms_per_frame": round(ort_ms / frames, 3),
            "host_cpu_ms_per_frame": round((process_ms - ort_ms) / frames, 3),
            "threads_cpu_ms_per_frame": per_thread}


def _thread_sampling(timings: RenderTimings) -> AbstractContextManager[None]:
    """Read every thread's CPU into `timings` every CPU_POLL_S while the block runs, and once
    at its end."""
    return every(CPU_POLL_S, timings.sample_threads, CPU_THREAD)


def _stats(stats: StageStats | None) -> dict[str, float] | None:
    if stats is None:
        return None
    return {"median_ms": stats.median_ms, "p95_ms": stats.p95_ms, "frames": stats.frames}


def _cpu_seconds() -> float:
    """User + system CPU seconds of this process so far (every thread)."""
    times = os.times()
    return float(times.user + times.system)


def _peak_rss_mib() -> float | None:
    """The process's peak resident memory (None where the platform does not say)."""
    try:
        import resource
    except ImportError:  # Windows
        return None
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return round(peak / (1024 * 1024 if sys.platform == "darwin" else 1024), 1)


@contextmanager
def _device_peak(providers: tuple[str, ...]) -> Iterator[list[float]]:
    """On CUDA, the peak GPU memory in use while the block runs (MiB, sampled with nvidia-smi);
    the list stays empty elsewhere or without nvidia-smi."""
    peak: list[float] = []
    smi = shutil.which("nvidia-smi")
    if smi is None or not {"CUDAExecutionProvider", "TensorrtExecutionProvider"} & set(providers):
        yield peak
        return

    def poll() -> None:
        used = _device_used_mib(smi)
        if used is not None:
            peak[:] = [max(used, *peak)]

    with every(DEVICE_POLL_S, poll, "facefuse-bench-gpu"):
        yield peak


def _device_used_mib(smi: str) -> float | None:
    try:
        out = subprocess.run([smi, "--query-gpu=memory.used", "--format=csv,noheader,nounits"],
                             capture_output=True, text=True, timeout=5, check=True).stdout
        return float(out.split()[0])
    except (OSError, subprocess.SubprocessError, ValueError, IndexError):
        return None


def format_figures(figures: Mapping[str, Any]) -> str:
    """The figures as a short table for a terminal."""
    outside = figures["outside_onnxruntime"]
    lines = [
        (f"{figures['frames']} frames of {figures['input']} ({figures['cache']}, analysis "
        f"cached for {figures['analysis_cached']}) on {', '.join(figures['providers'])}, "
        f"{figures['swap_workers']} swap workers, {figures['decoded_once']} frames decoded "
        f"once ({figures['held_mib']} MiB held at most)"),
        (f"  {figures['fps']:.2f} frames/s end to end, {figures['ms_per_frame']:.1f} ms/frame, "
        f"{figures['cpu_s_per_frame']:.3f} CPU s/frame"),
        (f"  first output frame after {_seconds(figures['first_output_s'])}, sessions "
        f"{figures['sessions_ms']:.0f} ms, outside onnxruntime "
        f"{'-' if outside is None else f'{outside * 100:.0f}%'}, peak RSS "
        f"{figures['peak_rss_mib']} MiB, peak device memory {figures['peak_device_mib']} MiB"),
        f"  track {figures['track_ms_per_frame']:.2f} ms/frame",
        *_cpu_lines(figures),
        f"  {'pass':9}{'stage':9}{'median ms':>10}{'p95 ms':>10}{'frames':>8}",
    ]
    for name, stages in figures["stages"].items():
        for stage, stats in stages.items():
            if stats is None:
                lines.append(f"  {name:9}{stage:9}{'-':>10}{'-':>10}{0:>8}")
            else:
                lines.append(f"  {name:9}{stage:9}{stats['median_ms']:>10.2f}"
                             f"{stats['p95_ms']:>10.2f}{stats['frames']:>8}")
    return "\n".join(lines)


def _cpu_lines(figures: Mapping[str, Any]) -> list[str]:
    """CPU ms per frame: ONNX Runtime's and the host's, then per thread."""
    threads = figures.get("threads_cpu_ms_per_frame")
    if not threads:
        return []
    lines = [(f"  CPU ms/frame: onnxruntime {figures['onnxruntime_cpu_ms_per_frame']:.1f}, "
              f"host {figures['host_cpu_ms_per_frame']:.1f}"),
             f"  {'thread':22}{'CPU ms':>8}{'in ORT':>8}{'host':>8}"]
    lines += [f"  {name:22}{row['cpu']:>8.1f}{row['onnxruntime']:>8.1f}{row['host']:>8.1f}"
              for name, row in threads.items()]
    return lines


def _seconds(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f} s"
