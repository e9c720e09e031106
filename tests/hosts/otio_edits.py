"""Timelines and media for the OpenTimelineIO host's tests (tests/hosts/test_otio_*.py), built
with the OpenTimelineIO library itself, as an editor's export would hold them.

Media is frame-marked (tests/media_factory.py: frame i of a clip or sequence shows marker i)
with a real face, so a test can read which media frame every rendered file holds. Movies are
written with PyAV and sequences with OpenImageIO directly (tests/render_media.py), never with
the code under test.
"""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path

import numpy as np
import opentimelineio as otio
from opentimelineio.opentime import RationalTime, TimeRange

from tests.render_media import face_frame, write_plate_oiio

FILM = 24000 / 1001  # how an editor stores 23.976
NTSC = 30000 / 1001  # 29.97
HOUR_FILM = 86400  # 01:00:00:00 at 23.976 (timecode counts at 24)
HOUR_DF = 107892  # 01:00:00;00 at 29.97 drop frame


def t(frames: float, rate: float = FILM) -> RationalTime:
    return RationalTime(frames, rate)


def span(start: float, duration: float, rate: float = FILM) -> TimeRange:
    return TimeRange(t(start, rate), t(duration, rate))


def movie(path: Path, first: int, frames: int, rate: float = FILM) -> otio.schema.ExternalReference:
    """A movie's reference: its first frame at media time `first` (its timecode in frames)."""
    return otio.schema.ExternalReference(target_url=str(path),
                                         available_range=span(first, frames, rate))


def sequence(folder: Path, prefix: str, suffix: str, start_frame: int, frames: int,
             available_start: int = 0, rate: float = FILM) -> otio.schema.ImageSequenceReference:
    """An image sequence's reference: files prefix<NNNN>suffix from start_frame, the first at
    media time `available_start`."""
    return otio.schema.ImageSequenceReference(
        target_url_base=folder.as_uri() + "/", name_prefix=prefix, name_suffix=suffix,
        start_frame=start_frame, frame_step=1, rate=rate, frame_zero_padding=4,
        available_range=span(available_start, frames, rate))


def clip(name: str, ref: otio.core.MediaReference, start: float, duration: float,
         rate: float = FILM, markers: tuple[str, ...] = ()) -> otio.schema.Clip:
    """A clip showing `duration` frames of `ref` from media time `start`, with clip markers of
    the given names (one frame each, at the clip's first frame)."""
    made = otio.schema.Clip(name=name, media_reference=ref, source_range=span(start, duration,
                                                                              rate))
    for index, marker in enumerate(markers):
        colour = (otio.schema.MarkerColor.RED, otio.schema.MarkerColor.GREEN)[index % 2]
        made.markers.append(otio.schema.Marker(name=marker, marked_range=span(start, 1, rate),
                                               color=colour))
    return made


def gap(duration: float, rate: float = FILM) -> otio.schema.Gap:
    return otio.schema.Gap(source_range=span(0, duration, rate))


def dissolve(in_offset: float, out_offset: float, rate: float = FILM) -> otio.schema.Transition:
    return otio.schema.Transition(name="Cross Dissolve",
                                  transition_type=otio.schema.TransitionTypes.SMPTE_Dissolve,
                                  in_offset=t(in_offset, rate), out_offset=t(out_offset, rate))


def timeline(name: str, tracks: list[otio.schema.Track], start: float = HOUR_FILM,
             rate: float = FILM) -> otio.schema.Timeline:
    made = otio.schema.Timeline(name=name, global_start_time=t(start, rate))
    made.tracks.extend(tracks)
    return made


def video_track(name: str, items: list[otio.core.Composable]) -> otio.schema.Track:
    track = otio.schema.Track(name=name, kind=otio.schema.TrackKind.Video)
    track.extend(items)
    return track


def write(made: otio.schema.Timeline, path: Path) -> Path:
    otio.adapters.write_to_file(made, str(path))
    return path


def write_face_sequence(folder: Path, face: np.ndarray, first: int, frames: int,
                        prefix: str = "plate.", ext: str = "png") -> Path:
    """Files prefix<first..>.ext whose i-th file (0-based) is face_frame(i), written with
    OpenImageIO as 8-bit RGB."""
    folder.mkdir(parents=True, exist_ok=True)
    for i in range(frames):
        pixels = face_frame(i, face)[..., ::-1]
        write_plate_oiio(folder / f"{prefix}{first + i:04d}.{ext}",
                         np.ascontiguousarray(pixels), "uint8")
    return folder


def rate_of(value: float) -> Fraction:
    return Fraction(value).limit_denominator(1001)
