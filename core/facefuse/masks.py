"""Soft masks in crop space, float32 (S, S) in [0, 1]. Combined by per-pixel minimum.

The box and landmark-hull masks are drawn here; the occlusion and region masks come from mask
models (facefuse.stages.mask) and get the same post-processing (soften_model_mask).
"""

from __future__ import annotations

import cv2
import numpy as np


def box_mask(size_px: int, blur: float = 0.3,
             padding: tuple[float, float, float, float] = (0.0, 0.0, 0.0, 0.0)) -> np.ndarray:
    """A feathered box covering the crop.

    blur: feather width as a fraction of half the crop (0 gives a hard edge).
    padding: (top, right, bottom, left) fractions of the crop cut away before feathering.
    The border of blur_amount // 2 pixels is zeroed, then a Gaussian of sigma blur_amount / 4
    softens the edge. The blur leaves a few percent on the outermost pixels, which would show as
    a seam where the pasted crop ends, so the result is shifted and rescaled to be exactly 0 on
    the crop border and still 1 in the middle.
    """
    blur_amount = int(size_px * 0.5 * blur)
    border = max(blur_amount // 2, 1)
    top, right, bottom, left = (int(size_px * p) for p in padding)
    mask: np.ndarray = np.ones((size_px, size_px), dtype=np.float32)
    mask[: max(border, top), :] = 0
    mask[size_px - max(border, bottom):, :] = 0
    mask[:, : max(border, left)] = 0
    mask[:, size_px - max(border, right):] = 0
    if blur_amount > 0:
        mask = cv2.GaussianBlur(mask, (0, 0), blur_amount * 0.25)
    return _zero_border(mask)


def _zero_border(mask: np.ndarray) -> np.ndarray:
    ring = np.concatenate([mask[0], mask[-1], mask[:, 0], mask[:, -1]])
    edge = float(ring.max())
    if edge <= 0.0 or edge >= 1.0:
        return mask
    return np.clip((mask - edge) / (1.0 - edge), 0.0, 1.0).astype(np.float32)


def landmark_hull_mask(kps5_crop: np.ndarray, size_px: int, expand: float = 1.6,
                       blur: float = 0.3) -> np.ndarray:
    """The area around the 5 landmarks (crop pixels), grown about their centroid and feathered.

    Five points only span eyes to mouth corners, so the hull is scaled by `expand` and extended
    upwards by the eye-to-mouth distance to take in the brows and forehead.
    """
    pts = np.asarray(kps5_crop, dtype=np.float64)
    centre = pts.mean(axis=0)
    grown = centre + (pts - centre) * expand
    eye_mid, mouth_mid = pts[:2].mean(axis=0), pts[3:].mean(axis=0)
    forehead = grown[:2] + (eye_mid - mouth_mid) * 0.8
    hull = cv2.convexHull(np.vstack([grown, forehead]).astype(np.float32))
    mask: np.ndarray = np.zeros((size_px, size_px), dtype=np.float32)
    cv2.fillConvexPoly(mask, np.round(hull).astype(np.int32), (1.0,), lineType=cv2.LINE_AA)
    blur_px = size_px * 0.5 * blur * 0.25
    if blur_px > 0:
        mask = cv2.GaussianBlur(mask, (0, 0), blur_px)
    return np.clip(mask, 0.0, 1.0)


MODEL_MASK_SIGMA_PX = 5.0


def soften_model_mask(mask: np.ndarray, sigma_px: float = MODEL_MASK_SIGMA_PX) -> np.ndarray:
    """A mask model's output made soft: Gaussian blur (sigma in crop pixels), clipped to
    [0.5, 1], then mapped to [0, 1] ((x - 0.5) * 2). A region comes out the size it was (the
    blur crosses 0.5 on its edge) with a soft inside edge and exact zeros outside."""
    blurred = cv2.GaussianBlur(np.clip(mask, 0.0, 1.0).astype(np.float32), (0, 0), sigma_px)
    return ((np.clip(blurred, 0.5, 1.0) - 0.5) * 2.0).astype(np.float32)


def keep_out(region: np.ndarray) -> np.ndarray:
    """A mask that keeps the target's own pixels in a model's region (e.g. the mouth): the
    complement of the region, softened as soften_model_mask does, so it is exactly 0 over the
    whole region and the soft edge lies outside it."""
    return soften_model_mask(1.0 - np.clip(region, 0.0, 1.0))


def combine_masks(*masks: np.ndarray) -> np.ndarray:
    """Per-pixel minimum of masks of equal shape (a pixel is kept only where all masks keep it)."""
    if not masks:
        raise ValueError("combine_masks needs at least one mask")
    return np.minimum.reduce([np.asarray(m, dtype=np.float32) for m in masks])
