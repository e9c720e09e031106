"""The writers of render's frames: an image sequence (SequenceWriter, resumable) or a video
(VideoWriter, one pass), plus the optional matte and patch sequences for compositors, all
pixel-aligned with the plate. shot.output.outputs checks the outputs and opens the writer.

A writer takes processed frames in order and hands back the frames it has *settled*: those whose
files are all in place (or that failed), in order. It neither counts nor reports: the render job
does both, in one place, from what the writer settles.
"""

from __future__ import annotations

import dataclasses
import re
import time
from collections import deque
from collections.abc import Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Protocol

import numpy as np

from ...color import ColourConverter, display_to_linear
from ...errors import InputError
from ...geometry import DisplayConversion, to_model_range
from ...io import files, plates, sequences, video
from ...io.video import Frame
from ...runtime.threads import thread_budget
from ...types import Pasted
from ..contract.inputs import ShotInput
from ..contract.request import RenderRequest

if TYPE_CHECKING:
    from .signing import OutputSigner

DEFAULT_SEQUENCE_RATE = Fraction(24)
WRITE_WORKERS = 3


@dataclass(frozen=True, slots=True)
class FrameToWrite:
    """What pass 2 hands from inference to the writer for one frame (frame None: failed).

    frame: the frame as read (io.video.frame), with the faces pasted into its conversions;
    pasted: where they were pasted (see types.Pasted), which a video writer passing decoded
    planes through converts alone. The frame is counted by the byte-bounded queues
    (streaming.payload_bytes). matte: the whole frame's blend mask (None: nothing pasted).
    fingerprint: the frame's own (provenance.frame_fingerprint), which a sequence's files carry.
    """

    number: int
    frame: Frame | None
    matte: np.ndarray | None
    faces: int
    ms: Mapping[str, float] = field(default_factory=lambda: MappingProxyType({}))
    error: str = ""
    pasted: tuple[Pasted, ...] = ()
    fingerprint: str = ""


class FrameWriter(Protocol):
    def finished(self, number: int, fingerprint: str) -> bool: ...

    def sign_with(self, signer: OutputSigner) -> None: ...

    def started(self, numbers: Sequence[int]) -> bool: ...

    def write(self, item: FrameToWrite, metadata: Mapping[str, str]) -> list[FrameToWrite]: ...

    def finish(self, complete: bool) -> list[FrameToWrite]: ...


def matte_frame(matte: np.ndarray | None, shape: tuple[int, ...]) -> np.ndarray:
    """The blend mask as a float32 (H, W, 3) grey picture (0 where nothing was pasted)."""
    if matte is None:
        return np.zeros((*shape[:2], 3), np.float32)
    return np.repeat(matte[..., None], 3, axis=2)


def patch_frame(frame: np.ndarray | Frame, matte: np.ndarray | None) -> np.ndarray:
    """The swapped face alone, premultiplied float32 BGRA: colour * matte, alpha = matte
    (of a frame converted only in part: zero outside that part, where its matte is)."""
    if not isinstance(frame, np.ndarray):
        part = frame.converted()
        if part is not None and part.whole:
            return patch_frame(part.pixels, matte)
        patch = np.zeros((*frame.shape[:2], 4), np.float32)
        if matte is not None and part is not None:
            rows, cols = part.box.slices()
            patch[rows, cols] = patch_frame(part.pixels, matte[rows, cols])
        return patch
    alpha = matte if matte is not None else np.zeros(frame.shape[:2], np.float32)
    colour = to_model_range(frame[..., :3]) / np.float32(255.0)
    return np.dstack([colour * alpha[..., None], alpha]).astype(np.float32)


class SequenceOutput:
    """Frames written as files of a pattern; finished frames are recognised for resuming."""

    def __init__(self, pattern_text: str, like: plates.PlateFormat | None,
                 channels: tuple[str, ...] | None = None, compression: str | None = None) -> None:
        if not sequences.is_frame_pattern(pattern_text):
            raise InputError(f"{pattern_text} needs a frame token for an image sequence "
                             "(name.####.exr, name.%04d.png or name.#.tif)")
        self.pattern = sequences.FramePattern.parse(pattern_text)
        folder = self.pattern.path(0).parent
        if folder.exists() and not folder.is_dir():
            raise InputError(f"the output folder {folder} is a file, not a folder")
        plates.output_file_format(self.pattern.path(0))
        self.like = like
        self.channels = channels
        self.compression = compression
        self.signer: OutputSigner | None = None  # signs each frame written (shot.output.signing)
        self._folder_made = False

    @property
    def folder(self) -> Path:
        return self.pattern.path(0).parent

    def path(self, number: int) -> Path:
        return self.pattern.path(number)

    def owns_temporary(self, part: str, cut: bool, ext: str) -> bool:
        """Whether a temporary (files.temporary_path, suffix kept) was made for one of our files."""
        name_ext = Path("x" + self.pattern.suffix).suffix
        if ext != name_ext:
            return False
        if not cut:
            return self.pattern.number_of(part + ext) is not None
        prefix = self.pattern.prefix
        if len(part) <= len(prefix):
            return prefix.startswith(part)
        if not part.startswith(prefix):
            return False
        rest = part[len(prefix):]
        digits = re.match(r"\d*", rest)
        tail = rest[digits.end():] if digits is not None else rest
        return self.pattern.suffix[:len(self.pattern.suffix) - len(ext)].startswith(tail)

    def finished(self, number: int, fingerprint: str) -> bool:
        """True when the frame's file is complete and was made with the same fingerprint."""
        path = self.path(number)
        if not path.is_file() or not plates.is_complete(path):
            return False
        if plates.read_metadata(path).get("fingerprint") != fingerprint:
            return False
        return self.signer is None or self.signer.signed(path)

    def write(self, number: int, frame: np.ndarray, metadata: Mapping[str, str]) -> None:
        path = self.path(number)
        if not self._folder_made:  # the first write creates a missing folder
            files.make_folder(path.parent)
            self._folder_made = True
        fmt = plates.plate_format_for(path, self.like, frame)
        if self.channels is not None:
            fmt = dataclasses.replace(fmt, channels=len(self.channels),
                                      channel_names=self.channels)
        fmt = plates.with_compression(fmt, self.compression)
        plates.write_plate(path, frame, fmt, {**metadata, "facefuse:frame": str(number)})
        if self.signer is not None:
            self.signer.sign(path)


