"""Options more than one command takes, and how they become Settings (the options themselves
are described once, in facefuse.shot.contract.commandline)."""

from __future__ import annotations

import argparse
import sys
from typing import TextIO

from ..config import Settings
from ..shot.contract import commandline, render_options

DEFAULTS = Settings()


class DownloadProgress:
    """Model download progress on stderr: a live line on a terminal, every 10% otherwise."""

    def __init__(self, stream: TextIO | None = None) -> None:
        self._stream = stream if stream is not None else sys.stderr
        self._last: dict[str, int] = {}

    def __call__(self, name: str, done: int, total: int | None) -> None:
        percent = int(done * 100 / total) if total else -1
        live = self._stream.isatty()
        if not live and percent // 10 == self._last.get(name, -10) // 10 and done != total:
            return
        self._last[name] = percent
        size = f"{done / 1e6:.1f}/{total / 1e6:.1f} MB" if total else f"{done / 1e6:.1f} MB"
        end = "\r" if live and done != total else "\n"
        self._stream.write(f"fetching {name}: {max(percent, 0):3d}% {size}{end}")
        self._stream.flush()


def model_options(parser: argparse.ArgumentParser) -> None:
    """--models-dir and --offline (shot.contract.commandline describes them)."""
    commandline.add_model_options(parser)


def engine_options(p: argparse.ArgumentParser, sources_required: bool = True) -> None:
    """Options shared by swap and render: sources, every tunable setting, runtime, caches."""
    commandline.add_settings_options(p, sources_required)


def settings_from_args(args: argparse.Namespace) -> Settings:
    """The Settings a `swap` or `render` command line asks for."""
    return commandline.settings_from_namespace(args)


def track_given_settings(parser: argparse.ArgumentParser) -> None:
    """Leave the settings options the command line does not give out of its parse (their
    default is SUPPRESS), so `given_settings` can tell a value given equal to its default from
    one not given; settings_from_args still fills those from Settings' defaults."""
    dests = {o.dest for o in render_options.SETTINGS_OPTIONS}
    for action in parser._actions:  # set_defaults would hand SUPPRESS to the options' types
        if action.dest in dests:
            action.default = argparse.SUPPRESS


def given_settings(args: argparse.Namespace) -> frozenset[str]:
    """The Settings fields the command line gave (of a parser `track_given_settings` set up)."""
    return frozenset(o.name for o in render_options.SETTINGS_OPTIONS if hasattr(args, o.dest))
