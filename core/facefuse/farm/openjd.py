"""Open Job Description job bundles (spec jobtemplate-2023-09), as AWS Deadline Cloud takes them.

A bundle is a folder with template.yaml, parameter_values.yaml (`deadline bundle submit
FOLDER`) and job_parameters.json (the same values for `openjd run FOLDER/template.yaml -p
file://FOLDER/job_parameters.json` on one machine). Every file a task reads or writes is a PATH
job parameter (path mapping and job attachments apply) and every other choice a job parameter
a submitter may change. The spec keeps PATH defaults inside the bundle folder, so paths
elsewhere have no default and come from the value files.

A shot job (`shot_bundle`) has one step whose parameter space is the frame range, chunked into
tasks with the TASK_CHUNKING extension (contiguous chunks of at most ChunkSize frames). Each
task runs the `facefuse render` command a user would type (shot.contract.commandline), with
`--frames` the whole range (analysed once through the shared analysis cache, so every chunk
makes the same decisions), `--chunk-frames` its chunk, `--output-root` the output folder and
`--progress openjd`. A list render (`--frames LIST` or `flagged:`) chunks the listed frames
and carries them and an `--overrides` file (a PATH job parameter) in every task, so every
task plans the same. Without the extension (`task_chunking=False`) the chunks are fixed when the
job is made, as (ChunkStart, ChunkEnd) task parameter pairs. A step environment runs
`facefuse models check` once per worker session and points FACEFUSE_MODELS and FACEFUSE_CACHE at
the shared folders with downloads off (FACEFUSE_OFFLINE=1) unless the job allows them.

Every task's action cancels NOTIFY_THEN_TERMINATE (SIGTERM, then SIGKILL after CANCEL_GRACE_S),
so a farm cancel is facefuse's clean SIGTERM stop. Template strings are format strings: a value
holding "{{" travels as a STRING parameter of its own (`_Params.quoted`).

A .blend job (`blend_bundle`) runs the Blender extension's headless entry, one task per chunk
index (`--chunk N/M` of every marked strip), with bpy as a Python module or a Blender binary.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import MappingProxyType
from typing import Any

from ..cache.layout import CacheLayout
from ..errors import InputError
from ..io.files import atomic_write_bytes, make_folder, write_error
from ..models.locations import default_models_dir, looks_like_model_path
from ..shot.contract import commandline
from ..shot.contract.frames import FrameRanges, format_frame_list, within
from ..shot.contract.render_options import OUTPUT_ROOT
from ..shot.contract.request import RenderRequest
from ..shot.output.output_checks import check_request_outputs
from .chunks import chunk_ranges
from .paths import check_pattern, relative_to_root

SPEC = "jobtemplate-2023-09"
TEMPLATE_FILE = "template.yaml"
VALUES_FILE = "parameter_values.yaml"
RUN_VALUES_FILE = "job_parameters.json"
EXTENSION_MODULE = "bl_ext.user_default.facefuse"
MODEL_ROLES = ("detector", "recogniser", "swapper", "enhancer")
HEADLESS_CODE = ("import sys, importlib, bpy; "
                 "sys.exit(importlib.import_module(sys.argv[1] + '.headless').main(sys.argv[2:]))")
# A cancelled task gets SIGTERM first (facefuse keeps its complete frames and exits 143), and
# SIGKILL only if it is still running this many seconds later.
CANCEL_GRACE_S = 60
CANCELATION = MappingProxyType({"mode": "NOTIFY_THEN_TERMINATE",
                                "notifyPeriodInSeconds": CANCEL_GRACE_S})
_REFERENCE = re.compile(r"\{\{(?:Task\.)?Param\.[A-Za-z0-9_]+\}\}")


def ref(name: str) -> str:
    """The format string for job parameter `name`."""
    return "{{Param." + name + "}}"


@dataclass
class _Params:
    """Job parameter definitions in order, with the values the bundle submits."""

    definitions: list[dict[str, Any]] = field(default_factory=list)

    def add(self, name: str, kind: str, value: str | int, description: str,
            **extra: Any) -> str:
        self.definitions.append({"name": name, "type": kind, "description": description,
                                 "default": value, **extra})
        return ref(name)

    def path(self, name: str, value: Path, description: str, object_type: str | None,
             flow: str) -> str:
        extra = {"objectType": object_type} if object_type else {}
        return self.add(name, "PATH", str(value), description, dataFlow=flow, **extra)

    def literal(self, text: str) -> str:
        """`text` as it must stand in the template: as it is, or, where it holds braces a format
        string would read as an expression ("{{"), a STRING job parameter of its own, whose
        value OpenJD never parses."""
        if "{{" not in text and "}}" not in text:
            return text
        name = f"Literal{sum(d['name'].startswith('Literal') for d in self.definitions) + 1}"
        return self.add(name, "STRING", text, "a value of the command line, as it is")

    def quoted(self, args: Sequence[str]) -> list[str]:
        """Command-line arguments for the template: those holding this bundle's own parameter
        references kept, every other one through literal(). InputError for an argument that
        mixes both with braces of its own."""
        quoted = []
        for arg in args:
            rest = _REFERENCE.sub("", arg)
            if rest == arg:
                quoted.append(self.literal(arg))
            elif "{{" in rest or "}}" in rest:
                raise InputError(f"the argument {arg!r} holds '{{{{' or '}}}}' next to a job "
                                 "parameter; rename the file or value without double braces")
            else:
                quoted.append(arg)
        return quoted

    def values(self) -> dict[str, Any]:
        return {"parameterValues": [{"name": d["name"], "value": d["default"]}
                                    for d in self.definitions]}


@dataclass(frozen=True, slots=True)
class Bundle:
    """A job template and its parameter values (as parameter_values.yaml holds them)."""

    template: Mapping[str, Any]
    values: Mapping[str, Any]


def shot_bundle(request: RenderRequest, frames: tuple[int, int], chunk_size: int,
                executable: str = "facefuse", downloads: bool = False,
                output_dir: Path | None = None, task_chunking: bool = True) -> Bundle:
    """The job that renders `request` over `frames` (inclusive) in chunks of `chunk_size`.

    output_dir: the job's output folder (default: the folder of request.output.path); every output
    must lie inside it.
    downloads: let tasks fetch missing manifest models (default: a missing model fails the
    session's model check at once, naming it). InputError for outputs outside the folder.
    task_chunking: the frame range as a CHUNK[INT] parameter (TASK_CHUNKING; Frames and
    ChunkSize stay job parameters); False for schedulers without the extension: the chunks
    are fixed here, as (ChunkStart, ChunkEnd) task parameter pairs."""
    if chunk_size < 1:
        raise InputError(f"chunk size {chunk_size} must be at least 1 frame")
    check_request_outputs(request, range(frames[0], frames[1] + 1))
    params = _Params()
    params.add("Facefuse", "STRING", executable, "the facefuse program on the workers")
    space, frames_arg, chunk_arg = (_chunked_space if task_chunking else _listed_space)(
        params, frames, chunk_size, request.frames.only)
    root = (output_dir or Path(request.output.path).parent).resolve()
    templated = _templated_request(request, params, downloads, root)
    args = [*params.quoted(commandline.render_args(templated)), "--frames", frames_arg,
            "--chunk-frames", chunk_arg, OUTPUT_ROOT, ref("OutputDir"),
            "--progress", "openjd"]
    step = {"name": "Swap", "description": "swap faces through the shot, chunk by chunk",
            "parameterSpace": space,
            "stepEnvironments": [_models_environment(templated, params, downloads)],
            "script": {"actions": {"onRun": {"command": ref("Facefuse"),
                                             "args": ["render", *args],
                                             "cancelation": dict(CANCELATION)}}}}
    name = _job_name(f"facefuse {Path(request.input.path).name} {frames[0]}-{frames[1]}")
    template = {"specificationVersion": SPEC, "name": name,
                "parameterDefinitions": params.definitions, "steps": [step]}
    if task_chunking:
        template = {"specificationVersion": SPEC, "extensions": ["TASK_CHUNKING"], **template}
    return Bundle(template, params.values())


def _chunked_space(params: _Params, frames: tuple[int, int], chunk_size: int,
                   only: FrameRanges | None = None) -> tuple[dict[str, Any], str, str]:
    """The frame range as one CHUNK[INT] task parameter, chunked by the scheduler; with
    `only` (a list render), the listed frames are the parameter and `frames` stays the range
    every task analyses."""
    whole = f"{frames[0]}-{frames[1]}"
    if only is not None:
        params.add("Frames", "STRING", format_frame_list(only),
                   f"the frames rendered, a list such as 1001-1010,1035 (inside {whole}, "
                   "which is analysed as a whole)")
    else:
        params.add("Frames", "STRING", whole, "the frame range, START-END (analysed as a whole)")
    params.add("ChunkSize", "INT", chunk_size, "frames per task", minValue=1)
    space = {"taskParameterDefinitions": [{
        "name": "Frame", "type": "CHUNK[INT]", "range": ref("Frames"),
        "chunks": {"defaultTaskCount": ref("ChunkSize"), "rangeConstraint": "CONTIGUOUS"}}]}
    return space, whole if only is not None else ref("Frames"), "{{Task.Param.Frame}}"


def _listed_space(_params: _Params, frames: tuple[int, int], chunk_size: int,
                  only: FrameRanges | None = None) -> tuple[dict[str, Any], str, str]:
    """The chunks of the range (of its listed frames, with `only`) as (ChunkStart, ChunkEnd)
    pairs (no extension needed)."""
    numbers = range(frames[0], frames[1] + 1)
    chunks = chunk_ranges(within(numbers, only), chunk_size)
    space = {"taskParameterDefinitions": [
        {"name": "ChunkStart", "type": "INT", "range": [first for first, _ in chunks]},
        {"name": "ChunkEnd", "type": "INT", "range": [last for _, last in chunks]}],
        "combination": "(ChunkStart, ChunkEnd)"}
    return space, f"{frames[0]}-{frames[1]}", "{{Task.Param.ChunkStart}}-{{Task.Param.ChunkEnd}}"


def _templated_request(request: RenderRequest, params: _Params, downloads: bool,
                       root: Path) -> RenderRequest:
    """`request` with every path replaced by its job parameter (added to `params`)."""
    patterns = {}
    for what, value in (("Output", request.output.path), ("Matte", request.output.matte),
                        ("Patch", request.output.patch)):
        if value is not None:
            pattern = relative_to_root(root, value, f"{what.lower()} pattern")
            check_pattern(pattern, f"{what.lower()} pattern")
            patterns[what] = pattern
    params.path("OutputDir", root, "the output folder: no task writes outside it", "DIRECTORY",
                "OUT")
    out = {what: ref("OutputDir") + "/" + params.add(f"{what}Pattern", "STRING", pattern,
                                                      f"{what.lower()} file pattern inside "
                                                      "OutputDir")
           for what, pattern in patterns.items()}
    sources = tuple(Path(params.path(f"Source{i}", Path(s).resolve(), "source face image",
                                     "FILE", "IN"))
                    for i, s in enumerate(request.sources, 1))
    source_input = Path(request.input.path)
    shot = params.path("Input", source_input.resolve(), "the shot: a video or a sequence pattern",
                       "FILE" if source_input.is_file() else None, "IN")
    settings = _templated_settings(request, params, downloads)
    overrides = (Path(params.path("Overrides", request.plan.overrides.resolve(), "per-frame "
                                  "corrections of the shot plan (JSON)", "FILE", "IN"))
                 if request.plan.overrides is not None else None)
    return replace(request, sources=sources, input=replace(request.input, path=shot),
                   output=replace(request.output, path=out["Output"], matte=out.get("Matte"),
                                  patch=out.get("Patch")),
                   settings=settings, plan=replace(request.plan, overrides=overrides),
                   frames=replace(request.frames, range=None, chunk=None, chunk_frames=None))


def _templated_settings(request: RenderRequest, params: _Params, downloads: bool) -> Any:
    settings = request.settings
    models = params.path("ModelsDir", default_models_dir(settings.models_dir).resolve(),
                         "the shared, read-only models folder", "DIRECTORY", "IN")
    cache = params.path("CacheDir", CacheLayout.at(settings.cache_dir).root.resolve(),
                        "the shared cache folder (shot analyses, embeddings)", "DIRECTORY",
                        "INOUT")
    changes: dict[str, Any] = {"models_dir": Path(models), "cache_dir": Path(cache),
                               "offline": not downloads}
    for role in MODEL_ROLES:
        option = getattr(settings, role)
        if option is not None and looks_like_model_path(option):
            changes[role] = params.path(f"{role.capitalize()}Model", Path(option).resolve(),
                                        f"the {role} model file", "FILE", "IN")
    references = tuple(Path(params.path(f"Reference{i}", Path(p).resolve(),
                                        "reference image of the face to replace", "FILE", "IN"))
                       for i, p in enumerate(settings.reference_images, 1))
    return replace(settings, reference_images=references, **changes)


def _job_name(text: str) -> str:
    """A job name (a format string) that shows `text` without reading braces in it."""
    return text.replace("{", "(").replace("}", ")")


def _models_environment(templated: RenderRequest, params: _Params, downloads: bool
                        ) -> dict[str, Any]:
    settings = templated.settings
    names = params.quoted([getattr(settings, role) for role in MODEL_ROLES
                           if getattr(settings, role)])
    variables = {"FACEFUSE_MODELS": ref("ModelsDir"), "FACEFUSE_CACHE": ref("CacheDir")}
    if not downloads:
        variables["FACEFUSE_OFFLINE"] = "1"
    check = {"command": ref("Facefuse"),
             "args": ["models", "check", *names, "--models-dir", ref("ModelsDir")]}
    environment: dict[str, Any] = {
        "name": "FacefuseModels",
        "description": "once per worker session: every model is in the shared models folder",
        "variables": variables}
    if not downloads:
        environment["script"] = {"actions": {"onEnter": check}}
    return environment


# How a .blend file starts: uncompressed, or compressed (zstd since Blender 3.0, gzip before)
BLEND_MAGIC = (b"BLENDER", b"\x28\xb5\x2f\xfd", b"\x1f\x8b")


def check_blend_file(blend: Path) -> None:
    """InputError, one sentence, unless `blend` is a .blend file (its name and its first
    bytes): a job of another file would fail on every worker."""
    if not blend.is_file():
        raise InputError(f"{blend} does not exist" if not blend.exists()
                         else f"{blend} is not a file; give the .blend with the strips to swap")
    try:
        with blend.open("rb") as file:
            head = file.read(8)
    except OSError as exc:
        raise InputError(f"{blend} cannot be read: {exc.strerror or exc}") from None
    if blend.suffix.lower() != ".blend" or not head.startswith(BLEND_MAGIC):
        raise InputError(f"{blend} is not a .blend file; give the .blend with the strips "
                         "marked Swap on Farm")


def blend_bundle(blend: Path, chunks: int, blender: str | None = None,
                 python: str = "python", module: str = EXTENSION_MODULE) -> Bundle:
    """The job that swaps the strips marked Swap on Farm in `blend`, in `chunks` tasks (each
    `--chunk N/chunks` of every strip), through the Blender extension's headless entry: with
    `blender` (a Blender binary) as `blender -b FILE --python-expr ... -- --chunk N/M`, else
    with `python` (an interpreter with the bpy module and the extension installed)."""
    if chunks < 1:
        raise InputError(f"chunk count {chunks} must be at least 1")
    check_blend_file(blend)
    params = _Params()
    params.path("BlendFile", blend.resolve(), "the .blend with the strips to swap", "FILE",
                "IN")
    params.add("Chunks", "INT", chunks, "tasks per strip range", minValue=1)
    params.add("ExtensionModule", "STRING", module, "the facefuse extension's module")
    chunk = ["--chunk", "{{Task.Param.Chunk}}/" + ref("Chunks"), "--progress", "openjd"]
    if blender is not None:
        command = params.add("Blender", "STRING", blender, "the Blender program on the workers")
        expr = ("import importlib; importlib.import_module('" + ref("ExtensionModule")
                + ".headless').main()")
        args = ["-b", ref("BlendFile"), "--python-expr", expr, "--", *chunk]
    else:
        command = params.add("Python", "STRING", python, "a Python with bpy and the extension")
        args = ["-c", HEADLESS_CODE, ref("ExtensionModule"), ref("BlendFile"), *chunk]
    step = {"name": "SwapStrips", "description": "swap the strips marked Swap on Farm",
            "parameterSpace": {"taskParameterDefinitions": [{
                "name": "Chunk", "type": "INT", "range": "1-" + ref("Chunks")}]},
            "script": {"actions": {"onRun": {"command": command, "args": args,
                                             "cancelation": dict(CANCELATION)}}}}
    template = {"specificationVersion": SPEC, "name": _job_name(f"facefuse {blend.name}"),
                "parameterDefinitions": params.definitions, "steps": [step]}
    return Bundle(template, params.values())


def validate(template: Mapping[str, Any], values: Mapping[str, Any]) -> None:
    """Parse `template` with openjd-model (the farm extra) and make a job from `values` (job
    parameter name -> value); ValueError naming what openjd-model rejects."""
    from openjd.model import (
        DecodeValidationError,
        ParameterValue,
        ParameterValueType,
        create_job,
        decode_job_template,
    )

    try:
        parsed = decode_job_template(template=dict(template),
                                     supported_extensions=list(template.get("extensions", [])))
        kinds = {d["name"]: d["type"] for d in template["parameterDefinitions"]}
        given = {name: ParameterValue(type=ParameterValueType(kinds[name]), value=str(value))
                 for name, value in values.items()}
        create_job(job_template=parsed, job_parameter_values=given)
    except DecodeValidationError as exc:
        raise ValueError(f"the generated job template is not valid OpenJD: {exc}") from exc


def with_relative_defaults(template: Mapping[str, Any], folder: Path) -> dict[str, Any]:
    """`template` as the spec wants PATH defaults: relative to the template's folder and inside
    it. Paths elsewhere lose their default and come from the parameter files alone."""
    definitions = []
    for definition in template["parameterDefinitions"]:
        if definition["type"] == "PATH":
            definition = dict(definition)
            default = Path(definition.pop("default")).resolve()
            if default.is_relative_to(folder.resolve()):
                definition["default"] = default.relative_to(folder.resolve()).as_posix()
        definitions.append(definition)
    return {**template, "parameterDefinitions": definitions}


def write_bundle(bundle: Bundle, folder: Path) -> list[Path]:
    """Write template.yaml, parameter_values.yaml (for `deadline bundle submit`) and
    job_parameters.json (the same values for `openjd run -p file://...`) into `folder`
    (created; each file written whole or not at all), after checking the template with
    openjd-model. OutputError naming the file when the folder refuses it (full, read-only)."""
    try:
        import openjd.model  # noqa: F401 - validate() below needs it too
        import yaml
    except ImportError as exc:
        raise InputError(f"writing job bundles needs {exc.name or 'the farm extra'}: pip "
                         "install 'facefuse[farm]'") from None
    template = with_relative_defaults(bundle.template, folder)
    values = {v["name"]: v["value"] for v in bundle.values["parameterValues"]}
    validate(template, values)
    make_folder(folder)
    texts = {TEMPLATE_FILE: yaml.safe_dump(template, sort_keys=False, width=100),
             VALUES_FILE: yaml.safe_dump(dict(bundle.values), sort_keys=False, width=100),
             RUN_VALUES_FILE: json.dumps(values, indent=2) + "\n"}
    for name, text in texts.items():
        try:
            atomic_write_bytes(folder / name, text.encode("utf-8"))
        except OSError as exc:
            raise write_error(folder / name, exc) from exc
    return [folder / name for name in texts]
