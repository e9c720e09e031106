"""The swapped timeline: the original one with, above each track that has swapped clips, a new
video track holding the swaps at the clips' own record times.

The new track (`<track> facefuse`, enabled as the track below it) goes directly above the
clips' track, or above every track that already holds an earlier swap over them
(versions.track_above_versions), and has a gap wherever the clips' track has anything that is
not swapped. A swap is a clip named after its render (`A001.v001`) over the same record range,
whose media is the render: a movie (ExternalReference) or an image sequence
(ImageSequenceReference), the rendered frames (handles included) as its available range. A
render keeps its plate's media times (a movie of a movie carries the plate's timecode, a
sequence's numbers are its frames' media times), so the swap's source range is the plate
clip's own and every editor maps both to the same media frames; a movie made from an image
sequence starts at time 0, and the swap's times are moved by that much.

What describes the picture's framing comes along from the plate clip: its effects (all but time
effects: Resolve's Transform, Cropping, Composite, ...), Resolve's clip metadata and the FCP 7
XML clip attributes of `FRAMING_KEYS`; so do its enabled flag and its markers, but not those
that selected it (a later selection finds only the originals), and the flags of the render's
review report over the clip's frames are added as markers. `metadata["facefuse"]` says what was
rendered from what. A transition next to a swapped clip is repeated on the new track, next to
the clip's neighbour there: another swap, a copy of the frames of the neighbouring clip that the
dissolve shows (so the swap dissolves into the same picture as the plate), or a gap (a fade:
the swap fades out over the plate's own fade); the render holds the frames it shows.

Paths: a render is named in the style its plate's media is named in (a URL, an absolute path,
or a path relative to the written timeline, see paths), and every relative media path of the
original timeline is rewritten to reach the same file from the folder the swapped timeline is
written to. Each render's reference carries an AAF MobID made from its path (the AAF writer
needs one per clip) and, in a timeline Resolve exported, Resolve's "Media Url".
"""

from __future__ import annotations

import copy
import hashlib
import os
from collections.abc import Callable, Sequence
from pathlib import Path

import opentimelineio as otio
from opentimelineio.opentime import RationalTime, TimeRange

from facefuse import OutputError, atomic_write_bytes

from .flags import markers_from_report
from .paths import rebased, target_in_style
from .renders import PADDING, ClipRender
from .selection import named
from .times import time_at
from .versions import METADATA_KEY, track_above_versions, track_name

# clip attributes of FCP 7 XML (Premiere) that describe how the picture is framed; the rest
# (ids, master clip, links) name the plate's own media and must not be copied
FRAMING_KEYS = {"fcp_xml": ("pixelaspectratio", "anamorphic", "alphatype", "compositemode")}
RESOLVE_KEY = "Resolve_OTIO"
# a SMPTE UMID's universal label, length and instance number, before a 16-byte material number
_UMID_PREFIX = "urn:smpte:umid:060a2b34.01010101.01010f00.13000000"


def swapped_timeline(timeline: otio.schema.Timeline, renders: Sequence[ClipRender],
                     marker: str | None, base: Path, folder: Path) -> otio.schema.Timeline:
    """A copy of `timeline` with the renders on new tracks (see the module docstring). marker:
    the name of the markers that selected the clips (not carried onto the swaps); base: the
    folder the timeline was read from; folder: where the swapped timeline is written."""
    result = timeline.deepcopy()
    _rebase_media(result, base, folder)
    by_track: dict[int, dict[int, ClipRender]] = {}
    for render in renders:
        by_track.setdefault(render.swap.track, {})[render.swap.item] = render
    placed = []
    for index, clips in by_track.items():
        track = result.tracks[index]
        spans = [track[item].range_in_parent() for item in clips]
        at = track_above_versions(result, index, spans, folder)
        placed.append((at, index, _swap_track(track, clips, marker, folder)))
    # from the top down, so that each index still means the track it was worked out for; a
    # lower plate's track goes below a higher one's at the same place
    for at, _, new in sorted(placed, key=lambda p: (p[0], p[1]), reverse=True):
        result.tracks.insert(at, new)
    return result


def write_timeline(timeline: otio.schema.Timeline, path: Path) -> None:
    """Write `timeline` as .otio JSON, atomically (its folder made when missing)."""
    text = otio.adapters.write_to_string(timeline, "otio_json")
    _make_folder(path.parent)
    atomic_write_bytes(path, text.encode("utf-8"))


