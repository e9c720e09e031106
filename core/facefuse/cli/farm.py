"""`facefuse farm openjd|dask`: a shot (or a .blend's marked strips) as render-farm work.

    facefuse farm openjd -s actor.jpg -i shot.mov -o out/shot.####.exr --frames 1001-1240 \\
        --chunk-size 20 --bundle job/
    facefuse farm openjd --blend edit.blend --bundle job/ [--chunks 8] [--blender PATH]
    facefuse farm dask -s actor.jpg -i shot.mov -o out/shot.####.exr --scheduler tcp://head:8786
    facefuse farm dask ... --local 2

Both take the options of `facefuse render`; every task runs that command over its chunk (see
facefuse.farm). The Dask side needs the farm extra and is loaded only when it runs, so other
commands never import dask.
"""

from __future__ import annotations

import argparse
import json
import logging
import shlex
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any

from ..errors import ExitCode, InputError
from ..farm import openjd
from ..farm.chunks import chunk_ranges, shot_frames
from ..farm.commandline import absolute_paths
from ..farm.paths import check_inside
from ..io.sequences import is_frame_pattern
from ..shot.contract.frames import within
from ..shot.contract.request import RenderRequest
from ..shot.contract.studio import load_studio, under_studio
from ..shot.plan.overrides import load_overrides
from .render import render_options, request_from_args

log = logging.getLogger(__name__)

DEFAULT_CHUNK_SIZE = 10
DEFAULT_BLEND_CHUNKS = 4
NOT_FOR_FARMS = (("chunk", "--chunk"), ("chunk_frames", "--chunk-frames"),
                 ("output_root", "--output-root"), ("list_colorspaces", "--list-colorspaces"))


def add_parser(commands: Any) -> None:
    farm = commands.add_parser("farm", help="hand a shot to a render farm (Open Job "
                               "Description job bundles, Dask distributed)")
    engines = farm.add_subparsers(dest="engine", required=True, metavar="ENGINE")
    jd = engines.add_parser("openjd", help="write an Open Job Description job bundle (AWS "
                            "Deadline Cloud; `openjd run` runs it on this machine)")
    known = {action.dest for action in jd._actions}
    render_options(jd)
    _job_options(jd)
    jd.set_defaults(shot_options=tuple(  # what a --blend job takes from the .blend instead
        (action.option_strings[-1], action.dest, action.default) for action in jd._actions
        if action.dest not in known and action.option_strings))
    jd.add_argument("--bundle", type=Path, required=True, help="the job bundle folder to write "
                    "(template.yaml, parameter_values.yaml)")
    jd.add_argument("--facefuse", default="facefuse", metavar="PROGRAM",
                    help="the facefuse program on the workers (default: facefuse on PATH)")
    jd.add_argument("--no-task-chunking", action="store_true", help="for schedulers without "
                    "the TASK_CHUNKING extension: the chunks fixed now, one task each")
    jd.add_argument("--blend", type=Path, help="swap the strips marked Swap on Farm in this "
                    ".blend instead (the Blender extension's headless entry)")
    jd.add_argument("--chunks", type=int, default=DEFAULT_BLEND_CHUNKS, metavar="M",
                    help=f"--blend: tasks per strip range ({DEFAULT_BLEND_CHUNKS})")
    jd.add_argument("--blender", metavar="PATH", help="--blend: run `PATH -b FILE "
                    "--python-expr ...` (default: a Python with the bpy module)")
    jd.add_argument("--python", default="python", metavar="PATH", help="--blend without "
                    "--blender: the Python with bpy and the extension (python)")
    jd.set_defaults(handler=cmd_openjd)
    dk = engines.add_parser("dask", help="run the shot on Dask distributed workers")
    render_options(dk)
    where = dk.add_mutually_exclusive_group(required=True)
    where.add_argument("--scheduler", metavar="ADDR", help="a running scheduler, e.g. "
                       "tcp://head:8786 (start workers with `dask worker ADDR --nthreads 1`)")
    where.add_argument("--local", type=int, metavar="N", help="a local cluster of N worker "
                       "processes on this machine")
    dk.add_argument("--connect-timeout", type=float, metavar="S", help="--scheduler: seconds "
                    "to wait for it to answer before the job stops (10)")
    _job_options(dk)
    dk.set_defaults(handler=cmd_dask)


def _job_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--chunk-size", type=int, default=DEFAULT_CHUNK_SIZE, metavar="N",
                   help=f"frames per task ({DEFAULT_CHUNK_SIZE})")
    p.add_argument("--output-dir", type=Path, help="the job's output folder; no task writes "
                   "outside it (default: the folder of -o)")
    p.add_argument("--allow-downloads", action="store_true", help="let tasks download missing "
                   "models (default: offline, a missing model fails at once, naming it)")


