"""Which clips of a timeline are swapped, over which frames of their media, and what is refused.

Selection: with a marker name (`--marker`, default "swap", any colour, any case) a clip is
swapped when a marker of that name is on the clip itself, or on its track with a range that
overlaps the clip's record range; with `--all`, every clip that shows footage. Only clips
directly on the timeline's video tracks are looked at: clips inside nested stacks (compound
clips) and on audio tracks are left alone (a note says so for a marked clip inside a nested
stack), and markers on the timeline itself select nothing (they name no track). `--all` leaves
stills, titles, generators and facefuse's own swaps (versions.is_swap) as they are, with a note
for each.

Used range: a clip's source range widened by the offsets of the transitions next to it (the
frames a dissolve shows of it: OTIO's visible range), as media frames: every frame that is
showing at some instant of it. Times are what counts, not the rates they are written at: a
clip written at 15 fps over a 30 fps movie shows every movie frame once (Premiere writes such
clips), and a clip of 25 fps media on a 24 fps timeline shows the media at its own speed. The
render covers the used range and `handles` frames more on each side, as far as the media goes.

Refused, in one sentence naming the clip, before anything is rendered: a retimed clip (a
LinearTimeWarp other than 100%, a FreezeFrame or any time effect, on the clip, its track or the
timeline), media that is not a video file or an image sequence (under a marker), missing files,
and a used range outside the media.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import opentimelineio as otio
from opentimelineio.opentime import RationalTime, TimeRange

from facefuse import InputError, rate_text

from .media import Media, media_of, not_footage
from .times import check_time, exact_rate, frame_at_or_before, frames_of, time_at
from .versions import is_swap

DEFAULT_MARKER = "swap"
# effect names that mean a retime, beside OTIO's TimeEffect classes (LinearTimeWarp, FreezeFrame)
_RETIME_WORDS = ("timewarp", "time warp", "time_warp", "retime", "speed", "freeze",
                 "timeremap", "time remap", "time_remap")


@dataclass(frozen=True, slots=True, eq=False)
class ClipSwap:
    """One clip to swap: where it is (its track's index in the timeline's stack, its own in the
    track), its label for sentences, its media, and the engine frame numbers rendered (the used
    range and its handles) and used (the used range alone)."""

    clip: otio.schema.Clip
    track: int
    item: int
    label: str
    media: Media
    frames: tuple[int, int]
    used: tuple[int, int]


@dataclass(frozen=True, slots=True, eq=False)
class Selection:
    """The clips to swap, and a sentence for each clip left as it is."""

    swaps: tuple[ClipSwap, ...]
    notes: tuple[str, ...]


def select_clips(timeline: otio.schema.Timeline, marker: str | None, handles: int,
                 base: Path, renders: Path | None = None) -> Selection:
    """The clips to swap (marker None: every clip that shows footage), in track order then
    record order, each checked; InputError in one sentence for the first that cannot be
    swapped, or when none is selected. base: the folder relative media paths are taken from;
    renders: the folder renders go to (default: base), where earlier swaps are found."""
    check_times(timeline)
    picked: list[tuple[int, int, otio.schema.Clip]] = []
    notes: list[str] = []
    for t, track, i, clip in _video_clips(timeline):
        if marker is not None and not _marked(clip, track, marker):
            continue
        left = _left_alone(clip, track, renders or base, base) if marker is None else None
        if left is not None:
            notes.append(f"{clip_label(timeline, track, clip)} {left}: left as it is")
        else:
            picked.append((t, i, clip))
    nested = _nested_marked(timeline, marker) if marker is not None else []
    notes.extend(nested)
    if not picked:
        raise InputError(_nothing_selected(timeline, marker, len(notes), len(nested)))
    swaps = tuple(_checked(timeline, t, i, clip, handles, base) for t, i, clip in picked)
    return Selection(swaps, tuple(notes))


def check_times(timeline: otio.schema.Timeline) -> None:
    """InputError (times.check_time) for the first time the swap reads that is no time: the
    timeline's start, and the ranges of the video tracks and of what is on them (a clip's
    place on its track adds up the items before it)."""
    name = f"the timeline {timeline.name!r}" if timeline.name else "the timeline"
    check_time(timeline.global_start_time, name)
    for number, track in enumerate(_video_tracks(timeline), start=1):
        where = f"V{number}" if not track.name else track.name
        ranges = [(f"the track {where}", track.source_range)]
        ranges += [(f"{_kind(item)} '{item.name}' on {where}", item.source_range)
                   for item in track if not isinstance(item, otio.schema.Transition)]
        for what, span in ranges:
            if span is not None:
                check_time(span.start_time, what)
                check_time(span.duration, what)
        for item in track:
            if isinstance(item, otio.schema.Transition):
                check_time(item.in_offset, f"the transition '{item.name}' on {where}")
                check_time(item.out_offset, f"the transition '{item.name}' on {where}")


def _kind(item: object) -> str:
    return "clip" if isinstance(item, otio.schema.Clip) else \
        "gap" if isinstance(item, otio.schema.Gap) else "item"


def _left_alone(clip: otio.schema.Clip, track: otio.schema.Track, renders: Path,
                base: Path) -> str | None:
    """Why `--all` leaves a clip alone ("is a still image (a.png)"), or None to swap it."""
    if is_swap(clip, track, renders, base):
        return "is a facefuse swap"
    what = not_footage(clip)
    return f"is {what}" if what else None


def _nested_marked(timeline: otio.schema.Timeline, marker: str) -> list[str]:
    """A note for each marked clip inside a nested stack or track of a video track."""
    nested = [clip for track in _video_tracks(timeline) for item in track
              if isinstance(item, otio.core.Composition) for clip in item.find_clips()]
    return [f"clip '{clip.name}' carries a '{marker}' marker inside a nested stack: clips in "
            "nested stacks are not swapped (swap the nested timeline's own export)"
            for clip in nested if any(named(m, marker) for m in clip.markers)]


def _video_tracks(timeline: otio.schema.Timeline) -> Iterator[otio.schema.Track]:
    return (track for track in timeline.tracks if is_video(track))


def is_video(item: object) -> bool:
    """Whether `item` (of a timeline's stack) is a video track."""
    return isinstance(item, otio.schema.Track) and item.kind == otio.schema.TrackKind.Video


def _video_clips(timeline: otio.schema.Timeline
                 ) -> Iterator[tuple[int, otio.schema.Track, int, otio.schema.Clip]]:
    for t, track in enumerate(timeline.tracks):
        if is_video(track):
            for i, item in enumerate(track):
                if isinstance(item, otio.schema.Clip):
                    yield t, track, i, item


def _marked(clip: otio.schema.Clip, track: otio.schema.Track, name: str) -> bool:
    if any(named(m, name) for m in clip.markers):
        return True
    placed = clip.range_in_parent()
    return any(named(m, name) and _overlaps(m.marked_range, placed) for m in track.markers)


def named(marker: otio.schema.Marker, name: str) -> bool:
    """Whether `marker` is named `name`, ignoring case and surrounding spaces."""
    return marker.name.strip().casefold() == name.strip().casefold()


def _overlaps(marked: TimeRange, placed: TimeRange) -> bool:
    """Whether a marker's range (a point when its duration is 0) overlaps a clip's range."""
    start, end = marked.start_time, marked.end_time_exclusive()
    if marked.duration.value <= 0:
        return placed.start_time <= start < placed.end_time_exclusive()
    return start < placed.end_time_exclusive() and placed.start_time < end


def _nothing_selected(timeline: otio.schema.Timeline, marker: str | None, left: int,
                      nested: int) -> str:
    name = timeline.name or "the timeline"
    if marker is None:
        if left:
            return f"{name} has no footage to swap: its {left} clip(s) are stills, titles, " \
                   "generators or facefuse swaps"
        return f"{name} has no clips on its video tracks"
    on_timeline = any(named(m, marker) for m in timeline.tracks.markers)
    hint = (" (a marker on the timeline itself names no track: put it on the clip or its "
            "track)") if on_timeline else ""
    if nested:
        hint += f" ({nested} clip(s) inside nested stacks carry it: clips in nested stacks are " \
                "not swapped)"
    return f"no clip of {name} carries a marker named '{marker}'{hint}; mark the clips to swap, " \
           "or give --all"


def _checked(timeline: otio.schema.Timeline, t: int, i: int, clip: otio.schema.Clip,
             handles: int, base: Path) -> ClipSwap:
    track = timeline.tracks[t]
    label = clip_label(timeline, track, clip)
    retime = _retime(clip, track, timeline)
    if retime:
        raise InputError(f"{label} is retimed ({retime}): facefuse swaps clips at their "
                         "media's own speed; render the retime first, or remove it")
    media = media_of(clip, label, base)
    used = _used(clip, label, media, record_rate(timeline, track))
    frames = (max(used[0] - handles, media.first_number),
              min(used[1] + handles, media.last_number))
    missing = media.missing(*frames)
    if missing:
        raise InputError(f"the media of {label} is missing: {missing} does not exist")
    return ClipSwap(clip, t, i, label, media, frames, used)


def _used(clip: otio.schema.Clip, label: str, media: Media, record: float
          ) -> tuple[int, int]:
    """The engine numbers of the media frames the clip shows at the record frames (at rate
    `record`) of its visible range: the frame showing at each record frame's start."""
    visible = clip.visible_range()
    last_shown = visible.end_time_exclusive() - RationalTime(1, record).rescaled_to(
        visible.duration.rate)
    first = media.first_number + frame_at_or_before(visible.start_time - media.start,
                                                    media.rate)
    last = media.first_number + frame_at_or_before(last_shown - media.start, media.rate)
    if last < first:
        raise InputError(f"{label} has no frames")
    if first < media.first_number or last > media.last_number:
        raise InputError(f"{label} uses frames {first}-{last} of its media, which has frames "
                         f"{media.first_number}-{media.last_number}")
    return first, last


def record_rate(timeline: otio.schema.Timeline, track: otio.schema.Track) -> float:
    """The rate a timeline plays its record frames at, as it stores it: its start time's, else
    the track's (an EDL has no start time), else its first item's."""
    if timeline.global_start_time is not None:
        return timeline.global_start_time.rate
    if track.source_range is not None:
        return track.source_range.duration.rate
    return track.duration().rate


def _retime(clip: otio.schema.Clip, track: otio.schema.Track,
            timeline: otio.schema.Timeline) -> str | None:
    """The name of the first time effect on the clip, its track or the timeline, or None. A
    LinearTimeWarp of exactly 1 is 100% speed (Avid marks untouched clips so)."""
    for effect in (*clip.effects, *track.effects, *timeline.tracks.effects):
        if is_identity_warp(effect):
            continue
        words = f"{effect.schema_name()} {effect.effect_name} {effect.name}".lower()
        if isinstance(effect, otio.schema.TimeEffect) or any(w in words for w in _RETIME_WORDS):
            return effect.effect_name or effect.schema_name()
    return None


def is_identity_warp(effect: otio.schema.Effect) -> bool:
    """Whether `effect` is a LinearTimeWarp at 100% speed (it changes no frame)."""
    return isinstance(effect, otio.schema.LinearTimeWarp) and \
        not isinstance(effect, otio.schema.FreezeFrame) and effect.time_scalar == 1.0


def clip_label(timeline: otio.schema.Timeline, track: otio.schema.Track,
               clip: otio.schema.Clip) -> str:
    """"clip 'NAME' on V2 at 01:00:04:12": the clip, its track and its record timecode."""
    video = list(_video_tracks(timeline))
    where = track.name or f"V{next(n for n, t in enumerate(video) if t is track) + 1}"
    start = clip.range_in_parent().start_time
    origin = timeline.global_start_time
    if origin is not None:
        start = time_at(frames_of(start, exact_rate(origin.rate)), origin.rate) + origin
    return f"clip '{clip.name}' on {where} at {record_timecode(start)}"


def record_timecode(time: RationalTime) -> str:
    """A record time as timecode at its own rate (drop-frame at 29.97 and 59.94); at a rate
    timecode has no form for (12 fps, 1000), "frame N at R fps"."""
    if time.rate >= 1 and time.value >= 0:
        try:
            return otio.opentime.to_timecode(time, time.rate)
        except ValueError:
            pass
    return f"frame {time.value:g} at {rate_text(exact_rate(time.rate))} fps"
