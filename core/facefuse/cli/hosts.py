"""The commands of the installed hosts (`facefuse panel`, `resolve`, `timeline`, ...): each
host's `HostCommand`s (hosting.plugins) register themselves with `Lent`, what the command line
lends them; nothing here names a host."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Collection, Sequence
from pathlib import Path
from typing import Any

from ..config import Settings
from ..farm.commandline import absolute_paths, render_command
from ..hosting.plugins import Subcommands, host_commands
from ..io import files
from ..io.small_files import json_value
from ..review.folder import check_report_folder
from ..shot.contract import commandline, render_options
from ..shot.contract.request import (
    PolicyChoices,
    RenderRequest,
    RenderSummary,
    SigningChoices,
)
from ..shot.output.output_checks import request_inputs, settings_inputs
from . import options
from .render import Progress, run_render, summary_record


def add_parsers(commands: Subcommands) -> None:
    """Every installed host's commands (hosting.plugins.host_commands)."""
    lent = Lent()
    for command in host_commands():
        command.add_parser(commands, lent)


class Lent:
    """The command line's options, settings, render and checks, as hosting.plugins.CommandLine
    describes them."""

    def engine_options(self, parser: argparse.ArgumentParser,
                       sources_required: bool = True) -> None:
        options.engine_options(parser, sources_required)

    def shot_options(self, parser: argparse.ArgumentParser, leave_out: Collection[str]) -> None:
        commandline.add_options(parser, [o for o in render_options.SHOT_OPTIONS
                                         if o.flags[-1] not in leave_out])

    def policy_options(self, parser: argparse.ArgumentParser) -> None:
        commandline.add_options(parser, render_options.ANSWER_OPTIONS)

    def policy(self, args: argparse.Namespace) -> tuple[PolicyChoices, SigningChoices]:
        return commandline.policy_from_namespace(args)

    def track_given_settings(self, parser: argparse.ArgumentParser) -> None:
        options.track_given_settings(parser)

    def given_settings(self, args: argparse.Namespace) -> frozenset[str]:
        return options.given_settings(args)

    def settings(self, args: argparse.Namespace) -> Settings:
        return options.settings_from_args(args)

    def request(self, args: argparse.Namespace) -> RenderRequest:
        return commandline.request_from_namespace(args)

    def settings_inputs(self, settings: Settings) -> tuple[Path, ...]:
        return settings_inputs(settings)

    def request_inputs(self, request: RenderRequest) -> tuple[Path, ...]:
        return request_inputs(request)

    def render(self, request: RenderRequest, report: Path | None = None,
               cancel: Callable[[], bool] | None = None) -> tuple[RenderSummary, bool]:
        progress = Progress("auto")
        summary, terminated = run_render(request, progress)
        if progress.mode == "bar":
            sys.stderr.write("\n")
        if report is not None and not summary.cancelled and not summary.failed:
            from ..review.writing import write_review  # the engine loads here, for a report

            write_review(request, report, render=summary_record(summary)["summary"],
                         cancel=cancel)
        return summary, terminated

    def stopped_errors(self) -> tuple[type[Exception], ...]:
        from ..shot.looks.stills import StillsCancelled
        from ..shot.run.plan_only import PlanCancelled

        return PlanCancelled, StillsCancelled

    def render_command(self, request: RenderRequest) -> list[str]:
        return render_command(absolute_paths(request))

    def check_report_folder(self, folder: Path, inputs: Sequence[Path]) -> None:
        check_report_folder(folder, inputs)

    def sweep_leftovers(self, folder: Path, inputs: Sequence[Path]) -> None:
        files.sweep_leftovers(folder, files.file_ids(inputs))

    def json_value(self, text: str, label: str) -> Any:
        return json_value(text, label)
