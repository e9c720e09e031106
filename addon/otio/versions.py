"""facefuse's own swaps in a timeline: how they are marked, how they are found again, and where
a new version goes.

A swap is a clip whose `metadata["facefuse"]` says what it was rendered from, on a video track
named `<track> facefuse`, its media a version (`A001.v002.mov`, `A001.v002.####.exr`). Editors
drop metadata they do not know when they export a timeline again, and FCP 7 XML drops track
names too, so a clip whose media is a version counts as a swap on a track of that name or in the
folder the renders go to. A new version goes on a track above every earlier swap over its clip: the
topmost enabled clip is what an editor plays, so below an earlier version it would stay hidden.
"""

from __future__ import annotations

import re
from pathlib import Path

import opentimelineio as otio
from opentimelineio.opentime import TimeRange

from .paths import local_path

METADATA_KEY = "facefuse"
TRACK_SUFFIX = "facefuse"
_VERSION = re.compile(r"\.v\d{3,}(\.|$)")


def is_swap(clip: otio.schema.Clip, track: otio.schema.Track, renders: Path,
            base: Path | None = None) -> bool:
    """Whether `clip` on `track` is a swap facefuse placed (see the module docstring); renders:
    the folder renders go to; base: the folder relative media paths start from (default:
    renders, where a swapped timeline is written)."""
    if METADATA_KEY in clip.metadata:
        return True
    media = _media_path(clip.media_reference, base or renders)
    if media is None or not _VERSION.search(media.name):
        return False
    return (track.name or "").strip().endswith(TRACK_SUFFIX) or media.parent == renders


def track_above_versions(timeline: otio.schema.Timeline, track: int,
                         spans: list[TimeRange], renders: Path) -> int:
    """The index in the timeline's stack where a new swap track for clips of `track` (an index)
    over the record ranges `spans` goes: directly above `track`, or above the highest video
    track that already holds a swap over one of those ranges."""
    highest = track
    for index in range(track + 1, len(timeline.tracks)):
        above = timeline.tracks[index]
        if isinstance(above, otio.schema.Track) and above.kind == otio.schema.TrackKind.Video \
                and _holds_swap_over(above, spans, renders):
            highest = index
    return highest + 1


def track_name(plate_track: otio.schema.Track) -> str:
    """The name of a swap track over `plate_track`."""
    return f"{plate_track.name} {TRACK_SUFFIX}" if plate_track.name else TRACK_SUFFIX


def _holds_swap_over(track: otio.schema.Track, spans: list[TimeRange], renders: Path) -> bool:
    for item in track:
        if isinstance(item, otio.schema.Clip) and is_swap(item, track, renders):
            placed = item.range_in_parent()
            if any(placed.intersects(span) for span in spans):
                return True
    return False


def _media_path(ref: otio.core.MediaReference | None, base: Path) -> Path | None:
    """The media file (a sequence: its folder and name prefix) a reference names."""
    if isinstance(ref, otio.schema.ExternalReference) and ref.target_url:
        return local_path(ref.target_url, base)
    if isinstance(ref, otio.schema.ImageSequenceReference) and ref.target_url_base:
        return local_path(ref.target_url_base, base) / ref.name_prefix
    return None
