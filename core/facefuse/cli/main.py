"""The `facefuse` command line: argparse -> Settings -> the engine. main() returns the exit code
(errors.ExitCode; `--help` lists every code from it)."""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Mapping, Sequence
from types import MappingProxyType
from typing import NoReturn

from ..errors import ExitCode, FacefuseError, InputError
from ..version import __version__
from . import bench, credentials, doctor, farm, hosts, models, preview, render, review, swap
from .streams import reports_only

DESCRIPTION = "Local face replacement for film and video work."
EXIT_MEANINGS: Mapping[ExitCode, str] = MappingProxyType({
    ExitCode.OK: "done",
    ExitCode.INTERNAL: "internal error",
    ExitCode.USAGE: "bad input or usage",
    ExitCode.NO_FACE: "no face in a source",
    ExitCode.MODEL: "model missing or invalid",
    ExitCode.FRAMES_FAILED: "frames failed",
    ExitCode.OUTPUT: "an output cannot be written",
    ExitCode.CREDENTIALS: "content credentials missing or do not verify",
    ExitCode.INTERRUPTED: "interrupted",
    ExitCode.TERMINATED: "terminated",
})


def exit_code_line() -> str:
    """'exit codes: 0 done, 1 internal error, ...': every ExitCode, in order (a code without a
    phrase here is listed by its name)."""
    meanings = (f"{int(code)} {EXIT_MEANINGS.get(code, code.name.lower().replace('_', ' '))}"
                for code in ExitCode)
    return "exit codes: " + ", ".join(meanings)


class Parser(argparse.ArgumentParser):
    """argparse whose usage errors are InputError: main() prints them as one sentence, exit 2
    (plain argparse prints the usage block and exits by itself)."""

    def error(self, message: str) -> NoReturn:
        raise InputError(f"{message} (see `{self.prog} --help`)")


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(prog="facefuse", description=DESCRIPTION, epilog=exit_code_line())
    parser.add_argument("--version", action="version", version=f"facefuse {__version__}")
    parser.add_argument("-v", "--verbose", action="count", default=0,
                        help="say more (-v: what each step does, -vv: debugging detail)")
    parser.add_argument("--debug", action="store_true", help="show tracebacks")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    swap.add_parser(commands)
    render.add_parser(commands)
    review.add_parser(commands)
    preview.add_parser(commands)
    models.add_parsers(commands)
    doctor.add_parser(commands)
    credentials.add_parser(commands)
    hosts.add_parsers(commands)  # the installed hosts' own: panel, resolve, timeline, ...
    bench.add_parser(commands)
    farm.add_parser(commands)
    return parser


def _configure_logging(verbosity: int) -> None:
    level = logging.WARNING - 10 * min(verbosity, 2)
    logging.basicConfig(level=level, format="facefuse: %(levelname)s: %(message)s",
                        stream=sys.stderr)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit code (never raises for user errors). What it
    prints is a report: a reader that goes away stops the lines, not the work (streams)."""
    with reports_only():
        return _main(argv)


def _main(argv: Sequence[str] | None) -> int:
    try:
        args = build_parser().parse_args(argv)
    except InputError as exc:
        print(f"facefuse: error: {exc}", file=sys.stderr)
        return exc.exit_code
    _configure_logging(args.verbose)
    try:
        return int(args.handler(args))
    except FacefuseError as exc:
        print(f"facefuse: error: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("facefuse: interrupted", file=sys.stderr)
        return ExitCode.INTERRUPTED
    except Exception as exc:  # a bug: one line unless --debug asks for the traceback
        if args.debug:
            raise
        print(f"facefuse: internal error: {type(exc).__name__}: {exc} "
              "(run with --debug for the traceback)", file=sys.stderr)
        return ExitCode.INTERNAL
