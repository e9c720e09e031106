"""`facefuse render`: the command line over facefuse.shot.run.render (a thin host like the
others)."""

from __future__ import annotations

import argparse
import json
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any, TextIO

from ..errors import ExitCode, InputError
from ..farm.paths import check_inside
from ..review.folder import check_report_folder
from ..review.report import REPORT_NAME, load_report
from ..shot.contract import commandline
from ..shot.contract.frames import FrameChoice, format_frame_list
from ..shot.contract.request import FrameReport, PhaseProgress, RenderRequest, RenderSummary
from ..shot.output.output_checks import request_inputs
from ..stopping import Cancelled, Stop, stop_signals
from ..timing import PhaseRate

BAR_WIDTH = 24


def add_parser(commands: Any) -> None:
    p = commands.add_parser("render", help="swap faces through a whole shot (video or sequence)",
                            description="Swap faces through a whole shot: a video file or an "
                            "image sequence in, a video or an image sequence out. The faces put "
                            "in: -s PHOTO for everyone the selector chooses, --assign "
                            "PERSON=PHOTO per person (`facefuse review` lists the people), or "
                            "both. Finished frames made with other choices that the render "
                            "replaces are named first.")
    render_options(p)
    p.add_argument("--report", metavar="DIR", help="after the render, write its review report "
                   "(DIR/report.json, DIR/index.html: see `facefuse review`)")
    p.set_defaults(handler=cmd_render)


def render_options(p: argparse.ArgumentParser) -> None:
    """The options of `facefuse render`: those of a RenderRequest (shot.contract.commandline) and
    the command's own (farm commands take the same ones)."""
    commandline.add_render_options(p, after={
        "--colorspace": _colorspace_list_option, "--smooth-beta": _report_options})


def _colorspace_list_option(p: argparse.ArgumentParser) -> None:
    p.add_argument("--list-colorspaces", action="store_true", help="list colour space names")


def _report_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--progress", choices=("auto", "bar", "json", "openjd", "none"),
                   default="auto", help="progress of every phase: a bar on stderr (auto: on a "
                   "terminal), JSON lines on stdout, Open Job Description `openjd_progress:` "
                   "and `openjd_status:` lines on stdout, or none")
    p.add_argument("--json", action="store_true", help="print one JSON summary line (as "
                   "`swap --json`); --progress json prints it too, after the progress lines")


def request_from_args(args: argparse.Namespace) -> RenderRequest:
    """The request of a render's options, `--frames flagged:REPORT` read (flagged_choice)."""
    return commandline.request_from_namespace(args, flagged_choice)


def flagged_choice(path: Path) -> FrameChoice:
    """The frames a review report flags, over the range it analysed, for the shot it names
    (review.report.load_report); InputError when it cannot be read or flags nothing."""
    report = load_report(path)
    if not report.flagged_frames:
        raise InputError(f"the review report {path} flags no frames: there is nothing to "
                         "render")
    read = path / REPORT_NAME if path.is_dir() else path
    return FrameChoice(report.frames, report.flagged_frames, f"shot:{report.shot_id}", read)


class Progress:
    """Progress of every phase (analysis, swap, encode): a bar on stderr on a terminal, JSON
    lines on stdout with --progress json (one per frame, {"frame", "status", "faces", "found",
    "ms"}, with "corrected" for an unselected frame, and one per phase step, {"phase", "done",
    "total", "percent", "fps", "eta_s"}), or nothing. Called from the render's threads; one
    lock keeps lines whole."""

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
                                  **({"corrected": report.corrected}
                                     if report.status == "unselected" else {}),
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
                        "corrected": summary.corrected, "replaced": summary.replaced,
                        "replaced_frames": [list(r) for r in summary.replaced_ranges],
                        "notes": list(summary.notes), "answers": list(summary.answers),
                        "skipped": summary.skipped,
                        "failed": [{"frame": n, "error": e} for n, e in summary.failed],
                        "seconds": round(summary.seconds, 3), "fps": round(summary.fps, 3),
                        "cancelled": summary.cancelled, "warnings": list(summary.warnings),
                        "analysis_cached": summary.analysis_cached,
                        "decoded_once": summary.decoded_once, "held_mib": summary.held_mib}}


def cmd_render(args: argparse.Namespace) -> int:
    if args.list_colorspaces:
        from ..color import list_colorspaces  # OpenColorIO loads only for this list

        print("\n".join(list_colorspaces()))
        return ExitCode.OK
    request = request_from_args(args)
    report = check_report_folder(args.report, (Path(request.input.path),
                                               *request_inputs(request))) \
        if args.report is not None else None
    if args.output_root is not None:
        output = request.output
        check_inside(Path(args.output_root), (output.path, output.matte, output.patch,
                                              *([str(report / "report.json")] if report else [])))
    progress = Progress(args.progress)
    from ..pipeline import Pipeline  # the engine loads here, when a render runs

    with stop_signals() as stop:
        try:
            with Pipeline(request.settings) as pipeline:  # one model load for all it does
                say_replaced(request, pipeline, progress, stop.is_set)
                summary, _ = run_render(request, progress, pipeline)
                _print_summary(summary, progress.mode, args.json)
                if report is not None and not summary.cancelled:
                    _write_report(request, report, summary, pipeline, stop.is_set)
        except Cancelled:  # before the frames, or in the report
            print(f"facefuse: stopped by {stop.name}", file=sys.stderr)
            return stop.exit_code
    return _exit_code(summary, stop)


