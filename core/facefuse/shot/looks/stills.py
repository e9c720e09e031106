"""`render_stills`: frames of a shot exactly as its render writes them, one file per frame.

A still is made by the render itself, not by a second code path: the request is rendered to an
image sequence in a folder of the caller's, its frame list (`only`) the frames asked for, in one
render. The request keeps its analysed range (`RenderRequest.frames`), so the analysis, the shot
plan (people, who is swapped with which source, tracks, gap fills, smoothing) and every option
are those of the full render, and a still of frame N holds the pixels a render of the same
request writes for frame N. A shot not analysed yet is analysed first (and cached) as a render
would, with "analysis" progress on `on_phase`.

The still's format. Given a suffix (STILL_SUFFIXES: .png, .tif / .tiff, .exr), a still holds
what a render of the request to an image sequence of that format writes (io.plates chooses the
pixel type as for any sequence output: a PNG of a float plate is 16-bit, of an 8-bit one 8-bit).
Without one, `native_suffix` picks the format that keeps the render's frame unchanged: an input
plate's own format when it is PNG, TIFF or EXR, else PNG for 8-bit frames, 16-bit TIFF for
deeper integer frames (10-bit video, DPX) and EXR for float frames. For a request whose output is
a video, a still is the frame the render hands the encoder, in the plate's space, before encoding
(a lossy codec changes it further; a scene-linear plate is display-encoded by the video writer).
The request's matte, patch, chunk and video encoder options play no part in a still; its EXR or
TIFF compression is kept where the still's format takes it.

Stills are named `<name>.<frame, 8 digits><suffix>` in `out_dir`, written atomically by the
render's sequence writer (temporary name, then rename) and rewritten when asked for again.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace
from pathlib import Path
from types import MappingProxyType

from ...errors import InputError
from ...io import plates
from ...io.sequences import FramePattern
from ...pipeline import Pipeline
from ...stopping import Cancelled
from ..contract.frames import select_frames
from ..contract.inputs import open_input
from ..contract.request import CancelCheck, PhaseCallback, ProgressCallback, RenderRequest
from ..run.render import render

STILL_SUFFIXES = (".png", ".tif", ".tiff", ".exr")
# OIIO file format names of the plates a still keeps as they are
_NATIVE_FORMATS = MappingProxyType({"png": ".png", "tiff": ".tif", "openexr": ".exr"})


class StillsCancelled(Cancelled):
    """render_stills was cancelled (cancel() turned True) before its stills were written."""


def check_still_suffix(suffix: str, label: str = "a still") -> None:
    """InputError unless `suffix` is one a still is written as (STILL_SUFFIXES)."""
    if suffix.lower() not in STILL_SUFFIXES:
        shown = suffix or "a name without an extension"
        raise InputError(f"{label} must be a .png, .tif, .tiff or .exr file (lossless, as a "
                         f"render writes an image sequence), not {shown}")


def render_stills(request: RenderRequest, frames: Iterable[int], out_dir: Path,
                  pipeline: Pipeline | None = None, on_phase: PhaseCallback | None = None,
                  on_progress: ProgressCallback | None = None,
                  cancel: CancelCheck | None = None, suffix: str | None = None,
                  name: str = "still") -> dict[int, Path]:
    """Each of `frames` (the input's numbering) as the render of `request` writes it, as a
    still in `out_dir` (see the module docstring); frame -> its path.

    suffix: the still's format (STILL_SUFFIXES; None: native_suffix). pipeline, on_phase,
    on_progress and cancel are render's. InputError for a frame outside the request's analysed
    range, one that cannot be decoded, and every error the render raises for the request
    (unknown person, bad source, ...) before anything is written; StillsCancelled."""
    wanted = sorted(set(frames))
    if not wanted:
        return {}
    analysed, native = _facts(request, wanted)
    chosen = (suffix or native).lower()
    check_still_suffix(chosen)
    pattern = str(Path(out_dir) / f"{name}.%08d{chosen}")
    output = replace(request.output, path=pattern, matte=None, patch=None, overwrite=True,
                     crf=None, preset=None,
                     compression=_compression(request.output.compression, chosen))
    only = tuple(_runs(wanted, analysed))
    base = replace(request, output=output, fail_fast=False,
                   frames=replace(request.frames, chunk=None, chunk_frames=None, only=only))
    summary = render(base, on_progress, cancel, on_phase, pipeline=pipeline,
                     sign=False)  # one render: one plan, one pass; scratch stills are not signed
    if summary.failed:
        number, why = summary.failed[0]
        raise InputError(f"frame {number} of {request.input.path} cannot be rendered: {why}")
    if summary.cancelled:
        raise StillsCancelled("the preview was cancelled")
    written = FramePattern.parse(pattern)
    return {number: written.path(number) for number in wanted}


def native_suffix(request: RenderRequest) -> str:
    """The still format that keeps the render's frames of `request` unchanged (see the module
    docstring)."""
    shot = open_input(request.input.path, request.input.start_number, request.input.conform_vfr,
                      request.settings.threads)
    try:
        return _native(shot.plate_format, shot.pixel_type)
    finally:
        shot.close()


def _native(like: plates.PlateFormat | None, pixel_type: str) -> str:
    if like is not None and like.file_format in _NATIVE_FORMATS:
        return _NATIVE_FORMATS[like.file_format]
    if pixel_type == "uint8":
        return ".png"
    return ".tif" if pixel_type == "uint16" else ".exr"


def _facts(request: RenderRequest, wanted: list[int]) -> tuple[tuple[int, ...], str]:
    """The request's analysed frames and native still suffix; InputError when a wanted frame
    is not among those frames."""
    shot = open_input(request.input.path, request.input.start_number, request.input.conform_vfr,
                      request.settings.threads)
    try:
        selection = select_frames(shot.frame_numbers, request.frames.range, None, shot.label,
                                  contiguous=shot.is_sequence)
        native = _native(shot.plate_format, shot.pixel_type)
        available = set(shot.frame_numbers)
        label = shot.label
        first, last = shot.frame_numbers[0], shot.frame_numbers[-1]
    finally:
        shot.close()
    inside = set(selection.analysed)
    for number in wanted:
        if number not in available:
            raise InputError(f"frame {number} is not in {label}, which has frames "
                             f"{first}-{last}")
        if number not in inside:
            raise InputError(f"frame {number} is outside the frames this render analyses "
                             f"({selection.analysed[0]}-{selection.analysed[-1]}, --frames); "
                             "a preview shows a frame of the render, so pick one inside them")
    return selection.analysed, native


def _runs(wanted: list[int], analysed: tuple[int, ...]) -> list[tuple[int, int]]:
    """`wanted` as (first, last) runs of consecutive analysed frames (the render's frame list)."""
    index = {number: i for i, number in enumerate(analysed)}
    runs: list[list[int]] = []
    for number in wanted:
        if runs and index[number] == index[runs[-1][-1]] + 1:
            runs[-1].append(number)
        else:
            runs.append([number])
    return [(run[0], run[-1]) for run in runs]


def _compression(compression: str | None, suffix: str) -> str | None:
    """The request's compression where a still of `suffix` takes it, else None (the still
    format's own)."""
    if compression is None:
        return None
    try:
        plates.check_compression(Path("still" + suffix), compression)
    except InputError:
        return None
    return compression
