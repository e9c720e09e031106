"""Pass 1 of a render, one frame at a time: detect the faces of a decoded picture and embed them,
timing each stage.

A picture comes either as a full frame (any format; colour-managed shots always) or as an
io.analysis_pictures.AnalysisPicture (8-bit 4:2:0 video): then the detector gets the picture's
small conversion, and each recogniser crop is cut from its face's region alone (the footprint
of the crop, converted at full resolution), which saves converting the rest and never makes a
full-size BGR frame (25 MB at 4K). The crops are those a warp of the full conversion gives
(geometry.warp_crop with origin_xy: bit for bit with OpenCV 4). All faces of a picture are embedded in one run.
"""

from __future__ import annotations

import math

import numpy as np

from ..geometry import (
    DisplayConversion,
    frame_to_crop_matrix,
    invert_affine,
    scale_face,
    transform_points,
    warp_crop,
)
from ..io.video.analysis_pictures import AnalysisPicture, Box
from ..pipeline import Pipeline
from ..timing import StageClock
from ..types import Face

CROP_MARGIN_PX = 4  # around a crop's footprint: bilinear sampling reads one pixel beyond it


class FrameAnalysis:
    """Detect and embed the faces of one picture at a time with one pipeline (one thread).

    colour: the shot's conversion to display space (None: display-referred already).
    clock: gets "detect", "embed" and, for AnalysisPictures, the "colour" of the face regions.
    """

    def __init__(self, pipeline: Pipeline, colour: DisplayConversion | None,
                 clock: StageClock) -> None:
        self.pipeline, self.colour, self.clock = pipeline, colour, clock

    def faces(self, picture: AnalysisPicture | np.ndarray) -> tuple[Face, ...]:
        """The faces of a picture with their embeddings, in frame pixels, best first."""
        if isinstance(picture, AnalysisPicture):
            return self._from_picture(picture)
        with self.clock.measure("detect"):
            faces = self.pipeline.detect(picture, self.colour)
        with self.clock.measure("embed"):
            return self.pipeline.embed_faces(picture, faces, self.colour)

    def _from_picture(self, picture: AnalysisPicture) -> tuple[Face, ...]:
        with self.clock.measure("detect"):
            found = self.pipeline.detect(picture.small)
            back = (1.0 / picture.scale_xy[0], 1.0 / picture.scale_xy[1])
            faces = tuple(scale_face(face, back) for face in found)
        if not faces:
            return ()
        spec = self.pipeline.models.load("recogniser").family.crop_spec()
        crops = []
        for face in faces:
            with self.clock.measure("colour"):
                # None: the crop lies wholly outside the frame; it then sees black, as it
                # would in a frame black outside the faces
                region = (picture.region(self._crop_box(face))
                          or (np.zeros((1, 1, 3), np.uint8), (0, 0)))
            with self.clock.measure("embed"):
                crops.append(warp_crop(region[0], face.kps5, *spec, origin_xy=region[1]))
        with self.clock.measure("embed"):
            return self.pipeline.embed_crops(faces, crops)

    def _crop_box(self, face: Face) -> Box:
        """The frame pixels the recogniser's crop of `face` reads (its corners mapped back,
        plus a margin)."""
        template, size_px = self.pipeline.models.load("recogniser").family.crop_spec()
        crop_to_frame = invert_affine(frame_to_crop_matrix(face.kps5, template, size_px))
        corners = np.array([[0, 0], [size_px, 0], [0, size_px], [size_px, size_px]], np.float64)
        points = transform_points(corners, crop_to_frame)
        low, high = points.min(axis=0), points.max(axis=0)
        return (math.floor(low[0]) - CROP_MARGIN_PX, math.floor(low[1]) - CROP_MARGIN_PX,
                math.ceil(high[0]) + CROP_MARGIN_PX + 1, math.ceil(high[1]) + CROP_MARGIN_PX + 1)
