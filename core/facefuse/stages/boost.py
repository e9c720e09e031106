"""Pixel boost: swap a crop of k times the swapper's size as k*k phase-shifted sub-images.

For a boost size B = k * M (M: the model's crop size), sub-image (a, b) holds the crop pixels
(i * k + a, j * k + b): k*k decimations of the crop, each offset by a fraction of a model pixel.
Each is swapped with the same identity and the results are put back where they came from, so
the swapped crop has B x B pixels of detail from a model that sees M x M. It costs k*k swapper
runs; it is not super-resolution.
"""

from __future__ import annotations

import numpy as np

from ..errors import InputError


def boost_factor(boost_px: int, model_px: int, model_label: str) -> int:
    """k = boost_px / model_px; 0 means no boost (k = 1). InputError unless boost_px is a
    multiple of the model's crop size."""
    if boost_px == 0:
        return 1
    if boost_px < model_px or boost_px % model_px:
        sizes = ", ".join(str(model_px * k) for k in range(1, 5))
        raise InputError(f"pixel boost {boost_px} does not fit {model_label}, whose crops are "
                         f"{model_px} px: use a multiple of {model_px} ({sizes}, ...) or 0")
    return boost_px // model_px


def split_phases(image: np.ndarray, k: int) -> np.ndarray:
    """(B, B, C) -> (k*k, B/k, B/k, C): sub-image a*k + b holds pixels (i*k + a, j*k + b)."""
    size = image.shape[0]
    if image.shape[1] != size or size % k:
        raise ValueError(f"a {image.shape[1]}x{size} crop cannot be split {k} x {k} ways")
    m = size // k
    phases = image.reshape(m, k, m, k, -1).transpose(1, 3, 0, 2, 4)
    return np.ascontiguousarray(phases.reshape(k * k, m, m, -1))


def merge_phases(tiles: np.ndarray, k: int) -> np.ndarray:
    """The inverse of split_phases: (k*k, M, M, C) -> (k*M, k*M, C)."""
    count, m = tiles.shape[0], tiles.shape[1]
    if count != k * k:
        raise ValueError(f"{count} sub-images cannot be merged {k} x {k} ways")
    grid = tiles.reshape(k, k, m, m, -1).transpose(2, 0, 3, 1, 4)
    return np.ascontiguousarray(grid.reshape(m * k, m * k, -1))
