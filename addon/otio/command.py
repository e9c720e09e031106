"""`facefuse timeline swap EDIT.otio -s ME.jpg -o OUTDIR`: swap the marked clips of an edit
exported as OpenTimelineIO and write it back with the swaps on new tracks (docs/timeline.md).

The timeline rules (which clips, their frames, the versioned renders, the swapped timeline) are
in commands.py and the modules below it, imported when the command runs (they need
OpenTimelineIO); here are the options and what is printed. Each render, its progress and
signals are the command line's (CommandLine.render). A clip's render takes every option of
`facefuse render` but those the clip decides (PER_CLIP).
"""

from __future__ import annotations

import argparse
import shlex
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from facefuse import (
    CommandLine,
    ExitCode,
    InputError,
    OutputSpec,
    RenderRequest,
    Subcommands,
    check_not_input,
    host_module,
    stop_signals,
)

# render options each clip sets itself (its media, frames and versioned output), or that would
# make every clip's render write the same files
PER_CLIP = frozenset({"--frames", "--chunk", "--chunk-frames", "--output-root",
                      "--rate", "--start-number", "--matte", "--patch", "--overwrite"})
# the host's own defaults (selection.DEFAULT_MARKER, renders.OUTPUT_CHOICES), repeated so that
# --help needs no OpenTimelineIO
DEFAULT_MARKER = "swap"
KINDS = ("mov", "exr", "png", "tif", "dpx", "same")


class TimelineCommand:
    """The `timeline` command and its actions (a facefuse HostCommand)."""

    place = 30

    def add_parser(self, commands: Subcommands, cli: CommandLine) -> None:
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
        cli.engine_options(swap, sources_required=False)
        cli.shot_options(swap, leave_out=PER_CLIP)
        cli.policy_options(swap)
        # None unless given: the movie kind's codec is ProRes 4444 unless the command names one
        swap.set_defaults(handler=lambda args: cmd_swap(args, cli), codec=None)


def template_request(args: argparse.Namespace, cli: CommandLine) -> RenderRequest:
    """The render options of the command line as a request; each clip sets its input,
    output and frames."""
    given = {**vars(args), "input": "-", "output": "-"}
    if given.get("codec") is None:
        given["codec"] = OutputSpec.__dataclass_fields__["codec"].default
    return cli.request(argparse.Namespace(**given))


def adapter_args(pairs: list[str], json_value: Callable[[str, str], Any]) -> dict[str, Any]:
    """--adapter-arg KEY=VALUE pairs as keyword arguments: a value that reads as JSON (25,
    23.976, true) is that value (read by `json_value`, the command line's), a fraction
    (24000/1001) its float, anything else the text."""
    parsed: dict[str, Any] = {}
    for pair in pairs:
        key, equals, value = pair.partition("=")
        if not equals or not key.strip().isidentifier():
            raise InputError(f"--adapter-arg takes KEY=VALUE (such as rate=25), not {pair!r}")
        parsed[key.strip()] = _adapter_value(value.strip(), json_value)
    return parsed


def _adapter_value(text: str, json_value: Callable[[str, str], Any]) -> Any:
    try:
        return json_value(text, f"--adapter-arg value {text[:40]!r}")
    except InputError:
        if text[:1] in "[{":  # meant as JSON (a list, an object), and not readable as one
            raise
    numerator, slash, denominator = text.partition("/")
    if slash and numerator.isdigit() and denominator.isdigit() and int(denominator):
        return int(numerator) / int(denominator)
    return text


def cmd_swap(args: argparse.Namespace, cli: CommandLine) -> int:
    commands = host_module("otio", "commands")
    swap = commands.timeline_swap(args.timeline, template_request(args, cli), args.output_dir,
                              None if args.all else args.marker, args.handles, args.format,
                              args.report, args.codec,
                              adapter_args(args.adapter_arg, cli.json_value),
                              args.timeline_name)
    inputs = [Path(args.timeline), *(path for clip in swap.renders
                                     for path in (Path(clip.request.input.path),
                                                  *cli.request_inputs(clip.request)))]
    for path in swap.paths:
        check_not_input("the swapped timeline", path, inputs)
    reports = {clip.request.output.path: clip.report.parent for clip in swap.renders
               if clip.report is not None}
    for folder in reports.values():
        cli.check_report_folder(folder, inputs)
    cli.sweep_leftovers(Path(args.output_dir), inputs)  # a killed swap's
    if args.print_requests:
        for note in swap.notes:
            print(note, file=sys.stderr)
        for clip in swap.renders:
            report = ["--report", str(reports[clip.request.output.path])] if clip.report else []
            print(shlex.join(cli.render_command(clip.request) + report))
        paths, problem = commands.write_swapped(swap)
        if problem:
            print(f"facefuse: warning: {problem}", file=sys.stderr)
        written = " and ".join(str(path) for path in paths)
        print(f"wrote {written}: run the {len(swap.renders)} render(s) above, then import it",
              file=sys.stderr)
        return ExitCode.OK
    for note in swap.notes:
        print(note)
    with stop_signals() as stop:
        try:
            code, sentence = commands.run_swap(
                swap, lambda r: cli.render(r, reports.get(r.output.path), stop.is_set), print)
        except cli.stopped_errors():  # in a clip's report
            code, sentence = stop.exit_code, (f"stopped by {stop.name}: {swap.path.name} is "
                                              "not written")
    if code != ExitCode.OK:
        print(f"facefuse: error: {sentence}", file=sys.stderr)
    else:
        print(sentence)
    return int(code)



COMMANDS = (TimelineCommand(),)
