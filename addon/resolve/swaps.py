"""From a Resolve clip's facts to a render request, where its result is placed, and the result file.

Output: beside the clip's media, in `<media folder>/facefuse/`, as an image sequence
`<clip>_v001.####.png` (or .exr / .tif) numbered as the engine numbers the source, or a movie
`<clip>_v001_facefuse.mov` (ProRes 4444 or DNxHR 444) holding just the used range (the naming
every host shares: facefuse.output_target). Every render is a new version (versions.py: Resolve
would show stale frames of a path it has imported); a sequence's new version starts as links
to the previous one's files, so a stopped render resumes and a finished one run again renders
nothing and is placed. Another folder may be chosen; it must be writable, or the plan is refused
before anything is rendered.

Placement: the rendered media is imported into the Media Pool bin BIN_NAME and appended on the
video track directly above the clip's (`track` = the clip's + 1), at the clip's own record frame,
covering exactly its record range, on the job's timeline (made current first: Resolve appends to
the current one). When that track is busy over the range, locked or disabled (`insert`), a new
track is inserted there, directly above the clip. The launcher and the bridge re-check the track
on the live timeline (the user may have changed it while the render ran) and insert a track when
it is no longer usable, read back what was placed (start, duration, track) and report a mismatch
as a failure; then the swap is finished like the plate: the plate's grade (CopyGrades) and
Inspector transform (PROPERTIES) are copied onto it, and the review report's flags become
markers on it. Nothing else is decided there.

The result file (`write_result`, read by the Lua launcher):

    {"schema": "facefuse-resolve-result", "version": 3, "status": "place" | "nothing",
     "message": "one sentence",
     "placement": {"media", "sequence": true, "start_index", "end_index", "bin", "name",
                   "timeline", "timeline_id", "plate_id", "plate_track", "track", "insert",
                   "record_frame", "duration", "start_frame", "end_frame", "fps",
                   "properties": [...],
                   "markers": [{"frame", "duration", "color", "name", "note", "custom"}]} | null}

The placement is planned in timeline frames: `duration` frames from `record_frame`, and what is
read back is compared in timeline frames. start_frame / end_frame are frames of the imported
clip counted from its first frame, end exclusive as AppendToTimeline counts them on Resolve
19.1-21 (measured): the placer adds the clip's own `Start` property (0 for a movie, the first
file number for an image sequence). They are timeline frames only while the imported clip runs
at the timeline's rate, `fps`: AppendToTimeline takes source frames and floors their conversion
to timeline frames (measured), so a clip Resolve imported at another rate would be placed
retimed or a frame short. The placer compares the imported clip's FPS with `fps` first and
places nothing when they differ (0: not checked).
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from facefuse import (
    OUTPUT_FOLDER,
    OUTPUT_KINDS,
    SEQUENCE_FORMATS,
    FrameSpec,
    InputError,
    InputSpec,
    OutputError,
    OutputSpec,
    RenderRequest,
    RenderSummary,
    Settings,
    atomic_write_bytes,
    check_folder_writable,
    load_json_file,
    output_target,
    safe_name,
)

from . import review, versions
from .job_file import ClipFacts
from .review import Marker
from .timeline import playhead_frame

RESULT_SCHEMA = "facefuse-resolve-result"
RESULT_VERSION = 3
RESULT_LIMIT = 1024 * 1024  # a result holds a placement and a sentence: a few KiB
BIN_NAME = "facefuse"
# a clip name's share of an output file name (file systems take 255 bytes a name)
STEM_LIMIT = 100
# the plate's Inspector settings the swap gets (Resolve's TimelineItem property names)
PROPERTIES = ("Pan", "Tilt", "ZoomX", "ZoomY", "ZoomGang", "RotationAngle", "AnchorPointX",
              "AnchorPointY", "Pitch", "Yaw", "FlipX", "FlipY", "CropLeft", "CropRight",
              "CropTop", "CropBottom", "CropSoftness", "CropRetain", "CompositeMode", "Opacity",
              "Distortion", "Scaling", "ResizeFilter")


@dataclass(frozen=True, slots=True)
class Placement:
    """Where the swapped media goes in Resolve (see the module docstring)."""

    media: str
    sequence: bool
    start_index: int
    end_index: int
    bin: str
    name: str
    timeline: str
    timeline_id: str
    plate_id: str
    plate_track: int
    track: int
    insert: bool
    record_frame: int
    duration: int
    start_frame: int
    end_frame: int
    fps: float = 0.0
    properties: tuple[str, ...] = PROPERTIES
    markers: tuple[Marker, ...] = ()


@dataclass(frozen=True, slots=True)
class ItemSwap:
    """One clip's swap: the engine request, where its result is placed, and the previous
    version's media (a %0Nd pattern) the new one starts from ("" when none)."""

    facts: ClipFacts
    request: RenderRequest
    placement: Placement
    previous: str = ""


