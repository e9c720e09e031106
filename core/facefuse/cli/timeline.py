"""`facefuse timeline swap EDIT.otio -s ME.jpg -o OUTDIR`: swap the marked clips of an edit
exported as OpenTimelineIO and write it back with the swaps on new tracks (docs/timeline.md).

The timeline rules (which clips, their frames, the versioned renders, the swapped timeline) are
the OpenTimelineIO host's (addon/otio, found through the `facefuse.hosts` entry point `otio`);
here are the options, each render's progress and signals, and what is printed. A clip's
render takes every option of `facefuse render` but those the clip decides (PER_CLIP).
"""

from __future__ import annotations

import argparse
import shlex
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..errors import ExitCode, InputError
from ..farm.commandline import absolute_paths, render_command
from ..hosting.plugins import host_module
from ..io import files
from ..io.small_files import json_value
from ..review.folder import check_report_folder
from ..shot.contract import commandline
from ..shot.contract.request import RenderRequest, RenderSummary
from ..shot.output.output_checks import check_not_input, request_inputs
from ..stopping import stop_signals
from .render import Progress, run_render, summary_record

# render options each clip sets itself (its media, frames and versioned output), or that would
# make every clip's render write the same files
PER_CLIP = frozenset({"--frames", "--chunk", "--chunk-frames", commandline.OUTPUT_ROOT,
                      "--rate", "--start-number", "--matte", "--patch", "--overwrite"})
# the host's own defaults (addon/otio: selection.DEFAULT_MARKER, plan.OUTPUT_CHOICES), repeated
# so that --help needs no OpenTimelineIO
DEFAULT_MARKER = "swap"
KINDS = ("mov", "exr", "png", "tif", "dpx", "same")


def add_parser(commands: Any) -> None:
    p = commands.add_parser("timeline", help="editorial timelines (OpenTimelineIO): swap the "
                            "marked clips of an exported edit (pip install 'facefuse[otio]')")
    actions = p.add_subparsers(dest="timeline_action", required=True, metavar="ACTION")
    swap = actions.add_parser("swap", help="swap the marked clips of EDIT.otio and write "
                              "OUTDIR/EDIT.swapped.otio with the swaps on new tracks")
    swap.add_argument("timeline", type=Path, help="the edit: an .otio file (or any format an "
                      "installed OpenTimelineIO adapter reads: .xml, .aaf, .edl, ...)")
    swap.add_argument("--adapter-arg", action="append", default=[], metavar="KEY=VALUE",
                      help="an argument for the adapter that reads the edit (repeatable), e.g. "
                      "rate=25 for a 25 fps EDL")
    swap.add_argument("--timeline", dest="timeline_name", metavar="NAME", help="of a file "
                      "that holds several timelines (a Premiere AAF of two sequences), the one "
                      "called NAME")
    swap.add_argument("-o", "--output-dir", type=Path, required=True, help="where the renders "
                      "and the swapped timeline go")
    which = swap.add_mutually_exclusive_group()
    which.add_argument("--marker", default=DEFAULT_MARKER, help="swap the clips carrying a "
                       "marker of this name, on the clip or on its track over it (default: "
                       f"{DEFAULT_MARKER}; any colour)")
    which.add_argument("--all", action="store_true", help="swap every clip of the video tracks")
    swap.add_argument("--handles", type=int, default=0, metavar="N", help="render N frames "
                      "more on each side of each clip's used range, as far as its media goes")
    swap.add_argument("--format", choices=KINDS, default="mov", help="what each render "
                      "writes: a movie (mov: ProRes 4444 unless --codec; every editor and "
                      "adapter links it), an image sequence, or the same kind as the clip's "
                      "media (same)")
    swap.add_argument("--report", action="store_true", help="write each clip's review report "
                      "beside its render (<render>.review/, as render --report) and put its "
                      "flags on the swapped clip as markers")
    swap.add_argument("--print-requests", action="store_true", help="render nothing: print "
                      "each clip's `facefuse render` command (for a farm) and write the "
                      "swapped timeline that points at their outputs")
    commandline.add_settings_options(swap, sources_required=False)
    commandline.add_options(swap, [o for o in commandline.SHOT_OPTIONS
                                   if o.flags[-1] not in PER_CLIP])
    # None unless given: the movie kind's codec is ProRes 4444 unless the command names one
    swap.set_defaults(handler=cmd_swap, codec=None)


