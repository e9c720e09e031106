"""Shot inputs for render: a video file or an image sequence behind one interface.

An input also says what a video made from its frames carries over (rate, timecode, audio), so
the writers never look inside a particular kind of input.

Frames are numbered as the input numbers them: a sequence by its file names (a shot may start at
1001), a video from its start number (1 unless told otherwise, like Blender and ffmpeg).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import Protocol

from ...cache.hashes import HashMemo, content_sha256
from ...errors import InputError
from ...io import plates, sequences, video
from ...io.files import check_regular_file
from ...io.video import DecodedFrame, DecodeFailure, Frame
from ...runtime.threads import thread_budget
from ...timebase import offset_timecode
from ...timing import StageClock

FrameOrFailure = Frame | DecodeFailure


@dataclass(frozen=True, slots=True)
class AudioSpan:
    """The stretch of a file's audio that belongs to some frames (seconds on its timeline)."""

    path: Path
    start_s: float
    duration_s: float


@dataclass(frozen=True, slots=True)
class VideoTiming:
    """What a video made of some of an input's frames carries over from the input.

    rate: None when the input has none (image sequences). source: the input video's stream
    description, the template for the output's (None for image sequences); its rotation_deg
    (the display rotation; frames arrive upright) is what a video output re-applies, so it
    plays like the input and keeps its stored pictures. Image-sequence outputs are upright."""

    rate: Fraction | None
    timecode: str | None
    audio: AudioSpan | None
    source: video.VideoInfo | None


class ShotInput(Protocol):
    """What render reads from."""

    label: str
    frame_numbers: tuple[int, ...]
    rate: Fraction | None
    suffix: str
    pixel_type: str
    is_sequence: bool
    plate_format: plates.PlateFormat | None  # what a sequence output should match, if anything

    def read(self, numbers: Iterable[int], clock: StageClock | None = None
             ) -> Iterator[tuple[int, FrameOrFailure]]:
        """Frames by number, each an io.video.frame.DecodedFrame (converted when asked) or a
        DecodeFailure; `clock` (optional) gets each frame's "decode" (and, where the reader
        converts at once, "colour") milliseconds. Each frame is an object of its own (a
        repeated number included): the caller may paste into its conversions. Reads may run
        on several threads at once (they decode separately)."""
        ...

    def content_sha256(self, memo: HashMemo) -> str: ...

    def files(self, numbers: Sequence[int]) -> tuple[Path, ...]: ...

    def video_timing(self, numbers: Sequence[int]) -> VideoTiming: ...

    def close(self) -> None: ...


class SequenceInput:
    """An image sequence on disk (EXR, DPX, TIFF, PNG, JPEG), read with OpenImageIO."""

    def __init__(self, pattern: sequences.FramePattern) -> None:
        self.pattern = pattern
        self.frame_files: Mapping[int, Path] = pattern.scan()
        if not self.frame_files:
            raise InputError(f"no frames match {pattern.display}")
        self.label = pattern.display
        self.frame_numbers = tuple(self.frame_files)
        self.rate: Fraction | None = None
        self.suffix = Path(pattern.display).suffix.lower()
        self.is_sequence = True
        _, first_format = plates.read_plate(self.frame_files[self.frame_numbers[0]])
        self.plate_format: plates.PlateFormat | None = first_format
        self.pixel_type = first_format.pixel_type

    def read(self, numbers: Iterable[int], clock: StageClock | None = None
             ) -> Iterator[tuple[int, FrameOrFailure]]:
        clock = clock if clock is not None else StageClock()
        for number in numbers:
            try:
                with clock.measure("decode"):
                    frame, stored = plates.read_plate(self.frame_files[number])
            except InputError as exc:
                yield number, DecodeFailure(str(exc))
                continue
            other = self._other_shape(stored)
            if other:
                yield number, DecodeFailure(f"{self.frame_files[number].name} is {other}; "
                                            "render frames of one size and layout together")
                continue
            yield number, DecodedFrame.of_array(frame)

    def _other_shape(self, stored: plates.PlateFormat) -> str:
        """How a frame's size or channels differ from the sequence's first frame ("": not).
        Such a frame fails as an undecodable one would: a shot has one frame size."""
        first = self.plate_format
        assert first is not None
        if (stored.width, stored.height) != (first.width, first.height):
            return (f"{stored.width}x{stored.height}, not {first.width}x{first.height} like "
                    "the sequence's first frame")
        if stored.channels != first.channels:
            return (f"{stored.channels}-channel, not {first.channels}-channel like the "
                    "sequence's first frame")
        return ""

    def content_sha256(self, memo: HashMemo) -> str:
        return content_sha256([self.frame_files[n] for n in self.frame_numbers], memo)

    def files(self, numbers: Sequence[int]) -> tuple[Path, ...]:
        return tuple(self.frame_files[n] for n in numbers)

    def video_timing(self, numbers: Sequence[int]) -> VideoTiming:
        return VideoTiming(rate=None, timecode=None, audio=None, source=None)

    def close(self) -> None:
        return None


