"""The frame mapping between an editor's timeline and a clip's source media.

The Resolve launcher and bridge hand over raw numbers (record frames, offsets, rate strings,
timecodes) and every decision is made here or in facefuse's timebase (rates, timecode, drop
frame); nothing is Resolve-specific: another editor's host may use it the same way.

Record frames are the timeline's own absolute frame numbers (Resolve: a timeline starting at
01:00:00:00 at 24 fps starts at frame 86400). Source frames are 0-based indices into the clip's
media; the engine numbers a movie's frames from ENGINE_START_NUMBER (as `facefuse render`
does), so source index i is engine frame i + ENGINE_START_NUMBER.
"""

from __future__ import annotations

from dataclasses import dataclass

from facefuse import InputError, TimecodeRate, timecode_to_frames

ENGINE_START_NUMBER = 1


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
                   rate: TimecodeRate) -> int:
    """The record frame under the playhead: the timeline's start frame plus the frames between
    its start timecode and the current one (both in the timeline's own timecode)."""
    offset = timecode_to_frames(current_timecode, rate) - timecode_to_frames(start_timecode, rate)
    if offset < 0:
        raise InputError(f"the playhead ({current_timecode}) is before the timeline's start "
                         f"({start_timecode})")
    return start_frame + offset
