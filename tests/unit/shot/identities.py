"""Synthetic identities for the tracking and people tests: distinct people have orthogonal
unit embeddings (a fixed random orthonormal basis), and each sighting of one is that identity
plus a little noise (similarity about 0.9)."""

from __future__ import annotations

import numpy as np

DIM = 16


def identity(index: int) -> np.ndarray:
    """Person `index`'s unit embedding, float32 (DIM,)."""
    basis, _ = np.linalg.qr(np.random.default_rng(0).normal(size=(DIM, DIM)))
    return basis[:, index].astype(np.float32)


def seen(person: np.ndarray, frame: int, noise: float = 0.3) -> np.ndarray:
    """One frame's embedding of an identity (deterministic per identity and frame)."""
    rng = np.random.default_rng(1000 + frame * 7 + int(abs(person[0]) * 1e6) % 1000)
    vector = person + noise * rng.normal(size=DIM) / np.sqrt(DIM)
    return (vector / np.linalg.norm(vector)).astype(np.float32)
