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
comma list of some of `choices`) and "optional-model" (a model, or none).
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, fields
from operator import attrgetter
from pathlib import Path
from types import MappingProxyType
from typing import Any, NoReturn

from ...config import Settings, Tunable, tunable_options
from ...errors import InputError
from ...io.video.common import CRF_RANGE, DEFAULT_CRF, DEFAULT_PRESET, VIDEO_CODECS
from ...runtime.providers import parse_providers
from .frames import FrameChoice, format_frame_list
from .option_types import OPTION_TYPES
from .request import (
    PROVENANCE_MODES,
    FrameSpec,
    InputSpec,
    OutputSpec,
    PlanChoices,
    RenderRequest,
    parse_person,
)

OUTPUT_ROOT = "--output-root"


@dataclass(frozen=True, slots=True)
class Option:
    """One command-line option: `flags` (the long one last), the `field` it sets, its `kind`
    (see the module docstring), `help`, and `default`: what the parse holds when it is absent."""

    flags: tuple[str, ...]
    field: str
    kind: str
    help: str
    default: Any = None
    choices: tuple[str, ...] = ()
    metavar: str | None = None

    @property
    def dest(self) -> str:
        """The argparse attribute the option fills."""
        return self.flags[-1].removeprefix("--").replace("-", "_")

    @property
    def owner(self) -> str:
        """"request", "settings", or "" for an option no request field holds."""
        return self.field.partition(".")[0]

    @property
    def name(self) -> str:
        """The field's path below its owner: "codec" of "settings.codec", "output.codec" of
        "request.output.codec"."""
        return self.field.partition(".")[2]


def _tunable(option: Tunable) -> Option:
    """The command-line option of a Settings field a user tunes."""
    kind = {"model": "text", "choice": "text", "bool": "switch"}.get(option.kind, option.kind)
    if kind == "switch" and option.default:
        raise ValueError(f"{option.name}: a switch must default to off")
    default = "none" if option.kind == "optional-model" and option.default is None \
        else option.default
    choices = () if kind == "choices" else option.choices
    return Option((option.flag,), f"settings.{option.name}", kind, option.help, default,
                  choices)


SOURCE = Option(("-s", "--source"), "request.sources", "paths", "source face image given to "
                "everyone the selector chooses who has no --assign (repeat to average several "
                "photos of one person); not needed when --assign gives each swapped person a "
                "source")
