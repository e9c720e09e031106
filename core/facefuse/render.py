"""`render`: a shot (video or image sequence) in, swapped frames out. One entry point for hosts.

Two passes. Pass 1 (analysis) decodes the whole requested range, detects and embeds every face,
and caches that per input content; tracks, the shot-level identity choice and landmark smoothing
are derived from it, so every chunk of a farm render makes the same decisions. Pass 2 decodes
only the frames still to do, swaps them and writes them, reading, inference and writing running
in three threads joined by small bounded queues, so memory does not grow with shot length.

Image-sequence outputs are written frame by frame (temporary name, then rename) and resumable:
a frame whose output exists, reads completely and carries the same render fingerprint is skipped.
Video outputs are written in one pass over the requested range to a temporary file that is
renamed when complete; they cannot be chunked or resumed (render a sequence for farm work).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path
from types import MappingProxyType

from .config import Settings

log = logging.getLogger(__name__)

QUEUE_FRAMES = 4


@dataclass(frozen=True, slots=True)
class RenderRequest:
    """Everything one render needs.

    input: a video file or an image-sequence pattern (name.####.exr, name.%04d.exr, name.#.exr).
    output: a video file or an image-sequence pattern. frames: inclusive (first, last) in the
    input's own numbering, None for all. chunk: (index, count), 1-based. matte / patch: optional
    image-sequence patterns for the blend mask and the premultiplied RGBA face patch.
    colorspace: the input's OCIO colour space; None picks a default per format, "none" disables
    conversion. smoothing: landmark smoothing on/off; smoothing_min_cutoff / beta tune it.
    rate: frames per second of a video written from an image sequence (default 24).
    """

    sources: tuple[Path, ...]
    input: str
    output: str
    settings: Settings = field(default_factory=Settings)
    frames: tuple[int, int] | None = None
    chunk: tuple[int, int] | None = None
    matte: str | None = None
    patch: str | None = None
    colorspace: str | None = None
    codec: str = "h264"
    overwrite: bool = False
    fail_fast: bool = False
    smoothing: bool = True
    smoothing_min_cutoff: float | None = None
    smoothing_beta: float | None = None
    start_number: int = 1
    conform_vfr: bool = False
    rate: Fraction | None = None


@dataclass(frozen=True, slots=True)
class FrameReport:
    """One finished frame: status is "swapped", "no_face", "skipped" or "failed"."""

    frame: int
    status: str
    faces: int = 0
    ms: Mapping[str, float] = field(default_factory=lambda: MappingProxyType({}))
    error: str = ""


@dataclass(frozen=True, slots=True)
class RenderSummary:
    frames: int
    swapped: int
    no_face: int
    skipped: int
    failed: tuple[tuple[int, str], ...]
    seconds: float
    cancelled: bool

    @property
    def done(self) -> int:
        return self.swapped + self.no_face

    @property
    def fps(self) -> float:
        return self.done / self.seconds if self.seconds > 0 else 0.0


ProgressCallback = Callable[[FrameReport], None]
CancelCheck = Callable[[], bool]


def render(request: RenderRequest, on_progress: ProgressCallback | None = None,
           cancel: CancelCheck | None = None) -> RenderSummary:
    """Render a shot (see the module docstring); the CLI, Blender, Resolve and farms call this.

    on_progress(FrameReport) is called once per frame: from the calling thread for frames skipped
    as already done, from the writer thread for rendered ones.
    cancel() is checked between frames; cancelling leaves only complete output frames (and no
    video file). User errors raise FacefuseError subclasses before any output is written.
    """
    from .pipeline import Pipeline
    from .render_job import RenderJob
    from .shots import open_input

    started = time.perf_counter()
    shot = open_input(request.input, request.start_number, request.conform_vfr)
    try:
        job = RenderJob(request, shot)
        with Pipeline(request.settings) as pipeline:
            counts, finished = job.run(pipeline, on_progress or _ignore, cancel or _never)
        stopped_by_failure = request.fail_fast and bool(counts.failed)
    finally:
        shot.close()
    return RenderSummary(frames=len(job.numbers), swapped=counts.swapped, no_face=counts.no_face,
                         skipped=counts.skipped, failed=tuple(counts.failed),
                         seconds=time.perf_counter() - started,
                         cancelled=not finished and not stopped_by_failure)


def _ignore(_report: FrameReport) -> None:
    return None


def _never() -> bool:
    return False
