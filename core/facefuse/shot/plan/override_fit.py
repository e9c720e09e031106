"""How a request's overrides fit the frames it renders: a render of part of a shot with the
shot's corrections (`--frames 1-50 --overrides whole-shot.json`) plans on the shot the
corrections were made for, and corrections outside the frames rendered are ignored with one note.

An overrides file names its shot by id (plan.shot_id_of: the analysis key and the analysed
range). People are named by first appearance within the analysed range, so a person id means
the same person only in a plan of that same range. When the file's shot is not the request's
analysed range but another range of the same input analysed the same way (the range the file
says it was made over, `Overrides.analysed`, or the input's whole range) that covers it, the
request is planned over that range and renders only its own frames (RenderRequest.frames and
`only`), exactly as a render of the whole shot makes them. A file for another input or other
detection options fits no range and is refused where the plan is made (Overrides.check).
Entries, or parts of them, outside the frames the user asked for (`--frames A-B`, else the
analysed range) change nothing there; `note` names them in one sentence.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from ...color import input_conversion
from ...pipeline import Pipeline
from ..contract.frames import FrameRanges, select_frames
from ..contract.inputs import ShotInput
from ..contract.request import RenderRequest
from .analysis import analysis_key
from .overrides import Overrides
from .plan import shot_id_of


@dataclass(frozen=True, slots=True)
class FittedRequest:
    """`request` as it is planned and rendered with its overrides, and the note about
    corrections it ignores (None: none)."""

    request: RenderRequest
    note: str | None = None


def fit_overrides(request: RenderRequest, shot: ShotInput, pipeline: Pipeline,
                  overrides: Overrides | None) -> FittedRequest:
    """The request planned over the shot its overrides were made for, and the note (see the
    module docstring). The input's content is hashed (cached) only for a file whose shot id
    is not the request's own range."""
    if overrides is None:
        return FittedRequest(request)
    asked = select_frames(shot.frame_numbers, request.frames.range, None, shot.label,
                        contiguous=shot.is_sequence).analysed
    span = (asked[0], asked[-1])
    fitted = request
    if overrides.shot is not None and request.frames.range is not None:
        fitted = _widened(request, shot, pipeline, overrides, asked)
    return FittedRequest(fitted, overrides.outside_note(span))


def _widened(request: RenderRequest, shot: ShotInput, pipeline: Pipeline,
             overrides: Overrides, asked: tuple[int, ...]) -> RenderRequest:
    """`request` over the range of the same input whose shot id is the overrides', rendering
    only the frames it asked for; unchanged when its own range is the overrides' shot or no
    range covering it is."""
    colour_name = input_conversion(request.input.colorspace, shot.suffix, shot.pixel_type)[1]
    digest = analysis_key(pipeline, shot.content_sha256(pipeline.hashes), colour_name).digest
    if shot_id_of(digest, asked) == overrides.shot:
        return request
    whole = (shot.frame_numbers[0], shot.frame_numbers[-1])
    for candidate in dict.fromkeys((overrides.analysed, whole)):
        if candidate is None or not candidate[0] <= asked[0] <= asked[-1] <= candidate[1]:
            continue
        frames = select_frames(shot.frame_numbers, candidate, None, shot.label,
                               contiguous=shot.is_sequence).analysed
        if shot_id_of(digest, frames) == overrides.shot:
            only: FrameRanges = request.frames.only or ((asked[0], asked[-1]),)
            return replace(request, frames=replace(request.frames, range=candidate, only=only))
    return request
