"""The review's pictures: frames of the shot before (as decoded) and after (the render's own
pixels for that frame), people's thumbnails, all display-referred 8-bit BGR and encoded with
io.images."""

from __future__ import annotations

import logging
import tempfile
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

import cv2
import numpy as np

from ..color import input_conversion
from ..geometry import DisplayConversion, shrink_to_fit, to_display_uint8
from ..io.files import scratch_folder
from ..io.images import encode_image, read_image
from ..io.video import DecodeFailure
from ..pipeline import Pipeline
from ..shot.contract.inputs import open_input
from ..shot.contract.request import CancelCheck, PhaseCallback, RenderRequest
from ..shot.looks.stills import render_stills
from ..shot.plan.people import face_presence
from ..shot.plan.plan import ShotPlan
from ..types import Face

SHEET_SIDE_PX = 480  # the long side of a contact sheet's picture (never enlarged)
THUMBNAIL_PX = 112  # a thumbnail's height
THUMBNAIL_MARGIN = 0.35  # share of the face box added on every side of a thumbnail


RENDER_LOGGER = "facefuse.shot.run.render"  # whose per-render warnings a still does not need


class _NoWarnings(logging.Filter):
    """Drops warnings (errors pass)."""

    def filter(self, record: logging.LogRecord) -> bool:
        return record.levelno != logging.WARNING


class Pictures:
    """Frames of one shot as display-referred BGR uint8 (the conversion detection uses)."""

    def __init__(self, request: RenderRequest, cancel: CancelCheck | None = None) -> None:
        self.request, self.cancel = request, cancel
        shot = open_input(request.input.path, request.input.start_number, request.input.conform_vfr,
                          request.settings.threads)
        try:
            self.colour: DisplayConversion | None = input_conversion(
                request.input.colorspace, shot.suffix, shot.pixel_type)[0]
        except BaseException:
            shot.close()
            raise
        self.shot = shot

    def before(self, frames: Sequence[int], each: Callable[[], None] | None = None
               ) -> dict[int, np.ndarray]:
        """The decoded frames (a frame that fails to decode is left out); each() after each
        frame read."""
        pictures = {}
        for number, frame in self.shot.read(sorted(set(frames))):
            if not isinstance(frame, DecodeFailure):
                pictures[number] = to_display_uint8(frame.to_ndarray(), self.colour)
            if each is not None:
                each()
        return pictures

    def after(self, frames: Sequence[int], pipeline: Pipeline | None,
              on_phase: PhaseCallback | None = None) -> dict[int, np.ndarray]:
        """The frames as the render writes them (on_phase: the render's phases)."""
        with scratch_folder(Path(tempfile.gettempdir()), "facefuse-review") as scratch:
            quiet = _NoWarnings()  # "faces found but none swapped", said of every such still
            logger = logging.getLogger(RENDER_LOGGER)
            logger.addFilter(quiet)
            try:
                files = render_stills(self.request, sorted(set(frames)), scratch,
                                      pipeline, on_phase=on_phase, suffix=".png",
                                      cancel=self.cancel)
            finally:
                logger.removeFilter(quiet)
            return {n: to_display_uint8(read_image(path), self.colour)
                    for n, path in files.items()}

    def close(self) -> None:
        self.shot.close()


def sheet_picture(picture: np.ndarray) -> bytes:
    """A contact-sheet JPEG of a frame (long side at most SHEET_SIDE_PX)."""
    small, _ = shrink_to_fit(picture, SHEET_SIDE_PX)
    return encode_image(np.ascontiguousarray(small), ".jpg")


def best_faces(plan: ShotPlan) -> dict[str, tuple[int, Face]]:
    """Each person's face with the most screen presence (frame, face): their thumbnail."""
    best: dict[str, tuple[int, Face]] = {}
    for planned in plan.people:
        faces = [(frame, face) for track in planned.person.tracks
                 for frame, face in zip(track.frames, track.faces)]
        if faces:
            best[planned.person_id] = max(faces, key=lambda item: (face_presence(item[1]),
                                                                   -item[0]))
    return best


def thumbnail(picture: np.ndarray, face: Face) -> bytes:
    """A JPEG of the face's box with a margin, THUMBNAIL_PX high."""
    height, width = picture.shape[:2]
    x1, y1, x2, y2 = (float(v) for v in face.bbox_xyxy)
    pad_x, pad_y = THUMBNAIL_MARGIN * (x2 - x1), THUMBNAIL_MARGIN * (y2 - y1)
    left, top = max(int(x1 - pad_x), 0), max(int(y1 - pad_y), 0)
    right, bottom = min(int(x2 + pad_x) + 1, width), min(int(y2 + pad_y) + 1, height)
    crop = picture[top:max(bottom, top + 1), left:max(right, left + 1)]
    scale = THUMBNAIL_PX / crop.shape[0]
    size = (max(1, round(crop.shape[1] * scale)), THUMBNAIL_PX)
    resized = cv2.resize(crop, size, interpolation=cv2.INTER_AREA if scale < 1 else
                         cv2.INTER_LINEAR)
    return encode_image(np.ascontiguousarray(resized), ".jpg")


def thumbnails(plan: ShotPlan, pictures: Mapping[int, np.ndarray]) -> dict[str, bytes]:
    """person id -> thumbnail JPEG, for the people whose best frame decoded."""
    return {pid: thumbnail(pictures[frame], face) for pid, (frame, face) in
            best_faces(plan).items() if frame in pictures}
