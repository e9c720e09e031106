"""Paste a processed crop back into the frame: ROI-only inverse warp and a float blend.

Only the smallest frame rectangle that holds the warped crop is read and written; every pixel
outside it, and every pixel inside it where the mask is 0, keeps its exact input value. The blend
runs in float32 at the frame's own scale, so uint16 and float32 frames keep their precision.
"""

from __future__ import annotations

import cv2
import numpy as np

from .geometry import DisplayConversion, frame_to_crop_matrix, invert_affine, transform_points
from .types import FramePart, Roi


def crop_roi(frame_shape: tuple[int, ...], crop_size_px: int, crop_to_frame: np.ndarray) -> Roi:
    """The frame rectangle covering the crop's footprint (one pixel of margin), clipped."""
    s = float(crop_size_px)
    corners = transform_points(np.array([[0, 0], [s, 0], [s, s], [0, s]]), crop_to_frame)
    height, width = frame_shape[:2]
    x0, y0 = np.floor(corners.min(axis=0)).astype(int) - 1
    x1, y1 = np.ceil(corners.max(axis=0)).astype(int) + 1
    return Roi(max(int(x0), 0), max(int(y0), 0), min(int(x1), width), min(int(y1), height))


def crop_footprint(frame_shape: tuple[int, ...], kps5: np.ndarray, template: str,
                   size_px: int) -> Roi:
    """The crop_roi of the `size_px` crop on `template` that landmarks `kps5` cut."""
    matrix = frame_to_crop_matrix(kps5, template, size_px)
    return crop_roi(frame_shape, size_px, invert_affine(matrix))


def frame_scale(dtype: np.dtype) -> float:
    """The multiplier from the 0..255 model range to this frame dtype's range."""
    if dtype == np.uint8:
        return 1.0
    if dtype == np.uint16:
        return 65535.0 / 255.0
    if np.issubdtype(dtype, np.floating):
        return 1.0 / 255.0
    raise TypeError(f"unsupported frame dtype {dtype}; use uint8, uint16 or float32")


def warp_to_roi(image: np.ndarray, crop_to_frame: np.ndarray, roi: Roi) -> np.ndarray:
    """Warp a crop-space image into the ROI (zero outside the crop's footprint)."""
    to_roi = crop_to_frame.copy()
    to_roi[:, 2] -= (roi.x0, roi.y0)
    return cv2.warpAffine(image, to_roi, (roi.x1 - roi.x0, roi.y1 - roi.y0),
                          flags=cv2.INTER_LINEAR, borderMode=cv2.BORDER_CONSTANT,
                          borderValue=(0.0,))


def warp_from_roi(roi_image: np.ndarray, frame_to_crop: np.ndarray, roi: Roi,
                  size_px: int) -> np.ndarray:
    """A frame-space image held over `roi` (e.g. the mask paste_into returned), warped into a
    crop of size_px made with frame_to_crop (zero where the ROI does not reach)."""
    if roi.empty:
        return np.zeros((size_px, size_px), np.float32)
    from_roi = frame_to_crop.copy()
    from_roi[:, 2] += from_roi[:, :2] @ np.array([roi.x0, roi.y0], np.float64)
    return cv2.warpAffine(np.ascontiguousarray(roi_image, np.float32), from_roi,
                          (size_px, size_px), flags=cv2.INTER_LINEAR,
                          borderMode=cv2.BORDER_CONSTANT, borderValue=(0.0,))


