"""A shot request's command-line form, described once: the options of `facefuse render`, the
field each one sets, and a request written back as those options.

Each option is an `Option`: its switches, the field it sets ("request.NAME" of RenderRequest or
"request.GROUP.NAME" of one of its groups, "settings.NAME" of Settings, or "" for the command's
own, such as --output-root), how its text is read and written (`kind`), its help and the value
an absent option reads as. The Settings fields a user tunes come from their own descriptions
(config.tunable_options()); the other Settings fields and the RenderRequest fields are
described here. The command line builds its parsers from this table (`add_settings_options`,
`add_render_options`) and reads a parse back (`settings_from_namespace`,
`request_from_namespace`); a farm writes a task's arguments with `render_args` and a worker
reads them back with `request_from_args`. Options at their default are left out;
`request_from_args(render_args(r)) == r` for every field an option carries.

Kinds: "text", "path" (a Path), "paths" (repeatable, a tuple of Paths), "assignments"
(repeatable PERSON=IMAGE, a tuple of (PersonRef, Path)), "people" (repeatable PERSON, a tuple
of PersonRef; a person is written p1 or ref:PICTURE), "int", "frame" (a frame number, 0 to
io.sequences.LARGEST_FRAME), "float", "switch" (given: True), "off" (given: False), "range"
(A-B), "frames" (A-B, a list or flagged:REPORT: shot.frames.parse_frames; it sets
`frames.only` too), "ranges" (a list of frames and ranges, 1001-1010,1035), "chunk" (N/M),
"rate" (a positive Fraction, 24000/1001), "providers" (auto or a comma list), "choices" (a
comma list of some of `choices`), "optional-model" (a model, or none), "licences" (repeatable
ROLE=USE, a tuple of (role, use)) and "consent" (repeatable WHO=RECORD, a tuple of
(ConsentHolder, Path)).
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Iterable, Mapping, Sequence
from operator import attrgetter
from pathlib import Path
from types import MappingProxyType
from typing import Any, NoReturn

from ...config import Settings
from ...errors import InputError
from ...runtime.providers import parse_providers
from .frames import FrameChoice, format_frame_list
from .option_types import OPTION_TYPES
from .render_options import (
    ANSWER_OPTIONS,
    DEFAULT_REQUEST,
    DEFAULT_SETTINGS,
    INPUT,
    MODEL_OPTIONS,
    OUTPUT,
    RENDER_OPTIONS,
    REPEATABLE,
    SETTINGS_OPTIONS,
    SHOT_OPTIONS,
    SOURCE,
    UNSPEAKABLE,
    Option,
)
from .request import (
    FrameSpec,
    InputSpec,
    OutputSpec,
    PlanChoices,
    PolicyChoices,
    RenderRequest,
    SigningChoices,
    parse_consent_holder,
    parse_person,
)

# -- parsers -------------------------------------------------------------------------------------

def add_option(parser: argparse.ArgumentParser, option: Option, required: bool = False) -> None:
    """Add `option` to `parser` as its kind reads it."""
    if option.kind in ("switch", "off"):
        parser.add_argument(*option.flags, action="store_true", help=option.help)
        return
    extra: dict[str, Any] = {"required": True} if required else {}
    repeatable = option.kind in REPEATABLE
    if repeatable:
        extra["action"] = "append"
    if option.default is not None:
        extra["default"] = list(option.default) if repeatable else option.default
    if option.kind in OPTION_TYPES:
        extra["type"] = OPTION_TYPES[option.kind]
    parser.add_argument(*option.flags, choices=option.choices or None, metavar=option.metavar,
                        help=option.help, **extra)


def add_options(parser: argparse.ArgumentParser, options: Iterable[Option],
                after: Mapping[str, Callable[[argparse.ArgumentParser], None]] | None = None
                ) -> None:
    """Add `options` in order; after[flag](parser) adds a command's own options right after
    that flag (where they stand in its --help)."""
    for option in options:
        add_option(parser, option)
        if after and option.flags[-1] in after:
            after[option.flags[-1]](parser)


def add_model_options(parser: argparse.ArgumentParser) -> None:
    """--models-dir and --offline (every command that finds models)."""
    add_options(parser, MODEL_OPTIONS)


def add_settings_options(parser: argparse.ArgumentParser, sources_required: bool = True) -> None:
    """-s and every option that sets Settings (swap, render and the hosts' commands)."""
    add_option(parser, SOURCE, required=sources_required)
    add_options(parser, SETTINGS_OPTIONS)


def add_render_options(parser: argparse.ArgumentParser,
                       after: Mapping[str, Callable[[argparse.ArgumentParser], None]] | None
                       = None) -> None:
    """Every option of a RenderRequest, in `facefuse render --help` order (farm commands take
    the same). -s is optional: --assign may give every swapped person a source (the engine
    refuses a request that swaps someone with none). after: as for add_options."""
    add_options(parser, (INPUT, OUTPUT), after)
    add_settings_options(parser, sources_required=False)
    add_options(parser, SHOT_OPTIONS, after)
    add_options(parser, ANSWER_OPTIONS, after)


# -- a parse -> Settings, RenderRequest ----------------------------------------------------------

def _read(option: Option, value: Any) -> Any:
    if option.kind == "off":
        return not value
    if option.kind == "assignments":
        return tuple((parse_person(person), image) for person, image in value or ())
    if option.kind == "people":
        return tuple(parse_person(person) for person in value or ())
    if option.kind == "consent":
        return tuple((parse_consent_holder(holder), Path(record)) for holder, record in value or ())
    if option.kind == "licences":
        return tuple(value or ())
    if option.kind == "paths":
        return tuple(value or ())
    if option.kind == "providers":
        return parse_providers(value)
    if option.kind == "optional-model" and str(value).lower() == "none":
        return None
    return value


def _values(args: argparse.Namespace, owner: str) -> dict[str, Any]:
    return {o.name: _read(o, getattr(args, o.dest)) for o in RENDER_OPTIONS if o.owner == owner
            and hasattr(args, o.dest)}


def settings_from_namespace(args: argparse.Namespace) -> Settings:
    """The Settings a parse of the settings options asks for (InputError for bad values, and
    for --reference without --selector reference: only that selector reads it)."""
    settings = Settings(**_values(args, "settings"))
    if settings.reference_images and settings.selector != "reference":
        raise InputError(f"--reference is read only by --selector reference, and the selector "
                         f"is {settings.selector}; add --selector reference to swap the person "
                         "in the picture, or leave --reference out")
    return settings


ReportReader = Callable[[Path], FrameChoice]
"""Reads a `--frames flagged:REPORT` report into the frames it flags (cli.render.flagged_choice)."""


def request_from_namespace(args: argparse.Namespace,
                           read_report: ReportReader | None = None) -> RenderRequest:
    """The RenderRequest a parse of the render options asks for; `read_report` reads the
    report of `--frames flagged:REPORT` (InputError for one when it is None)."""
    if not args.input or not args.output:
        raise InputError("render needs -i INPUT and -o OUTPUT")
    values = _values(args, "request")
    group = _grouped(values, _GROUPS)
    frames = group["frames"]
    choice = frames.get("range")
    if isinstance(choice, FrameChoice):
        if choice.report is not None:
            if read_report is None:
                raise InputError("--frames flagged:REPORT is read by `facefuse render` and "
                                 "`facefuse farm`; give the frames as a list here")
            choice = read_report(choice.report)
            frames["only_report"] = choice.report
        frames.update(_frame_choice(choice, frames))
    made = {name: kind(**group[name]) for name, kind in _GROUPS.items()}
    return RenderRequest(sources=values.get("sources", ()), **made,
                         fail_fast=values.get("fail_fast", False),
                         settings=settings_from_namespace(args))


def policy_from_namespace(args: argparse.Namespace) -> tuple[PolicyChoices, SigningChoices]:
    """The policy and signing key a parse of ANSWER_OPTIONS asks for (a host command's own
    request takes them)."""
    group = _grouped(_values(args, "request"), ("policy", "signing"))
    return PolicyChoices(**group["policy"]), SigningChoices(**group["signing"])


def _grouped(values: Mapping[str, Any], names: Iterable[str]) -> dict[str, dict[str, Any]]:
    """The request values ("GROUP.NAME" -> value) of each group in `names`, by field name."""
    return {name: {key.partition(".")[2]: value for key, value in values.items()
                   if key.partition(".")[0] == name} for name in names}


_GROUPS: Mapping[str, Callable[..., Any]] = MappingProxyType({  # made (and checked) in order
    "input": InputSpec, "frames": FrameSpec, "output": OutputSpec, "plan": PlanChoices,
    "policy": PolicyChoices, "signing": SigningChoices})


def _frame_choice(choice: FrameChoice, frames: Mapping[str, Any]) -> dict[str, Any]:
    """The FrameSpec fields a --frames value sets: range, and only / only_input for a list or
    a report (InputError when --only-frames or --only-input is given too)."""
    if choice.only is None:
        return {"range": choice.frames}
    if frames.get("only") is not None or frames.get("only_input") is not None:
        raise InputError("give --frames a list or flagged:REPORT, or --only-frames, not both")
    return {"range": choice.frames, "only": choice.only, "only_input": choice.made_from}


class _Parser(argparse.ArgumentParser):
    """A parser whose usage errors are InputError (as the command line's own)."""

    def error(self, message: str) -> NoReturn:
        raise InputError(f"{message} (see `facefuse render --help`)")


def parse_render_args(args: Sequence[str]) -> argparse.Namespace:
    """The render options over `args` (what follows `facefuse render`); InputError when bad."""
    parser = _Parser(prog="facefuse render")
    add_render_options(parser)
    return parser.parse_args(list(args))


def request_from_args(args: Sequence[str]) -> RenderRequest:
    """The RenderRequest `facefuse render ARGS` renders (InputError for a bad command line)."""
    return request_from_namespace(parse_render_args(args))


def output_root_of(args: Sequence[str]) -> Path | None:
    """The --output-root of a render command line, if it has one."""
    root = parse_render_args(args).output_root
    return Path(root) if root is not None else None


# -- a RenderRequest -> arguments ----------------------------------------------------------------

def _written(option: Option, value: Any) -> list[str]:
    flag = option.flags[-1] if option.flags[-1] != "--source" else "-s"
    if option.kind in ("switch", "off"):
        return [flag]
    if option.kind in ("paths", "people"):
        return [arg for item in value for arg in (flag, str(item))]
    if option.kind in ("assignments", "licences", "consent"):
        return [arg for who, what in value for arg in (flag, f"{who}={what}")]
    if option.kind in ("choices", "providers"):
        return [flag, ",".join(value)]
    if option.kind in ("range", "frames", "chunk"):
        return [flag, ("{}/{}" if option.kind == "chunk" else "{}-{}").format(*value)]
    if option.kind == "ranges":
        return [flag, format_frame_list(value)]
    return [flag, str(value)]


def _option_args(option: Option, obj: object, default: object) -> list[str]:
    value = attrgetter(option.name)(obj)
    if value is None or value == attrgetter(option.name)(default):
        return []
    return _written(option, value)


def render_args(request: RenderRequest) -> list[str]:
    """The arguments after `facefuse render` that make `request` (defaults left out): -s, -i,
    -o, then the rest in --help order.

    ValueError for settings no command-line option can express (UNSPEAKABLE fields away from
    their defaults)."""
    settings = request.settings
    for name in UNSPEAKABLE:
        if getattr(settings, name) != getattr(DEFAULT_SETTINGS, name):
            raise ValueError(f"Settings.{name} has no command-line option; a farm task cannot "
                             "carry it")
    args = _written(SOURCE, request.sources) + ["-i", request.input.path, "-o",
                                                 request.output.path]
    for option in RENDER_OPTIONS:
        if option.owner == "settings":
            args += _option_args(option, settings, DEFAULT_SETTINGS)
        elif option.owner == "request" and option not in (SOURCE, INPUT, OUTPUT):
            args += _option_args(option, request, DEFAULT_REQUEST)
    return args
