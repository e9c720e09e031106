"""Box geometry of detections: overlap measures and non-maximum suppression.

Boxes are xyxy (x0, y0, x1, y1) in any one pixel space; every measure is float64.
"""

from __future__ import annotations

import numpy as np


def box_iou(box: np.ndarray, others: np.ndarray) -> np.ndarray:
    """Intersection over union of one xyxy box (4,) with boxes (N, 4); returns float64 (N,)."""
    box = np.asarray(box, dtype=np.float64)
    others = np.asarray(others, dtype=np.float64).reshape(-1, 4)
    top_left = np.maximum(box[:2], others[:, :2])
    bottom_right = np.minimum(box[2:], others[:, 2:])
    inter = np.prod(np.clip(bottom_right - top_left, 0.0, None), axis=1)
    area = max(0.0, box[2] - box[0]) * max(0.0, box[3] - box[1])
    areas = np.clip(others[:, 2] - others[:, 0], 0.0, None) * np.clip(
        others[:, 3] - others[:, 1], 0.0, None)
    union = area + areas - inter
    iou: np.ndarray = np.zeros_like(inter)
    np.divide(inter, union, out=iou, where=union > 0)
    return iou


def box_inside_share(box: np.ndarray, others: np.ndarray) -> np.ndarray:
    """Share of each of the boxes `others` (N, 4) that lies inside one xyxy box (4,): the
    intersection over the other box's own area; float64 (N,), 0 for empty boxes."""
    box = np.asarray(box, dtype=np.float64)
    others = np.asarray(others, dtype=np.float64).reshape(-1, 4)
    size = np.clip(np.minimum(box[2:], others[:, 2:]) - np.maximum(box[:2], others[:, :2]), 0.0,
                   None)
    inter = size[:, 0] * size[:, 1]
    areas = np.prod(np.clip(others[:, 2:] - others[:, :2], 0.0, None), axis=1)
    share: np.ndarray = np.zeros_like(inter)
    np.divide(inter, areas, out=share, where=areas > 0)
    return share


def nms(boxes_xyxy: np.ndarray, scores: np.ndarray, iou_threshold: float,
        contained_share: float | None = None) -> np.ndarray:
    """Greedy non-maximum suppression.

    boxes_xyxy: (N, 4) any float dtype, any pixel space; scores: (N,). A box is dropped when its
    IoU with a higher-scoring kept box exceeds iou_threshold or, with contained_share given, when
    at least that share of its own area lies inside a higher-scoring kept box (box_inside_share).
    Returns int64 indices of the kept boxes, highest score first (ties keep the input order).
    """
    order = np.argsort(-np.asarray(scores, dtype=np.float64), kind="stable")
    keep: list[int] = []
    while order.size:
        best, rest = int(order[0]), order[1:]
        keep.append(best)
        drop = box_iou(boxes_xyxy[best], boxes_xyxy[rest]) > iou_threshold
        if contained_share is not None:
            drop |= box_inside_share(boxes_xyxy[best], boxes_xyxy[rest]) >= contained_share
        order = rest[~drop]
    return np.asarray(keep, dtype=np.int64)
