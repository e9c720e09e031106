"""A clip's media as the engine reads it: the input (a video file or a frame pattern), its exact
rate, and how the clip's media times become the engine's frame numbers.

Numbering. The engine's number of a frame is its media time counted in frames: a movie whose
available range starts at 01:00:00:00 at 24 fps has its first frame numbered 86400 (the
render's start number), and an image sequence's frames keep their file numbers (OTIO's
`start_frame` at the start of the available range). Renders are numbered the same way, so a
rendered sequence's file number is also its frame's media time, which is how editors read a
sequence's timecode.

Paths: a `file://` URL or a plain path; a relative one is taken from the timeline file's folder
(paths.local_path); each media remembers how its timeline named it (paths.PathStyle). Only
video files (ExternalReference) and image sequences (ImageSequenceReference, frame step 1)
are swapped; every other reference, and a still picture, is refused in one sentence naming the
clip.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from urllib.parse import unquote

import opentimelineio as otio
from opentimelineio.opentime import RationalTime

from facefuse import FramePattern, InputError, rate_text

from .paths import PathStyle, local_path, style_of
from .times import check_time, exact_rate, frames_of, time_at

# a single picture in an ExternalReference (a photo cut into the edit), not footage
STILL_SUFFIXES = frozenset({".png", ".jpg", ".jpeg", ".tif", ".tiff", ".exr", ".dpx", ".bmp",
                            ".webp", ".psd", ".heic"})


@dataclass(frozen=True, slots=True)
class Media:
    """A clip's media. input: what the engine reads (a file, or folder/prefix####suffix);
    rate: exact; start: the media time of frame number `first_number`; count: the frames the
    media has (its available range); style: how the timeline names its file."""

    input: str
    sequence: bool
    rate: Fraction
    start: RationalTime
    first_number: int
    count: int
    style: PathStyle

    @property
    def last_number(self) -> int:
        return self.first_number + self.count - 1

    def number(self, time: RationalTime) -> int:
        """The engine's frame number at media time `time` (the nearest frame)."""
        return self.first_number + frames_of(time - self.start, self.rate)

    def time_of(self, number: int) -> RationalTime:
        """The media time of the frame the engine numbers `number`, at the media's stored
        rate: renders keep their media's times, so a swap and its plate share one time axis."""
        return self.start + time_at(number - self.first_number, self.start.rate)

    def missing(self, first: int, last: int) -> str | None:
        """The first file of frames first..last that is not there, or None."""
        if not self.sequence:
            return None if Path(self.input).is_file() else self.input
        pattern = FramePattern.parse(self.input)
        return next((str(pattern.path(n)) for n in range(first, last + 1)
                     if not pattern.path(n).is_file()), None)


def not_footage(clip: otio.schema.Clip) -> str | None:
    """What a clip shows when it is not footage ("a still image (a.png)", "a generator
    (SolidColor)": a title, a colour matte), or None."""
    ref = clip.media_reference
    if isinstance(ref, otio.schema.GeneratorReference):
        return f"a generator ({ref.generator_kind or 'no kind'})"
    if isinstance(ref, otio.schema.ExternalReference):
        name = ref.target_url.replace("\\", "/").rsplit("/", 1)[-1]
        if Path(name).suffix.lower() in STILL_SUFFIXES:
            return f"a still image ({unquote(name)})"
    return None


def media_of(clip: otio.schema.Clip, label: str, base: Path) -> Media:
    """The media of `clip` (called `label` in sentences); InputError in one sentence for a
    reference that is not a video file or an image sequence, or lacks what the mapping needs."""
    ref = clip.media_reference
    if isinstance(ref, otio.schema.ImageSequenceReference):
        return _sequence(ref, label, base)
    if isinstance(ref, otio.schema.ExternalReference):
        return _video(ref, label, base)
    raise InputError(_unsupported(ref, label))


def _unsupported(ref: object, label: str) -> str:
    if isinstance(ref, otio.schema.MissingReference):
        return f"{label} has no media (a missing reference): relink it in the editor and export " \
               "the timeline again"
    if isinstance(ref, otio.schema.GeneratorReference):
        return f"{label} is a generator ({ref.generator_kind or 'no kind'}), not footage: " \
               "only clips of video files and image sequences are swapped (--all leaves it " \
               "alone)"
    kind = ref.schema_name() if isinstance(ref, otio.core.SerializableObject) else type(ref)
    return f"{label} has media of the kind {kind}: only video files (ExternalReference) and " \
           "image sequences (ImageSequenceReference) are swapped"


def _video(ref: otio.schema.ExternalReference, label: str, base: Path) -> Media:
    path = local_path(ref.target_url, base)
    if path.suffix.lower() in STILL_SUFFIXES:
        raise InputError(f"{label} is a still image ({path.name}): only movies and image "
                         "sequences are swapped (swap a picture with `facefuse swap`; --all "
                         "leaves it alone)")
    available = _available(ref, label)
    rate = exact_rate(available.duration.rate)
    first = frames_of(available.start_time, rate)
    if first < 0:
        raise InputError(f"the media of {label} starts before time 0 "
                         f"({available.start_time.value:g} frames): facefuse numbers frames "
                         "from its start time")
    return Media(str(path), False, rate, time_at(first, available.start_time.rate), first,
                 frames_of(available.duration, rate), style_of(ref.target_url))


def _sequence(ref: otio.schema.ImageSequenceReference, label: str, base: Path) -> Media:
    available = _available(ref, label)
    check_time(RationalTime(0, ref.rate), f"the image sequence of {label}")
    rate, counted = exact_rate(ref.rate), exact_rate(available.duration.rate)
    if counted != rate:
        raise InputError(f"the image sequence of {label} plays at {rate_text(rate)} fps but its "
                         f"available range counts at {rate_text(counted)} fps: export the "
                         "timeline again")
    if ref.frame_step != 1:
        raise InputError(f"the image sequence of {label} steps {ref.frame_step} frames at a "
                         "time: only sequences of every frame (step 1) are swapped")
    folder = local_path(ref.target_url_base, base)
    token = "#" * max(ref.frame_zero_padding, 1)
    pattern = str(folder / f"{ref.name_prefix}{token}{ref.name_suffix}")
    return Media(pattern, True, rate, available.start_time, ref.start_frame,
                 frames_of(available.duration, rate), style_of(ref.target_url_base))


def _available(ref: otio.core.MediaReference, label: str) -> otio.opentime.TimeRange:
    if ref.available_range is None:
        raise InputError(f"the media of {label} has no available range, so its frames cannot "
                         "be numbered: export the timeline with media ranges (the editor's "
                         "OTIO export writes them)")
    check_time(ref.available_range.start_time, f"the media of {label}")
    check_time(ref.available_range.duration, f"the media of {label}")
    return ref.available_range
