"""How many source frames a Resolve timeline item shows, from Resolve's source readers, and so
whether it plays at its own speed (the measured rules: docs/resolve.md, "Frame mapping").

Resolve gives two readers of the source side: GetSourceStartFrame / GetSourceEndFrame (frames)
and GetSourceStartTime / GetSourceEndTime (seconds). The seconds count in the media's timecode
space, so only their difference means anything here: (end - start) x media fps is the number of
source frames shown, whatever timecode the file starts at. GetSourceEndFrame is exclusive when
the media's rate equals the timeline's and inclusive when they differ, so the frames are used
only where the seconds are missing. Both readers give 0/0 on timelines imported from FCP7 or
Premiere XML: unknown, not "no retime". Numbers may come back a hair off a whole frame
(1299.9999 for 1300): every comparison allows HAIR.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

from facefuse import same_rate

HAIR = 1e-3  # frames: a readback this close to a whole frame is that frame
NORMAL, RETIMED, REVERSED, UNKNOWN = "normal", "retimed", "reversed", "unknown"


@dataclass(frozen=True, slots=True)
class SourceReadback:
    """What Resolve read back for an item's source side; None where it gave nothing.

    start_frame, end_frame: GetSourceStartFrame / GetSourceEndFrame (source frames, the end
    exclusive or inclusive as above). start_time, end_time: GetSourceStartTime /
    GetSourceEndTime (seconds in the media's timecode space)."""

    start_frame: float | None = None
    end_frame: float | None = None
    start_time: float | None = None
    end_time: float | None = None

    @property
    def says_nothing(self) -> bool:
        """No reader answered, or one read 0/0 (a timeline imported from XML)."""
        frames = (self.start_frame, self.end_frame)
        times = (self.start_time, self.end_time)
        zero = any(all(v is not None and abs(v) < HAIR for v in pair) for pair in (frames, times))
        return zero or (None in frames and None in times)


def whole_frame(value: float) -> int:
    """The nearest whole frame (1299.9999 -> 1300): never truncated."""
    return round(value)


def shown_frames(read: SourceReadback, media_fps: Fraction | None,
                 timeline_fps: Fraction) -> float | None:
    """The source frames the item shows (negative: played backwards); None when unknown."""
    if read.says_nothing:
        return None
    if read.start_time is not None and read.end_time is not None and media_fps:
        return (read.end_time - read.start_time) * float(media_fps)
    if read.start_frame is None or read.end_frame is None:
        return None
    span = read.end_frame - read.start_frame
    if media_fps and not same_rate(media_fps, timeline_fps) and span >= 0:
        span += 1  # GetSourceEndFrame is inclusive when the rates differ
    return span


def expected_frames(duration: int, media_fps: Fraction | None, timeline_fps: Fraction) -> float:
    """The source frames `duration` timeline frames show at the item's own speed."""
    return float(duration * (media_fps or timeline_fps) / timeline_fps)


def speed_verdict(read: SourceReadback, duration: int, media_fps: Fraction | None,
                  timeline_fps: Fraction) -> tuple[str, float | None]:
    """(NORMAL, RETIMED, REVERSED or UNKNOWN, the source frames shown). At the timeline's rate
    the count is a whole number of frames, and a retime is a count that rounds to another one;
    at another rate Resolve's conversion leaves a fraction (a 29.97 clip on a 24 fps timeline
    shows 92.4 source frames in 74 timeline frames), so only a whole frame more or less is."""
    shown = shown_frames(read, media_fps, timeline_fps)
    if shown is None:
        return UNKNOWN, None
    backwards = read.start_frame is not None and read.end_frame is not None and \
        read.start_frame - read.end_frame > HAIR
    if backwards or shown < -HAIR:
        return REVERSED, shown
    own_rate = media_fps is None or same_rate(media_fps, timeline_fps)
    allowed = 0.5 if own_rate else 1.0
    if abs(shown - expected_frames(duration, media_fps, timeline_fps)) >= allowed - HAIR:
        return RETIMED, shown
    return NORMAL, shown
