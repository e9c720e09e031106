"""Hosts as plugins: the command line finds the packages of the hosts it starts (the Qt panel,
the Resolve bridge) through the entry-point group HOST_GROUP, and never by a name of its own.

A host registers in its distribution's metadata, naming its package:

    [project.entry-points."facefuse.hosts"]          # pyproject.toml
    panel = "facefuse_panel"

`host_module("panel", "app")` imports that package and then its module `app`. A host adds its
commands to `facefuse` through its module `command`, whose `COMMANDS` are `HostCommand`s: each
registers its subcommand with what the command line lends it (`CommandLine`), and the command
line names no host (`host_commands`). A command module imports only facefuse, and the host's
library (PySide6, OpenTimelineIO) where its command runs, so the engine, farms, Blender and
`--help` never load Qt or Resolve's module. A host that is not installed, or one whose library
(PySide6) is missing, is one sentence naming the extra to install.

facefuse's own hosts live in the source tree as addon/panel and addon/resolve and are installed
from the wheel as the packages facefuse_panel and facefuse_resolve (pyproject.toml). An
editable install copies them under those names; each calls `prefer_source_tree` as it is
imported, so the checkout's live package runs instead of the copy.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Callable, Collection, Sequence
from importlib.metadata import EntryPoint, entry_points
from pathlib import Path
from types import ModuleType
from typing import Any, Protocol, runtime_checkable

from ..config import Settings
from ..errors import InputError
from ..shot.contract.request import (
    PolicyChoices,
    RenderRequest,
    RenderSummary,
    SigningChoices,
)

HOST_GROUP = "facefuse.hosts"
COMMAND_MODULE = "command"
# core/facefuse/hosting/plugins.py -> the checkout, when facefuse runs from a source tree
_CHECKOUT = Path(__file__).resolve().parents[3]


def installed_hosts() -> dict[str, EntryPoint]:
    """The hosts registered in HOST_GROUP, by name (the first on sys.path wins a name)."""
    found: dict[str, EntryPoint] = {}
    for point in entry_points(group=HOST_GROUP):
        found.setdefault(point.name, point)
    return found


def host_package(host: str) -> ModuleType:
    """The package host `host` registered; InputError naming the extra when there is none."""
    point = installed_hosts().get(host)
    if point is None:
        raise InputError(_not_installed(host))
    return _imported(host, point.module)


def host_module(host: str, module: str) -> ModuleType:
    """Import `module` of host `host` ("panel", "resolve", or any registered name). InputError
    naming the extra to install when the host or a library it needs (PySide6) is missing."""
    package = host_package(host)
    return _imported(host, f"{package.__name__}.{module}")


class Subcommands(Protocol):
    """The `facefuse` command line's commands (what argparse's `add_subparsers` returns)."""

    def add_parser(self, name: str, *, help: str | None = ...) -> argparse.ArgumentParser:
        """The parser of a new command `name`, listed in `facefuse --help` with `help`."""


class CommandLine(Protocol):
    """What the `facefuse` command line lends the commands of its hosts: its options, the
    Settings and request they give, its render (progress, SIGTERM and SIGINT) and its checks."""

    def engine_options(self, parser: argparse.ArgumentParser,
                       sources_required: bool = True) -> None:
        """-s and every tunable setting, the runtime and cache options (as `render`'s)."""

    def shot_options(self, parser: argparse.ArgumentParser, leave_out: Collection[str]) -> None:
        """`render`'s shot options (frames, output, plan choices) but the flags `leave_out`."""

    def policy_options(self, parser: argparse.ArgumentParser) -> None:
        """`render`'s options of what a render answers for: --use, --model-licence, --consent,
        --require-consent, --project, --shot and the signing key (docs/consent.md)."""

    def policy(self, args: argparse.Namespace) -> tuple[PolicyChoices, SigningChoices]:
        """The policy and signing key a parse with `policy_options` asks for."""

    def track_given_settings(self, parser: argparse.ArgumentParser) -> None:
        """Leave settings options not given out of the parse, for `given_settings`."""

    def given_settings(self, args: argparse.Namespace) -> frozenset[str]:
        """The Settings fields the command line gave (of a parser tracked as above)."""

    def settings(self, args: argparse.Namespace) -> Settings:
        """The Settings the engine options of `args` ask for; InputError when refused."""

    def request(self, args: argparse.Namespace) -> RenderRequest:
        """The RenderRequest of `args` (input, output, sources, settings and shot options)."""

    def settings_inputs(self, settings: Settings) -> tuple[Path, ...]:
        """The files `settings` reads (models, overrides): no output may replace them."""

    def request_inputs(self, request: RenderRequest) -> tuple[Path, ...]:
        """The files `request` reads besides its input."""

    def render(self, request: RenderRequest, report: Path | None = None,
               cancel: Callable[[], bool] | None = None) -> tuple[RenderSummary, bool]:
        """`request` rendered as `facefuse render` renders it (progress on stderr, SIGTERM and
        SIGINT cancel), then its review report into `report` when given (not after a stopped
        render or failed frames; `cancel` stops it). The summary, and whether SIGTERM
        stopped the render."""

    def stopped_errors(self) -> tuple[type[Exception], ...]:
        """What a review report stopped by `cancel` raises."""

    def render_command(self, request: RenderRequest) -> list[str]:
        """The `facefuse render` command of `request`, its paths absolute (for a farm)."""

    def check_report_folder(self, folder: Path, inputs: Sequence[Path]) -> None:
        """InputError or OutputError unless a review report can be written into `folder`."""

    def sweep_leftovers(self, folder: Path, inputs: Sequence[Path]) -> None:
        """Remove what a killed run left in `folder`, never one of `inputs`."""

    def json_value(self, text: str, label: str) -> Any:
        """`text` read as JSON, InputError naming `label` when it is not."""


@runtime_checkable
class HostCommand(Protocol):
    """A command a host adds to `facefuse`: `add_parser` registers it among `commands` with
    set_defaults(handler=...), a handler taking the parsed arguments and returning the exit
    code. `place` orders the hosts' commands in `facefuse --help` (lowest first)."""

    place: int

    def add_parser(self, commands: Subcommands, cli: CommandLine) -> None:
        """Register the command (and its subcommands) in `commands`."""


def host_commands() -> list[HostCommand]:
    """The commands of every installed host, by `place`: the `COMMANDS` of each host
    package's module `command` (a host without one adds none, nor one whose package is not
    installed)."""
    found: list[HostCommand] = []
    for host, point in installed_hosts().items():
        try:
            package = _imported(host, point.module)
        except InputError:
            continue
        name = f"{package.__name__}.{COMMAND_MODULE}"
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError as exc:
            if exc.name != name:
                raise
            continue
        for command in getattr(module, "COMMANDS", ()):
            if not isinstance(command, HostCommand):
                raise TypeError(f"{name}.COMMANDS holds {command!r}, not a HostCommand")
            found.append(command)
    return sorted(found, key=lambda command: command.place)


def _imported(host: str, name: str) -> ModuleType:
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as exc:
        missing = exc.name or ""
        if missing and not (name.startswith(missing) or missing.startswith(name.split(".")[0])):
            raise InputError(f"the facefuse {host} host needs {missing.split('.')[0]}: pip "
                             f"install 'facefuse[{host}]'") from None
        raise InputError(_not_installed(host)) from None


def _not_installed(host: str) -> str:
    return f"the facefuse {host} host is not installed: pip install 'facefuse[{host}]'"


def prefer_source_tree(name: str, tree_name: str) -> None:
    """Called by a host package's __init__ with its own __name__ and its name in the source
    tree (e.g. "addon.panel"): imported under its installed name from an editable install of
    a checkout that has it, the checkout's package takes its place in sys.modules, so edits run
    without reinstalling and are the same modules the tests import. Otherwise nothing."""
    tree = _CHECKOUT.joinpath(*tree_name.split("."), "__init__.py")
    if name == tree_name or _CHECKOUT.joinpath("core", "facefuse") != Path(
            __file__).resolve().parents[1] or not tree.is_file():
        return
    try:
        package = importlib.import_module(tree_name)
    except ImportError:
        return
    if Path(package.__file__ or "").resolve() == tree:
        sys.modules[name] = package
