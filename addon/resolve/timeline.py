"""Timecode maths and the frame mapping between an editor's timeline and a clip's source media.

The Resolve launcher and bridge hand over raw numbers (record frames, offsets, rate strings,
timecodes) and every decision is made here (nothing Resolve-specific: another editor's host may
use it the same way).

Conventions. A timeline rate is an exact Fraction (23.976 -> 24000/1001, 29.97 -> 30000/1001);
timecode counts at the nominal integer rate (24 for 23.976, 30 for 29.97). Drop-frame timecode
(29.97, 59.94) skips the frame numbers :00 and :01 (:00-:03 at 59.94) at the start of every
minute except every tenth, so that timecode stays in step with the clock; the separator before
the frames is ';' by convention, but either is accepted. Record frames are the timeline's own
absolute frame numbers (Resolve: a timeline starting at 01:00:00:00 at 24 fps starts at frame
86400). Source frames are 0-based indices into the clip's media; the engine numbers a movie's
frames from ENGINE_START_NUMBER (as `facefuse render` does), so source index i is engine frame
i + ENGINE_START_NUMBER.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from fractions import Fraction
from types import MappingProxyType

from facefuse import InputError

ENGINE_START_NUMBER = 1
_NTSC = MappingProxyType({"23.976": Fraction(24000, 1001), "23.98": Fraction(24000, 1001),
         "29.97": Fraction(30000, 1001), "47.952": Fraction(48000, 1001),
         "59.94": Fraction(60000, 1001), "119.88": Fraction(120000, 1001)})
_TIMECODE = re.compile(r"^(\d{1,2})[:;.](\d{2})[:;.](\d{2})([:;.])(\d{2,3})$")
_RATE_TOLERANCE = Fraction(1, 1000)
_DROP_SUFFIX = re.compile(r"\s*n?df$")
# the frame rates a timeline or a clip may have (Resolve's own go from 16 to 120)
LOWEST_RATE, HIGHEST_RATE = Fraction(1, 1000), Fraction(1000)


@dataclass(frozen=True, slots=True)
class TimelineRate:
    """A timeline's frame rate: `fps` exact, `drop_frame` whether its timecode drops numbers."""

    fps: Fraction
    drop_frame: bool = False

    def __post_init__(self) -> None:
        if self.fps <= 0:
            raise InputError(f"a frame rate must be above 0, not {float(self.fps):g}")
        if self.drop_frame and self.dropped_per_minute == 0:
            raise InputError(f"drop-frame timecode needs a 29.97 or 59.94 fps timeline, not "
                             f"{format_rate(self.fps)} fps")

    @property
    def nominal(self) -> int:
        """The integer rate timecode counts at (24 for 23.976, 30 for 29.97)."""
        return round(self.fps)

    @property
    def dropped_per_minute(self) -> int:
        """Frame numbers skipped per minute in drop-frame timecode (2 at 29.97, 4 at 59.94)."""
        if self.fps.denominator != 1001 or self.nominal % 30:
            return 0
        return 2 * self.nominal // 30


def parse_rate(text: str | float) -> Fraction:
    """A frame rate as an exact Fraction: "23.976" and "23.98" -> 24000/1001, "29.97" ->
    30000/1001, "25" -> 25, "24000/1001" -> 24000/1001, a number (Resolve's clip FPS: 23.976),
    with or without a " DF" / " NDF" suffix (Resolve's timelineFrameRate: "29.97 DF").
    InputError for anything else, and for a rate outside LOWEST_RATE..HIGHEST_RATE."""
    raw = str(text).strip().lower().removesuffix("fps").strip()
    raw = _DROP_SUFFIX.sub("", raw)
    if raw.endswith(".0") or re.fullmatch(r"\d+\.0+", raw):
        raw = raw.split(".")[0]
    for name, value in _NTSC.items():
        if raw == name or (re.fullmatch(r"\d+\.\d+", raw) and abs(Fraction(raw) - value)
                           < _RATE_TOLERANCE):
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
    """Whether a rate as Resolve writes it names drop-frame timecode ("29.97 DF")."""
    raw = str(text).strip().lower()
    return raw.endswith("df") and not raw.endswith("ndf")


def format_rate(fps: Fraction) -> str:
    """23.976, 29.97, 24, 25: how editors write a rate."""
    for name in ("23.976", "29.97", "47.952", "59.94", "119.88"):
        if fps == _NTSC[name]:
            return name
    return f"{float(fps):g}"


def same_rate(a: Fraction, b: Fraction) -> bool:
    """Whether two rates are the same for editing purposes (within 1/1000 fps)."""
    return abs(a - b) < _RATE_TOLERANCE


