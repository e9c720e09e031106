"""The small host interface the panel depends on: clip facts in, placement out. No Qt here.

A host gives the panel a `Clip` (what to swap: the engine input, its frame range, the frame to
preview, where results go by default) or the sentence saying why there is none, and is told
once, when the panel closes, what to place (`finish`). FileHost is `facefuse panel [CLIP]` on
plain files; JobHost is the Resolve launcher's job and result files.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path

from facefuse.config import Settings
from facefuse.errors import FacefuseError
from facefuse.hosting import resolve_plan
from facefuse.hosting.resolve_jobs import ClipFacts, read_job
from facefuse.io.files import check_folder_writable
from facefuse.shot.request import RenderRequest

log = logging.getLogger(__name__)



@dataclass(frozen=True, slots=True)
class Clip:
    """What the panel swaps. frames: the inclusive engine range (None: all); preview_frame: the
    frame Preview shows (None: the input's first); facts: the Resolve item, when there is one."""

    input: str
    label: str
    folder: Path
    frames: tuple[int, int] | None = None
    preview_frame: int | None = None
    start_number: int = 1
    facts: ClipFacts | None = None


def clip_from_file(path: Path) -> Clip:
    """A plain video or image sequence: every frame, results in a facefuse folder beside it."""
    path = Path(path)
    return Clip(input=str(path), label=path.name, folder=path.parent / resolve_plan.OUTPUT_FOLDER)


def clip_from_facts(facts: ClipFacts) -> Clip:
    """The Resolve item: its used range, the frame under the playhead, results beside its media."""
    return Clip(input=facts.input, label=f"{facts.name} (V{facts.track}, {facts.timeline})",
                folder=resolve_plan.default_output_folder(facts),
                frames=facts.span.engine_frames,
                preview_frame=resolve_plan.preview_frame_number(facts),
                start_number=facts.span.first_number, facts=facts)


def build_render(clip: Clip, sources: tuple[Path, ...], settings: Settings, output: str,
                 folder: Path) -> tuple[RenderRequest, resolve_plan.ResolvePlan | None]:
    """The render request for the clip (and, for a Resolve item, its plan with the placement).
    output: one of resolve_plan.OUTPUT_KINDS. Raises the engine's errors (bad folder, ...)."""
    if clip.facts is not None:
        swap = resolve_plan.plan(clip.facts, sources, settings, output, folder)
        return swap.request, swap
    if output not in resolve_plan.OUTPUT_KINDS:
        raise ValueError(output)
    check_folder_writable(folder)
    stem = resolve_plan.safe_name(clip.label.split(".")[0])
    target, codec = resolve_plan.output_target(stem, output, folder)
    return RenderRequest(sources=sources, input=clip.input, output=target,
                         settings=settings, frames=clip.frames, codec=codec,
                         start_number=clip.start_number), None


class FileHost:
    """`facefuse panel [CLIP]`: plain files, nothing to place."""

    def __init__(self, path: Path | None) -> None:
        self.clip = clip_from_file(path) if path is not None else None
        self.problem = "" if path is not None else "Open a clip to swap (Clip > Open)"

    def open(self, path: Path) -> Clip:
        self.clip = clip_from_file(path)
        self.problem = ""
        return self.clip

    def rendered(self, placement: resolve_plan.Placement | None, message: str) -> None:
        log.info("%s", message)

    def finish(self, message: str) -> None:
        log.info("%s", message)


class JobHost:
    """The Resolve launcher's job: the clip from its job file; the result file says what the
    launcher places once the panel closes (the last complete render, or nothing and why)."""

    def __init__(self, job: Path, result: Path) -> None:
        self.result = Path(result)
        self.placement: resolve_plan.Placement | None = None
        self.message = "The panel was closed before a render finished: nothing placed"
        try:
            self.clip: Clip | None = clip_from_facts(read_job(job))
            self.problem = ""
        except FacefuseError as exc:
            self.clip, self.problem = None, str(exc)
            self.message = f"{exc}: nothing placed"
        resolve_plan.write_result(self.result, None, self.message)

    def open(self, path: Path) -> Clip:
        """A plain file opened instead (previs): nothing of it is placed in Resolve."""
        self.clip = clip_from_file(path)
        return self.clip

    def rendered(self, placement: resolve_plan.Placement | None, message: str) -> None:
        """A render ended: remember what to place (None: keep the previous complete one)."""
        if placement is not None:
            self.placement, self.message = placement, message
        elif self.placement is None:
            self.message = message
        resolve_plan.write_result(self.result, self.placement, self.message)

    def finish(self, message: str) -> None:
        """The panel closes; `message` is why when a render was still running."""
        if message and self.placement is None:
            self.message = message
        resolve_plan.write_result(self.result, self.placement, self.message)
