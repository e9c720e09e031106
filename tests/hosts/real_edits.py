"""Real editors' timelines brought online, and the check that a swapped timeline shows, at every
record frame, the swap of the frame its plate shows (tests/hosts/test_otio_real_edits.py).

The timelines are the files real tools wrote (../shared/testdata/timelines and
tests/hosts/timelines). Their media are not included: `bring_online` gives a clip the movie
its reference names, made here with the same file name, rate, available range and start
timecode, whose frame i shows marker i (tests/media_factory.py) and a real face, so any picture
says which media frame it is. `check_swaps` then follows OpenTimelineIO's own time maths from
each record frame to the plate's media frame and to the swap's, and reads the swap's picture:
nothing of the code under test is used to decide what should be shown.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from fractions import Fraction
from functools import cache
from pathlib import Path
from urllib.parse import unquote, urlparse

import cv2
import numpy as np
import opentimelineio as otio
from opentimelineio.opentime import RationalTime, TimeRange

from tests.conftest import REPO_ROOT
from tests.integration.render_helpers import FACE_BOX, read_bgr
from tests.media_factory import read_marker
from tests.render_media import decode_video, face_frame, make_face_clip

REPO_TIMELINES = REPO_ROOT / "tests" / "hosts" / "timelines"
SNAP = 1e-6  # a media time this close to a frame boundary is on it


def exact(rate: float) -> Fraction:
    """An editor's stored rate as an exact fraction (23.976 -> 24000/1001)."""
    for ntsc in (24, 30, 48, 60):
        if abs(rate - ntsc * 1000 / 1001) < 0.005:
            return Fraction(ntsc * 1000, 1001)
    return Fraction(rate).limit_denominator(1001)


def make_movie(path: Path, available: TimeRange, face: np.ndarray) -> Path:
    """A movie of `available`'s length at its rate whose timecode is its start, frame i marked
    i with the face (mjpeg: quick to write and to read, every frame whole)."""
    rate = exact(available.duration.rate)
    start = available.start_time
    timecode = otio.opentime.to_timecode(start, start.rate, _drop_frame(start.rate))
    path.parent.mkdir(parents=True, exist_ok=True)
    return make_face_clip(path, face, frames=round(available.duration.value), rate=rate,
                          codec="mjpeg", timecode=timecode, audio=None)


def _drop_frame(rate: float) -> bool:
    return abs(rate - 30000 / 1001) < 0.005 or abs(rate - 60000 / 1001) < 0.005


def media_name(clip: otio.schema.Clip) -> str:
    """The file name a clip's media reference names (a URL unquoted), else the clip's name."""
    ref = clip.media_reference
    target = getattr(ref, "target_url", "") or ""
    if target:
        return unquote(target.replace("\\", "/").rsplit("/", 1)[-1])
    return ref.name or clip.name


def bring_online(clip: otio.schema.Clip, folder: Path, face: np.ndarray,
                 target: Callable[[Path], str], available: TimeRange | None = None) -> Path:
    """Make the movie (or, for a still, the picture) the clip's media names in `folder`, once,
    and point the clip at it: `target(path)` as written in the timeline, the reference's own
    available range (or `available` where it has none), its metadata kept."""
    ref = clip.media_reference
    available = available or ref.available_range
    path = folder / media_name(clip)
    if path.suffix.lower() not in (".mov", ".mp4", ".mxf", ".png", ".jpg", ".tif"):
        path = path.with_name(f"{path.name}.mov")  # an EDL's clip names no file
    if not path.exists():
        if path.suffix.lower() in (".png", ".jpg", ".tif"):
            path.parent.mkdir(parents=True, exist_ok=True)
            cv2.imwrite(str(path), face_frame(0, face))
        else:
            make_movie(path, available, face)
    online = otio.schema.ExternalReference(target_url=target(path), available_range=available)
    online.name = ref.name or path.name
    online.metadata.update(ref.metadata)
    clip.media_reference = online
    return path


def video_clips(timeline: otio.schema.Timeline) -> Iterator[tuple[int, otio.schema.Clip]]:
    """(track index, clip) of every clip directly on a video track."""
    for index, track in enumerate(timeline.tracks):
        if track.kind == otio.schema.TrackKind.Video:
            for item in track:
                if isinstance(item, otio.schema.Clip):
                    yield index, item


def mark(clip: otio.schema.Clip, name: str = "swap") -> None:
    """A clip marker as an editor puts one on: on the clip's first frame."""
    start = clip.trimmed_range().start_time
    clip.markers.append(otio.schema.Marker(
        name=name, marked_range=TimeRange(start, RationalTime(1, start.rate)),
        color=otio.schema.MarkerColor.RED))


# -- what a swapped timeline shows ---------------------------------------------------------------

@dataclass(frozen=True)
class Pair:
    """A swap and the plate clip below it that it covers."""

    plate: otio.schema.Clip
    swap: otio.schema.Clip


