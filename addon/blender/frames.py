"""The frame mapping between timeline and engine: StripSwap, and the engine numbers of a movie
or image strip's trimmed frames.

The engine numbers a movie's frames from START_NUMBER = 1, as `facefuse render` does by default
(so a farm render with the CLI and one from Blender share outputs and resume each other): the
movie frame shown at timeline frame f is number `f - frame_start + animation_offset_start + 1`,
held at the first and last frame the strip can show (a Hard split or a Hold Offset leaves it
animation_offset_start .. animation_offset_start + frame_duration - 1), and `<strip>.0001.png`
holds the movie's first frame. Image strips keep the numbers their files
carry (`plate.1001.exr` -> 1001) when the used files form one numbered sequence; any other list
of files (stills, held or reordered frames) is linked into `<output>/input/src.####.<ext>`
numbered 1.. in order of first use. Every trimmed timeline frame frame_final_start ..
frame_final_end - 1 maps to one number (`StripSwap.numbers`), and the result strip has one
element per trimmed frame, in order, starting at frame_final_start.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import bpy

from facefuse import FramePattern, RenderRequest, select_frames

from .strips import StripError

START_NUMBER = 1
_NUMBERED = re.compile(r"^(?P<prefix>.*?)(?P<digits>\d+)(?P<suffix>\.[^.]+)$")


@dataclass(frozen=True, slots=True)
class StripSwap:
    """One strip's swap: the engine request and where the result strip goes.

    numbers: the engine frame number shown at each trimmed timeline frame, in timeline order.
    output_dir: absolute; output_dir_setting: as the user sees it (may start with //).
    """

    scene: str
    strip: str
    request: RenderRequest
    numbers: tuple[int, ...]
    frame_start: int
    output_dir: Path
    output_dir_setting: str

    def output_name(self, number: int) -> str:
        return FramePattern.parse(self.request.output.path).name(number)

    def missing_outputs(self) -> list[int]:
        """Numbers whose output file is not there (yet)."""
        return [n for n in dict.fromkeys(self.numbers)
                if not (self.output_dir / self.output_name(n)).is_file()]

    def todo(self) -> tuple[int, ...]:
        """The numbers this request renders, as the engine decides them (its frame range,
        then its chunk)."""
        request = self.request
        return select_frames(sorted(set(self.numbers)), request.frames.range, request.frames.chunk,
                           self.strip, only=request.frames.only).rendered

    def timeline_frames(self, first: int, last: int) -> list[int]:
        """The trimmed timeline frames that show engine numbers first..last (inclusive)."""
        return [self.frame_start + i for i, n in enumerate(self.numbers) if first <= n <= last]

    def numbers_between(self, first: int, last: int) -> list[int]:
        """The engine numbers shown at timeline frames first..last (inclusive), ascending."""
        return sorted({n for i, n in enumerate(self.numbers)
                       if first <= self.frame_start + i <= last})

    def number_at(self, frame: int) -> int:
        """The engine number at timeline frame `frame`; StripError outside the trimmed range."""
        index = frame - self.frame_start
        if not 0 <= index < len(self.numbers):
            raise StripError(f"the playhead (frame {frame}) is outside strip '{self.strip}' "
                             f"({self.frame_start}-{self.frame_start + len(self.numbers) - 1})")
        return self.numbers[index]


def overlaps(strip: Any, frames: tuple[int, int] | None) -> bool:
    """Whether timeline frames `frames` (inclusive; None: all) meet the strip's trimmed range."""
    return frames is None or (frames[0] < strip.frame_final_end
                              and strip.frame_final_start <= frames[1])


def selected_numbers(strip: Any, numbers: tuple[int, ...],
                     frames: tuple[int, int] | None) -> tuple[int, ...]:
    if frames is None:
        return numbers
    first, last = frames
    start = strip.frame_final_start
    chosen = tuple(n for i, n in enumerate(numbers) if first <= start + i <= last)
    if not chosen:
        raise StripError(f"Frames {first}-{last} miss strip '{strip.name}' "
                         f"({start}-{strip.frame_final_end - 1})")
    return chosen


def movie_input(strip: Any) -> tuple[str, tuple[int, ...]]:
    """The movie's path and the engine number at each trimmed frame; timeline frames past
    the frames the strip can show (a handle dragged beyond them) hold the nearest one."""
    path = Path(bpy.path.abspath(strip.filepath))
    if not path.is_file():
        raise StripError(f"The movie of strip '{strip.name}' is missing: {strip.filepath}")
    retimed = _movie_retime(strip)
    if retimed:
        raise StripError(f"Strip '{strip.name}' {retimed}")
    first = strip.animation_offset_start + START_NUMBER
    last = first + max(1, strip.frame_duration) - 1
    offset = first - int(strip.frame_start)
    numbers = tuple(min(max(f + offset, first), last)
                    for f in range(strip.frame_final_start, strip.frame_final_end))
    return str(path), numbers


def movie_span(strip: Any, first: int, last: int) -> tuple[int, int] | None:
    """The first and last trimmed timeline frames of a movie strip that show engine numbers
    first..last (without reading the movie: for drawing); None when none of them shows."""
    start = strip.animation_offset_start + START_NUMBER
    end = start + max(1, strip.frame_duration) - 1
    offset = start - int(strip.frame_start)
    shown = [f for f in range(strip.frame_final_start, strip.frame_final_end)
             if first <= min(max(f + offset, start), end) <= last]
    return (shown[0], shown[-1]) if shown else None


def _movie_retime(strip: Any) -> str:
    """How a movie strip is retimed, "" when it is not: which media frame it then shows is not
    in the API (image strips have strip_elem_from_frame, which follows all three)."""
    if len(getattr(strip, "retiming_keys", ())) > 0:
        return "is retimed (retiming keys): swap it without them, then retime the result strip"
    if strip.use_reverse_frames:
        return "plays reversed: swap it forwards, then reverse the result strip"
    if strip.strobe > 1.0:
        return "is strobed: swap it without Strobe, then strobe the result strip"
    return ""


def image_input(strip: Any, stage: Path, prepare: bool) -> tuple[str, tuple[int, ...]]:
    """A sequence pattern the engine reads and the number at each trimmed frame."""
    folder = Path(bpy.path.abspath(strip.directory))
    names = [strip.strip_elem_from_frame(f).filename
             for f in range(strip.frame_final_start, strip.frame_final_end)]
    for name in dict.fromkeys(names):
        if not (folder / name).is_file():
            raise StripError(f"Image {name} of strip '{strip.name}' is missing from {folder}")
    pattern = _as_sequence(folder, names)
    if pattern is not None:
        return pattern
    unique = list(dict.fromkeys(names))
    suffixes = {Path(n).suffix.lower() for n in unique}
    if len(suffixes) != 1:
        formats = ", ".join(sorted(suffixes))
        raise StripError(f"Strip '{strip.name}' mixes image formats ({formats})")
    suffix = Path(unique[0]).suffix
    number = {name: i + 1 for i, name in enumerate(unique)}
    if prepare:
        stage.mkdir(parents=True, exist_ok=True)
        for name, n in number.items():
            _link(folder / name, stage / f"src.{n:04d}{suffix}")
    return str(stage / f"src.####{suffix}"), tuple(number[n] for n in names)


def _as_sequence(folder: Path, names: list[str]) -> tuple[str, tuple[int, ...]] | None:
    """(pattern, numbers) when every name is one numbered sequence without gaps, else None."""
    match = _NUMBERED.match(names[0])
    if match is None:
        return None
    digits = match["digits"]
    padding = len(digits) if digits.startswith("0") or len(set(map(len, names))) == 1 else 1
    pattern = FramePattern.parse(
        str(folder / f"{match['prefix']}{'#' * padding}{match['suffix']}"))
    numbers = []
    for name in names:
        number = pattern.number_of(name)
        if number is None or pattern.name(number) != name:
            return None
        numbers.append(number)
    unique = sorted(set(numbers))
    if unique != list(range(unique[0], unique[-1] + 1)):
        return None
    return pattern.display, tuple(numbers)


def _link(target: Path, link: Path) -> None:
    """Point `link` at `target` (symlink, else hard link, else copy), replacing a stale one."""
    if link.is_symlink() and Path(os.readlink(link)) == target:
        return
    temporary = link.with_name(f".{link.name}.tmp")
    temporary.unlink(missing_ok=True)
    try:
        os.symlink(target, temporary)
    except OSError:
        try:
            os.link(target, temporary)
        except OSError:
            import shutil

            shutil.copy2(target, temporary)
    os.replace(temporary, link)
