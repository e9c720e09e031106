"""What `facefuse timeline swap` does once the command line has parsed it: read the timeline,
choose and check the clips (selection: nothing is rendered or written when one is refused),
plan their versioned renders, render them with the command line's own render (progress and
SIGTERM are the command line's), and write the swapped timeline (conform) once every render
has finished: as .otio, and also in the edit's own format when it was read through another
adapter (`edit.xml` -> `edit.swapped.otio` and `edit.swapped.xml`). With a farm, `timeline_swap`
and `write_swapped` alone: the farm runs the requests. Nothing here prints: sentences go to
`say`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import opentimelineio as otio

from facefuse import (
    ExitCode,
    InputError,
    RenderRequest,
    RenderSummary,
    check_path_length,
    stopped_exit_code,
)

from .conform import NativeWriteError, swapped_timeline, write_native, write_timeline
from .paths import normalised
from .renders import DEFAULT_KIND, ClipRender, clip_renders
from .selection import select_clips

# the command line's render: the summary, and whether SIGTERM stopped it
Render = Callable[[RenderRequest], tuple[RenderSummary, bool]]
Say = Callable[[str], None]
SWAPPED = ".swapped"
OTIO_SUFFIX = ".otio"


@dataclass(frozen=True, slots=True, eq=False)
class TimelineSwap:
    """A timeline's swap: the timeline read, a render per clip, the name of the markers that
    selected them (None: every clip), where the swapped timeline goes (`path`, and `native`:
    the same in the edit's own format, None for an .otio edit), the folder the edit was read
    from (its relative media paths start there) and a sentence per clip left alone."""

    timeline: otio.schema.Timeline
    renders: tuple[ClipRender, ...]
    marker: str | None
    path: Path
    native: Path | None
    base: Path
    notes: tuple[str, ...] = ()

    @property
    def paths(self) -> tuple[Path, ...]:
        """Every file the swapped timeline is written to."""
        return (self.path,) if self.native is None else (self.path, self.native)


def read_timeline(path: Path, adapter_args: Mapping[str, Any] | None = None,
                  name: str | None = None) -> otio.schema.Timeline:
    """The timeline in `path` (.otio, or any format an installed OTIO adapter reads, given
    `adapter_args`: an EDL's rate=25); of a file holding several (a Premiere AAF of two
    sequences), the one called `name`. InputError in one sentence when it cannot be read or
    holds no such timeline."""
    if not Path(path).is_file():
        raise InputError(f"the timeline {path} does not exist")
    try:
        read = otio.adapters.read_from_file(str(path), **dict(adapter_args or {}))
    except Exception as exc:  # noqa: BLE001 - OTIO raises many kinds for a file it cannot read
        raise InputError(f"cannot read the timeline {path}: {_first_line(exc)}") from None
    if not isinstance(read, otio.core.SerializableObject):
        raise InputError(f"{path} is not an OpenTimelineIO file: it holds plain "
                         f"{type(read).__name__.removeprefix('Any').lower()} data, not a timeline")
    timelines = [read] if isinstance(read, otio.schema.Timeline) else \
        list(read.find_children(descended_from_type=otio.schema.Timeline)) \
        if isinstance(read, otio.schema.SerializableCollection) else []
    if not timelines:
        raise InputError(f"{path} holds {read.schema_name()}, not a timeline")
    if name is not None:
        chosen = [timeline for timeline in timelines if timeline.name == name]
        if not chosen:
            raise InputError(f"{path} holds no timeline named {name!r} (it holds "
                             f"{_names(timelines)})")
        return chosen[0]
    if len(timelines) > 1:
        raise InputError(f"{path} holds {len(timelines)} timelines ({_names(timelines)}): "
                         "name one with --timeline")
    return timelines[0]


def _names(timelines: list[otio.schema.Timeline]) -> str:
    return ", ".join(repr(timeline.name) for timeline in timelines)


def _first_line(exc: Exception) -> str:
    text = str(exc).strip() or type(exc).__name__
    return text.splitlines()[0]


def timeline_swap(edit: Path, template: RenderRequest, folder: Path, marker: str | None,
              handles: int = 0, kind: str = DEFAULT_KIND, report: bool = False,
              codec: str | None = None, adapter_args: Mapping[str, Any] | None = None,
              name: str | None = None) -> TimelineSwap:
    """Read `edit` (with `adapter_args`; the timeline called `name` of several), choose and check
    its clips, and plan a render of each into `folder` (marker None: every clip that shows
    footage; handles: frames beyond each used range; kind and codec: what each render
    writes, renders.clip_renders; report: a review report per clip, its flags as markers).
    InputError in one sentence for the first problem; nothing is written."""
    if handles < 0:
        raise InputError(f"--handles must be 0 or more, not {handles}")
    edit, folder = normalised(Path(edit)), normalised(Path(folder))
    check_path_length(edit, "the timeline")
    check_path_length(folder / f"{edit.stem}{SWAPPED}{OTIO_SUFFIX}", "the swapped timeline")
    timeline = read_timeline(edit, adapter_args, name)
    selection = select_clips(timeline, marker, handles, edit.parent, folder)
    renders = clip_renders(selection.swaps, template, folder, kind, report, codec)
    suffix = edit.suffix.lower()
    native = None if suffix in ("", OTIO_SUFFIX) else folder / f"{edit.stem}{SWAPPED}{suffix}"
    return TimelineSwap(timeline, renders, marker, folder / f"{edit.stem}{SWAPPED}{OTIO_SUFFIX}",
                        native, edit.parent, selection.notes)


def write_swapped(swap: TimelineSwap) -> tuple[tuple[Path, ...], str | None]:
    """Write the swapped timeline (conform) as .otio, then in the edit's own format where it
    has one; (the paths written, a sentence when the edit's own format could not be)."""
    swapped = swapped_timeline(swap.timeline, swap.renders, swap.marker, swap.base,
                               swap.path.parent)
    write_timeline(swapped, swap.path)
    if swap.native is None:
        return (swap.path,), None
    try:
        write_native(swapped, swap.native)
    except OSError as exc:
        return (swap.path,), f"{swap.native.name} could not be written ({exc.strerror or exc})"
    except NativeWriteError as exc:
        return (swap.path,), f"{swap.native.name} is not written: {exc}"
    except Exception as exc:  # noqa: BLE001 - adapters raise many kinds for what they cannot hold
        return (swap.path,), (f"OpenTimelineIO's {swap.native.suffix} writer cannot write this "
                              f"timeline ({_first_line(exc)}): convert {swap.path.name} in "
                              "the editor's own importer or with otioconvert")
    return swap.paths, None


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
    paths, problem = write_swapped(swap)
    if problem is not None:
        say(f"warning: {problem}")
    tracks = len({clip.swap.track for clip in swap.renders})
    written = " and ".join(str(path) for path in paths)
    return ExitCode.OK, (f"wrote {written}: {len(swap.renders)} swapped clip(s) on {tracks} "
                         "new track(s)")


def _failure(clip: ClipRender, summary: RenderSummary, terminated: bool
             ) -> tuple[int, str] | None:
    """Why a finished render cannot go on the timeline (exit code, words), or None."""
    if summary.cancelled:
        return stopped_exit_code(terminated), "was stopped"
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
