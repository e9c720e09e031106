"""The render request of each clip to swap, and where its render goes.

Each clip renders its media over its used range and handles (selection.ClipSwap.frames, in the
engine's numbers: see media) into the output folder, by default as a movie `<clip>.v001.mov`
(ProRes 4444 unless the command names another codec: every editor and every OpenTimelineIO
adapter links a movie, while an image sequence cannot leave OTIO for FCP 7 XML or AAF), or as a
sequence `<clip>.v001.####.exr` (or .png, .tif, .dpx), or with `same` as the kind of its media:
a sequence with its extension, a movie with its container (the request's codec). Versions are
never overwritten: each clip takes the version after the highest one of its name already in the
folder (v001, v002, ...), so an editor that imported an earlier swap keeps its frames. Clips of
the same name get `_2`, `_3`, ... in timeline order. The requests are exactly what `facefuse
render` runs (a farm runs their `render_args`), made from one template request the command line
gives. With reports, each clip's review report goes to `<render>.review/` (`facefuse render
--report`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from facefuse import (
    InputError,
    RenderRequest,
    check_folder_writable,
    check_path_length,
    safe_name,
)

from .selection import ClipSwap

SEQUENCE_KINDS = ("exr", "png", "tif", "dpx")
MOVIE = "mov"
MOVIE_CODEC = "prores_4444"
SAME = "same"
OUTPUT_CHOICES = (MOVIE, *SEQUENCE_KINDS, SAME)
DEFAULT_KIND = MOVIE
PADDING = 4
REVIEW_SUFFIX = ".review"  # a clip's review report folder: <render>.review/report.json
REPORT_NAME = "report.json"
LARGEST_SEQUENCE_FRAME = 2**31 - 1  # ImageSequenceReference.start_frame is a C int


@dataclass(frozen=True, slots=True, eq=False)
class ClipRender:
    """One clip's render: the clip, the request, the render's name (`A001.v002`) and whether it
    writes an image sequence. report: where its review report (report.json) goes, whose flags
    become markers on the swapped clip; None without one."""

    swap: ClipSwap
    request: RenderRequest
    name: str
    sequence: bool
    report: Path | None = None

    @property
    def output(self) -> Path:
        """The render's output: the movie, or the sequence's pattern (name.####.exr)."""
        return Path(self.request.output.path)


def clip_renders(swaps: Sequence[ClipSwap], template: RenderRequest, folder: Path,
                 kind: str = DEFAULT_KIND, report: bool = False,
                 codec: str | None = None) -> tuple[ClipRender, ...]:
    """A render per clip into `folder` (see the module docstring). template: the render
    options (its input, output, frames and start number are each clip's own). report: each
    clip's review report goes to `<render>.review/` beside it. codec: the movie kind's codec
    when the command names one (else MOVIE_CODEC). InputError for an unknown kind, OutputError
    when the folder cannot be written."""
    if kind not in OUTPUT_CHOICES:
        raise InputError(f"the output kind must be one of {', '.join(OUTPUT_CHOICES)}, "
                         f"not {kind!r}")
    check_folder_writable(folder)
    if kind == MOVIE:
        template = replace(template, output=replace(template.output, codec=codec or MOVIE_CODEC))
    return tuple(_render(swap, stem, template, folder, kind, report)
                 for swap, stem in zip(swaps, unique_stems(swaps)))


def unique_stems(swaps: Sequence[ClipSwap]) -> list[str]:
    """A file stem per clip from its name; a repeated name gets _2, _3, ... in order."""
    stems: list[str] = []
    for swap in swaps:
        stem = candidate = safe_name(swap.clip.name)
        count = 1
        while candidate in stems:
            count += 1
            candidate = f"{stem}_{count}"
        stems.append(candidate)
    return stems


def next_version(folder: Path, stem: str) -> int:
    """One above the highest version of `stem` in `folder` (1 when there is none)."""
    found = re.compile(rf"^{re.escape(stem)}\.v(\d+)(\.|$)")
    versions = [int(m.group(1)) for p in (folder.iterdir() if folder.is_dir() else ())
                if (m := found.match(p.name))]
    return max(versions, default=0) + 1


def _render(swap: ClipSwap, stem: str, template: RenderRequest, folder: Path,
            kind: str, report: bool) -> ClipRender:
    name = f"{stem}.v{next_version(folder, stem):03d}"
    media = swap.media
    suffix = f".{MOVIE}" if kind == MOVIE else Path(media.input).suffix
    sequence = kind in SEQUENCE_KINDS or (kind == SAME and media.sequence)
    extension = kind if kind in SEQUENCE_KINDS else suffix.lstrip(".")
    output = folder / (f"{name}.{'#' * PADDING}.{extension}" if sequence else f"{name}{suffix}")
    request = replace(
        template,
        input=replace(template.input, path=media.input,
                      start_number=template.input.start_number if media.sequence
                      else media.first_number),
        frames=replace(template.frames, range=swap.frames, chunk=None, chunk_frames=None),
        output=replace(template.output, path=str(output),
                       rate=media.rate if media.sequence else template.output.rate))
    review = folder / f"{name}{REVIEW_SUFFIX}" / REPORT_NAME if report else None
    for path in (output, review):
        if path is not None:
            check_path_length(path, f"the render of {swap.label}")
    if sequence and swap.frames[1] > LARGEST_SEQUENCE_FRAME:
        raise InputError(f"{swap.label} uses media frames up to {swap.frames[1]}, past the "
                         f"largest number an OpenTimelineIO image sequence holds "
                         f"({LARGEST_SEQUENCE_FRAME}): render it as a movie (--format mov)")
    return ClipRender(swap, request, name, sequence, review)