class VideoInput:
    """A video file read frame-accurately with PyAV: any file FFmpeg decodes a video stream
    from (.mov, .mp4, .mkv, .webm, .avi, animated .gif, ...). Frames arrive upright (see
    VideoInfo.rotation_deg)."""

    def __init__(self, path: Path, start_number: int, conform_vfr: bool,
                 decode_threads: int) -> None:
        self.path = path
        self.source = video.VideoSource(path, start_number=start_number, conform_vfr=conform_vfr,
                                        decode_threads=decode_threads)
        self.info = self.source.info
        self.label = str(path)
        first = self.info.start_number
        if self.info.frame_count:
            sequences.check_frame_number(first + self.info.frame_count - 1,
                                         f"--start-number {first} of {path.name}")
        self.frame_numbers = tuple(range(first, first + self.info.frame_count))
        self.rate: Fraction | None = self.info.rate
        self.suffix = path.suffix.lower()
        self.pixel_type = "uint8" if self.info.bit_depth <= 8 else "uint16"
        self.is_sequence = False
        self.plate_format: plates.PlateFormat | None = None

    def read(self, numbers: Iterable[int], clock: StageClock | None = None
             ) -> Iterator[tuple[int, FrameOrFailure]]:
        return self.source.read(numbers, clock)

    def content_sha256(self, memo: HashMemo) -> str:
        return content_sha256([self.path], memo)

    def files(self, numbers: Sequence[int]) -> tuple[Path, ...]:
        return (self.path,)

    def video_timing(self, numbers: Sequence[int]) -> VideoTiming:
        """Timecode shifted to the first of `numbers`; the audio under `numbers`, if any."""
        source = self.info
        offset = numbers[0] - source.start_number
        timecode = (offset_timecode(source.timecode, source.rate, offset)
                    if source.timecode else None)
        audio = None
        if source.audio_streams:
            audio = AudioSpan(self.path, source.start_time_s + float(offset / source.rate),
                              float(len(numbers) / source.rate))
        return VideoTiming(source.rate, timecode, audio, source)

    def close(self) -> None:
        self.source.close()


def open_input(spec: str, start_number: int = 1, conform_vfr: bool = False,
               threads: int = 0) -> ShotInput:
    """A sequence pattern or a video file; InputError naming the problem otherwise.
    threads: the render's thread budget (Settings.threads; see runtime.threads).

    A file is a video input whatever its extension when FFmpeg decodes a video stream from it
    (GIF, WebM, AVI, ...); anything else gets one sentence naming its format and what to convert
    it to (see io.video.common.open_input)."""
    if sequences.is_frame_pattern(spec):
        return SequenceInput(sequences.FramePattern.parse(spec))
    path = Path(spec)
    if not path.exists():
        raise InputError(f"{path} does not exist")
    if path.is_dir():
        raise InputError(f"{path} is a folder; give a video file or an image sequence pattern "
                         "(name.####.exr, name.%04d.exr, name.#.exr)")
    check_regular_file(path, "input")
    return VideoInput(path, start_number, conform_vfr, thread_budget(threads).decode)
