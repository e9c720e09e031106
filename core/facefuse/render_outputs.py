"""Where render's frames go: an image sequence (resumable) or a video (one pass), plus the
optional matte and patch sequences for compositors, all pixel-aligned with the plate."""

from __future__ import annotations

import dataclasses
import logging
from collections import deque
from collections.abc import Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path
from types import MappingProxyType
from typing import Any, Protocol

import numpy as np

from .errors import InputError
from .geometry import DisplayConversion, to_model_range
from .io import sequences, video
from .render import FrameReport, ProgressCallback, RenderRequest
from .shots import SequenceInput, SequenceOutput, ShotInput, VideoInput

log = logging.getLogger(__name__)

DEFAULT_SEQUENCE_RATE = Fraction(24)
WRITE_WORKERS = 3


@dataclass(frozen=True, slots=True)
class Processed:
    """What pass 2 hands from inference to the writer for one frame (frame None: failed)."""

    number: int
    frame: np.ndarray | None
    matte: np.ndarray | None
    faces: int
    ms: Mapping[str, float] = field(default_factory=lambda: MappingProxyType({}))
    error: str = ""


class Counts:
    """Per-run tallies, touched only by the writer thread and read after it has stopped."""

    def __init__(self) -> None:
        self.swapped = self.no_face = self.skipped = 0
        self.failed: list[tuple[int, str]] = []

    def record(self, item: Processed, report: ProgressCallback) -> None:
        if item.frame is None:
            self.failed.append((item.number, item.error))
            log.error("frame %d failed: %s", item.number, item.error)
            report(FrameReport(item.number, "failed", 0, item.ms, item.error))
            return
        status = "swapped" if item.faces else "no_face"
        if item.faces:
            self.swapped += 1
        else:
            self.no_face += 1
        report(FrameReport(item.number, status, item.faces, item.ms))


class FrameWriter(Protocol):
    def finished(self, number: int, fingerprint: str) -> bool: ...

    def write(self, item: Processed, metadata: Mapping[str, str], counts: Counts,
              report: ProgressCallback) -> None: ...

    def finish(self, complete: bool) -> None: ...


def matte_frame(matte: np.ndarray | None, shape: tuple[int, ...]) -> np.ndarray:
    """The blend mask as a float32 (H, W, 3) grey picture (0 where nothing was pasted)."""
    if matte is None:
        return np.zeros((*shape[:2], 3), np.float32)
    return np.repeat(matte[..., None], 3, axis=2)


def patch_frame(frame: np.ndarray, matte: np.ndarray | None) -> np.ndarray:
    """The swapped face alone, premultiplied float32 BGRA: colour * matte, alpha = matte."""
    alpha = matte if matte is not None else np.zeros(frame.shape[:2], np.float32)
    colour = to_model_range(frame[..., :3]) / np.float32(255.0)
    return np.dstack([colour * alpha[..., None], alpha]).astype(np.float32)


class _Extras:
    """The optional matte and patch sequences."""

    def __init__(self, matte: str | None, patch: str | None) -> None:
        self.matte = SequenceOutput(matte, None, channels=("Y",)) if matte else None
        self.patch = SequenceOutput(patch, None) if patch else None

    def finished(self, number: int, fingerprint: str) -> bool:
        return all(out.finished(number, fingerprint) for out in (self.matte, self.patch)
                   if out is not None)

    def write(self, item: Processed, frame: np.ndarray, metadata: Mapping[str, str]) -> None:
        if self.matte is not None:
            self.matte.write(item.number, matte_frame(item.matte, frame.shape), metadata)
        if self.patch is not None:
            self.patch.write(item.number, patch_frame(frame, item.matte), metadata)


class SequenceWriter:
    """Image-sequence output: every frame written atomically, finished frames skipped on re-run.

    Encoding (EXR compression above all) is the slow part of plate output, so up to
    WRITE_WORKERS frames are written at once; frames are still reported in order, and a frame
    counts as done only once all its files are renamed into place."""

    def __init__(self, pattern: str, like: Any, extras: _Extras) -> None:
        self.main = SequenceOutput(pattern, like)
        self.extras = extras
        self._pool = ThreadPoolExecutor(WRITE_WORKERS, thread_name_prefix="facefuse-encode")
        self._pending: deque[tuple[Processed, Future[None] | None, Counts,
                                   ProgressCallback]] = deque()

    def finished(self, number: int, fingerprint: str) -> bool:
        return self.main.finished(number, fingerprint) and self.extras.finished(number,
                                                                                fingerprint)

    def write(self, item: Processed, metadata: Mapping[str, str], counts: Counts,
              report: ProgressCallback) -> None:
        future = (self._pool.submit(self._write_files, item, metadata)
                  if item.frame is not None else None)
        self._pending.append((item, future, counts, report))
        while len(self._pending) > WRITE_WORKERS:
            self._settle_oldest()

    def _write_files(self, item: Processed, metadata: Mapping[str, str]) -> None:
        assert item.frame is not None
        self.main.write(item.number, item.frame, metadata)
        self.extras.write(item, item.frame, metadata)

    def _settle_oldest(self) -> None:
        item, future, counts, report = self._pending.popleft()
        if future is not None:
            future.result()  # re-raises a failed write
        counts.record(item, report)

    def finish(self, complete: bool) -> None:
        """Wait for the frames in flight (they complete even when cancelled)."""
        try:
            while self._pending:
                self._settle_oldest()
        finally:
            self._pool.shutdown(wait=True)


