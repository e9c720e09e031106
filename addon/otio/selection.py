"""Which clips of a timeline are swapped, over which frames of their media, and what is refused.

Selection: with a marker name (`--marker`, default "swap", any colour, any case) a clip is
swapped when a marker of that name is on the clip itself, or on its track with a range that
overlaps the clip's record range; with `--all`, every clip. Only clips directly on the
timeline's video tracks are looked at: clips inside nested stacks (compound clips) and on
audio tracks are left alone, and markers on the timeline itself select nothing (they name no
track).

Used range: a clip's source range widened by the offsets of the transitions next to it (the
frames a dissolve shows of it: OTIO's visible range). The render covers it and `handles`
frames more on each side, as far as the media goes.

Refused, in one sentence naming the clip, before anything is rendered: a retimed clip (a
LinearTimeWarp, a FreezeFrame or any time effect, on the clip, its track or the timeline),
media that is not a video file or an image sequence, missing files, a clip whose rate is not
its media's, and a used range outside the media.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import opentimelineio as otio
from opentimelineio.opentime import RationalTime, TimeRange

from facefuse import InputError

from .media import Media, media_of
from .times import exact_rate, frames_of, rate_text, time_at

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


def select_clips(timeline: otio.schema.Timeline, marker: str | None, handles: int,
                 base: Path) -> tuple[ClipSwap, ...]:
    """The clips to swap (marker None: every clip), in track order then record order, each
    checked; InputError in one sentence for the first that cannot be swapped, or when none is
    selected. base: the folder relative media paths are taken from."""
    picked = [(t, i, clip) for t, track, i, clip in _video_clips(timeline)
              if marker is None or _marked(clip, track, marker)]
    if not picked:
        raise InputError(_nothing_selected(timeline, marker))
    return tuple(_checked(timeline, t, i, clip, handles, base) for t, i, clip in picked)


def _video_clips(timeline: otio.schema.Timeline
                 ) -> Iterator[tuple[int, otio.schema.Track, int, otio.schema.Clip]]:
    for t, track in enumerate(timeline.tracks):
        if isinstance(track, otio.schema.Track) and track.kind == otio.schema.TrackKind.Video:
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


def _nothing_selected(timeline: otio.schema.Timeline, marker: str | None) -> str:
    name = timeline.name or "the timeline"
    if marker is None:
        return f"{name} has no clips on its video tracks"
    on_timeline = any(named(m, marker) for m in timeline.tracks.markers)
    hint = (" (a marker on the timeline itself names no track: put it on the clip or its "
            "track)") if on_timeline else ""
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
    clip_rate = exact_rate(clip.trimmed_range().duration.rate)
    if clip_rate != media.rate:
        raise InputError(f"{label} runs at {rate_text(clip_rate)} fps in the edit but its media "
                         f"at {rate_text(media.rate)} fps: conform the clip to its media's rate "
                         "and export the timeline again")
    used = _used(clip, label, media)
    frames = (max(used[0] - handles, media.first_number),
              min(used[1] + handles, media.last_number))
    missing = media.missing(*frames)
    if missing:
        raise InputError(f"the media of {label} is missing: {missing} does not exist")
    return ClipSwap(clip, t, i, label, media, frames, used)


def _used(clip: otio.schema.Clip, label: str, media: Media) -> tuple[int, int]:
    visible = clip.visible_range()
    first = media.number(visible.start_time)
    last = first + frames_of(visible.duration, media.rate) - 1
    if last < first:
        raise InputError(f"{label} has no frames")
    if first < media.first_number or last > media.last_number:
        raise InputError(f"{label} uses frames {first}-{last} of its media, which has frames "
                         f"{media.first_number}-{media.last_number}")
    return first, last


def _retime(clip: otio.schema.Clip, track: otio.schema.Track,
            timeline: otio.schema.Timeline) -> str | None:
    """The name of the first time effect on the clip, its track or the timeline, or None."""
    for effect in (*clip.effects, *track.effects, *timeline.tracks.effects):
        words = f"{effect.schema_name()} {effect.effect_name} {effect.name}".lower()
        if isinstance(effect, otio.schema.TimeEffect) or any(w in words for w in _RETIME_WORDS):
            return effect.effect_name or effect.schema_name()
    return None


def clip_label(timeline: otio.schema.Timeline, track: otio.schema.Track,
               clip: otio.schema.Clip) -> str:
    """"clip 'NAME' on V2 at 01:00:04:12": the clip, its track and its record timecode."""
    video = [t for t in timeline.tracks if isinstance(t, otio.schema.Track)
             and t.kind == otio.schema.TrackKind.Video]
    where = track.name or f"V{next(n for n, t in enumerate(video) if t is track) + 1}"
    start = clip.range_in_parent().start_time
    origin = timeline.global_start_time
    if origin is not None:
        start = time_at(frames_of(start, exact_rate(origin.rate)), origin.rate) + origin
    return f"clip '{clip.name}' on {where} at {record_timecode(start)}"


def record_timecode(time: RationalTime) -> str:
    """A record time as timecode at its own rate (drop-frame at 29.97 and 59.94)."""
    return otio.opentime.to_timecode(time, time.rate)
