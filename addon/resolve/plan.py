"""From a Resolve clip's facts to a render request, where its result is placed, and the result file.

Output: beside the clip's media, in `<media folder>/facefuse/`, as an image sequence
`<clip>.####.png` (or .exr / .tif) numbered as the engine numbers the source (so a re-render
resumes and a `facefuse render` of the same range writes the same files), or a movie
`<clip>_facefuse.mov` (ProRes 4444 or DNxHR 444) holding just the used range (the naming every
host shares: facefuse.output_target). Another folder may be chosen; it must be writable, or the
plan is refused before anything is rendered.

Placement: the rendered media is imported into the Media Pool bin BIN_NAME and appended to the
lowest video track above the clip's that is free over the clip's record range (a new track on
top when none is), at the clip's own record frame, covering exactly its record range. The Lua
launcher and the bridge carry the placement out as written here; nothing is decided there.

The result file (`write_result`, read by the Lua launcher):

    {"schema": "facefuse-resolve-result", "version": 1, "status": "place" | "nothing",
     "message": "one sentence",
     "placement": {"media", "sequence": true, "start_index", "end_index", "bin", "track",
                   "record_frame", "start_frame", "end_frame", "name"} | null}

start_frame / end_frame are frames of the imported clip, END_FRAME_INCLUSIVE as Resolve's
AppendToTimeline counts them (checked against the public API documentation only).
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from facefuse import (
    OUTPUT_FOLDER,
    OUTPUT_KINDS,
    SEQUENCE_FORMATS,
    InputError,
    RenderRequest,
    RenderSummary,
    Settings,
    atomic_write_bytes,
    check_folder_writable,
    output_target,
    safe_name,
)

from .job_file import ClipFacts
from .timeline import playhead_frame

RESULT_SCHEMA = "facefuse-resolve-result"
RESULT_VERSION = 1
BIN_NAME = "facefuse"
END_FRAME_INCLUSIVE = True


@dataclass(frozen=True, slots=True)
class Placement:
    """Where the swapped media goes in Resolve (see the module docstring)."""

    media: str
    sequence: bool
    start_index: int
    end_index: int
    bin: str
    track: int
    record_frame: int
    start_frame: int
    end_frame: int
    name: str


@dataclass(frozen=True, slots=True)
class ResolvePlan:
    """One clip's swap: the engine request and where its result is placed."""

    facts: ClipFacts
    request: RenderRequest
    placement: Placement


def default_output_folder(facts: ClipFacts) -> Path:
    """`<media folder>/facefuse`: beside the project's media."""
    return facts.media.parent / OUTPUT_FOLDER


def plan(facts: ClipFacts, sources: tuple[Path, ...], settings: Settings,
         output: str = "png", folder: Path | None = None, overwrite: bool = False) -> ResolvePlan:
    """The request that swaps the clip's used range and its placement.

    output: one of OUTPUT_KINDS. folder: where the result goes (default_output_folder). Raises
    InputError for a bad choice, OutputError when the folder cannot be written.
    """
    if output not in OUTPUT_KINDS:
        raise InputError(f"output must be one of {', '.join(OUTPUT_KINDS)}, not {output!r}")
    folder = Path(folder) if folder is not None else default_output_folder(facts)
    check_folder_writable(folder)
    stem = safe_name(facts.name)
    first, last = facts.span.engine_frames
    target, codec = output_target(stem, output, folder)
    if output in SEQUENCE_FORMATS:
        media, start_index, end_index = str(folder / f"{stem}.%04d.{output}"), first, last
    else:
        media, start_index, end_index = target, 0, last - first
    request = RenderRequest(sources=tuple(sources), input=facts.input, output=target,
                            settings=settings, frames=(first, last), codec=codec,
                            start_number=facts.span.first_number, overwrite=overwrite)
    placement = Placement(
        media=media, sequence=output in SEQUENCE_FORMATS, start_index=start_index,
        end_index=end_index, bin=BIN_NAME, track=placement_track(facts),
        record_frame=facts.span.record_start, start_frame=0,
        end_frame=facts.span.duration - (1 if END_FRAME_INCLUSIVE else 0),
        name=f"{stem} facefuse")
    return ResolvePlan(facts, request, placement)


def placement_track(facts: ClipFacts) -> int:
    """The lowest video track above the clip's that is free over its record range, else a new
    one on top (track count + 1); tracks are 1-based as in Resolve."""
    start, end = facts.span.record_start, facts.span.record_end
    for track in range(facts.track + 1, facts.video_tracks + 1):
        ranges = facts.busy.get(track, ())
        if all(e <= start or s >= end for s, e in ranges):
            return track
    return max(facts.video_tracks, facts.track) + 1


def preview_frame_number(facts: ClipFacts) -> int:
    """The engine frame under the playhead, or the clip's first frame when the playhead is
    elsewhere (a preview of that frame)."""
    here = playhead_frame(facts.current_timecode, facts.start_timecode, facts.start_frame,
                          facts.rate)
    span = facts.span
    return span.engine_frame(here) if span.contains(here) else span.engine_frames[0]


def result_record(placement: Placement | None, message: str) -> dict[str, Any]:
    """The result file's content: a placement to carry out, or nothing with the reason."""
    return {"schema": RESULT_SCHEMA, "version": RESULT_VERSION,
            "status": "place" if placement is not None else "nothing", "message": message,
            "placement": asdict(placement) if placement is not None else None}


def write_result(path: Path, placement: Placement | None, message: str) -> None:
    """Write the result file atomically (the launcher never reads half a file)."""
    # raw UTF-8, not \u escapes: the Lua launcher copies path bytes as they are
    data = json.dumps(result_record(placement, message), indent=1,
                      ensure_ascii=False).encode("utf-8")
    atomic_write_bytes(Path(path), data)


def read_result(path: Path) -> tuple[Placement | None, str]:
    """(placement or None, message) from a result file; InputError for a broken one."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise InputError(f"cannot read the result file {path}: {exc}") from None
    if not isinstance(data, dict) or data.get("schema") != RESULT_SCHEMA:
        raise InputError(f"{path} is not a facefuse Resolve result")
    placed = data.get("placement")
    return (Placement(**placed) if isinstance(placed, dict) else None), str(data.get("message"))


def outcome(swap: ResolvePlan, summary: RenderSummary) -> tuple[Placement | None, str]:
    """What a finished render means for Resolve: the placement to carry out, or None and why
    nothing is placed (cancelled, frames failed, no face swapped), in one sentence."""
    name = swap.facts.name
    if summary.cancelled:
        return None, (f"The render of '{name}' was stopped before the end: nothing placed "
                      "(finished frames are kept; render again to resume)")
    if summary.failed:
        frame, reason = summary.failed[0]
        return None, (f"{len(summary.failed)} frame(s) of '{name}' failed (frame {frame}: "
                      f"{reason}): nothing placed")
    if summary.swapped == 0:
        why = "faces were found but none was selected" if summary.unselected \
            else "no face was found"
        return None, (f"No face was swapped in '{name}' ({why} in its {summary.frames} "
                      "frames): nothing placed")
    return swap.placement, (f"Swapped {summary.swapped} of {summary.frames} frames of '{name}'; "
                            f"it goes on video track {swap.placement.track} at frame "
                            f"{swap.placement.record_frame}")
