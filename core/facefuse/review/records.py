"""What a flag is and frame ranges: light (no image or model library), so a command line can
read a report's flagged frames without loading the engine."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

WILL_FAIL = "will_fail"  # the kind of a flag on frames the render fails (of no one person)


@dataclass(frozen=True, slots=True)
class Flag:
    """Frames first..last (analysed frame numbers, inclusive) of one person that need a look;
    person_id None for a flag of the frames themselves (WILL_FAIL)."""

    kind: str
    first: int
    last: int
    person_id: str | None
    reason: str
    value: float  # the worst measure in the range (see the module docstring for its unit)

    @property
    def frames(self) -> tuple[int, int]:
        return self.first, self.last


def flag_sample(flag: Flag, frames: Sequence[int]) -> int | None:
    """The frame a flag's range shows on the contact sheet: its middle analysed frame (None
    for WILL_FAIL: those frames have no picture)."""
    if flag.kind == WILL_FAIL:
        return None
    first, last = frames.index(flag.first), frames.index(flag.last)
    return frames[(first + last) // 2]


def flagged_ranges(flags: Iterable[Flag], frames: Sequence[int]) -> tuple[tuple[int, int], ...]:
    """The flagged frames as a compact list of (first, last) runs of consecutive analysed
    frames."""
    position = {frame: i for i, frame in enumerate(frames)}
    marked = sorted({frame for flag in flags for frame in frames[position[flag.first]:
                                                                 position[flag.last] + 1]},
                    key=position.__getitem__)
    return ranges(marked, position)


def ranges(numbers: Sequence[int], position: Mapping[int, int] | None = None
           ) -> tuple[tuple[int, int], ...]:
    """Sorted numbers as (first, last) runs; consecutive by `position` (default: by value)."""
    place = position if position is not None else {n: n for n in numbers}
    runs: list[tuple[int, int]] = []
    for number in numbers:
        if runs and place[number] == place[runs[-1][1]] + 1:
            runs[-1] = (runs[-1][0], number)
        else:
            runs.append((number, number))
    return tuple(runs)
