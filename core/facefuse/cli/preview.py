"""`facefuse preview`: one frame of a render, exactly as the render writes it, as a still.

It takes every option of `facefuse render` (the same request, so the same shot plan) with -o
naming the still (.png, .tif/.tiff or .exr) and --frame the frame; the engine side is
shot.looks.stills. A shot not analysed yet is analysed first, which stderr says, with the analysis
progress of --progress.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..cache.layout import CacheLayout
from ..errors import ExitCode, InputError
from ..farm.paths import check_inside
from ..io.files import (
    atomic_write_bytes,
    check_folder_writable,
    check_path_length,
    file_ids,
    make_folder,
    scratch_folder,
    sweep_leftovers,
    write_error,
)
from ..io.sequences import is_frame_pattern
from ..shot.contract import commandline
from ..shot.contract.render_options import ANSWER_OPTIONS, INPUT, SHOT_OPTIONS, Option
from ..shot.contract.request import FrameReport, PhaseProgress, RenderRequest
from ..shot.output.output_checks import check_not_input, request_inputs
from ..stopping import Cancelled, stop_signals
from .render import Progress

STILL = Option(("-o", "--output"), "request.output.path", "text", "the still: a .png, .tif or .exr "
               "file, holding what a render of these options to an image sequence of that "
               "format writes for the frame")


def add_parser(commands: Any) -> None:
    p = commands.add_parser("preview", help="one frame exactly as the render writes it",
                            description="Render one frame of a shot, through the render "
                            "itself and the shot's plan (the same people, sources, tracking "
                            "and smoothing as `facefuse render` with the same options), to a "
                            "still image.")
    commandline.add_options(p, (INPUT, STILL))
    p.add_argument("--frame", type=int, required=True, metavar="N",
                   help="the frame, in the input's own numbering (inside --frames)")
    commandline.add_settings_options(p, sources_required=False)
    commandline.add_options(p, SHOT_OPTIONS)
    commandline.add_options(p, ANSWER_OPTIONS)  # a preview is refused as the render would be
    p.add_argument("--progress", choices=("auto", "bar", "json", "none"), default="auto",
                   help="analysis progress: a bar on stderr (auto: on a terminal), JSON lines "
                   "on stdout, or none")
    p.add_argument("--json", action="store_true", help="print one JSON summary line")
    p.set_defaults(handler=cmd_preview)


class _Phases:
    """The render's phase callback for a preview: says once on stderr that the shot is being
    analysed first, and hands every step to the progress display."""

    def __init__(self, progress: Progress) -> None:
        self.progress = progress
        self.said = False

    def __call__(self, step: PhaseProgress) -> None:
        if step.phase == "analysis" and not self.said and step.done < step.total:
            self.said = True
            print(f"analysing the shot first: {step.total - step.done} frames",
                  file=sys.stderr, flush=True)
        self.progress.phase(step)


def check_still(request: RenderRequest) -> Path:
    """The still's path; InputError for one that cannot be a still or exists already."""
    from ..shot.looks.stills import check_still_suffix

    path = Path(request.output.path)
    if is_frame_pattern(request.output.path):
        raise InputError(f"the preview's -o {path} names one still, not an image sequence: "
                         "give a file name without a frame token")
    check_still_suffix(path.suffix, f"the preview's -o {path}")
    check_path_length(path, "the preview's -o")
    if path.is_dir():
        raise InputError(f"{path} is a folder, not a file name")
    if path.exists() and not request.output.overwrite:
        raise InputError(f"{path} already exists; add --overwrite to replace it")
    if path.parent.exists() and not path.parent.is_dir():
        raise InputError(f"the output folder {path.parent} is a file, not a folder")
    check_folder_writable(path.parent)
    if path.exists():
        check_not_input("the preview's -o", path, _files_read(request))
    return path


def _files_read(request: RenderRequest) -> list[Path]:
    """The input's files and every other file the preview reads (request_inputs: sources,
    references, assigned images, the overrides file, the model manifest...)."""
    from ..shot.contract.inputs import open_input

    shot = open_input(request.input.path, request.input.start_number, request.input.conform_vfr,
                      request.settings.threads)
    try:
        read = list(shot.files(shot.frame_numbers))
    finally:
        shot.close()
    return [*read, *request_inputs(request)]


def cmd_preview(args: argparse.Namespace) -> int:
    request = commandline.request_from_namespace(args)
    still = check_still(request)
    if args.output_root is not None:
        check_inside(Path(args.output_root), (request.output.path,))
    progress = Progress(args.progress)
    started = time.perf_counter()
    reports: list[FrameReport] = []

    with stop_signals() as stop:
        try:
            _preview(request, args.frame, still, _Phases(progress), reports.append, stop.is_set)
        except Cancelled:
            print(f"facefuse: preview stopped by {stop.name}; no still was written",
                  file=sys.stderr)
            return stop.exit_code
    if progress.mode == "bar":
        sys.stderr.write("\n")
    report = reports[-1] if reports else FrameReport(args.frame, "no_face")
    if args.json or progress.mode == "json":
        print(json.dumps({"still": str(still), "frame": args.frame, "status": report.status,
                          "faces": report.faces, "found": report.found,
                          **({"corrected": report.corrected}
                             if report.status == "unselected" else {}),
                          "seconds": round(time.perf_counter() - started, 3)}), flush=True)
    else:
        print(still)
    return ExitCode.OK


def _preview(request: RenderRequest, frame: int, still: Path, phases: _Phases,
             on_progress: Any, cancel: Callable[[], bool] | None = None) -> None:
    """Render the still into a scratch folder of the cache's previews, then write it to
    `still` atomically (what killed runs left in either folder swept first). StillsCancelled
    or PlanCancelled when cancel() stopped it: nothing written, the scratch removed."""
    from ..shot.looks.stills import render_stills  # the engine loads here, when a preview runs

    scratch_root = CacheLayout.at(request.settings.cache_dir).previews
    with scratch_folder(scratch_root, "stills") as scratch:
        made = render_stills(request, (frame,), scratch, on_phase=phases,
                             on_progress=on_progress, suffix=still.suffix.lower(),
                             cancel=cancel)[frame]
        data = made.read_bytes()
    make_folder(still.parent)
    sweep_leftovers(still.parent, file_ids([request.input.path, *request_inputs(request)]))
    try:
        atomic_write_bytes(still, data)
    except OSError as exc:
        raise write_error(still, exc) from exc
