"""How the text of each kind of command-line option is read (shot.contract.commandline's kinds): an
argparse type= per kind, each turning a bad value into a usage error (one sentence, exit 2)
rather than a traceback."""

from __future__ import annotations

import argparse
from collections.abc import Callable, Mapping
from fractions import Fraction
from pathlib import Path
from types import MappingProxyType
from typing import Any

from ...errors import InputError
from ...io.sequences import check_frame_number, parse_chunk, parse_frame_range
from .frames import FrameChoice, parse_frame_list, parse_frames
from .request import REFERENCE_PREFIX


def usage_type(parse: Callable[[str], Any]) -> Callable[[str], Any]:
    """An argparse type= from a parser that raises InputError: a bad value becomes a usage
    error (one sentence, exit 2) instead of a traceback."""
    def convert(text: str) -> Any:
        try:
            return parse(text)
        except InputError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from exc

    convert.__name__ = parse.__name__
    return convert


# the frame rates --rate takes; a finer fraction than 1/1001000 fps is rounded to one
LOWEST_RATE, HIGHEST_RATE = Fraction(1, 1000), Fraction(1_000_000)


def _rate(text: str) -> Fraction:
    try:
        rate = Fraction(text)
    except (ValueError, ZeroDivisionError):
        rate = Fraction(0)
    if rate <= 0:
        raise InputError(f"rate {text!r} is not a positive number of frames per second, "
                         "e.g. 24 or 24000/1001")
    if not LOWEST_RATE <= rate <= HIGHEST_RATE:
        raise InputError(f"rate {text!r} is outside the frame rates facefuse writes, "
                         f"{float(LOWEST_RATE):g} to {HIGHEST_RATE} frames per second")
    return rate.limit_denominator(1_001_000)


def _frame_number(text: str) -> int:
    """A frame number (--start-number): a whole number, 0 to LARGEST_FRAME."""
    try:
        number = int(text)
    except ValueError:
        raise InputError(f"{text!r} is not a whole frame number") from None
    check_frame_number(number, repr(text))
    return number


def _assignment(text: str) -> tuple[str, Path]:
    """PERSON=IMAGE split at the first "=" (a person id holds none; the image may); for
    ref:PICTURE=IMAGE, at the first "=" after which PICTURE names a file, else the first."""
    person, equals, image = text.partition("=")
    if person.startswith(REFERENCE_PREFIX):
        cuts = [i for i, c in enumerate(text) if c == "="]
        person, equals, image = next(
            ((text[:i], "=", text[i + 1:]) for i in cuts
             if Path(text[len(REFERENCE_PREFIX):i]).is_file()), (person, equals, image))
    if not equals or not person or not image:
        raise InputError(f"--assign {text!r} is not PERSON=IMAGE, e.g. p2=actor.jpg")
    return person, Path(image)


def comma_list(text: str) -> tuple[str, ...]:
    """"skin, nose" -> ("skin", "nose"); Settings checks the names."""
    return tuple(part.strip() for part in text.split(",") if part.strip())


def _frames(text: str) -> tuple[int, int] | FrameChoice:
    """A --frames value: its range (A-B), or the FrameChoice of a list or a report."""
    choice = parse_frames(text)
    return choice.frames if choice.frames is not None and choice.only is None else choice


OPTION_TYPES: Mapping[str, Callable[[str], Any]] = MappingProxyType({
    "path": Path, "paths": Path, "int": int, "float": float, "choices": comma_list,
    "range": usage_type(parse_frame_range), "chunk": usage_type(parse_chunk),
    "frames": usage_type(_frames), "ranges": usage_type(parse_frame_list),
    "assignments": usage_type(_assignment), "people": str,
    "rate": usage_type(_rate), "frame": usage_type(_frame_number)})
