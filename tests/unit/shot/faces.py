"""Synthetic faces for the shot-plan tests: a box and landmarks at x, with an identity."""

from __future__ import annotations

import numpy as np

from facefuse.types import Face


def face_at(x: float, embedding: np.ndarray | None, width: float = 50) -> Face:
    """A frontal face whose box starts at (x, 10), `width` wide and 50 high."""
    box = np.array([x, 10, x + width, 60], np.float32)
    kps = np.array([[x + 15, 25], [x + 35, 25], [x + 25, 35], [x + 17, 48], [x + 33, 48]],
                   np.float32)
    return Face(box, kps, 0.9, embedding)