def paste_into(frame: np.ndarray, crop_bgr: np.ndarray, mask: np.ndarray,
               frame_to_crop: np.ndarray, colour: DisplayConversion | None = None,
               part: FramePart | None = None) -> tuple[Roi, np.ndarray]:
    """Blend crop_bgr into `frame` IN PLACE under mask; returns (roi, warped mask in the ROI).

    frame: (H, W, 3|4) uint8/uint16/float32; alpha is left untouched.
    crop_bgr: float32 (S, S, 3) in the models' display space, 0..255; `colour` converts it back
    to the frame's colour space (at crop size, before warping). mask: float32 (S, S) in [0, 1].
    frame_to_crop: (2, 3) matrix the crop was made with.
    part: where `frame` lies when it holds only part of the frame (frame_to_crop and the
    returned roi stay in whole-frame pixels; the maths is the whole frame's, so the pixels
    written are the same); ValueError when the roi does not lie inside the part.
    """
    if colour is not None:
        crop_bgr = colour.from_display(crop_bgr / np.float32(255.0)) * np.float32(255.0)
    crop_to_frame = invert_affine(frame_to_crop)
    shape = frame.shape if part is None else (part.height, part.width)
    roi = crop_roi(shape, mask.shape[0], crop_to_frame)
    if roi.empty:
        return roi, np.zeros((0, 0), np.float32)
    rows, cols = part_slices(roi, part)
    roi_mask = warp_to_roi(np.ascontiguousarray(mask, dtype=np.float32), crop_to_frame, roi)
    roi_crop = warp_to_roi(np.ascontiguousarray(crop_bgr, dtype=np.float32), crop_to_frame, roi)
    scale = frame_scale(frame.dtype)
    if scale != 1.0:
        roi_crop *= np.float32(scale)
    _blend_into(frame[rows, cols, :3], roi_crop, roi_mask)
    return roi, roi_mask


def part_slices(roi: Roi, part: FramePart | None) -> tuple[slice, slice]:
    """The slices of `roi` (frame pixels) in an array holding `part` of the frame (None: all)."""
    if part is None:
        return roi.slices()
    box = part.box
    if roi.x0 < box.x0 or roi.y0 < box.y0 or roi.x1 > box.x1 or roi.y1 > box.y1:
        raise ValueError(f"the paste {roi} reaches outside the frame part {box}")
    return slice(roi.y0 - box.y0, roi.y1 - box.y0), slice(roi.x0 - box.x0, roi.x1 - box.x0)


def paste_back(frame: np.ndarray, crop_bgr: np.ndarray, mask: np.ndarray,
               frame_to_crop: np.ndarray, colour: DisplayConversion | None = None) -> np.ndarray:
    """Like paste_into, on a copy: the input frame is never modified."""
    out = frame.copy()
    paste_into(out, crop_bgr, mask, frame_to_crop, colour)
    return out


def _blend_into(region: np.ndarray, crop_scaled: np.ndarray, mask: np.ndarray) -> None:
    """region = round(region * (1 - mask) + crop_scaled * mask) where mask > 0, IN PLACE.

    region: a view into the frame, any supported dtype; crop_scaled: float32 at the frame's
    scale (overwritten); mask: float32 in [0, 1]. The arithmetic runs in float32 only over the
    bounding box of mask > 0, and only pixels under mask > 0 are written, so every other pixel
    keeps its exact input value.
    """
    inside = mask > 0
    rows, cols = np.flatnonzero(inside.any(axis=1)), np.flatnonzero(inside.any(axis=0))
    if rows.size == 0:
        return
    box = slice(int(rows[0]), int(rows[-1]) + 1), slice(int(cols[0]), int(cols[-1]) + 1)
    region, crop_scaled = region[box], crop_scaled[box]
    # The weight repeated per channel: numpy's loops over a broadcast (h, w, 1) operand run
    # three elements at a time, about twice as slow as over equal shapes; each temporary
    # costs page faults, so the weight becomes 1 - weight in place (the same float32 values).
    weight = cv2.merge([mask[box]] * region.shape[2])
    inside = weight > 0
    crop_scaled *= weight
    np.subtract(1.0, weight, out=weight)
    mixed = region.astype(np.float32)
    mixed *= weight
    mixed += crop_scaled
    if np.issubdtype(region.dtype, np.integer):
        info = np.iinfo(region.dtype)
        np.rint(mixed, out=mixed)
        np.clip(mixed, info.min, info.max, out=mixed)
    np.copyto(region, mixed, casting="unsafe", where=inside)