def default_output_folder(facts: ClipFacts) -> Path:
    """`<media folder>/facefuse`: beside the project's media."""
    return facts.media.parent / OUTPUT_FOLDER


def item_swap(facts: ClipFacts, sources: tuple[Path, ...], settings: Settings,
         output: str = "png", folder: Path | None = None, overwrite: bool = False) -> ItemSwap:
    """The request that swaps the clip's used range and its placement.

    output: one of OUTPUT_KINDS. folder: where the result goes (default_output_folder). Raises
    InputError for a bad choice, OutputError when the folder cannot be written.
    """
    if output not in OUTPUT_KINDS:
        raise InputError(f"output must be one of {', '.join(OUTPUT_KINDS)}, not {output!r}")
    folder = Path(folder) if folder is not None else default_output_folder(facts)
    check_folder_writable(folder)
    clip_stem = safe_name(facts.name)[:STEM_LIMIT]
    version = versions.latest_version(folder, clip_stem)
    stem = versions.version_stem(clip_stem, version + 1)
    first, last = facts.span.engine_frames
    target, codec = output_target(stem, output, folder)
    previous = ""
    if output in SEQUENCE_FORMATS:
        media, start_index, end_index = str(folder / f"{stem}.%04d.{output}"), first, last
        if version and not overwrite:
            previous = str(folder / f"{versions.version_stem(clip_stem, version)}.%04d.{output}")
    else:
        media, start_index, end_index = target, 0, last - first
    request = RenderRequest(
        sources=tuple(sources), settings=settings,
        input=InputSpec(facts.input, start_number=facts.span.first_number),
        frames=FrameSpec(range=(first, last)),
        output=OutputSpec(target, codec=codec, overwrite=overwrite))
    span = facts.span
    track, insert = placement_track(facts)
    placement = Placement(
        media=media, sequence=output in SEQUENCE_FORMATS, start_index=start_index,
        end_index=end_index, bin=BIN_NAME, name=f"{stem} facefuse", timeline=facts.timeline,
        timeline_id=facts.timeline_id, plate_id=facts.item_id, plate_track=facts.track,
        track=track, insert=insert, record_frame=span.record_start, duration=span.duration,
        start_frame=0, end_frame=span.duration, fps=float(facts.rate.fps),
        markers=review.markers(facts.review_report, span) if facts.review_report else ())
    return ItemSwap(facts, request, placement, previous)


def prepare(swap: ItemSwap) -> int:
    """Start the plan's new version from the previous one's files (versions.seed) before it is
    rendered; the number of frames it starts with."""
    if not swap.previous:
        return 0
    placement = swap.placement
    return versions.seed(swap.previous, placement.media,
                         range(placement.start_index, placement.end_index + 1))


def placement_track(facts: ClipFacts) -> tuple[int, bool]:
    """(the video track directly above the clip's, whether a track must be inserted there:
    it does not exist, or it is busy over the clip's record range, locked or disabled);
    tracks are 1-based as in Resolve."""
    track = facts.track + 1
    start, end = facts.span.record_start, facts.span.record_end
    usable = (track <= facts.video_tracks and track not in facts.locked
              and track not in facts.disabled
              and all(e <= start or s >= end for s, e in facts.busy.get(track, ())))
    return track, not usable