def write_native(timeline: otio.schema.Timeline, path: Path) -> None:
    """Write `timeline` with the adapter its suffix names (.xml, .aaf, .edl, ...), under a
    temporary name first; the adapter's own exception when it cannot write this timeline, or
    NativeWriteError where it would write it wrong."""
    if path.suffix.lower() == ".xml":
        _check_shared_files(timeline)
    _make_folder(path.parent)
    temporary = path.with_name(f".{path.stem}.{os.getpid()}.part{path.suffix}")
    try:
        otio.adapters.write_to_file(timeline, str(temporary))
        os.replace(temporary, path)
    finally:
        temporary.unlink(missing_ok=True)


class NativeWriteError(Exception):
    """An adapter would write a timeline wrong; the message says what it would change."""


def _check_shared_files(timeline: otio.schema.Timeline) -> None:
    """OpenTimelineIO's FCP 7 XML writer writes one <file> per path: two clips of one file
    whose references start at different timecodes (Premiere writes such files) would share
    the first one's, moving the other's in-point."""
    seen: dict[str, tuple[str, TimeRange | None]] = {}
    for clip in timeline.find_clips():
        ref = clip.media_reference
        if not isinstance(ref, otio.schema.ExternalReference):
            continue
        first = seen.setdefault(ref.target_url, (clip.name, ref.available_range))
        if first[1] != ref.available_range:
            raise NativeWriteError(
                f"clips '{first[0]}' and '{clip.name}' name one file ({ref.target_url}) with "
                "different timecodes, and the FCP 7 XML writer would give both the first's, "
                f"moving the in-point of '{clip.name}'")


def _make_folder(folder: Path) -> None:
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise OutputError(f"the output folder {folder} cannot be created: "
                          f"{exc.strerror or exc}") from None


def _rebase_media(timeline: otio.schema.Timeline, base: Path, folder: Path) -> None:
    """Rewrite every relative media path to reach its file from `folder`."""
    for clip in timeline.find_clips():
        for ref in clip.media_references().values():
            if isinstance(ref, otio.schema.ExternalReference):
                ref.target_url = rebased(ref.target_url, base, folder)
            elif isinstance(ref, otio.schema.ImageSequenceReference):
                ref.target_url_base = rebased(ref.target_url_base, base, folder)


def _swap_track(track: otio.schema.Track, renders: dict[int, ClipRender],
                marker: str | None, folder: Path) -> otio.schema.Track:
    new = otio.schema.Track(name=track_name(track), kind=track.kind)
    new.enabled = track.enabled
    if track.source_range is not None:
        new.source_range = track.source_range
    for index, item in enumerate(track):
        if isinstance(item, otio.schema.Transition):
            if index - 1 in renders or index + 1 in renders:
                new.append(item.deepcopy())
        elif index in renders:
            new.append(_swap_clip(item, renders[index], marker, folder))
        else:
            new.extend(_beside_swaps(track, index, renders))
    return new


def _beside_swaps(track: otio.schema.Track, index: int,
                  renders: dict[int, ClipRender]) -> list[otio.core.Composable]:
    """What the swap track holds where the clips' track has an item that is not swapped: a gap,
    but where a dissolve joins the item (a clip) to a swap, a copy of the frames of it the
    dissolve shows, so that the swap dissolves into the very picture the plate dissolves into
    (over a gap, the swap would fade over the plate's own dissolve, and the plate's face would
    show through)."""
    item = track[index]
    duration = item.duration()
    head = _dissolve_frames(track, index, -1, renders)
    tail = _dissolve_frames(track, index, +1, renders)
    if not isinstance(item, otio.schema.Clip) or head + tail == 0:
        return [_gap(duration)]
    head_time, tail_time = RationalTime(head, duration.rate), RationalTime(tail, duration.rate)
    if head_time + tail_time >= duration:
        return [_copy(item, item.trimmed_range())]
    source = item.trimmed_range()
    parts: list[otio.core.Composable] = []
    if head:
        parts.append(_copy(item, TimeRange(source.start_time, head_time)))
    parts.append(_gap(duration - head_time - tail_time))
    if tail:
        parts.append(_copy(item, TimeRange(source.end_time_exclusive() - tail_time, tail_time)))
    return parts


def _dissolve_frames(track: otio.schema.Track, index: int, side: int,
                     renders: dict[int, ClipRender]) -> float:
    """The frames of item `index` that a transition on `side` (-1 before, +1 after) shows as it
    joins the item to a swapped clip, 0 where there is none."""
    joined, transition = index + 2 * side, index + side
    if joined not in renders or not 0 <= transition < len(track) or \
            not isinstance(track[transition], otio.schema.Transition):
        return 0
    offset = track[transition].out_offset if side < 0 else track[transition].in_offset
    return offset.value_rescaled_to(track[index].duration().rate)


