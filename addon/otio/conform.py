"""The swapped timeline: the original one with, directly above each track that has swapped
clips, a new video track holding the swaps at the clips' own record times.

The new track (`<track> facefuse`) has a gap wherever the track below it has anything that is
not swapped, and for each swapped clip a clip named after its render (`A001.v001`) over the same
record range. Its media is the render: an ImageSequenceReference (the output folder,
`A001.v001.` + the frame number padded to 4 + `.exr`, its start frame and rate exact) or an
ExternalReference to the movie, each with the rendered frames as its available range. Its
source range is the original's carried into the render's numbering (a frame's number is its
media time in frames: see media), so it shows the swapped picture of exactly the frames the
original shows. A transition next to a swapped clip is repeated on the new track, next to the
clip's neighbour there (another swap, or a gap: the swap then fades over the transition below),
and the render holds the frames it shows. The clip's markers come along, but not those that
selected it (a later selection finds only the originals), and the flags of the render's review
report over the clip's frames are added as markers; `metadata["facefuse"]` says what was
rendered from what.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

import opentimelineio as otio
from opentimelineio.opentime import TimeRange

from facefuse import OutputError, atomic_write_bytes

from .flags import markers_from_report
from .media import target_of
from .plan import PADDING, ClipRender
from .selection import named
from .times import time_at

TRACK_SUFFIX = "facefuse"


def swapped_timeline(timeline: otio.schema.Timeline, renders: Sequence[ClipRender],
                     marker: str | None) -> otio.schema.Timeline:
    """A copy of `timeline` with the renders on new tracks (see the module docstring); marker:
    the name of the markers that selected the clips (not carried onto the swaps)."""
    result = timeline.deepcopy()
    by_track: dict[int, dict[int, ClipRender]] = {}
    for render in renders:
        by_track.setdefault(render.swap.track, {})[render.swap.item] = render
    for index in sorted(by_track, reverse=True):
        track = result.tracks[index]
        result.tracks.insert(index + 1, _swap_track(track, by_track[index], marker))
    return result


def write_timeline(timeline: otio.schema.Timeline, path: Path) -> None:
    """Write `timeline` as .otio JSON, atomically (its folder made when missing)."""
    text = otio.adapters.write_to_string(timeline, "otio_json")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise OutputError(f"the output folder {path.parent} cannot be created: "
                          f"{exc.strerror or exc}") from None
    atomic_write_bytes(path, text.encode("utf-8"))


def _swap_track(track: otio.schema.Track, renders: dict[int, ClipRender],
                marker: str | None) -> otio.schema.Track:
    name = f"{track.name} {TRACK_SUFFIX}" if track.name else TRACK_SUFFIX
    new = otio.schema.Track(name=name, kind=track.kind)
    if track.source_range is not None:
        new.source_range = track.source_range
    for index, item in enumerate(track):
        if isinstance(item, otio.schema.Transition):
            if index - 1 in renders or index + 1 in renders:
                new.append(item.deepcopy())
        elif index in renders:
            new.append(_swap_clip(item, renders[index], marker))
        else:
            duration = item.duration()
            new.append(otio.schema.Gap(source_range=TimeRange(time_at(0, duration.rate),
                                                              duration)))
    return new


def _swap_clip(original: otio.schema.Clip, render: ClipRender,
               marker: str | None) -> otio.schema.Clip:
    media = render.swap.media
    source = original.trimmed_range()
    rate = source.duration.rate
    start = time_at(media.number(source.start_time), rate)
    clip = otio.schema.Clip(name=render.name, media_reference=_reference(render, rate),
                            source_range=TimeRange(start, source.duration))
    clip.enabled = original.enabled
    for kept in original.markers:
        if marker is None or not named(kept, marker):
            moved = kept.deepcopy()
            moved.marked_range = TimeRange(
                time_at(media.number(kept.marked_range.start_time), rate),
                kept.marked_range.duration)
            clip.markers.append(moved)
    if render.report is not None and render.report.is_file():
        shown = clip.source_range
        clip.markers.extend(m for m in markers_from_report(render.report, rate)
                            if m.marked_range.intersects(shown))
    first, last = render.swap.frames
    clip.metadata["facefuse"] = {"clip": original.name, "input": media.input,
                                 "frames": [first, last], "output": str(render.output)}
    return clip


def _reference(render: ClipRender, rate: float) -> otio.core.MediaReference:
    first, last = render.swap.frames
    available = TimeRange(time_at(first, rate), time_at(last - first + 1, rate))
    urls = render.swap.media.urls
    output = render.output
    if not render.sequence:
        return otio.schema.ExternalReference(target_url=target_of(output, urls),
                                             available_range=available)
    prefix, _, suffix = output.name.partition("#" * PADDING)
    folder = target_of(output.parent, urls) + ("/" if urls else os.sep)
    return otio.schema.ImageSequenceReference(
        target_url_base=folder, name_prefix=prefix, name_suffix=suffix, start_frame=first,
        frame_step=1, rate=rate, frame_zero_padding=PADDING, available_range=available)
