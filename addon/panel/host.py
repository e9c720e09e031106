"""The small host interface the panel depends on: a clip in, what a render means out. No Qt here.

A host gives the panel a `Clip` (what to swap: the engine input, its frame range, the frame to
preview, where results go by default) or the sentence saying why there is none; it builds the
render request for a clip (`build_render`), is told when each render ends (`rendered`, which
returns the sentence the panel shows) and, once, when the panel closes (`finish`). FileHost is
`facefuse panel [CLIP]` on plain files; the Resolve host's JobHost (addon/resolve/panel_job.py)
serves the Resolve launcher's job and result files.

`only_frames` is how the panel asks for part of a clip (the in/out range, the flagged frames):
the render keeps the clip's analysed range, so its people and decisions stay those the panel
shows, and renders the listed frames.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Protocol

from facefuse import (
    OUTPUT_FOLDER,
    OUTPUT_KINDS,
    FrameSpec,
    InputSpec,
    OutputSpec,
    RenderRequest,
    RenderSummary,
    Settings,
    check_folder_writable,
    output_target,
    safe_name,
    sequence_of_frame,
)

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Clip:
    """What the panel swaps. frames: the inclusive engine range (None: all); preview_frame: the
    frame Preview shows (None: the input's first). note: what the panel says when it shows the
    clip (a clip with a note has its faces found at once); item: the host's own record of the
    clip (Resolve: the timeline item's facts), handed back to the host untouched."""

    input: str
    label: str
    folder: Path
    frames: tuple[int, int] | None = None
    preview_frame: int | None = None
    start_number: int = 1
    note: str = ""
    item: Any = None


class Host(Protocol):
    """What the panel asks of its host (FileHost here, JobHost in the Resolve host)."""

    clip: Clip | None
    problem: str

    def open(self, path: Path) -> Clip: ...

    def build_render(self, clip: Clip, sources: tuple[Path, ...], settings: Settings,
                     output: str, folder: Path) -> tuple[RenderRequest, Any]: ...

    def rendered(self, plan: Any, summary: RenderSummary) -> str: ...

    def finish(self, message: str) -> None: ...


def clip_from_file(path: Path) -> Clip:
    """A plain video or image sequence (a pattern, or one frame of it picked: the sequence,
    shown at that frame): every frame, results in a facefuse folder beside it."""
    path = Path(path)
    found = sequence_of_frame(path)
    if found is not None:
        pattern, number = found
        return Clip(input=pattern.display, label=Path(pattern.display).name,
                    folder=path.parent / OUTPUT_FOLDER, preview_frame=number)
    return Clip(input=str(path), label=path.name, folder=path.parent / OUTPUT_FOLDER)


def file_request(clip: Clip, sources: tuple[Path, ...], settings: Settings, output: str,
                 folder: Path) -> RenderRequest:
    """The render request for a plain clip. output: one of OUTPUT_KINDS. Raises the engine's
    errors (bad folder, ...)."""
    if output not in OUTPUT_KINDS:
        raise ValueError(output)
    check_folder_writable(folder)
    stem = safe_name(clip.label.split(".")[0])
    target, codec = output_target(stem, output, folder)
    return RenderRequest(sources=sources, settings=settings,
                         input=InputSpec(clip.input, start_number=clip.start_number),
                         frames=FrameSpec(range=clip.frames),
                         output=OutputSpec(target, codec=codec))


OPEN_HINT = "Open a clip to swap (Open clip…)"


def only_frames(request: RenderRequest, ranges: tuple[tuple[int, int], ...],
                force: bool = False) -> RenderRequest:
    """`request` rendering only the frames of `ranges` (inclusive, inside
    request.frames.range, which stays the analysed range); force: render them again even where
    they are finished (a re-render)."""
    return replace(request, frames=replace(request.frames, only=ranges),
                   output=replace(request.output, overwrite=request.output.overwrite or force))


def render_sentence(summary: RenderSummary) -> str:
    """What a finished render of a plain clip says: frames finished by an earlier render of
    the same settings are counted apart, and so are frames left as they are on purpose (by
    the user's corrections, or faces the selector did not choose), not as frames left
    unswapped."""
    done = summary.frames - summary.skipped
    text = f"{summary.swapped} of {done} frames swapped" if done else "Nothing to render"
    chosen = summary.unselected - summary.corrected
    for count, words in ((summary.corrected, "left as they are by your corrections"),
                         (chosen, "with faces the selector did not choose"),
                         (summary.no_face, "without a face")):
        if count and done:
            text += f", {count} {words}"
    if summary.skipped:
        text += (f", {summary.skipped} already rendered" if done else
                 f": all {summary.skipped} frames were already rendered with these settings")
    return text + (" (stopped before the end)" if summary.cancelled else "")


def render_went_well(summary: RenderSummary) -> bool:
    """Whether a render ended as asked: not cancelled, nothing failed, and frames swapped,
    already rendered, or left as they are by the user's corrections only (a render that swapped
    nothing because no face was found or chosen is worth a warning)."""
    if summary.cancelled or summary.failed:
        return False
    unplanned = summary.no_face + summary.unselected - summary.corrected
    return summary.swapped > 0 or summary.skipped > 0 or (summary.corrected > 0
                                                          and not unplanned)


class FileHost:
    """`facefuse panel [CLIP]`: plain files, nothing to place."""

    def __init__(self, path: Path | None) -> None:
        self.clip = clip_from_file(path) if path is not None else None
        self.problem = "" if path is not None else OPEN_HINT

    def open(self, path: Path) -> Clip:
        self.clip = clip_from_file(path)
        self.problem = ""
        return self.clip

    def build_render(self, clip: Clip, sources: tuple[Path, ...], settings: Settings,
                     output: str, folder: Path) -> tuple[RenderRequest, Any]:
        return file_request(clip, sources, settings, output, folder), None

    def rendered(self, plan: Any, summary: RenderSummary) -> str:
        message = render_sentence(summary)
        log.info("%s", message)
        return message

    def finish(self, message: str) -> None:
        log.info("%s", message)
