"""`facefuse review`: a shot's review report (report.json, index.html) from the plan a render
would make, without rendering the shot (only the contact sheet's frames); and the report that
`facefuse render --report DIR` writes after a render."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from ..errors import ExitCode
from ..farm.paths import check_inside
from ..review.folder import check_report_folder
from ..shot.contract import commandline, render_options
from ..shot.contract.request import RenderRequest
from ..stopping import Cancelled, stop_signals
from .render import Progress

UNUSED_OUTPUT = "review-frames.####.png"  # the request's output: a review writes no frames


def add_parser(commands: Any) -> None:
    p = commands.add_parser(
        "review", help="write a shot's review report: people, flagged frames, before/after",
        description="Analyse and plan a shot exactly as `facefuse render` would with the same "
        "options, flag the frames to look at, and write DIR/report.json and DIR/index.html "
        "(with thumbnails, before/after stills of sampled and flagged frames, plots). Only the "
        "stills are rendered. No source is needed: without one (-s or --assign) for a person "
        "swapped, a still shows that frame before only.")
    commandline.add_options(p, (render_options.INPUT,))
    p.add_argument("-o", "--output", required=True, metavar="DIR",
                   help="the report folder (created; a file there is refused)")
    commandline.add_settings_options(p, sources_required=False)
    commandline.add_options(p, render_options.SHOT_OPTIONS)
    commandline.add_options(p, render_options.CONSENT_OPTIONS)  # who is swapped under which
    p.add_argument("--progress", choices=("auto", "bar", "json", "none"), default="auto",
                   help="analysis progress: a bar on stderr (auto: on a terminal), JSON lines "
                   "on stdout, or none")
    p.add_argument("--json", action="store_true", help="print one JSON summary line")
    p.set_defaults(handler=cmd_review)


def cmd_review(args: argparse.Namespace) -> int:
    folder = check_report_folder(args.output)
    if args.output_root is not None:
        check_inside(Path(args.output_root), (str(folder / "report.json"),))
    args.output = UNUSED_OUTPUT
    request = commandline.request_from_namespace(args)
    progress = Progress(args.progress)
    with stop_signals() as stop:
        record = write_report(request, folder, progress, stop.is_set)
    if record is None:
        print(f"facefuse: review stopped by {stop.name}; the report folder was left as it was",
              file=sys.stderr)
        return stop.exit_code
    print_review(record, progress.mode, args.json)
    return ExitCode.OK


def write_report(request: RenderRequest, folder: Path, progress: Progress,
                 cancel: Callable[[], bool] | None = None) -> dict[str, Any] | None:
    """Write the report folder; its summary record (see review_record), or None when cancel()
    stopped it (nothing written)."""
    from ..review.writing import write_review  # the engine loads here, when a review runs

    try:
        result = write_review(request, folder, on_phase=progress.phase, cancel=cancel)
    except Cancelled:
        return None
    return review_record(result.report, result.page)


def review_record(report: Mapping[str, Any], page: Path) -> dict[str, Any]:
    """What a review says on stdout: counts, the flagged frames and where the page is."""
    people = report["people"]
    return {"review": {"page": str(page), "shot_id": report["shot_id"],
                       "frames": report["frames"], "people": len(people),
                       "swapped": [p["id"] for p in people if p["swapped"]],
                       "flags": len(report["flags"]),
                       "flagged_frames": report["flagged_frames"],
                       "timings": report["timings"]}}


def print_review(record: dict[str, Any], mode: str, as_json: bool) -> None:
    if mode == "bar":
        sys.stderr.write("\n")
    if as_json or mode == "json":
        print(json.dumps(record), flush=True)
        return
    review = record["review"]
    flagged = ", ".join(f"{a}" if a == b else f"{a}-{b}" for a, b in review["flagged_frames"])
    print(f"{review['frames']['count'] if review['frames'] else 0} frames, {review['people']} "
          f"people ({', '.join(review['swapped']) or 'none'} swapped), {review['flags']} flags"
          f"{' over frames ' + flagged if flagged else ''}; report: {review['page']}")
