"""Which detected faces to replace: one (largest), many (all) or reference (similar to a face)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from .errors import InputError
from .types import Face
from .vectors import cosine_similarity


def largest_face(faces: Sequence[Face]) -> Face | None:
    """The face with the largest box area, or None when there is none."""
    return max(faces, key=lambda f: f.area_px, default=None)


def select_faces(faces: Sequence[Face], mode: str, reference: np.ndarray | None = None,
                 threshold: float = 0.4) -> tuple[Face, ...]:
    """The faces to swap.

    mode "one": the largest face; "many": all faces, largest first; "reference": the faces whose
    embedding has cosine similarity >= threshold to `reference`, most similar first (each face must
    carry an embedding).
    """
    if mode == "one":
        face = largest_face(faces)
        return (face,) if face is not None else ()
    if mode == "many":
        return tuple(sorted(faces, key=lambda f: f.area_px, reverse=True))
    if mode == "reference":
        return _similar_faces(faces, reference, threshold)
    raise InputError(f"unknown face selector {mode!r}; use one, many or reference")


def _similar_faces(faces: Sequence[Face], reference: np.ndarray | None,
                   threshold: float) -> tuple[Face, ...]:
    if reference is None:
        raise InputError("the reference selector needs a reference face (--reference IMAGE)")
    scored = []
    for face in faces:
        if face.embedding is None:
            raise ValueError("reference selection needs faces with embeddings")
        similarity = cosine_similarity(face.embedding, reference)
        if similarity >= threshold:
            scored.append((similarity, face))
    scored.sort(key=lambda pair: pair[0], reverse=True)
    return tuple(face for _, face in scored)
