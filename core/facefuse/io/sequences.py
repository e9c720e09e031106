"""Numbered image sequences: frame patterns, frame ranges and render-farm chunks (pure, no pixels).

A *frame pattern* is a path whose file name holds exactly one frame token:

    ``name.####.exr``  a run of N ``#`` means zero padding to N digits (``####`` -> 1001, 0042);
                       so a single ``#`` means padding 1, i.e. no zero padding (1, 2, ..., 1001).
    ``name.%04d.exr``  printf style, padding 4 (the same as ``####``).
    ``name.%d.exr``    printf style without padding (the same as ``#``).

Tokens are looked for in the file name only; ``#`` or ``%d`` in a folder name are literal text.
Frame numbers are non-negative and at most LARGEST_FRAME (2**53 - 1: every one is exact as a
double, as OpenTimelineIO and JSON readers hold times, and fits the 64-bit integers of the
analysis cache). Like renderers, a frame past the padding is written with more
digits (``####`` and 10000 -> ``name.10000.exr``), and scanning accepts such names.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from ..errors import InputError

_TOKEN = re.compile(r"#+|%(0\d+)?d")
_NUMBER = re.compile(r"\d+")
# picture formats a sequence is made of: one of these picked is taken as a frame of its sequence
SEQUENCE_SUFFIXES = (".exr", ".dpx", ".tif", ".tiff", ".png", ".jpg", ".jpeg")
_RANGE = re.compile(r"\s*(\d+)\s*(?:-\s*(\d+)\s*)?")
_CHUNK = re.compile(r"\s*(\d+)\s*/\s*(\d+)\s*")
LARGEST_FRAME = 2**53 - 1


@dataclass(frozen=True, slots=True)
class FramePattern:
    """A parsed frame pattern: ``folder / (prefix + number + suffix)``, the number padded to
    `padding`."""

    display: str
    folder: Path
    prefix: str
    suffix: str
    padding: int

    @classmethod
    def parse(cls, text: str) -> FramePattern:
        """Parse `text` (see the module docstring); InputError unless it holds exactly one token."""
        path = Path(text)
        tokens = list(_TOKEN.finditer(path.name))
        if not tokens:
            raise InputError(f"{text} has no frame token: use name.####.exr or name.%04d.exr")
        if len(tokens) > 1:
            raise InputError(f"{text} has {len(tokens)} frame tokens; use exactly one, "
                             "as in name.####.exr")
        token = tokens[0]
        return cls(display=text, folder=path.parent, prefix=path.name[:token.start()],
                   suffix=path.name[token.end():], padding=_padding(token))

    def name(self, frame: int) -> str:
        """The file name of `frame`; InputError for a negative frame number."""
        if frame < 0:
            raise InputError(f"frame {frame} is negative; frame numbers start at 0")
        return f"{self.prefix}{frame:0{self.padding}d}{self.suffix}"

    def path(self, frame: int) -> Path:
        """The path of `frame` (``####`` and 1001 -> ``folder/name.1001.exr``)."""
        return self.folder / self.name(frame)

    def number_of(self, file_name: str) -> int | None:
        """The frame number a file name stands for, or None if it does not match the pattern.

        The digits must be at least `padding` long, and longer numbers carry no leading zero
        (with ``####``: ``0042`` and ``10000`` match, ``042`` and ``01001`` do not).
        """
        if not (file_name.startswith(self.prefix) and file_name.endswith(self.suffix)):
            return None
        digits = file_name[len(self.prefix):len(file_name) - len(self.suffix)]
        if not (digits.isascii() and digits.isdigit()) or len(digits) < self.padding:
            return None
        if len(digits) > max(self.padding, 1) and digits[0] == "0":
            return None
        number = int(digits)
        return number if number <= LARGEST_FRAME else None

    def scan(self) -> dict[int, Path]:
        """The files on disk that match the pattern, by frame number (sorted); {} if no folder."""
        if not self.folder.is_dir():
            return {}
        found: dict[int, Path] = {}
        for entry in self.folder.iterdir():
            number = self.number_of(entry.name)
            if number is not None and entry.is_file():
                found[number] = entry
        return dict(sorted(found.items()))


def is_frame_pattern(text: str) -> bool:
    """Whether the file name in `text` holds a frame token (``#``, ``%d``, ``%04d``)."""
    return _TOKEN.search(Path(text).name) is not None


def sequence_of_frame(path: str | Path) -> tuple[FramePattern, int] | None:
    """The image sequence one picked picture belongs to, as Nuke and Resolve find it, and the
    picture's frame number: ``plate.1001.png`` -> (``plate.####.png``, 1001). The frame is the
    last run of digits in the name, padded as written (``plate.0042.png`` -> ``####``) unless
    the unpadded pattern holds more files (``plate.10.png`` beside plate.1 and plate.2 ->
    ``plate.#.png``); a lone numbered picture is a sequence of one frame. None for a pattern,
    a file that is not a picture (SEQUENCE_SUFFIXES) or not there, or a name without a number."""
    path = Path(path)
    name = path.name
    if path.suffix.lower() not in SEQUENCE_SUFFIXES or is_frame_pattern(name) or \
            not path.is_file():
        return None
    for digits in reversed(list(_NUMBER.finditer(path.stem))):
        found = [(pattern, number) for pattern in _patterns_around(path, digits)
                 if (number := pattern.number_of(name)) is not None]
        if found:  # the padding that holds the most files; as written on a tie
            return max(found, key=lambda pair: len(pair[0].scan()))
    return None


def _patterns_around(path: Path, digits: re.Match[str]) -> list[FramePattern]:
    """The patterns `digits` of `path`'s name can stand for: padded as written, and, for a
    number without a leading zero, unpadded too (``plate.10.png`` of plate.1 ... plate.10)."""
    name, text = path.name, digits.group()
    tokens = ["#" * len(text)] + (["#"] if len(text) > 1 and text[0] != "0" else [])
    return [FramePattern.parse(str(path.parent / f"{name[:digits.start()]}{token}"
                                   f"{name[digits.end():]}")) for token in tokens]


def parse_frame_range(text: str) -> tuple[int, int]:
    """``"1001-1100"`` -> (1001, 1100), both inclusive; ``"1001"`` -> (1001, 1001).

    Frame numbers are non-negative; InputError for anything else or a start after the end.
    """
    match = _RANGE.fullmatch(text)
    if match is None:
        raise InputError(f"frame range {text!r} is not of the form START-END, "
                         "e.g. 1001-1100 (frame numbers are not negative)")
    first = int(match.group(1))
    last = int(match.group(2)) if match.group(2) is not None else first
    check_frame_number(last, f"frame range {text!r}")
    if first > last:
        raise InputError(f"frame range {text!r} starts after it ends")
    return first, last


def check_frame_number(number: int, what: str) -> None:
    """InputError unless 0 <= `number` <= LARGEST_FRAME (`what`: the value in the sentence)."""
    if number < 0:
        raise InputError(f"{what}: frame {number} is negative; frame numbers start at 0")
    if number > LARGEST_FRAME:
        raise InputError(f"{what}: frame {number} is past the largest frame number facefuse "
                         f"takes, {LARGEST_FRAME}")


def parse_chunk(text: str) -> tuple[int, int]:
    """``"2/5"`` -> (2, 5): the second of five chunks; InputError unless 1 <= N <= M."""
    match = _CHUNK.fullmatch(text)
    if match is None:
        raise InputError(f"chunk {text!r} is not of the form N/M, e.g. 2/5")
    index, count = int(match.group(1)), int(match.group(2))
    _check_chunk(index, count)
    return index, count


def chunk_of(frames: Sequence[int], index: int, count: int) -> tuple[int, ...]:
    """The `index`-th (1-based) of `count` contiguous slices of `frames`, in the order given.

    Slice sizes differ by at most one and the earlier slices take the extra frames
    (10 frames in 3 chunks -> 4, 3, 3). A chunk may be empty when count > len(frames).
    """
    _check_chunk(index, count)
    base, extra = divmod(len(frames), count)
    start = (index - 1) * base + min(index - 1, extra)
    size = base + (1 if index <= extra else 0)
    return tuple(frames[start:start + size])


def find_gaps(numbers: Iterable[int]) -> tuple[int, ...]:
    """The numbers missing between the smallest and the largest of `numbers`, ascending."""
    present = set(numbers)
    if not present:
        return ()
    return tuple(n for n in range(min(present), max(present) + 1) if n not in present)


def _padding(token: re.Match[str]) -> int:
    if token.group(0).startswith("#"):
        return len(token.group(0))
    return int(token.group(1)) if token.group(1) else 1


def _check_chunk(index: int, count: int) -> None:
    if count < 1 or not 1 <= index <= count:
        raise InputError(f"chunk {index}/{count} does not exist: "
                         f"use N/M with 1 <= N <= M, e.g. 1/{max(count, 1)}")