class ExtraSequences:
    """The optional matte and patch sequences."""

    def __init__(self, matte: str | None, patch: str | None) -> None:
        self.matte = SequenceOutput(matte, None, channels=("Y",)) if matte else None
        self.patch = SequenceOutput(patch, None) if patch else None

    @property
    def outputs(self) -> tuple[SequenceOutput, ...]:
        return tuple(out for out in (self.matte, self.patch) if out is not None)

    def finished(self, number: int, fingerprint: str) -> bool:
        return all(out.finished(number, fingerprint) for out in self.outputs)

    def write(self, item: FrameToWrite, frame: np.ndarray | Frame,
              metadata: Mapping[str, str]) -> None:
        if self.matte is not None:
            self.matte.write(item.number, matte_frame(item.matte, frame.shape), metadata)
        if self.patch is not None:
            self.patch.write(item.number, patch_frame(frame, item.matte), metadata)


class SequenceWriter:
    """Image-sequence output: every frame written atomically, finished frames skipped on re-run.

    Encoding (EXR compression above all) is the slow part of plate output, so up to
    WRITE_WORKERS frames are written at once; frames are still settled in order, and a frame
    is settled only once all its files are renamed into place."""

    def __init__(self, pattern: str, like: plates.PlateFormat | None, extras: ExtraSequences,
                 linear: ColourConverter | None = None, compression: str | None = None,
                 workers: int = WRITE_WORKERS) -> None:
        self.main = SequenceOutput(pattern, like, compression=compression)
        self.extras = extras
        self.linear = linear  # display-referred input to EXR: see shot.output.outputs
        self._pool = ThreadPoolExecutor(max(1, workers), thread_name_prefix="facefuse-encode")
        self._pending: deque[tuple[FrameToWrite, Future[float] | None]] = deque()

    @property
    def outputs(self) -> tuple[SequenceOutput, ...]:
        return (self.main, *self.extras.outputs)

    def finished(self, number: int, fingerprint: str) -> bool:
        return self.main.finished(number, fingerprint) and self.extras.finished(number,
                                                                                fingerprint)

    def sign_with(self, signer: OutputSigner) -> None:
        """Sign every file of every output as it is written."""
        for output in self.outputs:
            output.signer = signer

    def started(self, numbers: Sequence[int]) -> bool:
        """Whether a file of any of these frames exists already (in any of the outputs)."""
        return any(out.path(n).exists() for out in self.outputs for n in numbers)

    def write(self, item: FrameToWrite, metadata: Mapping[str, str]) -> list[FrameToWrite]:
        future = (self._pool.submit(self._write_files, item, metadata)
                  if item.frame is not None else None)
        self._pending.append((item, future))
        settled = []
        while len(self._pending) > WRITE_WORKERS:
            settled.append(self._settle_oldest())
        return settled

    def _write_files(self, item: FrameToWrite, metadata: Mapping[str, str]) -> float:
        """Write the frame's files; the milliseconds it took."""
        assert item.frame is not None
        start = time.perf_counter()
        whole = item.frame.to_ndarray()
        frame = whole if self.linear is None else display_to_linear(whole, self.linear)
        self.main.write(item.number, frame, metadata)
        self.extras.write(item, frame, metadata)  # the patch holds what the main output holds
        return (time.perf_counter() - start) * 1000.0

    def _settle_oldest(self) -> FrameToWrite:
        item, future = self._pending.popleft()
        if future is None:
            return item
        return _with_encode_ms(item, future.result())  # result() re-raises a failed write

    def finish(self, complete: bool) -> list[FrameToWrite]:
        """Wait for the frames in flight (they complete even when cancelled); settle them."""
        settled = []
        try:
            while self._pending:
                settled.append(self._settle_oldest())
        finally:
            self._pool.shutdown(wait=True)
        return settled


