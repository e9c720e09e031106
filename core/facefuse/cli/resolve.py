"""`facefuse resolve install | swap | open | render`: DaVinci Resolve from the command line.

install: the Lua launcher into Resolve's Scripts folder (Workspace > Scripts > facefuse).
swap: Studio's external scripting: swap the clip under the playhead and place it, no UI.
open: what the launcher runs: the panel for its job file; the result file tells it what to place.
render: the same as open without the panel (FACEFUSE_RESOLVE_COMMAND="facefuse resolve render
-s ME.jpg" makes the launcher swap without a window, also on Resolve Free).

The Resolve rules (the job file, the plan, the placement, the result file) are the Resolve
host's (addon/resolve, found through the `facefuse.hosts` entry point `resolve`); here are the
options, the progress and signals of a render, and what is printed.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..errors import ExitCode, FacefuseError, InputError
from ..hosting.jobs import HostError
from ..hosting.outputs import OUTPUT_KINDS
from ..hosting.plugins import host_module
from ..io import files
from ..shot.contract.request import RenderRequest, RenderSummary
from ..shot.output.output_checks import check_not_input, settings_inputs
from .options import engine_options, settings_from_args
from .render import Progress, run_render


def add_parser(commands: Any) -> None:
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
    engine_options(swap)
    _output_options(swap)
    swap.set_defaults(handler=cmd_swap)
    opened = actions.add_parser("open", help="the panel for a launcher's job file (what "
                                "Workspace > Scripts > facefuse runs)")
    _job_options(opened)
    opened.set_defaults(handler=cmd_open)
    headless = actions.add_parser("render", help="swap what a launcher's job file describes "
                                  "without the panel and write its result file")
    engine_options(headless)
    _output_options(headless)
    _job_options(headless)
    headless.set_defaults(handler=cmd_render_job)


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
    installer = _host("install")
    if args.uninstall:
        removed = _hosted(lambda: installer.uninstall(args.scripts_dir))
        print(f"removed {removed}" if removed else "the launcher was not installed")
        return ExitCode.OK
    path = _hosted(lambda: installer.install(args.scripts_dir, args.command))
    print(f"installed {path}: in Resolve choose Workspace > Scripts > facefuse")
    if installer.sandboxed_resolve():
        print("note: Resolve from the Mac App Store is sandboxed and cannot start facefuse; "
              "use `facefuse panel CLIP`, or Resolve from blackmagicdesign.com", file=sys.stderr)
    return ExitCode.OK


def cmd_swap(args: argparse.Namespace) -> int:
    bridge, job_file = _host("bridge"), _host("job_file")
    resolve = _hosted(lambda: bridge.connect(bridge.load_module()))
    facts = job_file.parse_job(_hosted(lambda: bridge.collect_job(resolve)))
    placement, message, code = _render_clip(facts, args)
    if placement is None:
        print(f"facefuse: error: {message}", file=sys.stderr)
        return code
    print(message)
    print(_hosted(lambda: bridge.place(resolve, placement)))
    return ExitCode.OK


def cmd_open(args: argparse.Namespace) -> int:
    check_result(args.result, (args.job, *_job_media(args.job)))
    return int(_host("panel_job").open_job(args.job, args.result))


def cmd_render_job(args: argparse.Namespace) -> int:
    plan = _host("plan")
    settings = settings_from_args(args)
    check_result(args.result, (args.job, *_job_media(args.job), *args.source,
                               *settings_inputs(settings),
                               *([args.review_report] if args.review_report else [])))
    try:
        facts = _host("job_file").read_job(args.job)
        placement, message, code = _render_clip(facts, args, settings)
    except FacefuseError as exc:
        plan.write_result(args.result, None, str(exc))
        raise
    plan.write_result(args.result, placement, message)
    print(message)
    return code


def check_result(result: Path, inputs: Sequence[Path | str]) -> None:
    """Before anything runs: --result names a file that can be written (InputError, or
    OutputError for a read-only folder) and none of the files the command reads."""
    result = Path(result)
    files.check_path_length(result, "--result")  # first: a name too long cannot be looked at
    if result.is_dir():
        raise InputError(f"--result {result} is a folder: name the result file")
    if not result.parent.is_dir():
        raise InputError(f"--result {result}: the folder {result.parent} does not exist")
    check_not_input("--result", result, inputs)
    if os.path.lexists(result) and not _host("plan").replaceable_result(result):
        raise InputError(f"--result {result} is a file other than a facefuse Resolve result "
                         "(the clip, the job or another file this command may read); name a "
                         "new result file")
    files.check_folder_writable(result.parent)


def _job_media(job: Path) -> tuple[Path, ...]:
    """The clip's media a job names (none when the job cannot be read: that is said later)."""
    try:
        return (_host("job_file").read_job(job).media,)
    except FacefuseError:
        return ()


def _render_clip(facts: Any, args: argparse.Namespace,
                 settings: Any = None) -> tuple[Any, str, int]:
    """The Resolve host renders the item's used range with this command line's render."""
    if args.review_report is not None:
        facts = dataclasses.replace(facts, review_report=args.review_report)
    settings = settings if settings is not None else settings_from_args(args)
    return _host("commands").render_clip(facts, tuple(args.source), settings, args.output,
                                         args.output_dir, args.overwrite,
                                         _render_with_progress)


def _render_with_progress(request: RenderRequest) -> tuple[RenderSummary, bool]:
    progress = Progress("auto")
    summary, terminated = run_render(request, progress)
    if progress.mode == "bar":
        sys.stderr.write("\n")
    return summary, terminated


def _host(module: str) -> Any:
    return host_module("resolve", module)


def _hosted(call: Any) -> Any:
    """Run a bridge call; its HostError (Resolve missing, a failed call) is a usage error."""
    try:
        return call()
    except HostError as exc:
        raise InputError(str(exc)) from None
