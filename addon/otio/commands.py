"""What `facefuse timeline swap` does once the command line has parsed it: read the timeline,
choose and check the clips (selection: nothing is rendered or written when one is refused),
plan their versioned renders, render them with the command line's own render (progress and
SIGTERM are the command line's), and write the swapped timeline (conform) once every render
has finished. With a farm, `plan_swap` and `write_swapped` alone: the farm runs the requests.
Nothing here prints: sentences go to `say`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import opentimelineio as otio

from facefuse import ExitCode, InputError, RenderRequest, RenderSummary

from .conform import swapped_timeline, write_timeline
from .plan import DEFAULT_KIND, ClipRender, plan_renders
from .selection import select_clips

# the command line's render: the summary, and whether SIGTERM stopped it
Render = Callable[[RenderRequest], tuple[RenderSummary, bool]]
Say = Callable[[str], None]
SWAPPED_SUFFIX = ".swapped.otio"


@dataclass(frozen=True, slots=True, eq=False)
class TimelineSwap:
    """A timeline's swap: the timeline read, a render per clip, the name of the markers that
    selected them (None: every clip) and where the swapped timeline goes."""

    timeline: otio.schema.Timeline
    renders: tuple[ClipRender, ...]
    marker: str | None
    path: Path


def read_timeline(path: Path) -> otio.schema.Timeline:
    """The timeline in `path` (.otio, or any format an installed OTIO adapter reads);
    InputError in one sentence when it cannot be read or holds no single timeline."""
    if not Path(path).is_file():
        raise InputError(f"the timeline {path} does not exist")
    try:
        read = otio.adapters.read_from_file(str(path))
    except Exception as exc:  # noqa: BLE001 - OTIO raises many kinds for a file it cannot read
        raise InputError(f"cannot read the timeline {path}: {exc}") from None
    if isinstance(read, otio.schema.SerializableCollection):
        timelines = list(read.find_children(descended_from_type=otio.schema.Timeline))
        read = timelines[0] if len(timelines) == 1 else read
    if not isinstance(read, otio.schema.Timeline):
        raise InputError(f"{path} holds {read.schema_name()}, not one timeline")
    return read


def plan_swap(edit: Path, template: RenderRequest, folder: Path, marker: str | None,
              handles: int = 0, kind: str = DEFAULT_KIND, report: bool = False) -> TimelineSwap:
    """Read `edit`, choose and check its clips, and plan a render of each into `folder`
    (marker None: every clip; handles: frames beyond each used range; report: a review report
    per clip, its flags as markers). InputError in one sentence for the first problem; nothing
    is written."""
    if handles < 0:
        raise InputError(f"--handles must be 0 or more, not {handles}")
    edit = Path(edit).absolute()
    timeline = read_timeline(edit)
    swaps = select_clips(timeline, marker, handles, edit.parent)
    renders = plan_renders(swaps, template, Path(folder).absolute(), kind, report)
    path = Path(folder).absolute() / f"{edit.stem}{SWAPPED_SUFFIX}"
    return TimelineSwap(timeline, renders, marker, path)


def write_swapped(swap: TimelineSwap) -> Path:
    """Write the swapped timeline (conform) and return its path."""
    write_timeline(swapped_timeline(swap.timeline, swap.renders, swap.marker), swap.path)
    return swap.path


def run_swap(swap: TimelineSwap, render: Render, say: Say) -> tuple[int, str]:
    """Render every clip in turn (a line to `say` for each), then write the swapped timeline.
    Returns the exit code and the closing sentence: 0 written; 143 a render was stopped by
    SIGTERM, 5 frames failed, 2 a movie had fewer frames than the timeline says (the timeline
    is then not written; finished frames are kept)."""
    for clip in swap.renders:
        summary, terminated = render(clip.request)
        failure = _failure(clip, summary, terminated)
        if failure is not None:
            code, why = failure
            return code, (f"the render of {clip.swap.label} {why}: {swap.path.name} is not "
                          f"written (finished frames stay in {clip.output.parent})")
        say(_rendered(clip, summary))
    path = write_swapped(swap)
    tracks = len({clip.swap.track for clip in swap.renders})
    return ExitCode.OK, (f"wrote {path}: {len(swap.renders)} swapped clip(s) on {tracks} new "
                         "track(s)")


def _failure(clip: ClipRender, summary: RenderSummary, terminated: bool
             ) -> tuple[int, str] | None:
    """Why a finished render cannot go on the timeline (exit code, words), or None."""
    if summary.cancelled:
        return ExitCode.TERMINATED if terminated else ExitCode.INTERRUPTED, "was stopped"
    if summary.failed:
        frame, reason = summary.failed[0]
        return ExitCode.FRAMES_FAILED, (f"failed in {len(summary.failed)} frame(s) (frame "
                                        f"{frame}: {reason})")
    first, last = clip.swap.frames
    if summary.frames != last - first + 1:
        return ExitCode.USAGE, (f"covered {summary.frames} of frames {first}-{last}, as its "
                                "media has fewer frames than the timeline says")
    return None


def _rendered(clip: ClipRender, summary: RenderSummary) -> str:
    first, last = clip.swap.frames
    none = " (no face was swapped: it shows the original)" if summary.swapped == 0 else ""
    return f"{clip.swap.label}: frames {first}-{last} rendered as {clip.name}, " \
           f"{summary.swapped} of {summary.frames} swapped{none}"