def local(target: str, base: Path) -> Path:
    """A reference's file: a file URL (`file://./a.mov` relative, as the AAF reader writes
    relative paths) or a path, relative ones from `base` (the timeline file's folder)."""
    if target.startswith(("file://./", "file://../")):
        target = target.removeprefix("file://")
    parsed = urlparse(target)
    path = Path(unquote(parsed.path)) if parsed.scheme == "file" else Path(target)
    return path if path.is_absolute() else base / path


def pairs(timeline: otio.schema.Timeline, renders: Path, base: Path) -> list[Pair]:
    """Every clip whose media is in `renders`, with the clip of another folder's media on a
    lower video track over the same record range."""
    stack = timeline.tracks
    found: list[Pair] = []
    clips = [(i, clip) for i, clip in video_clips(timeline) if _file(clip, base) is not None]
    for index, swap in clips:
        if _file(swap, base).parent != renders:
            continue
        placed = swap.transformed_time_range(swap.trimmed_range(), stack)
        below = [clip for i, clip in clips if i < index and not _is_sequence(clip)
                 and clip.transformed_time_range(clip.trimmed_range(), stack) == placed
                 and _file(clip, base).parent != renders]
        assert below, f"no plate under swap {swap.name} at {placed}"
        found.append(Pair(below[-1], swap))
    return found


def _file(clip: otio.schema.Clip, base: Path) -> Path | None:
    """The file (a sequence: a file name in its folder) of a clip's media, None without one."""
    ref = clip.media_reference
    if isinstance(ref, otio.schema.ImageSequenceReference):
        return local(ref.target_url_base, base) / ref.name_prefix
    if isinstance(ref, otio.schema.ExternalReference):
        return local(ref.target_url, base)
    return None


def _is_sequence(clip: otio.schema.Clip) -> bool:
    return isinstance(clip.media_reference, otio.schema.ImageSequenceReference)


def record_frames(clip: otio.schema.Clip, stack: otio.schema.Stack) -> Iterator[RationalTime]:
    """The stack times of every record frame at which the clip is visible (its transitions'
    frames included)."""
    visible = clip.transformed_time_range(clip.visible_range(), stack)
    rate = clip.parent().duration().rate  # the track's, which may not be the clip's
    first = visible.start_time.value_rescaled_to(rate)
    for k in range(round(visible.duration.value_rescaled_to(rate))):
        yield RationalTime(first + k, rate)


def media_index(ref: otio.schema.ExternalReference, time: RationalTime) -> int:
    """The 0-based frame of a movie whose first frame is at its available range's start that
    is showing at media time `time`."""
    available = ref.available_range
    offset = (time - available.start_time).value_rescaled_to(available.duration.rate)
    nearest = round(offset)
    return nearest if abs(offset - nearest) < SNAP else math.floor(offset)


@cache
def _pictures(path: Path) -> tuple[np.ndarray, ...]:
    return tuple(decode_video(path))


def swap_picture(ref: otio.core.MediaReference, time: RationalTime, base: Path) -> np.ndarray:
    """The picture a swap's media shows at media time `time`."""
    if isinstance(ref, otio.schema.ImageSequenceReference):
        number = ref.frame_for_time(time)
        url = ref.target_url_for_image_number(number - ref.start_frame)
        return read_bgr(local(url, base))
    return _pictures(local(ref.target_url, base))[media_index(ref, time)]


def face_changed(picture: np.ndarray, marker: int, face: np.ndarray) -> bool:
    """Whether the face area of `picture` (any depth) differs from the plate's frame `marker`."""
    x0, y0, x1, y1 = FACE_BOX
    scale = 257.0 if picture.dtype == np.uint16 else 1.0
    shown = np.round(picture[y0:y1, x0:x1, :3].astype(np.float64) / scale)
    original = face_frame(marker, face)[y0:y1, x0:x1, :3].astype(np.float64)
    return float(np.abs(shown - original).max()) > 24


def check_swaps(timeline: otio.schema.Timeline, renders: Path, base: Path,
                face: np.ndarray) -> dict[str, int]:
    """Assert that at every record frame each swap shows the swapped picture of the media frame
    its plate shows; {swap name: frames checked}."""
    stack = timeline.tracks
    checked: dict[str, int] = {}
    for pair in pairs(timeline, renders, base):
        count = 0
        for record in record_frames(pair.plate, stack):
            plate_time = stack.transformed_time(record, pair.plate)
            shown = media_index(pair.plate.media_reference, plate_time)
            picture = swap_picture(pair.swap.media_reference,
                                   stack.transformed_time(record, pair.swap), base)
            assert read_marker(picture) == shown, \
                f"{pair.swap.name} at record {record.value:g}: media frame {read_marker(picture)}" \
                f" where the plate shows {shown}"
            assert face_changed(picture, shown, face), f"{pair.swap.name}: frame {shown} unswapped"
            count += 1
        checked[pair.swap.name] = count
    return checked