def template_request(args: argparse.Namespace) -> RenderRequest:
    """The render options of the command line as a request; each clip sets its input,
    output and frames."""
    given = {**vars(args), "input": "-", "output": "-"}
    if given.get("codec") is None:
        given["codec"] = RenderRequest.__dataclass_fields__["codec"].default
    return commandline.request_from_namespace(argparse.Namespace(**given))


def adapter_args(pairs: list[str]) -> dict[str, Any]:
    """--adapter-arg KEY=VALUE pairs as keyword arguments: a value that reads as JSON (25,
    23.976, true) is that value, a fraction (24000/1001) its float, anything else the text."""
    parsed: dict[str, Any] = {}
    for pair in pairs:
        key, equals, value = pair.partition("=")
        if not equals or not key.strip().isidentifier():
            raise InputError(f"--adapter-arg takes KEY=VALUE (such as rate=25), not {pair!r}")
        parsed[key.strip()] = _adapter_value(value.strip())
    return parsed


def _adapter_value(text: str) -> Any:
    try:
        return json_value(text, f"--adapter-arg value {text[:40]!r}")
    except InputError:
        if text[:1] in "[{":  # meant as JSON (a list, an object), and not readable as one
            raise
    numerator, slash, denominator = text.partition("/")
    if slash and numerator.isdigit() and denominator.isdigit() and int(denominator):
        return int(numerator) / int(denominator)
    return text


def cmd_swap(args: argparse.Namespace) -> int:
    commands = host_module("otio", "commands")
    swap = commands.plan_swap(args.timeline, template_request(args), args.output_dir,
                              None if args.all else args.marker, args.handles, args.format,
                              args.report, args.codec, adapter_args(args.adapter_arg),
                              args.timeline_name)
    inputs = [Path(args.timeline), *(path for clip in swap.renders
                                     for path in (Path(clip.request.input),
                                                  *request_inputs(clip.request)))]
    for path in swap.paths:
        check_not_input("the swapped timeline", path, inputs)
    reports = {clip.request.output: clip.report.parent for clip in swap.renders
               if clip.report is not None}
    for folder in reports.values():
        check_report_folder(folder, inputs)
    files.sweep_leftovers(Path(args.output_dir), files.file_ids(inputs))  # a killed swap's
    if args.print_requests:
        for note in swap.notes:
            print(note, file=sys.stderr)
        for clip in swap.renders:
            report = ["--report", str(reports[clip.request.output])] if clip.report else []
            print(shlex.join(render_command(absolute_paths(clip.request)) + report))
        paths, problem = commands.write_swapped(swap)
        if problem:
            print(f"facefuse: warning: {problem}", file=sys.stderr)
        written = " and ".join(str(path) for path in paths)
        print(f"wrote {written}: run the {len(swap.renders)} render(s) above, then import it",
              file=sys.stderr)
        return ExitCode.OK
    for note in swap.notes:
        print(note)
    from ..shot.looks.stills import StillsCancelled
    from ..shot.run.plan_only import PlanCancelled

    with stop_signals() as stop:
        try:
            code, sentence = commands.run_swap(
                swap, lambda r: _render(r, reports.get(r.output), stop.is_set), print)
        except (PlanCancelled, StillsCancelled):  # in a clip's report
            code, sentence = stop.exit_code, (f"stopped by {stop.name}: {swap.path.name} is "
                                              "not written")
    if code != ExitCode.OK:
        print(f"facefuse: error: {sentence}", file=sys.stderr)
    else:
        print(sentence)
    return int(code)


def _render(request: RenderRequest, report: Path | None,
            cancel: Callable[[], bool]) -> tuple[RenderSummary, bool]:
    """One clip's render with progress, then its review report when one is asked (as
    `facefuse render --report`: not after a stopped render or failed frames; cancel stops it,
    raising PlanCancelled or StillsCancelled)."""
    progress = Progress("auto")
    summary, terminated = run_render(request, progress)
    if progress.mode == "bar":
        sys.stderr.write("\n")
    if report is not None and not summary.cancelled and not summary.failed:
        from ..review.writing import write_review  # the engine loads here, for a report

        write_review(request, report, render=summary_record(summary)["summary"],
                     cancel=cancel)
    return summary, terminated
