"""`facefuse resolve install | swap | open | render`: DaVinci Resolve from the command line.

install: the Lua launcher into Resolve's Scripts folder (Workspace > Scripts > facefuse).
swap: Studio's external scripting: swap the clip under the playhead and place it, no UI.
open: what the launcher runs: the panel for its job file; the result file tells it what to place.
render: the same as open without the panel (FACEFUSE_RESOLVE_COMMAND="facefuse resolve render
-s ME.jpg" makes the launcher swap without a window, also on Resolve Free).

The Resolve rules (the job file, the plan, the placement, the result file) are in the modules
beside this one, imported where a command runs (bridge.py and panel_job.py need PySide6 or
Resolve); here are the options and what is printed. The render, its progress and signals are
the command line's (CommandLine.render).
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TypeVar

from facefuse import (
    OUTPUT_KINDS,
    CommandLine,
    ExitCode,
    FacefuseError,
    HostError,
    InputError,
    RenderRequest,
    RenderSummary,
    Settings,
    Subcommands,
    check_folder_writable,
    check_not_input,
    check_path_length,
)

from . import bridge, install, panel_job
from .commands import render_clip
from .job_file import ClipFacts, parse_job, read_job
from .swaps import Placement, replaceable_result, write_result

T = TypeVar("T")


class ResolveCommand:
    """The `resolve` command and its actions (a facefuse HostCommand)."""

    place = 10

    def add_parser(self, commands: Subcommands, cli: CommandLine) -> None:
        p = commands.add_parser("resolve", help="DaVinci Resolve: install the Workspace > Scripts "
                                "launcher, or swap the clip under the playhead")
        actions = p.add_subparsers(dest="resolve_action", required=True, metavar="ACTION")
        install = actions.add_parser("install", help="put the launcher into Resolve's Scripts "
                                     "folder (Workspace > Scripts > facefuse)")
        install.add_argument("--uninstall", action="store_true", help="remove the launcher")
        install.add_argument("--scripts-dir", type=Path, help="Resolve's Scripts/Utility folder "
                             "(default: this OS's)")
        install.add_argument("--command", help="the command the launcher runs (default: this "
                             "Python, absolute, with -m facefuse resolve open)")
        install.set_defaults(handler=cmd_install)
        swap = actions.add_parser("swap", help="Resolve Studio: swap the clip under the playhead "
                                  "and place it on the track above, without the panel")
        _render_options(swap, cli)
        swap.set_defaults(handler=lambda args: cmd_swap(args, cli))
        opened = actions.add_parser("open", help="the panel for a launcher's job file (what "
                                    "Workspace > Scripts > facefuse runs)")
        _job_options(opened)
        opened.set_defaults(handler=cmd_open)
        headless = actions.add_parser("render", help="swap what a launcher's job file describes "
                                      "without the panel and write its result file")
        _render_options(headless, cli)
        _job_options(headless)
        headless.set_defaults(handler=lambda args: cmd_render_job(args, cli))


def _render_options(p: argparse.ArgumentParser, cli: CommandLine) -> None:
    """What `resolve swap` and `resolve render` render with: the engine's options, the output's
    and render's policy and signing options."""
    cli.engine_options(p)
    _output_options(p)
    cli.policy_options(p)


def _output_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--output", choices=OUTPUT_KINDS, default="png",
                   help="an image sequence (png, exr, tif) or a movie (prores_4444, dnxhr_444)")
    p.add_argument("--output-dir", type=Path, help="where the result goes (default: a facefuse "
                   "folder beside the clip's media)")
    p.add_argument("--overwrite", action="store_true", help="render frames that are done too")
    p.add_argument("--review-report", type=Path, metavar="REPORT_JSON",
                   help="a review report (report.json) whose flags become markers on the "
                   "placed swap")


def _job_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--job", type=Path, required=True, help="the job file the launcher wrote")
    p.add_argument("--result", type=Path, required=True, help="where to write the result file")