def _copy(clip: otio.schema.Clip, shown: TimeRange) -> otio.schema.Clip:
    """A clip's frames `shown` as a clip of their own, without its markers (they stay on the
    clip) and marked as facefuse's, so that no selection takes it."""
    copied = clip.deepcopy()
    copied.source_range = shown
    del copied.markers[:]
    copied.metadata[METADATA_KEY] = {"dissolve": clip.name}
    return copied


def _gap(duration: RationalTime) -> otio.schema.Gap:
    return otio.schema.Gap(source_range=TimeRange(time_at(0, duration.rate), duration))


def _swap_clip(original: otio.schema.Clip, render: ClipRender, marker: str | None,
               folder: Path) -> otio.schema.Clip:
    moved = _render_times(render)
    source = original.trimmed_range()
    clip = otio.schema.Clip(name=render.name,
                            media_reference=_reference(render, original, folder, moved),
                            source_range=TimeRange(moved(source.start_time), source.duration))
    clip.enabled = original.enabled
    clip.effects.extend(effect.deepcopy() for effect in original.effects
                        if not isinstance(effect, otio.schema.TimeEffect))
    for kept in original.markers:
        if marker is None or not named(kept, marker):
            copied = kept.deepcopy()
            copied.marked_range = TimeRange(moved(kept.marked_range.start_time),
                                            kept.marked_range.duration)
            clip.markers.append(copied)
    if render.report is not None and render.report.is_file():
        media = render.swap.media
        shown = clip.source_range
        clip.markers.extend(m for m in markers_from_report(
            render.report, lambda number: moved(media.time_of(number)))
            if m.marked_range.intersects(shown))
    clip.metadata.update(_framing_metadata(original))
    first, last = render.swap.frames
    clip.metadata[METADATA_KEY] = {"clip": original.name, "input": render.swap.media.input,
                                   "frames": [first, last], "output": str(render.output)}
    return clip


def _render_times(render: ClipRender) -> Callable[[RationalTime], RationalTime]:
    """A plate media time as the render's media time: the same, but for a movie made from an
    image sequence, which starts at 0 (it carries no timecode)."""
    media = render.swap.media
    if render.sequence or not media.sequence:
        return lambda time: time
    zero = media.time_of(render.swap.frames[0])
    return lambda time: time - zero


def _reference(render: ClipRender, original: otio.schema.Clip, folder: Path,
               moved: Callable[[RationalTime], RationalTime]) -> otio.core.MediaReference:
    media = render.swap.media
    first, last = render.swap.frames
    start = moved(media.time_of(first))
    available = TimeRange(start, time_at(last - first + 1, start.rate))
    output = render.output
    ref: otio.core.MediaReference
    if not render.sequence:
        ref = otio.schema.ExternalReference(
            target_url=target_in_style(output, media.style, folder), available_range=available)
        ref.name = output.name
    else:
        prefix, _, suffix = output.name.partition("#" * PADDING)
        base = target_in_style(output.parent, media.style, folder).rstrip("/\\") or "."
        ref = otio.schema.ImageSequenceReference(
            target_url_base=f"{base}/", name_prefix=prefix, name_suffix=suffix,
            start_frame=first, frame_step=1, rate=start.rate, frame_zero_padding=PADDING,
            available_range=available)
        ref.name = prefix.rstrip(".")
    ref.metadata["AAF"] = {"MobID": mob_id(output)}
    if RESOLVE_KEY in original.media_reference.metadata:
        ref.metadata[RESOLVE_KEY] = {"Media Url": str(output)}
    return ref


def _framing_metadata(original: otio.schema.Clip) -> dict[str, object]:
    """The plate clip's metadata that describes framing (see FRAMING_KEYS), copied."""
    copied: dict[str, object] = {}
    if RESOLVE_KEY in original.metadata:
        copied[RESOLVE_KEY] = copy.deepcopy(original.metadata[RESOLVE_KEY])
    for namespace, keys in FRAMING_KEYS.items():
        kept = {key: value for key, value in original.metadata.get(namespace, {}).items()
                if key in keys}
        if kept:
            copied[namespace] = kept
    return copied


def mob_id(path: Path) -> str:
    """An AAF MobID (a SMPTE UMID) for the media at `path`, the same for the same path."""
    digest = hashlib.sha256(str(path).encode("utf-8")).hexdigest()[:32]
    return ".".join((_UMID_PREFIX, *(digest[i:i + 8] for i in range(0, 32, 8))))