def say_replaced(request: RenderRequest, pipeline: Any, progress: Progress,
                 cancel: Callable[[], bool] | None = None) -> None:
    """Before rendering, say which finished frames of the output the render replaces because
    they were made with other choices, and what differs (shot.run.replacement): a line on stderr,
    or with --progress json a {"replaces": ...} line on stdout. Nothing when it replaces none."""
    from ..shot.run.replacement import replaced_frames  # the engine loads here, when a render runs

    replacement = replaced_frames(request, pipeline, on_phase=progress.phase, cancel=cancel)
    if not replacement:
        return
    if progress.mode == "json":
        print(json.dumps({"replaces": {
            "output": replacement.output, "count": replacement.count,
            "frames": [list(r) for r in replacement.frames],
            "whole_file": replacement.whole_file,
            "differences": list(replacement.differences),
            "message": replacement.message}}), flush=True)
        return
    if progress.mode == "bar":
        sys.stderr.write("\n")
    print(f"facefuse: note: {replacement.message}", file=sys.stderr, flush=True)


def _exit_code(summary: RenderSummary, stop: Stop) -> int:
    if summary.cancelled and stop.is_set():
        return stop.exit_code
    return ExitCode.FRAMES_FAILED if summary.failed else ExitCode.OK


def _write_report(request: RenderRequest, folder: Path, summary: RenderSummary,
                  pipeline: Any, cancel: Callable[[], bool] | None = None) -> None:
    """render --report: the review of the shot just rendered (the same plan and its cached
    analysis, with the render's loaded models)."""
    from ..review.writing import write_review  # the engine loads here, when a report is asked

    result = write_review(request, folder, pipeline,
                          render=summary_record(summary)["summary"], cancel=cancel)
    print(f"report: {result.page} ({len(result.flags)} flags)", file=sys.stderr)


def run_render(request: RenderRequest, progress: Progress, pipeline: Any = None
               ) -> tuple[RenderSummary, bool]:
    """Render with progress (with `pipeline`, a Pipeline of request.settings the caller keeps,
    when given); SIGTERM (a farm or host stopping the program) or SIGINT cancels it cleanly
    between frames (stopping.stop_signals). Returns the summary and whether SIGTERM stopped it
    (a summary cancelled otherwise was stopped by SIGINT: exit 130)."""
    from ..shot.run.render import render  # the engine loads here, when a render runs

    with stop_signals() as stop:
        summary = render(request, progress, stop.is_set, progress.phase, pipeline=pipeline)
    return summary, summary.cancelled and stop.terminated


def _print_summary(summary: RenderSummary, mode: str, as_json: bool = False) -> None:
    if mode == "bar":
        sys.stderr.write("\n")
    if mode == "json" or as_json:
        print(json.dumps(summary_record(summary)), flush=True)
        return
    for note in summary.notes:
        print(f"facefuse: note: {note}", file=sys.stderr, flush=True)
    for answer in summary.answers:
        print(f"facefuse: {answer}", file=sys.stderr, flush=True)
    if mode == "openjd":
        print(f"openjd_status: {summary.done} done, {summary.skipped} already done, "
              f"{len(summary.failed)} failed of {summary.frames} frames", flush=True)
    failed = ", ".join(str(n) for n, _ in summary.failed) or "none"
    print(f"{summary.frames} frames: {summary.swapped} swapped, {summary.no_face} without a "
          f"face{kept_as_they_are(summary)}, {summary.skipped} already done"
          f"{replaced_note(summary)}, failed: {failed}; "
          f"{summary.fps:.2f} fps{' (cancelled)' if summary.cancelled else ''}")


def replaced_note(summary: RenderSummary) -> str:
    """The summary line's part on finished frames made with other choices that were rewritten."""
    if not summary.replaced:
        return ""
    return (f" ({summary.replaced} frames made with other choices replaced: "
            f"{format_frame_list(summary.replaced_ranges)})")


def kept_as_they_are(summary: RenderSummary) -> str:
    """The summary line's part on frames with faces the plan left as they are: by the
    selector's choice, by the user's corrections (skips, overrides); "" for none."""
    chosen = summary.unselected - summary.corrected
    parts = ([f", {chosen} with faces the selector did not choose"] if chosen else []) + \
        ([f", {summary.corrected} left as they are by your corrections (skips, overrides)"]
         if summary.corrected else [])
    return "".join(parts)
