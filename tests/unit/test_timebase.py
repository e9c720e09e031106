"""facefuse.timebase: rates (parse, text) and timecode with drop frame, pinned to the texts and
numbers the engine (io.video) and the Resolve and OTIO hosts each wrote for themselves."""

from __future__ import annotations

from fractions import Fraction

import pytest

from facefuse.errors import InputError
from facefuse.timebase import (
    TimecodeRate,
    frames_to_timecode,
    offset_timecode,
    parse_rate,
    rate_text,
    says_drop_frame,
    timecode_to_frames,
)

NTSC24, NTSC30, NTSC60 = Fraction(24000, 1001), Fraction(30000, 1001), Fraction(60000, 1001)
RATES = [(NTSC24, "23.976"), (NTSC30, "29.97"), (NTSC60, "59.94"), (Fraction(25), "25"),
         (Fraction(24), "24"), (Fraction(48000, 1001), "47.952"), (Fraction(120000, 1001),
                                                                     "119.88")]


@pytest.mark.parametrize(("rate", "text"), RATES)
def test_rate_text(rate: Fraction, text: str) -> None:
    assert rate_text(rate) == text


@pytest.mark.parametrize(("text", "rate", "drop"), [
    ("23.976", NTSC24, False), ("23.98", NTSC24, False), ("29.97 DF", NTSC30, True),
    ("29.97 NDF", NTSC30, False), ("59.94", NTSC60, False), ("25", Fraction(25), False),
    ("24.0", Fraction(24), False), ("24000/1001", NTSC24, False), ("30 fps", Fraction(30), False),
    (23.976, NTSC24, False), (25.0, Fraction(25), False), ("59.94df", NTSC60, True)])
def test_parse_rate(text: str | float, rate: Fraction, drop: bool) -> None:
    assert parse_rate(text) == rate
    assert says_drop_frame(text) is drop


@pytest.mark.parametrize("text", ["abc", "0", "-24", "1/0", "2000", "0.0001"])
def test_parse_rate_refuses(text: str) -> None:
    with pytest.raises(InputError):
        parse_rate(text)


# (rate, drop frame, timecode, frames from 00:00:00:00)
TIMECODES = [
    (NTSC24, False, "01:00:00:00", 86400), (Fraction(24), False, "00:00:01:23", 47),
    (Fraction(25), False, "10:00:00:00", 900000), (NTSC30, False, "00:01:00:00", 1800),
    (NTSC30, True, "00:01:00;02", 1800), (NTSC30, True, "00:10:00;00", 17982),
    (NTSC30, True, "01:00:00;00", 107892), (NTSC30, True, "00:00:59;29", 1799),
    (NTSC60, True, "00:01:00;04", 3600), (NTSC60, True, "01:00:00;00", 215784),
    (NTSC60, False, "01:00:00:00", 216000), (NTSC30, True, "23:59:59;29", 2589407),
]


@pytest.mark.parametrize(("rate", "drop", "timecode", "count"), TIMECODES)
def test_timecode_both_ways(rate: Fraction, drop: bool, timecode: str, count: int) -> None:
    tl = TimecodeRate(rate, drop)
    assert timecode_to_frames(timecode, tl) == count
    assert frames_to_timecode(count, tl) == timecode


def test_timecode_wraps_and_refuses() -> None:
    df = TimecodeRate(NTSC30, True)
    assert frames_to_timecode(2589408, df) == "00:00:00;00"
    with pytest.raises(InputError, match="does not exist in drop-frame"):
        timecode_to_frames("00:01:00;00", df)
    with pytest.raises(InputError, match="not a valid timecode at 25 fps"):
        timecode_to_frames("00:00:00:25", TimecodeRate(Fraction(25)))
    with pytest.raises(InputError, match="needs a 29.97 or 59.94 fps timeline, not 25 fps"):
        TimecodeRate(Fraction(25), True)


@pytest.mark.parametrize(("timecode", "rate", "frames", "expected"), [
    ("01:00:00:00", NTSC24, 24, "01:00:01:00"), ("00:00:59;29", NTSC30, 1, "00:01:00;02"),
    ("00:00:59:29", NTSC30, 1, "00:01:00:00"), ("00:09:59;29", NTSC30, 1, "00:10:00;00"),
    ("00:00:59.59", NTSC60, 1, "00:01:00.04"), ("23:59:59;29", NTSC30, 1, "00:00:00;00"),
    ("00:00:00;00", NTSC30, -1, "23:59:59;29"), ("10:00:00:00", Fraction(25), 100000,
                                                  "11:06:40:00"),
    ("00:00:00;00", NTSC30, 17982 * 6, "01:00:00;00"), ("00:00:00:00", Fraction(24), -1,
                                                        "23:59:59:23")])
def test_offset_timecode(timecode: str, rate: Fraction, frames: int, expected: str) -> None:
    assert offset_timecode(timecode, rate, frames) == expected


def test_offset_timecode_refuses_what_is_no_timecode() -> None:
    with pytest.raises(ValueError, match="not a HH:MM:SS:FF timecode"):
        offset_timecode("1:00:00:00", Fraction(24), 1)