MODEL_OPTIONS = (
    Option(("--models-dir",), "settings.models_dir", "path", "where models live (default: "
           "$FACEFUSE_MODELS, else the user cache folder)"),
    Option(("--offline",), "settings.offline", "switch", "never use the network (also "
           "FACEFUSE_OFFLINE=1)"),
)
SETTINGS_OPTIONS = (
    Option(("--reference",), "settings.reference_images", "paths", "image of the target person "
           "to replace (selector reference)", ()),
    *(_tunable(option) for option in tunable_options()),
    Option(("--providers",), "settings.providers", "providers", "auto, or a list such as "
           "cuda,cpu", "auto"),
    Option(("--no-cache",), "settings.use_embedding_cache", "off", "do not read or write the "
           "source embedding cache"),
    Option(("--cache-dir",), "settings.cache_dir", "path", "where everything facefuse caches "
           "goes (default: $FACEFUSE_CACHE, else the user cache folder)"),
    *MODEL_OPTIONS,
)
_CRF_DEFAULTS = ", ".join(f"{codec} {crf}" for codec, crf in DEFAULT_CRF.items())
SHOT_OPTIONS = (
    Option(("--frames",), "request.frames.range", "frames", "A-B: the inclusive range rendered, in "
           "the input's own frame numbers (clipped to the frames the input has); a list "
           "(1001-1010,1035,1040-1042) or flagged:DIR/report.json (a review report's flagged "
           "frames) renders only those frames, exactly as a render of the whole shot makes "
           "them (the input's whole range, or the report's, is analysed)",
           metavar="A-B|LIST|flagged:REPORT"),
    Option(("--only-frames",), "request.frames.only", "ranges", "render only these frames (a list "
           "as for --frames) of the --frames range, which is still analysed whole (what --frames "
           "LIST and flagged: come to in farm tasks)", metavar="LIST"),
    Option(("--only-input",), "request.frames.only_input", "text", "shot:ID (a review report's "
           "shot id) or sha256:HEX (the input's content) that --only-frames were chosen for: "
           "another shot is refused (flagged: sets it)", metavar="ID"),
    Option(("--overrides",), "request.plan.overrides", "path", "JSON file of per-frame, per-person "
           "corrections (skip, keep, swap, hold; see docs/overrides.md); a re-render rewrites "
           "only the frames they change; with --frames A-B, the whole shot's corrections plan "
           "that shot and those outside A-B are ignored (one note)", metavar="FILE"),
    Option(("--chunk",), "request.frames.chunk", "chunk", "render the Nth of M equal slices of the "
           "range (farm work)", metavar="N/M"),
    Option(("--chunk-frames",), "request.frames.chunk_frames", "range", "render only frames A-B "
           "of the --frames range, which is still analysed whole (a farm task's chunk of frames)",
           metavar="A-B"),
    Option((OUTPUT_ROOT,), "", "text", "refuse any output (-o, --matte, --patch) whose folder "
           "is not inside this one (farm jobs)"),
    Option(("--matte",), "request.output.matte", "text", "sequence pattern for the blend mask (one "
           "channel)"),
    Option(("--patch",), "request.output.patch", "text", "sequence pattern for the swapped face "
           "alone (premultiplied RGBA)"),
    Option(("--colorspace",), "request.input.colorspace", "text", "OCIO colour space of the input "
           "('none': no conversion); default per format, e.g. EXR = 'Linear Rec.709 (sRGB)'"),
    Option(("--codec",), "request.output.codec", "text", "for video outputs; rawvideo (.mov) and "
           "ffv1 (.mkv) are lossless (RGB; with --keep-yuv, the input's YUV in .mkv)",
           "h264", tuple(VIDEO_CODECS)),
    Option(("--keep-yuv",), "request.output.keep_yuv", "switch", "with --codec ffv1 or rawvideo "
           "(.mkv): keep the input video's own YUV pictures (layout, bit depth, colour tags), "
           "bit-exact outside the faces, instead of RGB"),
    Option(("--crf",), "request.output.crf", "int",
           f"h264/h265 constant rate factor, {CRF_RANGE[0]}.."
           f"{CRF_RANGE[1]}, lower is better ({_CRF_DEFAULTS})", metavar="N"),
    Option(("--preset",), "request.output.preset", "text", "h264/h265 speed preset, ultrafast .. "
           f"placebo ({DEFAULT_PRESET})", metavar="NAME"),
    Option(("--compression",), "request.output.compression", "text", "EXR (zip, none, zips, piz, "
           "rle, pxr24, b44, b44a, dwaa, dwab) or TIFF (zip, none, lzw) sequence outputs (the "
           "input plate's, else zip)", metavar="NAME"),
    Option(("--rate",), "request.output.rate", "rate", "fps of a video made from a sequence (24)"),
    Option(("--start-number",), "request.input.start_number", "frame", "number of a video's first "
           "frame", 1),
    Option(("--conform-vfr",), "request.input.conform_vfr", "switch", "conform a variable frame "
           "rate"),
    Option(("--overwrite",), "request.output.overwrite", "switch", "render frames that are done "
           "too"),
    Option(("--fail-fast",), "request.fail_fast", "switch", "stop at the first failed frame (no "
           "later frame is written)"),
    Option(("--no-smooth",), "request.plan.smoothing", "off", "do not smooth landmarks over time"),
    Option(("--smooth-min-cutoff",), "request.plan.smoothing_min_cutoff", "float", "One Euro min "
           "cutoff, Hz (1.0)"),
    Option(("--smooth-beta",), "request.plan.smoothing_beta", "float", "One Euro beta, per face "
           "size (3.0)"),
    Option(("--assign",), "request.plan.assign", "assignments", "give one person of the shot their "
           "own source: PERSON=IMAGE, PERSON a person id (p1, p2, ...: see `facefuse review`) "
           "or ref:PICTURE (the person who looks like PICTURE); repeatable; without -s every "
           "person swapped needs one (or --skip)", (),
           metavar="PERSON=IMAGE"),
    Option(("--skip",), "request.plan.skip", "people", "leave this person untouched (a person id, "
           "or ref:PICTURE); repeatable", (), metavar="PERSON"),
    Option(("--provenance",), "request.output.provenance", "text", "what output metadata names: "
           "file names and hashes (names), or local paths too (full)", "names", PROVENANCE_MODES),
)
INPUT = Option(("-i", "--input"), "request.input.path", "text", "video file, or sequence: "
               "name.####.exr, name.%%04d.dpx, name.#.png")
OUTPUT = Option(("-o", "--output"), "request.output.path", "text", "video file, or sequence "
                "pattern as for --input")
RENDER_OPTIONS = (INPUT, OUTPUT, SOURCE, *SETTINGS_OPTIONS, *SHOT_OPTIONS)
DEFAULT_SETTINGS = Settings()
DEFAULT_REQUEST = RenderRequest(sources=(), input=InputSpec(""), output=OutputSpec(""))
# Settings fields no option sets: a request that changes them has no command line
UNSPEAKABLE = tuple(f.name for f in fields(Settings)
                    if f"settings.{f.name}" not in {o.field for o in RENDER_OPTIONS})


REPEATABLE = ("paths", "assignments", "people")


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


# -- a parse -> Settings, RenderRequest ----------------------------------------------------------

def _read(option: Option, value: Any) -> Any:
    if option.kind == "off":
        return not value
    if option.kind == "assignments":
        return tuple((parse_person(person), image) for person, image in value or ())
    if option.kind == "people":
        return tuple(parse_person(person) for person in value or ())
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
    group = {name: {key.partition(".")[2]: value for key, value in values.items()
                    if key.partition(".")[0] == name} for name in _GROUPS}
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


_GROUPS: Mapping[str, Callable[..., Any]] = MappingProxyType({  # made (and checked) in order
    "input": InputSpec, "frames": FrameSpec, "output": OutputSpec, "plan": PlanChoices})


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
    if option.kind == "assignments":
        return [arg for person, image in value for arg in (flag, f"{person}={image}")]
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
