"""`facefuse resolve install | swap | open | render`: DaVinci Resolve from the command line.

install: the Lua launcher into Resolve's Scripts folder (Workspace > Scripts > facefuse).
swap: Studio's external scripting: swap the clip under the playhead and place it, no UI.
open: what the launcher runs: the panel for its job file; the result file tells it what to place.
render: the same as open without the panel (FACEFUSE_RESOLVE_COMMAND="facefuse resolve render
-s ME.jpg" makes the launcher swap without a window, also on Resolve Free).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from ..errors import ExitCode, FacefuseError, InputError
from ..hosting import resolve_plan
from ..hosting.jobs import HostError
from ..hosting.plugins import host_module
from ..hosting.resolve_jobs import ClipFacts, parse_job, read_job
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
    p.add_argument("--output", choices=resolve_plan.OUTPUT_KINDS, default="png",
                   help="an image sequence (png, exr, tif) or a movie (prores_4444, dnxhr_444)")
    p.add_argument("--output-dir", type=Path, help="where the result goes (default: a facefuse "
                   "folder beside the clip's media)")
    p.add_argument("--overwrite", action="store_true", help="render frames that are done too")


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
    bridge = _host("bridge")
    resolve = _hosted(lambda: bridge.connect(bridge.load_module()))
    facts = parse_job(_hosted(lambda: bridge.collect_job(resolve)))
    placement, message, code = _render(facts, args)
    if placement is None:
        print(f"facefuse: error: {message}", file=sys.stderr)
        return code
    print(message)
    print(_hosted(lambda: bridge.place(resolve, placement)))
    return ExitCode.OK


def cmd_open(args: argparse.Namespace) -> int:
    try:
        app = host_module("panel", "app")
    except InputError as exc:
        resolve_plan.write_result(args.result, None, str(exc))
        raise
    return int(app.run_for_job(args.job, args.result))


def cmd_render_job(args: argparse.Namespace) -> int:
    try:
        facts = read_job(args.job)
        placement, message, code = _render(facts, args)
    except FacefuseError as exc:
        resolve_plan.write_result(args.result, None, str(exc))
        raise
    resolve_plan.write_result(args.result, placement, message)
    print(message)
    return code


def _render(facts: ClipFacts, args: argparse.Namespace
            ) -> tuple[resolve_plan.Placement | None, str, int]:
    """Render the item's used range: the placement (None: nothing to place), the sentence
    saying so and the exit code (143 stopped by SIGTERM, 5 frames failed, 2 nothing swapped)."""
    swap = resolve_plan.plan(facts, tuple(args.source), settings_from_args(args), args.output,
                             args.output_dir, args.overwrite)
    progress = Progress("auto")
    summary, terminated = run_render(swap.request, progress)
    if progress.mode == "bar":
        sys.stderr.write("\n")
    placement, message = resolve_plan.outcome(swap, summary)
    if placement is not None:
        return placement, message, ExitCode.OK
    if terminated:
        return None, message, ExitCode.TERMINATED
    return None, message, ExitCode.FRAMES_FAILED if summary.failed else ExitCode.USAGE


def _host(module: str) -> Any:
    return host_module("resolve", module)


def _hosted(call: Any) -> Any:
    """Run a bridge call; its HostError (Resolve missing, a failed call) is a usage error."""
    try:
        return call()
    except HostError as exc:
        raise InputError(str(exc)) from None
