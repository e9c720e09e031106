"""`facefuse render`: the command line over facefuse.shot.render (a thin host like the others)."""

from __future__ import annotations

import argparse
import json
import signal
import sys
import threading
from fractions import Fraction
from typing import Any, TextIO

from ..color import list_colorspaces
from ..errors import ExitCode, InputError
from ..io.sequences import parse_chunk, parse_frame_range
from ..io.video import VIDEO_CODECS
from ..shot.render import render
from ..shot.request import FrameReport, RenderRequest, RenderSummary
from .options import engine_options, settings_from_args


def add_parser(commands: Any) -> None:
    p = commands.add_parser("render", help="swap faces through a whole shot (video or sequence)")
    p.add_argument("-i", "--input", help="video file, or sequence: name.####.exr, "
                   "name.%%04d.dpx, name.#.png")
    p.add_argument("-o", "--output", help="video file, or sequence pattern as for --input")
    engine_options(p)
    p.add_argument("--frames", type=parse_frame_range, help="A-B, inclusive, in the input's "
                   "own frame numbers")
    p.add_argument("--chunk", type=parse_chunk, help="N/M: the Nth of M equal slices")
    p.add_argument("--matte", help="sequence pattern for the blend mask (one channel)")
    p.add_argument("--patch", help="sequence pattern for the swapped face alone "
                   "(premultiplied RGBA)")
    p.add_argument("--colorspace", help="OCIO colour space of the input ('none': no "
                   "conversion); default per format, e.g. EXR = 'Linear Rec.709 (sRGB)'")
    p.add_argument("--list-colorspaces", action="store_true", help="list colour space names")
    p.add_argument("--codec", choices=VIDEO_CODECS, default="h264", help="for video outputs")
    p.add_argument("--rate", type=Fraction, help="fps of a video made from a sequence (24)")
    p.add_argument("--start-number", type=int, default=1, help="number of a video's first frame")
    p.add_argument("--conform-vfr", action="store_true", help="conform a variable frame rate")
    p.add_argument("--overwrite", action="store_true", help="render frames that are done too")
    p.add_argument("--fail-fast", action="store_true", help="stop at the first failed frame")
    p.add_argument("--no-smooth", action="store_true", help="do not smooth landmarks over time")
    p.add_argument("--smooth-min-cutoff", type=float, help="One Euro min cutoff, Hz (1.0)")
    p.add_argument("--smooth-beta", type=float, help="One Euro beta, per face size (3.0)")
    p.add_argument("--progress", choices=("auto", "bar", "json", "none"), default="auto")
    p.set_defaults(handler=cmd_render)


def request_from_args(args: argparse.Namespace) -> RenderRequest:
    if not args.input or not args.output:
        raise InputError("render needs -i INPUT and -o OUTPUT")
    return RenderRequest(
        sources=tuple(args.source), input=args.input, output=args.output,
        settings=settings_from_args(args), frames=args.frames, chunk=args.chunk,
        matte=args.matte, patch=args.patch, colorspace=args.colorspace, codec=args.codec,
        overwrite=args.overwrite, fail_fast=args.fail_fast, smoothing=not args.no_smooth,
        smoothing_min_cutoff=args.smooth_min_cutoff, smoothing_beta=args.smooth_beta,
        start_number=args.start_number, conform_vfr=args.conform_vfr, rate=args.rate)


class Progress:
    """A bar on a terminal, one JSON line per frame with --progress json, or nothing."""

    def __init__(self, mode: str, stream: TextIO | None = None) -> None:
        self.stream = stream if stream is not None else sys.stderr
        self.mode = ("bar" if self.stream.isatty() else "none") if mode == "auto" else mode
        self.done = 0

    def __call__(self, report: FrameReport) -> None:
        self.done += 1
        if self.mode == "json":
            print(json.dumps({"frame": report.frame, "status": report.status,
                              "faces": report.faces, "ms": dict(report.ms),
                              **({"error": report.error} if report.error else {})}),
                  flush=True)
        elif self.mode == "bar":
            self.stream.write(f"\rframe {report.frame}: {self.done} frames, {report.status:8}")
            self.stream.flush()


def summary_record(summary: RenderSummary) -> dict[str, Any]:
    return {"summary": {"frames": summary.frames, "done": summary.done,
                        "swapped": summary.swapped,
                        "no_face": summary.no_face, "skipped": summary.skipped,
                        "failed": [{"frame": n, "error": e} for n, e in summary.failed],
                        "seconds": round(summary.seconds, 3), "fps": round(summary.fps, 3),
                        "cancelled": summary.cancelled}}


def cmd_render(args: argparse.Namespace) -> int:
    if args.list_colorspaces:
        print("\n".join(list_colorspaces()))
        return ExitCode.OK
    request = request_from_args(args)
    progress = Progress(args.progress)
    stop = threading.Event()
    previous = signal.signal(signal.SIGTERM, lambda *_: stop.set())
    try:
        summary = render(request, progress, stop.is_set)
    finally:
        signal.signal(signal.SIGTERM, previous)
    _print_summary(summary, progress.mode)
    if summary.cancelled and stop.is_set():
        return ExitCode.TERMINATED
    return ExitCode.FRAMES_FAILED if summary.failed else ExitCode.OK


def _print_summary(summary: RenderSummary, mode: str) -> None:
    if mode == "json":
        print(json.dumps(summary_record(summary)), flush=True)
        return
    if mode == "bar":
        sys.stderr.write("\n")
    failed = ", ".join(str(n) for n, _ in summary.failed) or "none"
    print(f"{summary.frames} frames: {summary.swapped} swapped, {summary.no_face} without a "
          f"face, {summary.skipped} already done, failed: {failed}; {summary.fps:.2f} fps"
          f"{' (cancelled)' if summary.cancelled else ''}")