def cmd_install(args: argparse.Namespace) -> int:
    if args.uninstall:
        removed = _hosted(lambda: install.uninstall(args.scripts_dir))
        print(f"removed {removed}" if removed else "the launcher was not installed")
        return ExitCode.OK
    path = _hosted(lambda: install.install(args.scripts_dir, args.command))
    print(f"installed {path}: in Resolve choose Workspace > Scripts > facefuse")
    if install.sandboxed_resolve():
        print("note: Resolve from the Mac App Store is sandboxed and cannot start facefuse; "
              "use `facefuse panel CLIP`, or Resolve from blackmagicdesign.com", file=sys.stderr)
    return ExitCode.OK


def cmd_swap(args: argparse.Namespace, cli: CommandLine) -> int:
    resolve = _hosted(lambda: bridge.connect(bridge.load_module()))
    facts = parse_job(_hosted(lambda: bridge.collect_job(resolve)))
    placement, message, code = _render_clip(facts, args, cli)
    if placement is None:
        print(f"facefuse: error: {message}", file=sys.stderr)
        return code
    print(message)
    print(_hosted(lambda: bridge.place(resolve, placement)))
    return ExitCode.OK


def cmd_open(args: argparse.Namespace) -> int:
    check_result(args.result, (args.job, *_job_media(args.job)))
    return int(panel_job.open_job(args.job, args.result))


def cmd_render_job(args: argparse.Namespace, cli: CommandLine) -> int:
    settings = cli.settings(args)
    check_result(args.result, (args.job, *_job_media(args.job), *args.source,
                               *cli.settings_inputs(settings),
                               *([args.review_report] if args.review_report else [])))
    try:
        facts = read_job(args.job)
        placement, message, code = _render_clip(facts, args, cli, settings)
    except FacefuseError as exc:
        write_result(args.result, None, str(exc))
        raise
    write_result(args.result, placement, message)
    print(message)
    return code


def check_result(result: Path, inputs: Sequence[Path | str]) -> None:
    """Before anything runs: --result names a file that can be written (InputError, or
    OutputError for a read-only folder) and none of the files the command reads."""
    result = Path(result)
    check_path_length(result, "--result")  # first: a name too long cannot be looked at
    if result.is_dir():
        raise InputError(f"--result {result} is a folder: name the result file")
    if not result.parent.is_dir():
        raise InputError(f"--result {result}: the folder {result.parent} does not exist")
    check_not_input("--result", result, inputs)
    if os.path.lexists(result) and not replaceable_result(result):
        raise InputError(f"--result {result} is a file other than a facefuse Resolve result "
                         "(the clip, the job or another file this command may read); name a "
                         "new result file")
    check_folder_writable(result.parent)


def _job_media(job: Path) -> tuple[Path, ...]:
    """The clip's media a job names (none when the job cannot be read: that is said later)."""
    try:
        return (read_job(job).media,)
    except FacefuseError:
        return ()


def _render_clip(facts: ClipFacts, args: argparse.Namespace, cli: CommandLine,
                 settings: Settings | None = None) -> tuple[Placement | None, str, int]:
    """The Resolve host renders the item's used range with this command line's render."""
    if args.review_report is not None:
        facts = dataclasses.replace(facts, review_report=args.review_report)
    settings = settings if settings is not None else cli.settings(args)
    policy, signing = cli.policy(args)

    def render(request: RenderRequest) -> tuple[RenderSummary, bool]:
        """The command line's render, under this command's policy and signing key."""
        return cli.render(dataclasses.replace(request, policy=policy, signing=signing))

    return render_clip(facts, tuple(args.source), settings, args.output, args.output_dir,
                       args.overwrite, render)


def _hosted(call: Callable[[], T]) -> T:
    """Run a bridge call; its HostError (Resolve missing, a failed call) is a usage error."""
    try:
        return call()
    except HostError as exc:
        raise InputError(str(exc)) from None


COMMANDS = (ResolveCommand(),)
