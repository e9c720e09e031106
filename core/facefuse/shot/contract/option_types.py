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
from .request import REFERENCE_PREFIX, SOURCE_HOLDER, USES


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


def _split_pair(text: str, path_prefixes: tuple[str, ...]) -> tuple[str, str, str]:
    """WHO=WHAT split at the first "=" (a person id or role holds none; the file may); for a
    WHO of `path_prefixes` + PATH (ref:PICTURE, source:IMAGE), at the first "=" before which
    PATH names a file, else the first."""
    who, equals, what = text.partition("=")
    prefix = next((p for p in path_prefixes if who.startswith(p)), None)
    if prefix is not None:
        cuts = [i for i, c in enumerate(text) if c == "="]
        who, equals, what = next(
            ((text[:i], "=", text[i + 1:]) for i in cuts
             if Path(text[len(prefix):i]).is_file()), (who, equals, what))
    return who, equals, what


def _assignment(text: str) -> tuple[str, Path]:
    """PERSON=IMAGE (see _split_pair)."""
    person, equals, image = _split_pair(text, (REFERENCE_PREFIX,))
    if not equals or not person or not image:
        raise InputError(f"--assign {text!r} is not PERSON=IMAGE, e.g. p2=actor.jpg")
    return person, Path(image)


def _consent(text: str) -> tuple[str, str]:
    """WHO=RECORD (see _split_pair); the engine reads WHO (request.parse_consent_holder)."""
    who, equals, record = _split_pair(text, (REFERENCE_PREFIX, f"{SOURCE_HOLDER}:"))
    if not equals or not who or not record:
        raise InputError(f"--consent {text!r} is not WHO=RECORD, e.g. p1=jane-doe.consent.json "
                         "or source=jane-doe.consent.json")
    return who, record


def _licence(text: str) -> tuple[str, str]:
    """ROLE=USE, e.g. swapper=commercial."""
    role, equals, use = text.partition("=")
    if not equals or not role or use not in USES:
        raise InputError(f"--model-licence {text!r} is not ROLE=USE with USE one of "
                         f"{', '.join(USES)}, e.g. swapper=commercial")
    return role, use


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
    "consent": usage_type(_consent), "licences": usage_type(_licence),
    "rate": usage_type(_rate), "frame": usage_type(_frame_number)})