def timecode_to_frames(timecode: str, rate: TimelineRate) -> int:
    """The frame count from 00:00:00:00 that `timecode` (HH:MM:SS:FF, ';' allowed) names.

    InputError for a malformed timecode, a frame field past the nominal rate, or a drop-frame
    timecode naming a dropped number (e.g. 00:01:00;00 at 29.97 DF)."""
    match = _TIMECODE.match(timecode.strip())
    if match is None:
        raise InputError(f"{timecode!r} is not a timecode (HH:MM:SS:FF)")
    hours, minutes, seconds, frames = (int(match[i]) for i in (1, 2, 3, 5))
    nominal = rate.nominal
    if minutes > 59 or seconds > 59 or frames >= nominal:
        raise InputError(f"{timecode!r} is not a valid timecode at {format_rate(rate.fps)} fps")
    total_minutes = 60 * hours + minutes
    count = (total_minutes * 60 + seconds) * nominal + frames
    if not rate.drop_frame:
        return count
    drop = rate.dropped_per_minute
    if seconds == 0 and frames < drop and minutes % 10:
        raise InputError(f"{timecode!r} does not exist in drop-frame timecode (frames "
                         f"00-{drop - 1:02d} of each minute but every tenth are skipped)")
    return count - drop * (total_minutes - total_minutes // 10)


def frames_to_timecode(count: int, rate: TimelineRate) -> str:
    """The timecode of frame `count` counted from 00:00:00:00 (';' before the frames when drop
    frame); wraps at 24 hours as timecode does."""
    nominal = rate.nominal
    if rate.drop_frame:
        drop = rate.dropped_per_minute
        per_ten = 10 * 60 * nominal - 9 * drop  # frames in ten minutes
        per_minute = 60 * nominal - drop
        tens, rest = divmod(count, per_ten)
        extra = 0 if rest < drop else drop * ((rest - drop) // per_minute)
        count += 9 * drop * tens + extra
    frames = count % nominal
    seconds = count // nominal
    separator = ";" if rate.drop_frame else ":"
    return (f"{(seconds // 3600) % 24:02d}:{(seconds // 60) % 60:02d}:{seconds % 60:02d}"
            f"{separator}{frames:02d}")


@dataclass(frozen=True, slots=True)
class ItemSpan:
    """Where a timeline item sits and which of its media's frames it shows (no speed change).

    record_start: the timeline frame of its first frame; duration: frames on the timeline;
    left_offset: the 0-based source index shown at record_start (what the clip is trimmed by at
    its head). Record frame record_start + k shows source index left_offset + k.
    first_number: the engine's number of source index 0 (ENGINE_START_NUMBER for a movie, the
    first file's number for an image sequence).
    """

    record_start: int
    duration: int
    left_offset: int
    first_number: int = ENGINE_START_NUMBER

    def __post_init__(self) -> None:
        if self.duration < 1:
            raise InputError(f"a timeline item must be at least one frame long, not "
                             f"{self.duration}")
        if self.left_offset < 0:
            raise InputError(f"a timeline item cannot start before its media (left offset "
                             f"{self.left_offset})")

    @property
    def record_end(self) -> int:
        """The first timeline frame after the item (exclusive end)."""
        return self.record_start + self.duration

    def contains(self, record_frame: int) -> bool:
        return self.record_start <= record_frame < self.record_end

    def source_index(self, record_frame: int) -> int:
        """The 0-based media frame shown at `record_frame`; InputError outside the item."""
        if not self.contains(record_frame):
            raise InputError(f"timeline frame {record_frame} is outside the item (frames "
                             f"{self.record_start}-{self.record_end - 1})")
        return self.left_offset + record_frame - self.record_start

    def engine_frame(self, record_frame: int) -> int:
        """The engine's frame number (`facefuse render --frames`) shown at `record_frame`."""
        return self.source_index(record_frame) + self.first_number

    @property
    def engine_frames(self) -> tuple[int, int]:
        """The inclusive engine frame range the item uses: what a render of it processes."""
        first = self.left_offset + self.first_number
        return first, first + self.duration - 1


def playhead_frame(current_timecode: str, start_timecode: str, start_frame: int,
                   rate: TimelineRate) -> int:
    """The record frame under the playhead: the timeline's start frame plus the frames between
    its start timecode and the current one (both in the timeline's own timecode)."""
    offset = timecode_to_frames(current_timecode, rate) - timecode_to_frames(start_timecode, rate)
    if offset < 0:
        raise InputError(f"the playhead ({current_timecode}) is before the timeline's start "
                         f"({start_timecode})")
    return start_frame + offset
