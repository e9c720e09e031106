"""One frame's analysis: its faces detected and embedded with one pipeline, and the detection
of a window of frames run ahead on several detector sessions.

One frame (`FrameAnalysis`): the detector gets the frame's small picture where it has one
(io.video.frame.DecodedFrame.small: shrunk by swscale straight from the decoded planes; never
for colour-managed shots, which are detected on the whole frame in display colour), and each
recogniser crop is cut from its face's region alone (frame.region of the crop's footprint,
converted at full resolution), which saves converting the rest and never makes a full-size BGR
frame (25 MB at 4K). The crops are those a warp of the full conversion gives
(geometry.warp_crop with origin_xy: bit for bit with OpenCV 4). All faces of a frame are
embedded in one run.

With several detector sessions (Settings.detector_sessions, runtime.sessions.SessionReplicas)
the frames of a short window are detected side by side on worker threads (detected_ahead),
each frame on one session, and handed on in frame order: the detections are those one session
gives, frame by frame.
"""

from __future__ import annotations

import math
import time
from collections import deque
from collections.abc import Generator, Iterable, Mapping
from concurrent.futures import Future, ThreadPoolExecutor

import numpy as np

from ...geometry import (
    DisplayConversion,
    frame_to_crop_matrix,
    invert_affine,
    scale_face,
    transform_points,
    warp_crop,
)
from ...io.video import DecodeFailure, Frame
from ...pipeline import Pipeline
from ...timing import StageClock
from ...types import Face, Roi

CROP_MARGIN_PX = 4  # around a crop's footprint: bilinear sampling reads one pixel beyond it


class FrameAnalysis:
    """Detect and embed the faces of one frame at a time with one pipeline (one thread; only
    `detected` may run on other threads beside it).

    colour: the shot's conversion to display space (None: display-referred already; then the
    detector gets the frame's small picture where it has one). clock: gets "detect", "embed"
    and the "colour" of the face regions.
    """

    def __init__(self, pipeline: Pipeline, colour: DisplayConversion | None,
                 clock: StageClock) -> None:
        self.pipeline, self.colour, self.clock = pipeline, colour, clock
        self.side = max(pipeline.models.detector().input_size) if colour is None else None

    def picture(self, frame: Frame) -> np.ndarray:
        """What detection sees of `frame` (and what its cut signature is taken from): its small
        picture, else the whole frame."""
        small = frame.small(self.side) if self.side is not None else None
        return small.pixels if small is not None else frame.to_ndarray()

    def detected(self, frame: Frame) -> tuple[Face, ...]:
        """The faces detection finds in `frame`, in frame pixels, without embeddings; safe to
        call from several threads at once (the detector runs on replicas, runtime.sessions)."""
        small = frame.small(self.side) if self.side is not None else None
        if small is None:
            return self.pipeline.detect(frame.to_ndarray(), self.colour)
        found = self.pipeline.detect(small.pixels)
        back = (1.0 / small.scale_xy[0], 1.0 / small.scale_xy[1])
        return tuple(scale_face(face, back) for face in found)

    def faces(self, frame: Frame, found: tuple[Face, ...] | None = None) -> tuple[Face, ...]:
        """The faces of a frame with their embeddings, in frame pixels, best first; found:
        detected(frame) where it ran already (elsewhere), else it runs here."""
        if found is None:
            with self.clock.measure("detect"):
                found = self.detected(frame)
        small = frame.small(self.side) if self.side is not None else None
        if small is None:
            with self.clock.measure("embed"):
                return self.pipeline.embed_faces(frame.to_ndarray(), found, self.colour)
        if not found:
            return ()
        spec = self.pipeline.models.load("recogniser").family.crop_spec()
        crops = []
        for face in found:
            with self.clock.measure("colour"):
                # None: the crop lies wholly outside the frame; it then sees black, as it
                # would in a frame black outside the faces
                region = frame.region(self.crop_box(face))
                pixels, origin = ((region.pixels, region.part.origin_xy) if region is not None
                                  else (np.zeros((1, 1, 3), np.uint8), (0, 0)))
            with self.clock.measure("embed"):
                crops.append(warp_crop(pixels, face.kps5, *spec, origin_xy=origin))
        with self.clock.measure("embed"):
            return self.pipeline.embed_crops(found, crops)

    def crop_box(self, face: Face) -> Roi:
        """The frame pixels the recogniser's crop of `face` reads (its corners mapped back,
        plus a margin)."""
        template, size_px = self.pipeline.models.load("recogniser").family.crop_spec()
        crop_to_frame = invert_affine(frame_to_crop_matrix(face.kps5, template, size_px))
        corners = np.array([[0, 0], [size_px, 0], [0, size_px], [size_px, size_px]], np.float64)
        points = transform_points(corners, crop_to_frame)
        low, high = points.min(axis=0), points.max(axis=0)
        return Roi(math.floor(low[0]) - CROP_MARGIN_PX, math.floor(low[1]) - CROP_MARGIN_PX,
                   math.ceil(high[0]) + CROP_MARGIN_PX + 1,
                   math.ceil(high[1]) + CROP_MARGIN_PX + 1)



Read = tuple[int, Frame | DecodeFailure, Mapping[str, float]]
Detected = tuple[tuple[Face, ...], float]  # the faces of a frame, and the ms detecting them


def detected_ahead(frames: Iterable[Read], analysis: FrameAnalysis, sessions: int
                   ) -> Generator[tuple[int, Frame | DecodeFailure, Mapping[str, float],
                                        Detected | None], None, None]:
    """The frames pass 1 reads, in order, each with its detections when `sessions` > 1: then
    the frames of a window of `sessions` frames are detected side by side on as many worker
    threads, one detector session each (FrameAnalysis.detected; at most one frame more than
    that is held beyond the reader's). With one session nothing is detected here (None), and
    FrameAnalysis.faces detects each frame on the calling thread."""
    if sessions <= 1:
        for number, frame, ms in frames:
            yield number, frame, ms, None
        return

    def detect(frame: Frame) -> Detected:
        start = time.perf_counter()
        faces = analysis.detected(frame)
        return faces, (time.perf_counter() - start) * 1000.0

    window: deque[tuple[int, Frame | DecodeFailure, Mapping[str, float],
                        Future[Detected] | None]] = deque()
    items = iter(frames)
    with ThreadPoolExecutor(sessions, thread_name_prefix="facefuse-detect") as pool:
        try:
            while True:
                # one frame more than the sessions: they stay busy while this one is embedded
                while len(window) <= sessions and (item := next(items, None)) is not None:
                    number, frame, ms = item
                    job = None if isinstance(frame, DecodeFailure) else pool.submit(detect, frame)
                    window.append((number, frame, ms, job))
                if not window:
                    return
                number, frame, ms, job = window.popleft()
                yield number, frame, ms, job.result() if job is not None else None
        finally:
            for *_, job in window:
                if job is not None:
                    job.cancel()