class VideoWriter:
    """Video output, written in one pass over the frames to a temporary file renamed at the end.

    A frame that failed to decode is replaced by the previous frame (leading failures by the
    first good frame) so picture, audio and timecode stay in step; the run still ends with an
    error."""

    def __init__(self, path: Path, request: RenderRequest, shot: ShotInput,
                 numbers: Sequence[int], extras: _Extras,
                 colour: DisplayConversion | None = None) -> None:
        self.path, self.request, self.shot, self.numbers = path, request, shot, numbers
        self.extras, self.colour = extras, colour
        self.sink: video.VideoSink | None = None
        self.last: np.ndarray | None = None
        self.leading_failures = 0

    def finished(self, number: int, fingerprint: str) -> bool:
        return False

    def write(self, item: Processed, metadata: Mapping[str, str], counts: Counts,
              report: ProgressCallback) -> None:
        frame = item.frame if item.frame is not None else self.last
        if frame is None:  # nothing to stand in yet: the first good frame will, once per failure
            self.leading_failures += 1
        else:
            if self.sink is None:
                self.sink = self._open(frame, metadata)
            for _ in range(1 + self.leading_failures):
                self.sink.write(self._display(frame))
            self.leading_failures = 0
            self.last = frame
        if item.frame is not None:
            self.extras.write(item, item.frame, metadata)
        counts.record(item, report)

    def _display(self, frame: np.ndarray) -> np.ndarray:
        """The frame as the video shows it: display-encoded when the plate is scene-referred."""
        if self.colour is None:
            return frame
        colour = self.colour.to_display(to_model_range(frame[..., :3]) / np.float32(255.0))
        return np.dstack([colour, frame[..., 3:]]) if frame.shape[2] == 4 else colour

    def finish(self, complete: bool) -> None:
        if self.sink is None:
            return
        if complete:
            self.sink.close()
        else:
            self.sink.abort()

    def _open(self, frame: np.ndarray, metadata: Mapping[str, str]) -> video.VideoSink:
        info, audio = _video_settings(self.path, self.request, self.shot, self.numbers, frame)
        return video.VideoSink(self.path, info, codec=self.request.codec, metadata=metadata,
                               **audio)


def _video_settings(path: Path, request: RenderRequest, shot: ShotInput, numbers: Sequence[int],
                    frame: np.ndarray) -> tuple[video.VideoInfo, dict[str, Any]]:
    """The output's rate, size and timecode, and which span of the source's audio to copy."""
    height, width = frame.shape[:2]
    if isinstance(shot, VideoInput):
        source = shot.info
        offset = numbers[0] - source.start_number
        timecode = (video.offset_timecode(source.timecode, source.rate, offset)
                    if source.timecode else None)
        info = dataclasses.replace(source, width=width, height=height, timecode=timecode)
        if not source.audio_streams:
            return info, {}
        start = source.start_time_s + float(offset / source.rate)
        return info, {"audio_from": shot.path, "audio_start_s": start,
                      "audio_duration_s": float(len(numbers) / source.rate)}
    rate = request.rate or DEFAULT_SEQUENCE_RATE
    info = video.VideoInfo(path=path, frame_count=len(numbers), rate=rate, width=width,
                           height=height, codec="", pixel_format="", bit_depth=8,
                           has_alpha=frame.shape[2] == 4, timecode=None, audio_streams=0,
                           duration_s=float(len(numbers) / rate), variable_frame_rate=False)
    return info, {}


def open_writer(request: RenderRequest, shot: ShotInput, numbers: Sequence[int],
                colour: DisplayConversion | None = None) -> FrameWriter:
    """Check the outputs up front (InputError on any problem) and return the writer.

    colour: the input's conversion to display space; video outputs are display-referred, so a
    scene-linear plate is converted before encoding (image sequences keep the plate's space)."""
    extras = _Extras(request.matte, request.patch)
    if sequences.is_frame_pattern(request.output):
        like = shot.format if isinstance(shot, SequenceInput) else None
        writer = SequenceWriter(request.output, like, extras)
        if isinstance(shot, SequenceInput) and _overlaps(writer, shot, numbers):
            raise InputError(f"the output {request.output} would overwrite the input frames; "
                             "choose another name")
        return writer
    path = Path(request.output)
    if not video.is_video_path(path):
        raise InputError(f"{path} needs a frame token for an image sequence (name.####.exr) or a "
                         "video extension (.mov, .mp4, .mkv)")
    _check_video_output(path, request, shot)
    return VideoWriter(path, request, shot, numbers, extras, colour)


def _overlaps(writer: SequenceWriter, shot: SequenceInput, numbers: Sequence[int]) -> bool:
    outputs = [writer.main.path(n).resolve() for n in numbers[:1]]
    for extra in (writer.extras.matte, writer.extras.patch):
        if extra is not None:
            outputs.append(extra.path(numbers[0]).resolve())
    return any(path == shot.files[numbers[0]].resolve() for path in outputs) if numbers else False


def _check_video_output(path: Path, request: RenderRequest, shot: ShotInput) -> None:
    if request.chunk is not None:
        raise InputError("--chunk needs an image-sequence output: a video is written in one "
                         "pass (render a sequence on the farm, then encode it)")
    if not path.parent.is_dir():
        raise InputError(f"the output folder {path.parent} does not exist")
    if isinstance(shot, VideoInput) and path.exists() and path.resolve() == shot.path.resolve():
        raise InputError(f"the output {path} is the input; choose another file name")
    if path.exists() and not request.overwrite:
        raise InputError(f"{path} already exists; add --overwrite to replace it")
