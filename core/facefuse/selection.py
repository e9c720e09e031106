"""Which detected faces to replace: one (largest), many (all) or reference (similar to a face)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TypeVar

import numpy as np

from .errors import InputError
from .types import Face
from .vectors import cosine_similarity

T = TypeVar("T")


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
        return most_similar(faces, lambda face: face.embedding, reference, threshold)
    raise InputError(f"unknown face selector {mode!r}; use one, many or reference")


def most_similar(items: Sequence[T], embedding_of: Callable[[T], np.ndarray | None],
                 reference: np.ndarray | None, threshold: float) -> tuple[T, ...]:
    """The items (faces, tracks) whose embedding has cosine similarity >= threshold to
    `reference`, most similar first (ties keep the given order). Every item needs an embedding."""
    if reference is None:
        raise InputError("the reference selector needs a reference face (--reference IMAGE)")
    scored = []
    for position, item in enumerate(items):
        embedding = embedding_of(item)
        if embedding is None:
            raise ValueError("reference selection needs an embedding for every face")
        similarity = cosine_similarity(embedding, reference)
        if similarity >= threshold:
            scored.append((-similarity, position, item))
    return tuple(item for *_, item in sorted(scored, key=lambda entry: entry[:2]))
