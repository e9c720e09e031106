"""`facefuse swap`: replace the faces of one image with a source identity."""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import ExitCode, InputError
from ..models.licences import ModelLicence, check_licences, licence_line, stated_uses
from ..models.manifest import ROLES
from ..shot.contract import commandline, render_options
from ..shot.contract.request import (
    InputSpec,
    OutputSpec,
    PolicyChoices,
    RenderRequest,
    SigningChoices,
)
from ..shot.contract.studio import load_studio, under_studio
from ..shot.output.output_checks import settings_inputs
from .options import DownloadProgress, engine_options, settings_from_args

if TYPE_CHECKING:
    from ..pipeline import Pipeline
    from ..types import FrameResult

log = logging.getLogger("facefuse")


def add_parser(commands: Any) -> None:
    p = commands.add_parser("swap", help="replace faces in an image with a source identity")
    p.add_argument("-t", "--target", type=Path, required=True, help="image to change")
    p.add_argument("-o", "--output", type=Path, required=True, help="image to write")
    engine_options(p)
    commandline.add_options(p, [o for o in render_options.ANSWER_OPTIONS
                                if o.flags[-1] in SWAP_POLICY])
    p.add_argument("--json", action="store_true", help="print one JSON summary line")
    p.set_defaults(handler=cmd_swap)


# what a still answers for: its models' licences and its content credentials (no shot plan:
# consent records are the render's)
SWAP_POLICY = ("--use", "--model-licence", "--sign-cert", "--sign-key", "--timestamp-url")


def check_swap_paths(sources: Sequence[Path], target: Path, references: Sequence[Path],
                     output: Path, read_too: Sequence[Path] = ()) -> None:
    """InputError for unreadable images, a bad output path, or an output that is any file the
    swap reads (the images, and `read_too`: model files and the manifest)."""
    from ..io.images import check_writable_path, read_image

    check_writable_path(output)
    for path in [*sources, target, *references]:
        read_image(path)
    for path in [*sources, target, *references, *read_too]:
        if _same_file(path, output):
            raise InputError(f"the output {output} is also an input ({path}); choose another "
                             "file name")


def _same_file(a: Path, b: Path) -> bool:
    if a.exists() and b.exists():
        return os.path.samefile(a, b)
    return a.resolve() == b.resolve()


def cmd_swap(args: argparse.Namespace) -> int:
    # the engine loads when a swap runs, not when the command line starts
    from ..io.images import read_image, write_image
    from ..pipeline import Pipeline
    from ..shot.output.signing import (
        SIGNED_NOTE,
        UNSIGNED_NOTE,
        OutputSigner,
        load_key,
        still_credential,
    )

    started = time.perf_counter()
    settings = settings_from_args(args)
    if settings.selector == "reference" and not settings.reference_images:
        raise InputError("--selector reference needs --reference IMAGE (the person to replace)")
    policy, signing = _policy(args)
    check_swap_paths(args.source, args.target, args.reference, args.output,
                     (*settings_inputs(settings), *(p for p in (signing.cert, signing.key) if p)))
    target = read_image(args.target)
    with Pipeline(settings, on_download=DownloadProgress()) as pipeline:
        licences = _check_licences(pipeline, policy)  # before any model is fetched
        pipeline.models.require_models()
        key = load_key(signing)
        identity_start = time.perf_counter()
        identity = pipeline.source_identity(args.source)
        identity_ms = (time.perf_counter() - identity_start) * 1000
        result = pipeline.process_frame(target, identity)
        write_start = time.perf_counter()
        write_image(args.output, result.frame)
        if key is not None:
            with key:
                credential = still_credential(args.target, args.source, identity, args.output,
                                              licences, policy.use)
                OutputSigner(credential, key).sign(args.output)
        summary = _swap_summary(args, pipeline, result, identity_ms,
                                (time.perf_counter() - write_start) * 1000, started)
    print(f"facefuse: {licence_line(licences)}", file=sys.stderr)
    print(f"facefuse: {SIGNED_NOTE if key is not None else UNSIGNED_NOTE}", file=sys.stderr)
    if not result.swapped:
        log.warning("no face to replace in %s (%d found, selector %s); wrote it unchanged",
                    args.target, len(result.faces), settings.selector)
    _print_summary(summary, args.json)
    return ExitCode.OK


def _policy(args: argparse.Namespace) -> tuple[PolicyChoices, SigningChoices]:
    """The swap's use and signing key, under the studio settings file (as a render's)."""
    policy, signing = commandline.policy_from_namespace(args)
    still = RenderRequest(sources=tuple(args.source), input=InputSpec(str(args.target)),
                          output=OutputSpec(str(args.output)), policy=policy, signing=signing)
    still = under_studio(still, load_studio())
    return still.policy, still.signing


def _check_licences(pipeline: Pipeline, policy: PolicyChoices) -> tuple[ModelLicence, ...]:
    """The licences of every model the swap uses; InputError when the use refuses one."""
    licences = pipeline.models.licences(stated_uses(policy.model_licences, ROLES))
    check_licences(licences, policy.use)
    return licences


def _swap_summary(args: argparse.Namespace, pipeline: Pipeline, result: FrameResult,
                  identity_ms: float,
                  write_ms: float, started: float) -> dict[str, Any]:
    timings = {"identity": round(identity_ms, 3), **result.timings_ms, "write": round(write_ms, 3),
               "total": round((time.perf_counter() - started) * 1000, 3)}
    return {"output": str(args.output), "faces_found": len(result.faces),
            "faces_swapped": len(result.swapped), "timings_ms": timings,
            "providers": list(pipeline.models.providers), "models": pipeline.models.used()}


def _print_summary(summary: dict[str, Any], as_json: bool) -> None:
    if as_json:
        print(json.dumps(summary, sort_keys=True))
        return
    print(f"{summary['output']}: swapped {summary['faces_swapped']} of "
          f"{summary['faces_found']} faces in {summary['timings_ms']['total']:.0f} ms")
