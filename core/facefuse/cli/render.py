"""`facefuse render`: the command line over facefuse.shot.render (a thin host like the others)."""

from __future__ import annotations

import argparse
import json
import signal
import sys
import threading
from collections.abc import Callable
from fractions import Fraction
from pathlib import Path
from typing import Any, TextIO

from ..errors import ExitCode, InputError
from ..farm.paths import check_inside
from ..io.sequences import parse_chunk, parse_frame_range
from ..io.video.common import CRF_RANGE, DEFAULT_CRF, DEFAULT_PRESET, VIDEO_CODECS
from ..shot.request import (
    PROVENANCE_MODES,
    FrameReport,
    PhaseProgress,
    RenderRequest,
    RenderSummary,
)
from ..timing import PhaseRate
from .options import engine_options, settings_from_args

BAR_WIDTH = 24


def usage_type(parse: Callable[[str], Any]) -> Callable[[str], Any]:
    """An argparse type= from a parser that raises InputError: a bad value becomes a usage
    error (one sentence, exit 2) instead of a traceback."""
    def convert(text: str) -> Any:
        try:
            return parse(text)
        except InputError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from exc

    convert.__name__ = parse.__name__
    return convert


def _rate(text: str) -> Fraction:
    try:
        rate = Fraction(text)
    except (ValueError, ZeroDivisionError):
        rate = Fraction(0)
    if rate <= 0:
        raise InputError(f"rate {text!r} is not a positive number of frames per second, "
                         "e.g. 24 or 24000/1001")
    return rate


def add_parser(commands: Any) -> None:
    p = commands.add_parser("render", help="swap faces through a whole shot (video or sequence)",
                            description="Swap faces through a whole shot: a video file or an "
                            "image sequence in, a video or an image sequence out.")
    render_options(p)
    p.set_defaults(handler=cmd_render)


def render_options(p: argparse.ArgumentParser, sources_required: bool = True) -> None:
    """The options of `facefuse render` (farm commands take the same ones; a .blend farm job
    needs no -s)."""
    p.add_argument("-i", "--input", help="video file, or sequence: name.####.exr, "
                   "name.%%04d.dpx, name.#.png")
    p.add_argument("-o", "--output", help="video file, or sequence pattern as for --input")
    engine_options(p, sources_required)
    p.add_argument("--frames", type=usage_type(parse_frame_range), metavar="A-B",
                   help="inclusive range in the input's own frame numbers (clipped to the "
                   "frames the input has)")
    p.add_argument("--chunk", type=usage_type(parse_chunk), metavar="N/M",
                   help="render the Nth of M equal slices of the range (farm work)")
    p.add_argument("--chunk-frames", type=usage_type(parse_frame_range), metavar="A-B",
                   help="render only frames A-B of the --frames range, which is still "
                   "analysed whole (a farm task's chunk of frames)")
    p.add_argument("--output-root", help="refuse any output (-o, --matte, --patch) whose "
                   "folder is not inside this one (farm jobs)")
    p.add_argument("--matte", help="sequence pattern for the blend mask (one channel)")
    p.add_argument("--patch", help="sequence pattern for the swapped face alone "
                   "(premultiplied RGBA)")
    p.add_argument("--colorspace", help="OCIO colour space of the input ('none': no "
                   "conversion); default per format, e.g. EXR = 'Linear Rec.709 (sRGB)'")
    p.add_argument("--list-colorspaces", action="store_true", help="list colour space names")
    p.add_argument("--codec", choices=VIDEO_CODECS, default="h264", help="for video outputs; "
                   "rawvideo (.mov) and ffv1 (.mkv) are lossless")
    crf_defaults = ", ".join(f"{codec} {crf}" for codec, crf in DEFAULT_CRF.items())
    p.add_argument("--crf", type=int, metavar="N", help=f"h264/h265 constant rate factor, "
                   f"{CRF_RANGE[0]}..{CRF_RANGE[1]}, lower is better ({crf_defaults})")
    p.add_argument("--preset", metavar="NAME", help="h264/h265 speed preset, ultrafast .. "
                   f"placebo ({DEFAULT_PRESET})")
    p.add_argument("--compression", metavar="NAME", help="EXR (zip, none, zips, piz, rle, "
                   "pxr24, b44, b44a, dwaa, dwab) or TIFF (zip, none, lzw) sequence outputs "
                   "(the input plate's, else zip)")
    p.add_argument("--rate", type=usage_type(_rate), help="fps of a video made from a "
                   "sequence (24)")
    p.add_argument("--start-number", type=int, default=1, help="number of a video's first frame")
    p.add_argument("--conform-vfr", action="store_true", help="conform a variable frame rate")
    p.add_argument("--overwrite", action="store_true", help="render frames that are done too")
    p.add_argument("--fail-fast", action="store_true", help="stop at the first failed frame "
                   "(no later frame is written)")
    p.add_argument("--no-smooth", action="store_true", help="do not smooth landmarks over time")
    p.add_argument("--smooth-min-cutoff", type=float, help="One Euro min cutoff, Hz (1.0)")
    p.add_argument("--smooth-beta", type=float, help="One Euro beta, per face size (3.0)")
    p.add_argument("--progress", choices=("auto", "bar", "json", "openjd", "none"),
                   default="auto", help="progress of every phase: a bar on stderr (auto: on a "
                   "terminal), JSON lines on stdout, Open Job Description `openjd_progress:` "
                   "and `openjd_status:` lines on stdout, or none")
    p.add_argument("--json", action="store_true", help="print one JSON summary line (as "
                   "`swap --json`); --progress json prints it too, after the progress lines")
    p.add_argument("--provenance", choices=PROVENANCE_MODES, default="names",
                   help="what output metadata names: file names and hashes (names), or local "
                   "paths too (full)")


