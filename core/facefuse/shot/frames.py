"""Which frames a render does: the one place that decides it, for the engine and every host.

A render analyses its whole frame range (so every chunk of a farm render makes the same
shot-level decisions) and renders the chunk of that range it was given.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ..errors import InputError
from ..io import sequences


@dataclass(frozen=True, slots=True)
class FramePlan:
    """analysed: the range's frame numbers (pass 1); rendered: this render's share of them."""

    analysed: tuple[int, ...]
    rendered: tuple[int, ...]


def plan_frames(available: Sequence[int], frames: tuple[int, int] | None,
                chunk: tuple[int, int] | None, label: str,
                contiguous: bool = False,
                chunk_frames: tuple[int, int] | None = None) -> FramePlan:
    """The frames of `available` (sorted input numbers) inside `frames` (inclusive; None: all),
    and the `chunk` (index, count; 1-based) of them to render, or those inside `chunk_frames`
    (inclusive; it must lie within `frames`).

    InputError when the range misses the input or, with `contiguous` (image sequences), when
    numbers are missing inside it.
    """
    first, last = available[0], available[-1]
    lo, hi = frames if frames is not None else (first, last)
    if hi < first or lo > last:
        raise InputError(f"frames {lo}-{hi} are outside {label}, which has frames {first}-{last}")
    chosen = tuple(n for n in available if lo <= n <= hi)
    gaps = sequences.find_gaps(chosen) if contiguous else ()
    if gaps:
        shown = ", ".join(str(n) for n in gaps[:8]) + (" ..." if len(gaps) > 8 else "")
        raise InputError(f"{label} has gaps: frame {shown} missing ({len(gaps)} in all); render "
                         "the ranges on either side with --frames, or fill the gap")
    if chunk_frames is not None:
        return FramePlan(chosen, _sub_range(chosen, (lo, hi), chunk_frames))
    rendered = sequences.chunk_of(chosen, *chunk) if chunk else chosen
    return FramePlan(chosen, rendered)


def _sub_range(chosen: tuple[int, ...], frames: tuple[int, int],
               chunk_frames: tuple[int, int]) -> tuple[int, ...]:
    (lo, hi), (first, last) = frames, chunk_frames
    if first < lo or last > hi:
        raise InputError(f"chunk frames {first}-{last} are not inside the analysed range "
                         f"{lo}-{hi} (--frames)")
    return tuple(n for n in chosen if first <= n <= last)
