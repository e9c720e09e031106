"""A RenderRequest as the `facefuse render` command line, and that command line read back.

The one place that does either: a farm task runs exactly the command a user could type, and a
Dask worker reads its task's arguments back with the command line's own parser
(cli.render.add_parser and request_from_args), so the two can never drift. Options at their
default are left out, which keeps task commands short and readable; `request_from_args` of
`render_args(request)` gives `request` back (tested for every field).
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any, NoReturn

from ..cli import render as cli_render
from ..cli.options import tunable_args
from ..config import Settings, tunable_options
from ..errors import InputError
from ..models.locations import looks_like_model_path
from ..shot.request import RenderRequest

DEFAULT_SETTINGS = Settings()
DEFAULT_REQUEST = RenderRequest(sources=(), input="", output="")
UNSPEAKABLE = ("mask_padding", "normalise_latent")  # Settings no command-line option sets


class _Parser(argparse.ArgumentParser):
    """The render command's parser whose usage errors are InputError (as cli.main's)."""

    def error(self, message: str) -> NoReturn:
        raise InputError(f"{message} (see `facefuse render --help`)")


def render_command(request: RenderRequest, executable: str = "facefuse",
                   output_root: str | None = None) -> list[str]:
    """`executable render ...`: the command line that renders `request`; with output_root,
    `--output-root` makes the render refuse outputs outside that folder (farm tasks)."""
    root = ["--output-root", output_root] if output_root is not None else []
    return [executable, "render", *render_args(request), *root]


def render_args(request: RenderRequest) -> list[str]:
    """The arguments after `facefuse render` that make `request` (defaults left out).

    ValueError for settings no command-line option can express (mask_padding,
    normalise_latent away from their defaults)."""
    args = [arg for source in request.sources for arg in ("-s", str(source))]
    args += ["-i", request.input, "-o", request.output]
    return args + _settings_args(request.settings) + _request_args(request)


def _settings_args(settings: Settings) -> list[str]:
    for name in UNSPEAKABLE:
        if getattr(settings, name) != getattr(DEFAULT_SETTINGS, name):
            raise ValueError(f"Settings.{name} has no command-line option; a farm task cannot "
                             "carry it")
    args = tunable_args(settings)
    args += [arg for path in settings.reference_images for arg in ("--reference", str(path))]
    if settings.providers != "auto":
        args += ["--providers", ",".join(settings.providers)]
    args += _changed(settings, DEFAULT_SETTINGS, (("models_dir", "--models-dir"),
                                                  ("cache_dir", "--cache-dir")))
    return args + _flags(settings, (("offline", "--offline", True),
                                    ("use_embedding_cache", "--no-cache", False)))


def _request_args(request: RenderRequest) -> list[str]:
    args = _changed(request, DEFAULT_REQUEST, (
        ("matte", "--matte"), ("patch", "--patch"), ("colorspace", "--colorspace"),
        ("codec", "--codec"), ("smoothing_min_cutoff", "--smooth-min-cutoff"),
        ("smoothing_beta", "--smooth-beta"), ("start_number", "--start-number"),
        ("rate", "--rate"), ("provenance", "--provenance"), ("crf", "--crf"),
        ("preset", "--preset"), ("compression", "--compression")))
    for name, option, form in (("frames", "--frames", "{}-{}"), ("chunk", "--chunk", "{}/{}"),
                               ("chunk_frames", "--chunk-frames", "{}-{}")):
        value = getattr(request, name)
        if value is not None:
            args += [option, form.format(*value)]
    return args + _flags(request, (("overwrite", "--overwrite", True),
                                   ("fail_fast", "--fail-fast", True),
                                   ("smoothing", "--no-smooth", False),
                                   ("conform_vfr", "--conform-vfr", True)))


def _changed(obj: object, default: object, options: Sequence[tuple[str, str]]) -> list[str]:
    args = []
    for name, option in options:
        value = getattr(obj, name)
        if value != getattr(default, name) and value is not None:
            args += [option, str(value)]
    return args


def _flags(obj: object, flags: Sequence[tuple[str, str, bool]]) -> list[str]:
    return [option for name, option, when in flags if getattr(obj, name) is when]


def absolute_paths(request: RenderRequest) -> RenderRequest:
    """`request` with every file and folder it names made absolute (against this process's
    working folder), so a task runs the same from any working folder on any worker."""
    def absolute(path: str | Path) -> str:
        return os.path.abspath(os.path.expanduser(path))

    settings = request.settings
    models: dict[str, Any] = {option.name: absolute(value) for option in tunable_options()
              if option.kind in ("model", "optional-model")
              and (value := getattr(settings, option.name)) and looks_like_model_path(value)}
    folders: dict[str, Any] = {name: Path(absolute(value)) for name in ("models_dir", "cache_dir")
               if (value := getattr(settings, name)) is not None}
    settings = replace(settings, **models, **folders, reference_images=tuple(
        Path(absolute(p)) for p in settings.reference_images))
    return replace(request, settings=settings,
                   sources=tuple(Path(absolute(p)) for p in request.sources),
                   input=absolute(request.input), output=absolute(request.output),
                   matte=absolute(request.matte) if request.matte else None,
                   patch=absolute(request.patch) if request.patch else None)


def parse_render_args(args: Sequence[str]) -> argparse.Namespace:
    """The render command's own parser over `args` (what follows `facefuse render`)."""
    parser = _Parser(prog="facefuse")
    cli_render.add_parser(parser.add_subparsers(dest="command", required=True))
    return parser.parse_args(["render", *args])


def request_from_args(args: Sequence[str]) -> RenderRequest:
    """The RenderRequest `facefuse render ARGS` renders (InputError for a bad command line)."""
    return cli_render.request_from_args(parse_render_args(args))


def output_root_of(args: Sequence[str]) -> Path | None:
    """The --output-root of a render command line, if it has one."""
    root = parse_render_args(args).output_root
    return Path(root) if root is not None else None
