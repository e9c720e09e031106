"""Exact frame rates and whole frame counts over OpenTimelineIO's times.

OpenTimelineIO keeps a time as a value and a rate, both doubles: 23.976 fps is stored as
24000/1001 to double precision, or as the rounded 23.976 some editors write. Every frame count
here is worked out in Fractions from those values: a rate is snapped to its exact NTSC form
(`exact_rate`), and a time becomes frames by exact arithmetic, rounded once to the nearest
frame (`frames_of`). New times are written at the rate the timeline itself used, so a value
read back compares equal to the editor's own.
"""

from __future__ import annotations

import math
from fractions import Fraction

from opentimelineio.opentime import RationalTime

from facefuse import InputError

NTSC_RATES = tuple(Fraction(n * 1000, 1001) for n in (24, 30, 48, 60, 120))
# "23.976" or "23.98" is 24000/1001, while 24 is 24: the NTSC rates sit 0.024 and more from them
_NTSC_TOLERANCE = Fraction(1, 200)
# a time a double's hair from a frame boundary is on it (editors store times as doubles)
_ON_FRAME = Fraction(1, 1000)
# the rates a time may be written at: frame rates, and the finer time bases some editors count
# in (audio samples, ticks); and the largest time value, in frames, still exact as a double
LOWEST_RATE, HIGHEST_RATE = 0.001, 1_000_000.0
LARGEST_TIME = 2**53


def check_time(time: RationalTime | None, what: str) -> None:
    """InputError unless `time` (None: no time) is a finite number of frames at a usable
    rate: above 0, at most HIGHEST_RATE, and not so far from 0 that frames stop being exact
    (LARGEST_TIME). `what` names its holder in the sentence ("clip 'A' on V1")."""
    if time is None:
        return
    rate, value = time.rate, time.value
    if not (math.isfinite(rate) and LOWEST_RATE <= rate <= HIGHEST_RATE):
        raise InputError(f"{what} has a time at a rate of {rate:g}, which is no frame rate "
                         f"(from {LOWEST_RATE:g} to {HIGHEST_RATE:g}): fix the timeline's "
                         "rates and export it again")
    if not (math.isfinite(value) and abs(value) <= LARGEST_TIME):
        raise InputError(f"{what} has a time of {value:g} frames, more than a timeline can "
                         f"number exactly ({LARGEST_TIME}): fix the timeline and export it again")


def exact_rate(rate: float) -> Fraction:
    """A rate as OTIO stores it (23.976, 23.976023976..., 29.97, 25.0) as an exact Fraction
    (24000/1001, 30000/1001, 25)."""
    value = Fraction(rate)
    for ntsc in NTSC_RATES:
        if abs(value - ntsc) < _NTSC_TOLERANCE:
            return ntsc
    return value.limit_denominator(1001)


def exact_frames(time: RationalTime, rate: Fraction) -> Fraction:
    """`time` in frames at `rate`, exactly (a fraction where it falls between frames)."""
    return Fraction(time.value) * rate / exact_rate(time.rate)


def frames_of(time: RationalTime, rate: Fraction) -> int:
    """`time` as a whole number of frames at `rate`, the nearest one."""
    return round(exact_frames(time, rate))


def frame_at_or_before(time: RationalTime, rate: Fraction) -> int:
    """The frame at `rate` that is showing at `time` (where `time` falls between frames, the
    one before it)."""
    frames = exact_frames(time, rate)
    nearest = round(frames)
    return nearest if abs(frames - nearest) < _ON_FRAME else math.floor(frames)


def time_at(frames: int, rate: float) -> RationalTime:
    """`frames` frames at `rate` (a rate as the timeline stores it)."""
    return RationalTime(float(frames), rate)

