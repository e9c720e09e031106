"""Warp templates, the 5-point similarity fit, and crop warps. Stateless; no ONNX Runtime here."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from types import MappingProxyType
from typing import Protocol

import cv2
import numpy as np

from .types import AlignedCrop, Face

# 5-point templates normalised to the crop (multiply by the crop size in pixels).
# Order: left eye, right eye, nose tip, left mouth corner, right mouth corner.
TEMPLATES: Mapping[str, np.ndarray] = MappingProxyType(
    {
        "arcface_112_v2": np.array(
            [[0.34191607, 0.46157411], [0.65653393, 0.45983393], [0.50022500, 0.64050536],
             [0.37097589, 0.82469196], [0.63151696, 0.82325089]], dtype=np.float64),
        "arcface_128": np.array(
            [[0.36167656, 0.40387734], [0.63696719, 0.40235469], [0.50019687, 0.56044219],
             [0.38710391, 0.72160547], [0.61507734, 0.72034453]], dtype=np.float64),
        "ffhq_512": np.array(
            [[0.37691676, 0.46864664], [0.62285697, 0.46912813], [0.50123859, 0.61331904],
             [0.39308822, 0.72541100], [0.61150205, 0.72490465]], dtype=np.float64),
    }
)


def template_points(template: str, size_px: int) -> np.ndarray:
    """Template landmarks in crop pixels, float64 (5, 2)."""
    if template not in TEMPLATES:
        raise KeyError(f"unknown warp template {template!r}; known: {', '.join(TEMPLATES)}")
    return TEMPLATES[template] * float(size_px)


def estimate_similarity(src_pts: np.ndarray, dst_pts: np.ndarray) -> np.ndarray:
    """Least-squares 4-DoF similarity (rotation, uniform scale, translation) mapping src to dst.

    src_pts, dst_pts: (N, 2) with N >= 2. Returns float64 (2, 3). Uses the closed-form
    Umeyama solution (no RANSAC), so the same landmarks always give the same matrix.
    """
    src = np.asarray(src_pts, dtype=np.float64)
    dst = np.asarray(dst_pts, dtype=np.float64)
    src_mean, dst_mean = src.mean(axis=0), dst.mean(axis=0)
    src_c, dst_c = src - src_mean, dst - dst_mean
    # Similarity as [a -b; b a]: solve the linear least squares in (a, b) directly.
    denom = float((src_c ** 2).sum())
    if denom < 1e-12:
        raise ValueError("landmarks are degenerate (all points coincide)")
    a = float((src_c * dst_c).sum()) / denom
    b = float((src_c[:, 0] * dst_c[:, 1] - src_c[:, 1] * dst_c[:, 0]).sum()) / denom
    linear = np.array([[a, -b], [b, a]])
    translation = dst_mean - linear @ src_mean
    return np.hstack([linear, translation[:, None]])


def invert_affine(matrix: np.ndarray) -> np.ndarray:
    """Inverse of a (2, 3) affine matrix, float64 (2, 3)."""
    return cv2.invertAffineTransform(np.asarray(matrix, dtype=np.float64))


def transform_points(points: np.ndarray, matrix: np.ndarray) -> np.ndarray:
    """Apply a (2, 3) affine matrix to (N, 2) points; returns float64 (N, 2)."""
    pts = np.asarray(points, dtype=np.float64)
    return pts @ matrix[:, :2].T + matrix[:, 2]


def frame_to_crop_matrix(kps5: np.ndarray, template: str, size_px: int) -> np.ndarray:
    """Similarity taking the 5 frame landmarks onto the template scaled to size_px."""
    return estimate_similarity(kps5, template_points(template, size_px))


def to_model_range(pixels: np.ndarray) -> np.ndarray:
    """Frame pixels (uint8, uint16 or float32, any channels) to float32 in 0..255."""
    if pixels.dtype == np.uint8:
        return pixels.astype(np.float32)
    if pixels.dtype == np.uint16:
        return pixels.astype(np.float32) * np.float32(255.0 / 65535.0)
    if np.issubdtype(pixels.dtype, np.floating):
        return pixels.astype(np.float32) * np.float32(255.0)
    raise TypeError(f"unsupported frame dtype {pixels.dtype}; use uint8, uint16 or float32")


class DisplayConversion(Protocol):
    """Converts float32 BGR pixels between a plate's colour space and the models' display space.

    Both methods take and return (H, W, 3) float32 with 1.0 as display white; to_display clips
    to 0..1. facefuse.color.ColourConverter implements it with OpenColorIO.
    """

    def to_display(self, pixels_bgr: np.ndarray) -> np.ndarray: ...

    def from_display(self, pixels_bgr: np.ndarray) -> np.ndarray: ...


def model_pixels(pixels: np.ndarray, colour: DisplayConversion | None = None) -> np.ndarray:
    """Frame pixels (any dtype, 3 channels) to the models' float32 0..255 display range."""
    values = to_model_range(pixels)
    if colour is None:
        return values
    return colour.to_display(values / np.float32(255.0)) * np.float32(255.0)


