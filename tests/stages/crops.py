"""Aligned crops for the stage tests: random pixels on a given template size."""

from __future__ import annotations

import numpy as np

from facefuse.types import AlignedCrop


def random_crop(size_px: int, seed: int = 0) -> AlignedCrop:
    """A size_px square crop of uniform random float32 pixels 0..255 (arcface_128 template)."""
    image = np.random.default_rng(seed).uniform(0.0, 255.0, (size_px, size_px, 3))
    return AlignedCrop(image.astype(np.float32), np.eye(2, 3), "arcface_128", size_px)
