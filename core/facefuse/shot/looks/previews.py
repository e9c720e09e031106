"""Quick looks for host UIs: pictures made before (or instead of) a render.

- source_preview: a source image's thumbnail with every detected face outlined (the face that is
  used, the largest, in green; others in amber; no face at all: a red border), and the count.
- preview_frame: one frame of a shot exactly as the render writes it (shot.looks.stills: the render
  itself, through the shot plan of the request's whole analysed range), shown in display space.
  The first preview of a shot analyses it (as its render would, then cached); later ones take
  the analysis from the cache and cost about one frame's swap plus the plan.
- faces_overlay: one frame with its faces outlined and numbered, to pick a reference face.
- reference_face: a crop of one of those faces, written as a reference image for the
  "reference" selector (Settings.reference_images).
- frame_picture / face_pictures: the frame as it is (a before/after preview's "before") and a
  tile per face (a face picker's grid), for the Qt panel.

Faces in a frame are numbered left to right by their box centre (`ordered_faces`): the numbers
faces_overlay draws are the indices reference_face takes.

Every picture is an 8-bit PNG in display space (OpenCV channel order on disk is handled by the
encoder), written atomically (temporary name, then rename) into `out_dir`: by default the cache's
`previews` folder (CacheLayout.previews, under Settings.cache_dir). `pipeline` lets a host reuse one
Pipeline and its loaded models across calls: it must be built from the same Settings and is left
open; without one a Pipeline is built and closed per call.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import cv2
import numpy as np

from ... import geometry
from ...cache.hashes import sha256_bytes
from ...cache.layout import CacheLayout
from ...color import input_conversion
from ...config import Settings
from ...errors import InputError, NoFaceError
from ...geometry import DisplayConversion
from ...io.files import atomic_write_bytes, scratch_folder
from ...io.images import decode_image, encode_image, read_image_bytes
from ...io.plates import read_plate
from ...io.video import DecodeFailure
from ...pipeline import Pipeline
from ...runtime.threads import blas_on_one_thread
from ...selection import largest_face
from ...types import Face
from ..contract.inputs import open_input
from ..contract.request import PhaseCallback, RenderRequest
from .stills import render_stills

THUMBNAIL_PX = 256  # long side of a source thumbnail
OVERLAY_PX = 1280  # long side of a faces overlay
FACE_TILE_PX = 128  # long side of a face picker tile
REFERENCE_MARGIN = 0.6  # reference crop: the face box grown by this fraction of its size per side
USED_BGR = (80, 220, 80)
OTHER_BGR = (40, 180, 255)
NO_FACE_BGR = (40, 40, 230)


def ordered_faces(faces: Sequence[Face]) -> tuple[Face, ...]:
    """Faces left to right by box centre x (ties: top to bottom): the numbering shown to users."""
    def centre(face: Face) -> tuple[float, float]:
        x1, y1, x2, y2 = (float(v) for v in face.bbox_xyxy)
        return (x1 + x2) / 2.0, (y1 + y2) / 2.0
    return tuple(sorted(faces, key=centre))


def source_preview(path: Path, settings: Settings, out_dir: Path | None = None,
                   pipeline: Pipeline | None = None,
                   size_px: int = THUMBNAIL_PX) -> tuple[Path, int]:
    """A thumbnail of a source image with its detected faces outlined, and the number of faces.

    The faces are found on the full image, as Pipeline.source_identity finds them; the largest
    (the one whose identity is used) is outlined in green, the others in amber, and an image
    without a face gets a red border. The PNG is named by the image content and the detector
    settings, so asking again for the same picture rewrites the same file.
    Raises InputError for a missing or unreadable image.
    """
    data = read_image_bytes(Path(path))
    image = decode_image(data, str(path))
    with _pipeline(settings, pipeline) as p:
        faces = p.detect(image)
    thumbnail, scale = geometry.shrink_to_fit(geometry.to_display_uint8(image), size_px)
    thumbnail = thumbnail.copy()
    used = largest_face(faces)
    for face in faces:
        _outline(thumbnail, geometry.scale_face(face, scale),
                 USED_BGR if face is used else OTHER_BGR)
    if not faces:
        _border(thumbnail, NO_FACE_BGR)
    key = _digest(sha256_bytes(data), settings.detector, settings.detector_score,
                  settings.detector_size_px, size_px)
    return _write_png(_folder(out_dir, settings) / f"source-{key}.png", thumbnail), len(faces)


def preview_frame(request: RenderRequest, frame_number: int, pipeline: Pipeline | None = None,
                  out_dir: Path | None = None, on_phase: PhaseCallback | None = None) -> Path:
    """Frame `frame_number` (the input's numbering) as the render of `request` writes it, as
    an 8-bit PNG in display space.

    The frame is rendered by shot.looks.stills.render_stills, so the people swapped, their sources,
    tracks, gap fills and smoothing are the render's, decided on the request's whole analysed
    range (request.frames.range): an 8-bit plate's preview holds exactly the render's pixels, a
    deeper or scene-linear one the render's frame converted for display as frame_picture converts
    the input. A shot not analysed yet is analysed first (on_phase gets its "analysis"
    progress) and cached. One file per input (rewritten). Raises InputError (a frame outside
    the input or the analysed range, an unreadable frame, an unknown person) and the
    Pipeline's errors, as the render does.
    """
    folder = _folder(out_dir, request.settings)
    with scratch_folder(folder, "stills") as scratch:
        still = render_stills(request, (frame_number,), scratch, pipeline,
                              on_phase)[frame_number]
        frame, _ = read_plate(still)
    picture = geometry.to_display_uint8(frame, _colour(request))
    name = f"preview-{_digest(request.input.path)}.png"
    return _write_png(folder / name, picture)


def faces_overlay(request: RenderRequest, frame_number: int, pipeline: Pipeline | None = None,
                  out_dir: Path | None = None) -> tuple[Path, int]:
    """Frame `frame_number` with every face outlined and numbered (see ordered_faces), as a PNG
    at most OVERLAY_PX on its long side, and the number of faces found."""
    with _frame(request, frame_number) as (frame, colour), \
            _pipeline(request.settings, pipeline) as p:
        faces = ordered_faces(p.detect(frame, colour))
        picture, scale = geometry.shrink_to_fit(geometry.to_display_uint8(frame, colour),
                                                OVERLAY_PX)
    picture = picture.copy()
    for index, face in enumerate(faces):
        scaled = geometry.scale_face(face, scale)
        _outline(picture, scaled, USED_BGR)
        _label(picture, scaled, str(index))
    if not faces:
        _border(picture, NO_FACE_BGR)
    name = f"faces-{_digest(request.input.path)}.png"
    return _write_png(_folder(out_dir, request.settings) / name, picture), len(faces)


def reference_face(request: RenderRequest, frame_number: int, face_index: int,
                   out_dir: Path, pipeline: Pipeline | None = None) -> Path:
    """Write face number `face_index` of frame `frame_number` as a reference image; its path.

    The crop is the face box grown by REFERENCE_MARGIN per side (clipped to the frame), in display
    space, so the detector finds this face as the largest one in it, which is checked. The file is
    named by its content (reference-<sha256>.png), so a different pick is a different path and
    changes a render's fingerprint. Raises NoFaceError when the frame has no face, InputError for
    an index out of range.
    """
    with _frame(request, frame_number) as (frame, colour), \
            _pipeline(request.settings, pipeline) as p:
        faces = ordered_faces(p.detect(frame, colour))
        if not faces:
            raise NoFaceError(f"no face found in frame {frame_number} of {request.input.path}")
        if not 0 <= face_index < len(faces):
            raise InputError(f"frame {frame_number} has {len(faces)} face(s): pick a number "
                             f"from 0 to {len(faces) - 1}, not {face_index}")
        crop = _crop(geometry.to_display_uint8(frame, colour), faces[face_index])
        if largest_face(p.detect(crop)) is None:
            raise NoFaceError(f"face {face_index} of frame {frame_number} is too small or too "
                              "cut off to serve as a reference; pick it in another frame")
    data = encode_image(crop, ".png")
    path = Path(out_dir) / f"reference-{sha256_bytes(data)[:16]}.png"
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_bytes(path, data)
    return path


# -- helpers ------------------------------------------------------------------------------------

@contextmanager
def _pipeline(settings: Settings, given: Pipeline | None) -> Iterator[Pipeline]:
    if given is not None and given.settings != settings:
        raise ValueError("the pipeline given was built from other settings")
    with blas_on_one_thread():  # runtime.threads
        if given is not None:
            yield given
            return
        with Pipeline(settings) as pipeline:
            yield pipeline


@contextmanager
def _frame(request: RenderRequest, number: int
           ) -> Iterator[tuple[np.ndarray, DisplayConversion | None]]:
    """One decoded frame of the request's input and its colour conversion to display space."""
    shot = open_input(request.input.path, request.input.start_number, request.input.conform_vfr,
                      request.settings.threads)
    try:
        if number not in shot.frame_numbers:
            first, last = shot.frame_numbers[0], shot.frame_numbers[-1]
            raise InputError(f"frame {number} is not in {shot.label}, which has frames "
                             f"{first}-{last}")
        _, frame = next(iter(shot.read([number])))
        if isinstance(frame, DecodeFailure):
            raise InputError(f"frame {number} of {shot.label} cannot be decoded: {frame.reason}")
        colour, _ = input_conversion(request.input.colorspace, shot.suffix, shot.pixel_type)
        yield frame.to_ndarray(), colour
    finally:
        shot.close()


def _colour(request: RenderRequest) -> DisplayConversion | None:
    """The request's input's conversion to display space."""
    shot = open_input(request.input.path, request.input.start_number, request.input.conform_vfr,
                      request.settings.threads)
    try:
        colour, _ = input_conversion(request.input.colorspace, shot.suffix, shot.pixel_type)
    finally:
        shot.close()
    return colour


def _crop(picture: np.ndarray, face: Face) -> np.ndarray:
    x1, y1, x2, y2 = (float(v) for v in face.bbox_xyxy)
    grow_x, grow_y = (x2 - x1) * REFERENCE_MARGIN, (y2 - y1) * REFERENCE_MARGIN
    height, width = picture.shape[:2]
    left, top = max(0, int(x1 - grow_x)), max(0, int(y1 - grow_y))
    right = min(width, math.ceil(x2 + grow_x))
    bottom = min(height, math.ceil(y2 + grow_y))
    return np.ascontiguousarray(picture[top:bottom, left:right])


def _thickness(picture: np.ndarray) -> int:
    return max(2, round(min(picture.shape[:2]) / 120))


def _outline(picture: np.ndarray, face: Face, bgr: tuple[int, int, int]) -> None:
    """Draw the face's box and its five landmarks onto `picture` (BGR uint8, in place)."""
    thick = _thickness(picture)
    x1, y1, x2, y2 = (round(float(v)) for v in face.bbox_xyxy)
    cv2.rectangle(picture, (x1, y1), (x2, y2), bgr, thick, cv2.LINE_AA)
    for x, y in face.kps5:
        cv2.circle(picture, (round(float(x)), round(float(y))), thick + 1, bgr, -1,
                   cv2.LINE_AA)


def _label(picture: np.ndarray, face: Face, text: str) -> None:
    thick = _thickness(picture)
    scale = max(0.5, thick * 0.6)
    x1, y1 = int(float(face.bbox_xyxy[0])), int(float(face.bbox_xyxy[1]))
    (w, h), base = cv2.getTextSize(text, cv2.FONT_HERSHEY_SIMPLEX, scale, thick)
    top = max(0, y1 - h - base - 2 * thick)
    cv2.rectangle(picture, (x1, top), (x1 + w + 2 * thick, top + h + base + 2 * thick), USED_BGR,
                  -1)
    cv2.putText(picture, text, (x1 + thick, top + h + thick), cv2.FONT_HERSHEY_SIMPLEX, scale,
                (0, 0, 0), thick, cv2.LINE_AA)


def _border(picture: np.ndarray, bgr: tuple[int, int, int]) -> None:
    thick = 2 * _thickness(picture)
    height, width = picture.shape[:2]
    cv2.rectangle(picture, (0, 0), (width - 1, height - 1), bgr, thick)


def _digest(*parts: object) -> str:
    return hashlib.sha256("|".join(str(p) for p in parts).encode("utf-8")).hexdigest()[:16]


def _folder(out_dir: Path | None, settings: Settings) -> Path:
    return Path(out_dir) if out_dir is not None else CacheLayout.at(settings.cache_dir).previews


def _write_png(path: Path, picture: np.ndarray) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_bytes(path, encode_image(np.ascontiguousarray(picture), ".png"))
    return path


def frame_picture(request: RenderRequest, frame_number: int, out_dir: Path | None = None) -> Path:
    """Frame `frame_number` of the request's input as it is, in display space, as a PNG (the
    "before" of a before/after preview; same size as preview_frame's picture). One file per
    input (rewritten)."""
    with _frame(request, frame_number) as (frame, colour):
        picture = geometry.to_display_uint8(frame, colour)
    name = f"frame-{_digest(request.input.path)}.png"
    return _write_png(_folder(out_dir, request.settings) / name, picture)


def face_pictures(request: RenderRequest, frame_number: int, pipeline: Pipeline | None = None,
                  out_dir: Path | None = None, size_px: int = FACE_TILE_PX) -> tuple[Path, ...]:
    """Each face of frame `frame_number`, numbered as ordered_faces numbers them (the indices
    reference_face takes), as a PNG of the face box grown by REFERENCE_MARGIN and shrunk to at
    most `size_px`: the tiles of a face picker. () when the frame has no face."""
    with _frame(request, frame_number) as (frame, colour), \
            _pipeline(request.settings, pipeline) as p:
        faces = ordered_faces(p.detect(frame, colour))
        picture = geometry.to_display_uint8(frame, colour)
    folder = _folder(out_dir, request.settings)
    key = _digest(request.input.path, frame_number)
    tiles = []
    for index, face in enumerate(faces):
        tile, _ = geometry.shrink_to_fit(_crop(picture, face), size_px)
        tiles.append(_write_png(folder / f"face-{key}-{index}.png", tile))
    return tuple(tiles)
