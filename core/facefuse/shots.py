"""Shot inputs and outputs for render: a video file or an image sequence behind one interface.

Frames are numbered as the input numbers them: a sequence by its file names (a shot may start at
1001), a video from its start number (1 unless told otherwise, like Blender and ffmpeg).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Iterator, Mapping
from fractions import Fraction
from pathlib import Path
from typing import Protocol

import numpy as np

from .content_hash import HashMemo, content_sha256
from .errors import InputError
from .io import plates, sequences, video
from .io.video import DecodeFailure

FrameOrFailure = np.ndarray | DecodeFailure


class ShotInput(Protocol):
    """What render reads from."""

    label: str
    frame_numbers: tuple[int, ...]
    rate: Fraction | None
    suffix: str
    pixel_type: str

    def read(self, numbers: Iterable[int]) -> Iterator[tuple[int, FrameOrFailure]]: ...

    def content_sha256(self, memo: HashMemo) -> str: ...

    def close(self) -> None: ...


class SequenceInput:
    """An image sequence on disk (EXR, DPX, TIFF, PNG, JPEG), read with OpenImageIO."""

    def __init__(self, pattern: sequences.FramePattern) -> None:
        self.pattern = pattern
        self.files: Mapping[int, Path] = pattern.scan()
        if not self.files:
            raise InputError(f"no frames match {pattern.display}")
        self.label = pattern.display
        self.frame_numbers = tuple(self.files)
        self.rate: Fraction | None = None
        self.suffix = Path(pattern.display).suffix.lower()
        _, first_format = plates.read_plate(self.files[self.frame_numbers[0]])
        self.format = first_format
        self.pixel_type = first_format.pixel_type

    def read(self, numbers: Iterable[int]) -> Iterator[tuple[int, FrameOrFailure]]:
        for number in numbers:
            try:
                frame, _ = plates.read_plate(self.files[number])
            except InputError as exc:
                yield number, DecodeFailure(str(exc))
                continue
            yield number, frame

    def content_sha256(self, memo: HashMemo) -> str:
        return content_sha256([self.files[n] for n in self.frame_numbers], memo)

    def close(self) -> None:
        return None


class VideoInput:
    """A video file read frame-accurately with PyAV."""

    def __init__(self, path: Path, start_number: int, conform_vfr: bool) -> None:
        self.path = path
        self.source = video.VideoSource(path, start_number=start_number, conform_vfr=conform_vfr)
        self.info = self.source.info
        self.label = str(path)
        first = self.info.start_number
        self.frame_numbers = tuple(range(first, first + self.info.frame_count))
        self.rate: Fraction | None = self.info.rate
        self.suffix = path.suffix.lower()
        self.pixel_type = "uint8" if self.info.bit_depth <= 8 else "uint16"

    def read(self, numbers: Iterable[int]) -> Iterator[tuple[int, FrameOrFailure]]:
        return self.source.read(numbers)

    def content_sha256(self, memo: HashMemo) -> str:
        return content_sha256([self.path], memo)

    def close(self) -> None:
        self.source.close()


def open_input(spec: str, start_number: int = 1, conform_vfr: bool = False) -> ShotInput:
    """A sequence pattern or a video file; InputError naming the problem otherwise."""
    if sequences.is_frame_pattern(spec):
        return SequenceInput(sequences.FramePattern.parse(spec))
    path = Path(spec)
    if not path.exists():
        raise InputError(f"{path} does not exist")
    if not video.is_video_path(path):
        raise InputError(f"{path} is neither a video (.mov, .mp4, .mkv, ...) nor an image "
                         "sequence pattern (name.####.exr, name.%04d.exr, name.#.exr)")
    return VideoInput(path, start_number, conform_vfr)


class SequenceOutput:
    """Frames written as files of a pattern; finished frames are recognised for resuming."""

    def __init__(self, pattern_text: str, like: plates.PlateFormat | None,
                 channels: tuple[str, ...] | None = None) -> None:
        if not sequences.is_frame_pattern(pattern_text):
            raise InputError(f"{pattern_text} needs a frame token for an image sequence "
                             "(name.####.exr, name.%04d.png or name.#.tif)")
        self.pattern = sequences.FramePattern.parse(pattern_text)
        folder = self.pattern.path(0).parent
        if not folder.is_dir():
            raise InputError(f"the output folder {folder} does not exist")
        plates.output_file_format(self.pattern.path(0))
        self.like = like
        self.channels = channels

    def path(self, number: int) -> Path:
        return self.pattern.path(number)

    def finished(self, number: int, fingerprint: str) -> bool:
        """True when the frame's file is complete and was made with the same fingerprint."""
        path = self.path(number)
        if not path.is_file() or not plates.is_complete(path):
            return False
        return plates.read_metadata(path).get("fingerprint") == fingerprint

    def write(self, number: int, frame: np.ndarray, metadata: Mapping[str, str]) -> None:
        path = self.path(number)
        fmt = plates.plate_format_for(path, self.like, frame)
        if self.channels is not None:
            fmt = dataclasses.replace(fmt, channels=len(self.channels),
                                      channel_names=self.channels)
        plates.write_plate(path, frame, fmt, {**metadata, "facefuse:frame": str(number)})
