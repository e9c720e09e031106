"""Frame rates and timecode: a rate parsed from and written as text, and timecode counted both
ways, drop frame included.

A rate is an exact Fraction (23.976 -> 24000/1001). Timecode counts at the nominal integer rate
(24 for 23.976, 30 for 29.97); drop-frame timecode (multiples of 29.97) skips the frame numbers
:00 and :01 (:00-:03 at 59.94) at the start of every minute but every tenth, as SMPTE 12M says.
The separator before the frames is ';' for drop frame by convention; ':', ';' and '.' are read.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from fractions import Fraction
from types import MappingProxyType

from .errors import InputError

NTSC_RATES = MappingProxyType({
    "23.976": Fraction(24000, 1001), "23.98": Fraction(24000, 1001),
    "29.97": Fraction(30000, 1001), "47.952": Fraction(48000, 1001),
    "59.94": Fraction(60000, 1001), "119.88": Fraction(120000, 1001)})
# the frame rates parse_rate takes (editors' own go from 16 to 120)
LOWEST_RATE, HIGHEST_RATE = Fraction(1, 1000), Fraction(1000)
_TIMECODE = re.compile(r"^(\d{1,2})[:;.](\d{2})[:;.](\d{2})([:;.])(\d{2,3})$")
# a timecode as a file carries it; FFmpeg writes the frames field with as few digits as the rate
# needs: one below 10 frames/s
TIMECODE_PATTERN = re.compile(r"^(\d{2}):(\d{2}):(\d{2})([:;.])(\d{1,3})$")
_RATE_TOLERANCE = Fraction(1, 1000)
_DROP_SUFFIX = re.compile(r"\s*n?df$")


def rate_text(rate: Fraction) -> str:
    """A rate as people write it: 24000/1001 -> '23.976', 30000/1001 -> '29.97', 25 -> '25'."""
    return f"{float(rate):.3f}".rstrip("0").rstrip(".")


def parse_rate(text: str | float) -> Fraction:
    """A frame rate as an exact Fraction: "23.976" and "23.98" -> 24000/1001, "29.97" ->
    30000/1001, "25" -> 25, "24000/1001", a number (23.976), with or without "fps" or a " DF" /
    " NDF" suffix ("29.97 DF"). InputError for anything else, and for a rate outside
    LOWEST_RATE..HIGHEST_RATE."""
    raw = _DROP_SUFFIX.sub("", str(text).strip().lower().removesuffix("fps").strip())
    if raw.endswith(".0") or re.fullmatch(r"\d+\.0+", raw):
        raw = raw.split(".")[0]
    for name, value in NTSC_RATES.items():
        if raw == name or (re.fullmatch(r"\d+\.\d+", raw)
                           and abs(Fraction(raw) - value) < _RATE_TOLERANCE):
            return value
    try:
        rate = Fraction(raw)
    except (ValueError, ZeroDivisionError):
        raise InputError(f"{text!r} is not a frame rate") from None
    if rate <= 0:
        raise InputError(f"a frame rate must be above 0, not {text!r}")
    if not LOWEST_RATE <= rate <= HIGHEST_RATE:
        raise InputError(f"{text!r} is not a frame rate: rates go from {float(LOWEST_RATE):g} "
                         f"to {HIGHEST_RATE} fps")
    return rate


def says_drop_frame(text: str | float) -> bool:
    """Whether a rate as an editor writes it names drop-frame timecode ("29.97 DF")."""
    raw = str(text).strip().lower()
    return raw.endswith("df") and not raw.endswith("ndf")


def same_rate(a: Fraction, b: Fraction) -> bool:
    """Whether two rates are the same for editing purposes (within 1/1000 fps)."""
    return abs(a - b) < _RATE_TOLERANCE


def dropped_per_minute(fps: Fraction) -> int:
    """Frame numbers drop-frame timecode skips a minute at `fps`: 2 at 29.97, 4 at 59.94, 0
    where it has none (not a multiple of 29.97)."""
    nominal = round(fps)
    return 0 if fps.denominator != 1001 or nominal % 30 else 2 * nominal // 30


@dataclass(frozen=True, slots=True)
class TimecodeRate:
    """The rate a timecode counts at: `fps` exact, `drop_frame` whether it skips numbers.
    InputError for a rate not above 0, or drop frame at a rate that has none."""

    fps: Fraction
    drop_frame: bool = False

    def __post_init__(self) -> None:
        if self.fps <= 0:
            raise InputError(f"a frame rate must be above 0, not {float(self.fps):g}")
        if self.drop_frame and self.dropped_per_minute == 0:
            raise InputError(f"drop-frame timecode needs a 29.97 or 59.94 fps timeline, not "
                             f"{rate_text(self.fps)} fps")

    @property
    def nominal(self) -> int:
        """The integer rate timecode counts at (24 for 23.976, 30 for 29.97)."""
        return round(self.fps)

    @property
    def dropped_per_minute(self) -> int:
        """Frame numbers skipped a minute (0 without drop frame's rate, see dropped_per_minute)."""
        return dropped_per_minute(self.fps)


def timecode_to_frames(timecode: str, rate: TimecodeRate) -> int:
    """The frame count from 00:00:00:00 that `timecode` (HH:MM:SS:FF) names. InputError for a
    malformed timecode, a frame field past the nominal rate, or a drop-frame timecode naming a
    dropped number (00:01:00;00 at 29.97 DF)."""
    match = _TIMECODE.match(timecode.strip())
    if match is None:
        raise InputError(f"{timecode!r} is not a timecode (HH:MM:SS:FF)")
    hours, minutes, seconds, frames = (int(match[i]) for i in (1, 2, 3, 5))
    if minutes > 59 or seconds > 59 or frames >= rate.nominal:
        raise InputError(f"{timecode!r} is not a valid timecode at {rate_text(rate.fps)} fps")
    drop = rate.dropped_per_minute if rate.drop_frame else 0
    if drop and seconds == 0 and frames < drop and minutes % 10:
        raise InputError(f"{timecode!r} does not exist in drop-frame timecode (frames "
                         f"00-{drop - 1:02d} of each minute but every tenth are skipped)")
    return _count(hours, minutes, seconds, frames, rate.nominal, drop)


def frames_to_timecode(count: int, rate: TimecodeRate) -> str:
    """The timecode of frame `count` from 00:00:00:00 (';' before the frames when drop frame);
    wraps at 24 hours as timecode does."""
    drop = rate.dropped_per_minute if rate.drop_frame else 0
    return _timecode(count, rate.nominal, drop, ";" if rate.drop_frame else ":")


def offset_timecode(timecode: str, rate: Fraction, frames: int) -> str:
    """``timecode`` (HH:MM:SS:FF as a file carries it, ':' ';' or '.' before the frames, kept)
    moved on by ``frames`` frames at ``rate``, wrapping at 24 h; ';' or '.' at a multiple of
    29.97 is drop frame. ValueError unless it is such a timecode."""
    match = TIMECODE_PATTERN.match(timecode)
    if match is None:
        raise ValueError(f"{timecode!r} is not a HH:MM:SS:FF timecode")
    separator = match[4]
    drop = dropped_per_minute(rate) if separator in ";." else 0
    hours, minutes, seconds, ff = (int(match[i]) for i in (1, 2, 3, 5))
    count = _count(hours, minutes, seconds, ff, round(rate), drop) + frames
    return _timecode(count, round(rate), drop, separator)


def _count(hours: int, minutes: int, seconds: int, frames: int, nominal: int, drop: int) -> int:
    total_minutes = 60 * hours + minutes
    return ((total_minutes * 60 + seconds) * nominal + frames
            - drop * (total_minutes - total_minutes // 10))


def _timecode(count: int, nominal: int, drop: int, separator: str) -> str:
    if drop:
        per_ten = 10 * 60 * nominal - 9 * drop  # frames in ten minutes
        tens, rest = divmod(count, per_ten)
        extra = 0 if rest < drop else drop * ((rest - drop) // (60 * nominal - drop))
        count += 9 * drop * tens + extra
    seconds = count // nominal
    return (f"{(seconds // 3600) % 24:02d}:{(seconds // 60) % 60:02d}:{seconds % 60:02d}"
            f"{separator}{count % nominal:02d}")