def preview_frame_number(facts: ClipFacts) -> int:
    """The engine frame under the playhead, or the clip's first frame when the playhead is
    elsewhere or Resolve gave no timecode (a page without a playhead)."""
    span = facts.span
    if not facts.current_timecode:
        return span.engine_frames[0]
    here = playhead_frame(facts.current_timecode, facts.start_timecode, facts.start_frame,
                          facts.rate)
    return span.engine_frame(here) if span.contains(here) else span.engine_frames[0]


def result_record(placement: Placement | None, message: str) -> dict[str, Any]:
    """The result file's content: a placement to carry out, or nothing with the reason."""
    return {"schema": RESULT_SCHEMA, "version": RESULT_VERSION,
            "status": "place" if placement is not None else "nothing", "message": message,
            "placement": asdict(placement) if placement is not None else None}


def write_result(path: Path, placement: Placement | None, message: str) -> None:
    """Write the result file atomically (the launcher never reads half a file); OutputError
    naming it when the storage refuses it (full, read-only)."""
    # raw UTF-8, not \u escapes: the Lua launcher copies path bytes as they are
    data = json.dumps(result_record(placement, message), indent=1,
                      ensure_ascii=False).encode("utf-8")
    try:
        atomic_write_bytes(Path(path), data)
    except OSError as exc:
        raise OutputError(f"cannot write the result file {path}: "
                          f"{exc.strerror or exc}") from exc


def replaceable_result(path: Path) -> bool:
    """Whether the existing `path` may be replaced by a result file: an empty regular file or
    an earlier facefuse Resolve result, never anything else (the clip, the job, a FIFO...),
    so a result written for a job refused before its media are known never replaces them."""
    try:
        if os.path.isfile(path) and not os.path.islink(path) and os.path.getsize(path) == 0:
            return True
        data = load_json_file(path, f"the result file {path}", RESULT_LIMIT)
    except (OSError, InputError):
        return False
    return isinstance(data, dict) and data.get("schema") == RESULT_SCHEMA


def read_result(path: Path) -> tuple[Placement | None, str]:
    """(placement or None, message) from a result file; InputError for a broken one."""
    data = load_json_file(path, f"the result file {path}")
    if not isinstance(data, dict) or data.get("schema") != RESULT_SCHEMA:
        raise InputError(f"{path} is not a facefuse Resolve result")
    placed = data.get("placement")
    if not isinstance(placed, dict):
        return None, str(data.get("message"))
    try:
        fields = {**placed, "properties": tuple(placed.get("properties") or PROPERTIES),
                  "markers": tuple(Marker(**m) for m in placed.get("markers") or ())}
        placement = Placement(**fields)
    except TypeError as exc:
        raise InputError(f"{path} is not a facefuse Resolve result: {exc}") from None
    return placement, str(data.get("message"))


def outcome(swap: ItemSwap, summary: RenderSummary) -> tuple[Placement | None, str]:
    """What a finished render means for Resolve: the placement to carry out, or None and why
    nothing is placed (cancelled, frames failed, no face swapped), in one sentence."""
    name, duration = swap.facts.name, swap.facts.span.duration
    if summary.cancelled:
        return None, (f"The render of '{name}' was stopped before the end: nothing placed "
                      "(finished frames are kept; render again to resume)")
    if summary.failed:
        frame, reason = summary.failed[0]
        return None, (f"{len(summary.failed)} frame(s) of '{name}' failed (frame {frame}: "
                      f"{reason}): nothing placed")
    if summary.frames != duration:
        return None, (f"Only {summary.frames} of the {duration} frames '{name}' covers were "
                      "rendered (its media is shorter than the clip on the timeline): nothing "
                      "placed")
    if summary.swapped == 0 and summary.skipped == 0:
        why = "faces were found but none was selected" if summary.unselected \
            else "no face was found"
        return None, (f"No face was swapped in '{name}' ({why} in its {summary.frames} "
                      "frames): nothing placed")
    earlier = f" ({summary.skipped} done by an earlier render)" if summary.skipped else ""
    return swap.placement, (f"Swapped {summary.swapped} of {summary.frames} "
                            f"frames of '{name}'{earlier}; it goes on video track "
                            f"{swap.placement.track} at frame {swap.placement.record_frame}"
                            f"{swap.facts.caveat_note}")
