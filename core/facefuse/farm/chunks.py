"""A shot's frame range and its chunks of frames: what a farm job splits into tasks.

Chunks are contiguous runs of `size` frames of the range (the last may be shorter), given to
each task as `--chunk-frames A-B` while `--frames` stays the whole range: every task analyses
(or reads from the shared cache) the same range and makes the same decisions, so any chunk can
run anywhere, twice or again, and writes the same files.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..errors import InputError
from ..shot.contract.frames import select_frames
from ..shot.contract.request import RenderRequest


def shot_frames(request: RenderRequest) -> tuple[int, ...]:
    """The input's frame numbers inside request.frames.range (all when None; InputError for a
    request.frames.only reaching outside them); opens the input."""
    from ..shot.contract.inputs import open_input  # the decoders load only when a job is made

    shot = open_input(request.input.path, request.input.start_number, request.input.conform_vfr)
    try:
        return select_frames(shot.frame_numbers, request.frames.range, None, shot.label,
                           contiguous=shot.is_sequence, only=request.frames.only).analysed
    finally:
        shot.close()


def chunk_ranges(frames: Sequence[int], size: int) -> list[tuple[int, int]]:
    """Inclusive (first, last) of each run of `size` consecutive entries of `frames`."""
    if size < 1:
        raise InputError(f"chunk size {size} must be at least 1 frame")
    return [(frames[i], frames[min(i + size, len(frames)) - 1])
            for i in range(0, len(frames), size)]
