"""Identity-vector arithmetic shared by recognition, selection and tracking. Pure numpy."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def l2_normalise(v: np.ndarray, eps: float = 1e-12,
                 dtype: type[np.floating] = np.float32) -> np.ndarray:
    """Vectors scaled to unit length along the last axis, same shape as v, in `dtype`.

    A zero vector stays zero (divided by eps, not by 0).
    """
    values = np.asarray(v, dtype=np.float64)
    norms = np.linalg.norm(values, axis=-1, keepdims=True)
    return (values / np.maximum(norms, eps)).astype(dtype)


def cosine_similarity(a: np.ndarray, b: np.ndarray) -> float:
    """Cosine of the angle between two (D,) vectors, in [-1, 1]; neither needs to be normalised.

    A zero vector has similarity 0 to everything."""
    a64 = np.asarray(a, dtype=np.float64).reshape(-1)
    b64 = np.asarray(b, dtype=np.float64).reshape(-1)
    if a64.shape != b64.shape:
        raise ValueError(f"cannot compare embeddings of {a64.size} and {b64.size} values")
    denom = max(float(np.linalg.norm(a64) * np.linalg.norm(b64)), 1e-12)
    return float(np.dot(a64, b64) / denom)


def mean_direction(vectors: Sequence[np.ndarray]) -> np.ndarray:
    """The unit vector along the mean of several (D,) vectors (several photos of one person)."""
    return l2_normalise(np.mean(np.stack([np.asarray(v, np.float64) for v in vectors]), axis=0))