def request_from_args(args: argparse.Namespace) -> RenderRequest:
    if not args.input or not args.output:
        raise InputError("render needs -i INPUT and -o OUTPUT")
    return RenderRequest(
        sources=tuple(args.source), input=args.input, output=args.output,
        settings=settings_from_args(args), frames=args.frames, chunk=args.chunk,
        chunk_frames=args.chunk_frames,
        matte=args.matte, patch=args.patch, colorspace=args.colorspace, codec=args.codec,
        overwrite=args.overwrite, fail_fast=args.fail_fast, smoothing=not args.no_smooth,
        smoothing_min_cutoff=args.smooth_min_cutoff, smoothing_beta=args.smooth_beta,
        start_number=args.start_number, conform_vfr=args.conform_vfr, rate=args.rate,
        provenance=args.provenance, crf=args.crf, preset=args.preset,
        compression=args.compression)


class Progress:
    """Progress of every phase (analysis, swap, encode): a bar on stderr on a terminal, JSON
    lines on stdout with --progress json (one per frame, {"frame", "status", "faces", "found",
    "ms"}, and one per phase step, {"phase", "done", "total", "percent", "fps", "eta_s"}), or
    nothing. Called from the render's threads; one lock keeps lines whole."""

    def __init__(self, mode: str, stream: TextIO | None = None) -> None:
        self.stream = stream if stream is not None else sys.stderr
        self.mode = ("bar" if self.stream.isatty() else "none") if mode == "auto" else mode
        self.done = 0
        self._lock = threading.Lock()
        self._rates: dict[str, PhaseRate] = {}
        self._last: FrameReport | None = None
        self._phase: PhaseProgress | None = None
        self._steps: dict[str, PhaseProgress] = {}  # the last step of each phase
        self._openjd_last: dict[str, int] = {}

    def __call__(self, report: FrameReport) -> None:
        with self._lock:
            self.done += 1
            self._last = report
            if self.mode == "openjd" and report.status == "failed":
                print(f"openjd_status: frame {report.frame} failed: {report.error}", flush=True)
            elif self.mode == "json":
                print(json.dumps({"frame": report.frame, "status": report.status,
                                  "faces": report.faces, "found": report.found,
                                  "ms": dict(report.ms),
                                  **({"error": report.error} if report.error else {})}),
                      flush=True)
            elif self.mode == "bar":
                self._draw()

    def phase(self, step: PhaseProgress) -> None:
        with self._lock:
            rate = self._rates.setdefault(step.phase, PhaseRate(step.done))
            fps, eta = rate.fps_eta(step.done, step.total)
            self._steps[step.phase] = step
            # pass 1 may run beside pass 2 (selector many): the bar follows the swap then
            self._phase = self._steps.get("swap", step) if step.phase == "analysis" else step
            if self.mode == "json":
                percent = round(100.0 * step.done / step.total, 1) if step.total else 100.0
                print(json.dumps({"phase": step.phase, "done": step.done, "total": step.total,
                                  "percent": percent, "fps": round(fps, 3),
                                  "eta_s": None if eta is None else round(eta, 1)}),
                      flush=True)
            elif self.mode == "openjd":
                self._openjd(step)
            elif self.mode == "bar":
                self._draw()

    def _openjd(self, step: PhaseProgress) -> None:
        """Open Job Description lines: a status when a phase starts and every tenth of the
        analysis, the swap's share of this task's frames as its progress, 100 once encoded."""
        percent = int(100 * step.done / step.total) if step.total else 100
        last = self._openjd_last.get(step.phase)
        self._openjd_last[step.phase] = percent
        if step.phase == "swap":
            if last is None:
                print(f"openjd_status: swapping {step.total} frames", flush=True)
            if percent != last:
                print(f"openjd_progress: {percent}", flush=True)
        elif step.phase == "analysis" and (last is None or percent // 10 != last // 10):
            print(f"openjd_status: analysis {step.done}/{step.total} frames", flush=True)
        elif step.phase == "encode" and step.done == step.total and \
                self._openjd_last.get("swap") != 100:
            print("openjd_progress: 100", flush=True)

    def _draw(self) -> None:
        last = self._last
        frame = f"frame {last.frame} {last.status}" if last is not None else ""
        step = self._phase
        if step is None:
            line = f"{frame}: {self.done} frames"
        else:
            fps, eta = self._rates[step.phase].fps_eta(step.done, step.total)
            share = step.done / step.total if step.total else 1.0
            filled = round(share * BAR_WIDTH)
            left = "--:--" if eta is None else f"{int(eta) // 60}:{int(eta) % 60:02d}"
            line = (f"{step.phase:8} [{'#' * filled}{'.' * (BAR_WIDTH - filled)}] "
                    f"{step.done}/{step.total} {share * 100:3.0f}% {fps:6.1f} fps "
                    f"ETA {left}  {frame}{self._analysis_alongside(step)}")
        self.stream.write(f"\r{line:<100}")
        self.stream.flush()

    def _analysis_alongside(self, shown: PhaseProgress) -> str:
        """How far the analysis has got while the bar shows the swap beside it."""
        analysis = self._steps.get("analysis")
        if shown.phase != "swap" or analysis is None or analysis.done >= analysis.total:
            return ""
        return f"  (analysis {analysis.done}/{analysis.total})"


def summary_record(summary: RenderSummary) -> dict[str, Any]:
    return {"summary": {"frames": summary.frames, "done": summary.done,
                        "swapped": summary.swapped,
                        "no_face": summary.no_face, "unselected": summary.unselected,
                        "skipped": summary.skipped,
                        "failed": [{"frame": n, "error": e} for n, e in summary.failed],
                        "seconds": round(summary.seconds, 3), "fps": round(summary.fps, 3),
                        "cancelled": summary.cancelled, "warnings": list(summary.warnings),
                        "analysis_cached": summary.analysis_cached}}


def cmd_render(args: argparse.Namespace) -> int:
    if args.list_colorspaces:
        from ..color import list_colorspaces  # OpenColorIO loads only for this list

        print("\n".join(list_colorspaces()))
        return ExitCode.OK
    request = request_from_args(args)
    if args.output_root is not None:
        check_inside(Path(args.output_root), (request.output, request.matte, request.patch))
    progress = Progress(args.progress)
    summary, terminated = run_render(request, progress)
    _print_summary(summary, progress.mode, args.json)
    if terminated:
        return ExitCode.TERMINATED
    return ExitCode.FRAMES_FAILED if summary.failed else ExitCode.OK


def run_render(request: RenderRequest, progress: Progress) -> tuple[RenderSummary, bool]:
    """Render with progress; SIGTERM (a farm or host stopping the program) cancels it cleanly
    between frames. Returns the summary and whether SIGTERM stopped it."""
    from ..shot.render import render  # the engine loads here, when a render runs

    stop = threading.Event()
    previous = signal.signal(signal.SIGTERM, lambda *_: stop.set())
    try:
        summary = render(request, progress, stop.is_set, progress.phase)
    finally:
        signal.signal(signal.SIGTERM, previous)
    return summary, summary.cancelled and stop.is_set()


def _print_summary(summary: RenderSummary, mode: str, as_json: bool = False) -> None:
    if mode == "bar":
        sys.stderr.write("\n")
    if mode == "json" or as_json:
        print(json.dumps(summary_record(summary)), flush=True)
        return
    if mode == "openjd":
        print(f"openjd_status: {summary.done} done, {summary.skipped} already done, "
              f"{len(summary.failed)} failed of {summary.frames} frames", flush=True)
    failed = ", ".join(str(n) for n, _ in summary.failed) or "none"
    unselected = f" (faces found but none selected in {summary.unselected})" \
        if summary.unselected else ""
    print(f"{summary.frames} frames: {summary.swapped} swapped, {summary.no_face} without a "
          f"swapped face{unselected}, {summary.skipped} already done, failed: {failed}; "
          f"{summary.fps:.2f} fps{' (cancelled)' if summary.cancelled else ''}")