def _shot_request(args: argparse.Namespace) -> tuple[RenderRequest, Path]:
    """The request and output folder a shot job renders; InputError for what a farm refuses."""
    for dest, option in NOT_FOR_FARMS:
        if getattr(args, dest, None):
            raise InputError(f"{option} is not for farm jobs: the job chooses each task's "
                             "frames (set --chunk-size)")
    if not args.source and not args.assign:
        raise InputError("a shot job needs -s SOURCE or --assign PERSON=PHOTO (or --blend FILE "
                         "for a .blend job)")
    request = under_studio(request_from_args(args), load_studio())  # tasks carry the policy
    if not args.allow_downloads:  # workers never download in the middle of a job
        request = replace(request, settings=replace(request.settings, offline=True))
    if not is_frame_pattern(request.output.path):
        raise InputError(f"farm jobs write image sequences, not {request.output.path}; give a "
                         "pattern such as out/shot.####.exr (encode a video afterwards)")
    if request.plan.overrides is not None:
        load_overrides(request.plan.overrides)  # a bad file is refused now, not by every task
    root = (args.output_dir or Path(request.output.path).parent).resolve()
    check_inside(root, (request.output.path, request.output.matte, request.output.patch))
    return absolute_paths(request), root


def cmd_openjd(args: argparse.Namespace) -> int:
    if args.blend is not None:
        given = [flag for flag, dest, default in args.shot_options
                 if getattr(args, dest) != default]
        if given:
            raise InputError("a --blend job takes its shots, sources, outputs and settings "
                             f"from the .blend's strips; drop {', '.join(given)}")
        bundle = openjd.blend_bundle(args.blend, args.chunks, args.blender, args.python)
        tasks = args.chunks
    else:
        request, root = _shot_request(args)
        frames = shot_frames(request)
        bundle = openjd.shot_bundle(request, (frames[0], frames[-1]), args.chunk_size,
                                    args.facefuse, args.allow_downloads, root,
                                    task_chunking=not args.no_task_chunking)
        tasks = len(chunk_ranges(within(frames, request.frames.only), args.chunk_size))
    written = openjd.write_bundle(bundle, args.bundle)
    print(f"wrote {', '.join(str(p) for p in written)}: {tasks} tasks; run it here with "
          f"`openjd run {written[0]} -p file://{written[2]}` or submit it with "
          f"`deadline bundle submit {args.bundle}`")
    return ExitCode.OK


def cmd_dask(args: argparse.Namespace) -> int:
    if args.local is not None and args.local < 1:
        raise InputError(f"--local {args.local} must be at least 1 worker process")
    if args.connect_timeout is not None and not args.connect_timeout > 0:
        raise InputError(f"--connect-timeout {args.connect_timeout:g} must be more than 0 "
                         "seconds")
    request, root = _shot_request(args)
    try:  # loads distributed (the farm extra) only for this command
        from ..farm import dask_jobs
    except ModuleNotFoundError as exc:
        raise InputError(f"facefuse farm dask needs {exc.name}: pip install "
                         "'facefuse[farm]'") from None

    chunks = dask_jobs.chunk_args(request, args.chunk_size, root)
    if args.verbose < 2:  # the scheduler's and workers' own chatter only with -vv
        logging.getLogger("distributed").setLevel(logging.WARNING)

    def report(result: Any, done: int) -> None:
        if args.json:
            print(json.dumps({"chunk": asdict(result)}), flush=True)
            return
        print(f"chunk {done}/{len(chunks)} frames {result.chunk[0]}-{result.chunk[1]} on "
              f"{result.worker} (pid {result.pid}): {result.swapped} swapped, "
              f"{result.skipped} already done, {len(result.failed)} failed, "
              f"{result.seconds:.1f} s", flush=True)

    for task in chunks:
        log.info("task: %s", shlex.join(["facefuse", "render", *task]))
    with dask_jobs.connect(args.scheduler, args.local,
                           worker_tracebacks=getattr(args, "debug", False),
                           timeout_s=args.connect_timeout) as client:
        results = dask_jobs.run_job(client, chunks, report)
    return _dask_summary(results, args.json)


def _dask_summary(results: list[Any], as_json: bool) -> int:
    workers: dict[str, dict[str, int]] = {}
    for r in results:
        seen = workers.setdefault(r.worker, {"pid": r.pid, "chunks": 0})
        seen.update(chunks=seen["chunks"] + 1, pipelines=r.pipelines, sessions=r.sessions)
    failed = [f for r in results for f in r.failed]
    totals = {"chunks": len(results), "frames": sum(r.frames for r in results),
              "swapped": sum(r.swapped for r in results),
              "skipped": sum(r.skipped for r in results), "failed": len(failed),
              "workers": workers}
    if as_json:
        print(json.dumps({"summary": totals}), flush=True)
    else:
        print(f"{totals['chunks']} chunks, {totals['frames']} frames: {totals['swapped']} "
              f"swapped, {totals['skipped']} already done, {totals['failed']} failed; "
              + "; ".join(f"{w}: {s['chunks']} chunks, {s['pipelines']} pipeline, "
                          f"{s['sessions']} sessions" for w, s in workers.items()))
    return ExitCode.FRAMES_FAILED if failed else ExitCode.OK
