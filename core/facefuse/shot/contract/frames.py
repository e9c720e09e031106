"""Which frames a render does: the one place that decides it, for the engine and every host.

A render analyses its whole frame range (so every chunk of a farm render makes the same
shot-level decisions) and renders the chunk of that range it was given.

`--frames` takes one range (the range analysed and rendered), a list of ranges and frames
(`1001-1010,1035,1040-1042`) or `flagged:REPORT` (the flagged frames of a review report).
A list or a report renders only those frames (`only`) while the range analysed stays the one a
render of the whole shot analyses: the input's whole range for a list, the report's analysed
range for a report. So those frames come out exactly as a render of the whole shot makes them.

Frames asked for that the input does not have are a warning naming the frames it has and the
ones rendered; asking only for frames it does not have is an InputError.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from ...errors import InputError
from ...io import sequences

log = logging.getLogger(__name__)

FrameRanges = tuple[tuple[int, int], ...]
FLAGGED = "flagged:"


@dataclass(frozen=True, slots=True)
class FrameSelection:
    """Which frames a render does. analysed: the range's frame numbers (pass 1); rendered: this
    render's share of them."""

    analysed: tuple[int, ...]
    rendered: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class FrameChoice:
    """What one `--frames` value asks for: `frames`, the range analysed (None: the input's
    whole range), and `only`, the frames rendered (None: all of `frames`). made_from: for a
    report, the input it was made from ("sha256:HEX" or "shot:ID"; None when it does not say).
    report: a `flagged:` value's report, still to be read (by the command line, which reads
    review reports: cli.render.flagged_choice) while frames and only are None; once read, the
    report file read (an input no output may replace)."""

    frames: tuple[int, int] | None
    only: FrameRanges | None = None
    made_from: str | None = None
    report: Path | None = None


def normalise_ranges(ranges: Iterable[tuple[int, int]]) -> FrameRanges:
    """Inclusive ranges sorted, with overlapping and touching ones joined: ((5, 9), (1, 2),
    (3, 3)) -> ((1, 3), (5, 9)). InputError for a negative number or a range that ends first."""
    joined: list[tuple[int, int]] = []
    for first, last in sorted((int(a), int(b)) for a, b in ranges):
        if first < 0 or last < first:
            raise InputError(f"frame range {first}-{last} is not a range of frame numbers")
        if joined and first <= joined[-1][1] + 1:
            joined[-1] = (joined[-1][0], max(joined[-1][1], last))
        else:
            joined.append((first, last))
    return tuple(joined)


def parse_frame_list(text: str) -> FrameRanges:
    """"1001-1010,1035,1040-1042" -> ((1001, 1010), (1035, 1035), (1040, 1042)), normalised
    (normalise_ranges); InputError for anything else."""
    items = text.split(",")
    for number in re.findall(r"\d+", text):
        sequences.check_frame_number(int(number), f"frame list {text!r}")
    try:
        return normalise_ranges(sequences.parse_frame_range(item) for item in items)
    except InputError as exc:
        raise InputError(f"frame list {text!r} is not a comma list of frames and ranges, e.g. "
                         "1001-1010,1035,1040-1042") from exc


def format_frame_list(ranges: FrameRanges) -> str:
    """The inverse of parse_frame_list: ((1001, 1010), (1035, 1035)) -> "1001-1010,1035"."""
    return ",".join(str(a) if a == b else f"{a}-{b}" for a, b in ranges)


def within(numbers: Iterable[int], ranges: FrameRanges | None) -> tuple[int, ...]:
    """The numbers inside any of the inclusive ranges (None: all of them), in order."""
    if ranges is None:
        return tuple(numbers)
    return tuple(n for n in numbers if any(lo <= n <= hi for lo, hi in ranges))


def parse_frames(text: str) -> FrameChoice:
    """A `--frames` value: "A-B" (or "A": the range analysed and rendered), a comma list
    (renders only those frames; the input's whole range is analysed) or "flagged:REPORT" (its
    report named, not read). InputError, one sentence, for a bad value."""
    if text.startswith(FLAGGED):
        return FrameChoice(None, report=Path(text[len(FLAGGED):]))
    if "," not in text:
        return FrameChoice(sequences.parse_frame_range(text))
    return FrameChoice(None, parse_frame_list(text))


def select_frames(available: Sequence[int], frames: tuple[int, int] | None,
                  chunk: tuple[int, int] | None, label: str,
                  contiguous: bool = False,
                  chunk_frames: tuple[int, int] | None = None,
                  only: FrameRanges | None = None) -> FrameSelection:
    """The frames of `available` (sorted input numbers) inside `frames` (inclusive; None: all),
    and the `chunk` (index, count; 1-based) of them to render, or those inside `chunk_frames`
    (inclusive; it must lie within `frames`); with `only`, of those frames only the ones in
    its ranges (each must lie within the analysed range).

    A range reaching past the input is a warning naming the frames it has and those rendered.
    InputError when the range misses the input, when an item of the list reaches outside the
    analysed range or, with `contiguous` (image sequences), when numbers are missing inside it.
    """
    first, last = available[0], available[-1]
    lo, hi = frames if frames is not None else (first, last)
    if hi < first or lo > last:
        raise InputError(f"frames {lo}-{hi} are outside {label}, which has frames {first}-{last}")
    chosen = tuple(n for n in available if lo <= n <= hi)
    if lo < first or hi > last:
        log.warning("frames %d-%d reach past %s, which has frames %d-%d: rendering frames %d-%d "
                    "(%d)", lo, hi, label, first, last, chosen[0], chosen[-1], len(chosen))
    gaps = sequences.find_gaps(chosen) if contiguous else ()
    if gaps:
        shown = ", ".join(str(n) for n in gaps[:8]) + (" ..." if len(gaps) > 8 else "")
        raise InputError(f"{label} has gaps: frame {shown} missing ({len(gaps)} in all); render "
                         "the ranges on either side with --frames, or fill the gap")
    wanted = chosen if only is None else _only(chosen, only, label)
    if chunk_frames is not None:
        return FrameSelection(chosen, _sub_range(wanted, (lo, hi), chunk_frames))
    rendered = sequences.chunk_of(wanted, *chunk) if chunk else wanted
    return FrameSelection(chosen, rendered)


def _only(chosen: tuple[int, ...], only: FrameRanges, label: str) -> tuple[int, ...]:
    """The frames of `chosen` inside the ranges of `only`; InputError naming the items of the
    list that reach outside the analysed frames (a listed frame is asked for by name: one the
    shot lacks is a mistake to say, not a frame to leave out)."""
    first, last = chosen[0], chosen[-1]
    outside = format_frame_list(tuple((lo, hi) for lo, hi in only if lo < first or hi > last))
    wanted = within(chosen, only)
    if outside or not wanted:
        raise InputError(f"frames {outside or format_frame_list(only)} of the list are outside "
                         f"the analysed range of {label}, frames {first}-{last}")
    return wanted


def _sub_range(chosen: tuple[int, ...], frames: tuple[int, int],
               chunk_frames: tuple[int, int]) -> tuple[int, ...]:
    (lo, hi), (first, last) = frames, chunk_frames
    if first < lo or last > hi:
        raise InputError(f"chunk frames {first}-{last} are not inside the analysed range "
                         f"{lo}-{hi} (--frames)")
    return tuple(n for n in chosen if first <= n <= last)