def to_display_uint8(frame: np.ndarray, colour: DisplayConversion | None = None) -> np.ndarray:
    """BGR uint8 picture of a frame (alpha dropped), for detectors that expect 8-bit pictures."""
    bgr = frame[..., :3]
    if bgr.dtype == np.uint8 and colour is None:
        return np.ascontiguousarray(bgr)
    return np.clip(model_pixels(bgr, colour) + 0.5, 0, 255).astype(np.uint8)


def shrink_to_fit(image: np.ndarray, max_side_px: int) -> tuple[np.ndarray, float]:
    """The image scaled down (area filter) so its long side is at most max_side_px; never up.

    Returns (image, scale) with scale = new size / old size (1.0 when untouched).
    """
    height, width = image.shape[:2]
    scale = min(1.0, max_side_px / max(height, width))
    if scale >= 1.0:
        return image, 1.0
    size = (max(1, round(width * scale)), max(1, round(height * scale)))
    return cv2.resize(image, size, interpolation=cv2.INTER_AREA), scale


def scale_face(face: Face, factor: float | tuple[float, float]) -> Face:
    """A copy of face with box and landmarks multiplied by factor (pixel coordinates); a pair
    scales x and y apart (pictures resized to a rounded size)."""
    fx, fy = factor if isinstance(factor, tuple) else (factor, factor)
    return replace(face, bbox_xyxy=(face.bbox_xyxy * np.array([fx, fy, fx, fy])).astype(np.float32),
                   kps5=(face.kps5 * np.array([fx, fy])).astype(np.float32))


def warp_crop(frame: np.ndarray, kps5: np.ndarray, template: str, size_px: int,
              colour: DisplayConversion | None = None,
              origin_xy: tuple[int, int] = (0, 0)) -> AlignedCrop:
    """Warp the face with landmarks kps5 onto the template.

    frame: (H, W, 3|4) uint8/uint16/float32 BGR(A). Returns an AlignedCrop whose image is
    float32 BGR 0..255 in the models' display space, size_px square. Only the 3 colour channels
    are warped, in the frame's own space; `colour` then converts just the crop.
    origin_xy: the frame pixel where `frame` starts when it is only a region of the frame
    (kps5 and frame_to_crop stay in frame pixels). The crop then samples the pixels a warp of
    the whole frame would (the same inverse matrix, moved by whole pixels, which is exact in
    float64), as long as the region holds the crop's footprint or ends where the frame does:
    bit for bit with OpenCV 4; OpenCV 5 places its samples with less precision far from the
    origin, so a level differs in about 0.2 % of the values.
    """
    matrix = frame_to_crop_matrix(kps5, template, size_px)
    pixels, flags = frame[..., :3], cv2.INTER_LINEAR
    if origin_xy == (0, 0):
        crop = cv2.warpAffine(pixels, matrix, (size_px, size_px), flags=flags,
                              borderMode=cv2.BORDER_REPLICATE)
    else:
        crop_to_region = np.asarray(cv2.invertAffineTransform(matrix), np.float64)
        crop_to_region[:, 2] -= np.asarray(origin_xy, np.float64)  # as warpAffine inverts it
        crop = cv2.warpAffine(pixels, crop_to_region, (size_px, size_px),
                              flags=flags | cv2.WARP_INVERSE_MAP,
                              borderMode=cv2.BORDER_REPLICATE)
    return AlignedCrop(image=model_pixels(crop, colour), frame_to_crop=matrix,
                       template=template, size_px=size_px)
