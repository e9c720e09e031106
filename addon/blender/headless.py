"""Swap strips without a UI: on a render farm, or from a script with bpy as a module.

    blender -b shot.blend --python-expr "from bl_ext.user_default.facefuse import headless; \
headless.main()" -- [--strip NAME] [--frames A-B] [--chunk N/M] [--add-strips] \
[--progress openjd]

    python -c "import bpy; from bl_ext.user_default.facefuse import headless; \
raise SystemExit(headless.main(['shot.blend', '--chunk', '2/3']))"

Which strips: --strip NAME, else every strip marked "Swap on Farm" (strip.facefuse.farm) in
every scene (--scene limits both). Each strip becomes the same RenderRequest the Swap Strip
button builds (convert.strip_swap), so a farm render, a render in Blender and `facefuse render`
resume each other: frames already rendered with the same settings are skipped.
--chunk N/M renders the Nth of M near-equal slices of each strip's trimmed range; every chunk
makes the same shot-level decisions (tracking, smoothing). --frames A-B (timeline frames) narrows
the range itself, which changes those decisions at the range's edges: for farm chunks prefer
--chunk alone. --add-strips adds the result strips of complete strips and saves the .blend
(one machine only: parallel chunks must not all save the file).

Progress lines count timeline frames ("timeline frame 15 (media 6) swapped (3/13)"), as --frames
asks for them. The add-on reads nothing from its preferences: main() registers it itself when
the process has not enabled it (bpy as a module, `blender -b --factory-startup`), so a script
needs neither bpy.ops.wm.read_userpref() nor addon_enable() first; it only needs
`bl_ext.user_default.facefuse` importable, i.e. the extension installed in the user folder
that process uses (BLENDER_USER_RESOURCES, else the default one).

Exit codes as `facefuse render` (facefuse.ExitCode): 0 done, 2 bad input or usage, 3 no
face in a source, 4 model missing or invalid, 5 some frames failed, 143 stopped by SIGTERM, 130
by SIGINT (facefuse.stop_signals: complete frames kept, temporaries removed). A closed reader
(`... | head -1`) stops the progress lines, not the render (facefuse.reports_only).
main() returns the code; run with argv None (from Blender's command line) a failure also exits
Blender with it.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import bpy

from facefuse import (
    ExitCode,
    FacefuseError,
    parse_chunk,
    parse_frame_range,
    reports_only,
    stop_signals,
)

from . import convert, result
from .frames import StripSwap, overlaps
from .strips import StripError, all_strips, strip_type
from .words import frame_counts, frame_outcome


def main(argv: Sequence[str] | None = None) -> int:
    """Run the swaps the arguments ask for; the exit code (see the module docstring)."""
    from_command_line = argv is None
    if argv is None:
        argv = sys.argv[sys.argv.index("--") + 1:] if "--" in sys.argv else []
    with reports_only():  # a reader that goes away (`| head -1`) stops the lines, not the work
        try:
            code = _run(_parser().parse_args(list(argv)))
        except SystemExit as exc:  # argparse: --help or a usage error
            code = exc.code if isinstance(exc.code, int) else ExitCode.USAGE
        except KeyboardInterrupt:  # a second Ctrl-C while stopping: the with-blocks cleaned up
            _say("interrupted")
            code = ExitCode.INTERRUPTED
    if from_command_line and code != ExitCode.OK:
        raise SystemExit(code)
    return code


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="facefuse-blender", description=__doc__.split("\n")[0])
    parser.add_argument("blend", nargs="?", help="the .blend to open (default: the open file)")
    parser.add_argument("--scene", help="only this scene")
    parser.add_argument("--strip", help="only this strip (default: strips marked Swap on Farm)")
    parser.add_argument("--frames", type=_frames, help="timeline frames A-B (inclusive)")
    parser.add_argument("--chunk", type=_chunk, help="the Nth of M slices of each range: N/M")
    parser.add_argument("--add-strips", action="store_true",
                        help="add the result strips of complete strips and save the .blend")
    parser.add_argument("--progress", choices=("text", "openjd"), default="text",
                        help="openjd: also print openjd_status / openjd_progress lines (Open "
                        "Job Description tasks)")
    return parser


def _frames(text: str) -> tuple[int, int]:
    try:
        return parse_frame_range(text)
    except FacefuseError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _chunk(text: str) -> tuple[int, int]:
    try:
        return parse_chunk(text)
    except FacefuseError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _run(args: argparse.Namespace) -> int:
    try:
        if args.blend:
            _open(Path(args.blend))
        ensure_registered()
        targets = list(_targets(args.scene, args.strip))
    except StripError as exc:
        _say(f"error: {exc}")
        return ExitCode.USAGE
    codes = [_swap(scene, strip, args) for scene, strip in targets]
    if args.add_strips and bpy.data.filepath:
        bpy.ops.wm.save_mainfile()
    return next((code for code in codes if code != ExitCode.OK), ExitCode.OK)


def ensure_registered() -> None:
    """Register the add-on when this process has not (bpy as a module, add-on not enabled)."""
    if not hasattr(strip_type(), "facefuse"):
        from . import register

        register()


def _open(path: Path) -> None:
    if not path.is_file():
        raise StripError(f"{path} does not exist")
    bpy.ops.wm.open_mainfile(filepath=str(path.resolve()))


def _targets(scene_name: str | None, strip_name: str | None) -> Iterator[tuple[Any, Any]]:
    found = False
    for scene in bpy.data.scenes:
        if scene_name and scene.name != scene_name or scene.sequence_editor is None:
            continue
        for strip in all_strips(scene.sequence_editor):
            if strip.name == strip_name if strip_name else strip.facefuse.farm:
                found = True
                yield scene, strip
    if not found:
        where = f"scene '{scene_name}' of " if scene_name else ""
        wanted = f"no strip named '{strip_name}'" if strip_name else \
            "no strip marked Swap on Farm"
        raise StripError(f"{wanted} in {where}{bpy.data.filepath or 'this file'}")


def _swap(scene: Any, strip: Any, args: argparse.Namespace) -> int:
    from facefuse import Pipeline, render, replaced_frames

    label = f"{scene.name}/{strip.name}"
    if not args.strip and not overlaps(strip, args.frames):
        _say(f"{label}: outside frames {args.frames[0]}-{args.frames[1]}, skipped")
        return ExitCode.OK
    try:
        plan = convert.strip_swap(scene, strip, frames=args.frames, chunk=args.chunk)
        shown = timeline_frames(plan, args.frames)
        total = sum(len(frames) for frames in shown.values())
        _say(f"{label}: {total} timeline frame(s) -> {plan.output_dir}")
        openjd = args.progress == "openjd"
        if openjd:
            print(f"openjd_status: {label}: swapping {total} frame(s)", flush=True)
        with stop_signals() as stopped, Pipeline(plan.request.settings) as pipeline:
            # as `facefuse render` does: no prompt, a note before the frames it replaces
            try:
                replacement = replaced_frames(plan.request, pipeline, cancel=stopped.is_set)
            except Exception:
                if not stopped.is_set():
                    raise
                _say(f"{label}: stopped by {stopped.name} before any frame was written")
                return stopped.exit_code
            if replacement:
                _say(f"{label}: note: {replacement.message}")
            summary = render(plan.request, on_progress=_progress(label, shown, openjd),
                             cancel=stopped.is_set, pipeline=pipeline)
    except StripError as exc:
        _say(f"{label}: error: {exc}")
        return ExitCode.USAGE
    except FacefuseError as exc:
        _say(f"{label}: error: {exc}")
        return exc.exit_code
    for note in (*summary.notes, *summary.warnings):
        _say(f"{label}: note: {note}")
    replaced = f", {summary.replaced} made with other choices replaced" \
        if summary.replaced else ""
    _say(f"{label}: {frame_counts(summary)}{replaced}, {len(summary.failed)} failed "
         f"in {summary.seconds:.1f} s")
    if summary.cancelled:
        return stopped.exit_code if stopped.is_set() else ExitCode.TERMINATED
    if summary.failed:
        return ExitCode.FRAMES_FAILED
    if args.add_strips and not plan.missing_outputs():
        _say(f"{label}: result strip '{result.add_result_strip(plan).name}'")
    return ExitCode.OK


def timeline_frames(plan: StripSwap, frames: tuple[int, int] | None
                    ) -> dict[int, list[int]]:
    """The timeline frames (within `frames`, when given) each engine number to render shows:
    progress counts timeline frames, as the job was asked (a held frame shows one number at
    several timeline frames)."""
    wanted = set(plan.todo())
    shown: dict[int, list[int]] = {}
    for index, number in enumerate(plan.numbers):
        frame = plan.frame_start + index
        if number in wanted and (frames is None or frames[0] <= frame <= frames[1]):
            shown.setdefault(number, []).append(frame)
    return shown


def _progress(label: str, shown: dict[int, list[int]], openjd: bool = False) -> Any:
    total = sum(len(frames) for frames in shown.values())
    count = [0]

    def report(frame_report: Any) -> None:  # runs on the engine's writer thread
        frames = shown.get(frame_report.frame, [])
        count[0] += len(frames)
        where = ", ".join(map(str, frames)) or "-"
        _say(f"{label}: timeline frame {where} (media {frame_report.frame}) "
             f"{frame_outcome(frame_report)} ({count[0]}/{total})")
        if openjd and total:
            print(f"openjd_progress: {100 * count[0] // total}", flush=True)
    return report


def _say(text: str) -> None:
    print(f"facefuse: {text}", flush=True)