class VideoWriter:
    """Video output, written in one pass over the frames to a temporary file renamed at the end.

    A frame that failed to decode is replaced by the previous frame (leading failures by the
    first good frame) so picture, audio and timecode stay in step; the run still ends with an
    error. The sink decides whether the frames' decoded planes go to the encoder with only the
    pasted faces converted (io.video.passthrough)."""

    def __init__(self, path: Path, request: RenderRequest, shot: ShotInput,
                 numbers: Sequence[int], extras: ExtraSequences,
                 colour: DisplayConversion | None = None) -> None:
        self.path, self.request, self.shot, self.numbers = path, request, shot, numbers
        self.extras, self.colour = extras, colour
        self.sink: video.VideoSink | None = None
        self.last: FrameToWrite | None = None  # the last good frame, the stand-in for failures
        self.leading_failures = 0
        self.signer: OutputSigner | None = None

    def finished(self, number: int, fingerprint: str) -> bool:
        return False

    def sign_with(self, signer: OutputSigner) -> None:
        """Sign the video once it is complete, and each frame of the extra sequences."""
        self.signer = signer
        for output in self.extras.outputs:
            output.signer = signer

    def started(self, numbers: Sequence[int]) -> bool:
        return False  # a video is written whole, every time

    def write(self, item: FrameToWrite, metadata: Mapping[str, str]) -> list[FrameToWrite]:
        start = time.perf_counter()
        good = item if item.frame is not None else self.last
        if good is None or good.frame is None:  # no stand-in yet: the first good frame will be
            self.leading_failures += 1
        else:
            if self.sink is None:
                self.sink = self._open(good.frame.shape, metadata)
            for _ in range(1 + self.leading_failures):
                self._write_frame(self.sink, good)
            self.leading_failures = 0
            self.last = good
        if item.frame is None:
            return [item]
        self.extras.write(item, item.frame, metadata)
        return [_with_encode_ms(item, (time.perf_counter() - start) * 1000.0)]

    def _write_frame(self, sink: video.VideoSink, item: FrameToWrite) -> None:
        """Encode the item's frame (the sink decides whether its decoded planes pass
        through); a colour-managed one as the video shows it, converted whole."""
        assert item.frame is not None
        if self.colour is None:
            sink.write(item.frame, item.pasted)
        else:
            item.frame.drop_planes()  # converted whole here: the picture is of no more use
            sink.write(self._display(item.frame.to_ndarray()), colour_transform=True)

    def _display(self, frame: np.ndarray) -> np.ndarray:
        """The frame as the video shows it: display-encoded when the plate is scene-referred."""
        if self.colour is None:
            return frame
        colour = self.colour.to_display(to_model_range(frame[..., :3]) / np.float32(255.0))
        return np.dstack([colour, frame[..., 3:]]) if frame.shape[2] == 4 else colour

    def finish(self, complete: bool) -> list[FrameToWrite]:
        if self.sink is not None:
            if complete:
                self.sink.close()
                if self.signer is not None:
                    self.signer.sign(self.path)
            else:
                self.sink.abort()
        return []

    def _open(self, shape: tuple[int, int, int], metadata: Mapping[str, str]
              ) -> video.VideoSink:
        files.make_folder(self.path.parent)
        timing = self.shot.video_timing(self.numbers)
        info = _video_info(self.path, timing.source, timing.rate or self.request.output.rate
                           or DEFAULT_SEQUENCE_RATE, len(self.numbers), shape, timing.timecode)
        audio = timing.audio
        request, out = self.request, self.request.output
        threads = thread_budget(request.settings.threads).encode
        if audio is None:
            return video.VideoSink(self.path, info, codec=out.codec, metadata=metadata,
                                   quality=out.crf, preset=out.preset, threads=threads,
                                   keep_yuv=out.keep_yuv)
        return video.VideoSink(self.path, info, codec=out.codec, metadata=metadata,
                               quality=out.crf, preset=out.preset, threads=threads,
                               keep_yuv=out.keep_yuv, audio_from=audio.path,
                               audio_start_s=audio.start_s,
                               audio_duration_s=audio.duration_s)


def _with_encode_ms(item: FrameToWrite, ms: float) -> FrameToWrite:
    """The item with the milliseconds its writing took as its "encode" stage."""
    return dataclasses.replace(item, ms=MappingProxyType({**item.ms, "encode": round(ms, 3)}))


def _video_info(path: Path, source: video.VideoInfo | None, rate: Fraction, count: int,
                shape: tuple[int, int, int], timecode: str | None) -> video.VideoInfo:
    """The output stream: the source video's, resized to the frames (`shape`), or a new one."""
    height, width = shape[:2]
    if source is not None:
        return dataclasses.replace(source, width=width, height=height, timecode=timecode)
    return video.VideoInfo(path=path, frame_count=count, rate=rate, width=width,
                           height=height, codec="", pixel_format="", bit_depth=8,
                           has_alpha=shape[2] == 4, timecode=timecode, audio_streams=0,
                           duration_s=float(count / rate), variable_frame_rate=False)


