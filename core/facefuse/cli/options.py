"""Options more than one command takes, and how they become Settings."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any, TextIO

from ..config import Settings, Tunable, tunable_options
from ..runtime.providers import parse_providers

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
    parser.add_argument("--models-dir", type=Path, help="where models live (default: "
                        "$FACEFUSE_MODELS, else the user cache folder)")
    parser.add_argument("--offline", action="store_true", help="never use the network "
                        "(also FACEFUSE_OFFLINE=1)")


def engine_options(p: argparse.ArgumentParser, sources_required: bool = True) -> None:
    """Options shared by swap and render: sources, every tunable setting, runtime, caches."""
    p.add_argument("-s", "--source", type=Path, action="append", required=sources_required,
                   help="source face image (repeat to average several photos of one person)")
    p.add_argument("--reference", type=Path, action="append", default=[],
                   help="image of the target person to replace (selector reference)")
    for option in tunable_options():
        _add_tunable(p, option)
    p.add_argument("--providers", default="auto", help="auto, or a list such as cuda,cpu")
    p.add_argument("--no-cache", action="store_true", help="do not read or write the "
                   "source embedding cache")
    p.add_argument("--cache-dir", type=Path, help="where everything facefuse caches goes "
                   "(default: $FACEFUSE_CACHE, else the user cache folder)")
    model_options(p)


def _add_tunable(p: argparse.ArgumentParser, option: Tunable) -> None:
    if option.kind == "bool":
        if option.default:
            raise ValueError(f"{option.name}: a switch must default to off")
        p.add_argument(option.flag, action="store_true", help=option.help)
        return
    if option.kind == "choices":
        p.add_argument(option.flag, type=comma_list, default=option.default, help=option.help)
        return
    kinds: dict[str, type] = {"float": float, "int": int}
    default = "none" if option.kind == "optional-model" and option.default is None \
        else option.default
    p.add_argument(option.flag, type=kinds.get(option.kind, str), default=default,
                   choices=option.choices or None, help=option.help)


def comma_list(text: str) -> tuple[str, ...]:
    """"skin, nose" -> ("skin", "nose"); Settings checks the names."""
    return tuple(part.strip() for part in text.split(",") if part.strip())


def tunable_values(args: argparse.Namespace) -> dict[str, Any]:
    """The tunable Settings fields a parsed command line sets, by field name."""
    values = {option.name: getattr(args, option.cli_dest) for option in tunable_options()}
    for option in tunable_options():
        if option.kind == "optional-model" and str(values[option.name]).lower() == "none":
            values[option.name] = None
    return values


def tunable_args(settings: Settings) -> list[str]:
    """The flags that give `settings`' tunable fields (those at their default left out): the
    inverse of tunable_values, for command lines written by programs (farm tasks)."""
    args: list[str] = []
    for option in tunable_options():
        value = getattr(settings, option.name)
        if value == option.default or value is None:
            continue
        if option.kind == "bool":
            args.append(option.flag)
        elif option.kind == "choices":
            args += [option.flag, ",".join(value)]
        else:
            args += [option.flag, str(value)]
    return args


def settings_from_args(args: argparse.Namespace) -> Settings:
    """The Settings a `swap` or `render` command line asks for."""
    return Settings(
        **tunable_values(args), reference_images=tuple(args.reference),
        providers=parse_providers(args.providers), models_dir=args.models_dir,
        offline=args.offline, cache_dir=args.cache_dir, use_embedding_cache=not args.no_cache,
    )
