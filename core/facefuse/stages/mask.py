"""Mask models: an occluder (XSeg family) and a face parser (BiSeNet family), in crop space.

Both take an AlignedCrop of any size (float32 BGR 0..255, see facefuse.types), resize it to the
model's input, and return a float32 (S, S) mask in [0, 1] at the crop's own size, before any
softening (facefuse.masks.soften_model_mask does the documented post-processing):
- XsegOccluder.occlude: 1 where the face is visible, 0 where something is in front of it.
  Input NHWC (1, 256, 256, 3), the family's colour order, x / 255; one channel out.
- BisenetParser.regions: 1 where the most likely class is one of the named regions.
  Input NCHW (1, 3, 512, 512), RGB, ImageNet mean / std; 19 class scores out; the region
  names map to class indices through the family's `classes` table (models/manifest.toml).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any, Self

import cv2
import numpy as np
import onnxruntime as ort

from ..config import Settings
from ..errors import InputError
from ..models.manifest import Family
from ..types import AlignedCrop
from .roles import ModelFile
from .tensors import crops_to_nchw, crops_to_nhwc, input_dtype

log = logging.getLogger(__name__)


def resize_crop(image: np.ndarray, size_px: int) -> np.ndarray:
    """A square crop (or mask) resized to size_px: area filter down, linear up."""
    if image.shape[0] == size_px:
        return image
    shrink = image.shape[0] > size_px
    return cv2.resize(image, (size_px, size_px),
                      interpolation=cv2.INTER_AREA if shrink else cv2.INTER_LINEAR)


class _MaskModel:
    """One single-input session whose family fixes a square input size."""

    def __init__(self, session: ort.InferenceSession, family: Family) -> None:
        self.session = session
        self.family = family
        if family.input_size is None:
            raise ValueError(f"family {family.name} has no input size in the manifest")
        self.size_px = family.input_size[0]

    @classmethod
    def build(cls, session: Any, family: Family, settings: Settings, model: ModelFile) -> Self:
        return cls(session, family)

    def _run(self, tensor: np.ndarray) -> np.ndarray:
        node = self.session.get_inputs()[0]
        output_name = self.session.get_outputs()[0].name
        (output,) = self.session.run([output_name], {node.name: tensor.astype(input_dtype(node))})
        return np.asarray(output, dtype=np.float32)


class XsegOccluder(_MaskModel):
    """An XSeg occlusion model: where the target's face is visible in its crop."""

    def occlude(self, crop: AlignedCrop) -> np.ndarray:
        """float32 (S, S) in [0, 1] for a crop of S px: 1 visible face, 0 occluded."""
        tensor = crops_to_nhwc(resize_crop(crop.image, self.size_px), self.family)
        raw = self._run(tensor).reshape(self.size_px, self.size_px)
        return np.clip(resize_crop(raw, crop.image.shape[0]), 0.0, 1.0)


class BisenetParser(_MaskModel):
    """A BiSeNet face parser: which pixels of a crop belong to the chosen face regions."""

    def class_indices(self, regions: Sequence[str]) -> list[int]:
        """The class indices of region names; InputError for a name the family does not map."""
        unknown = [name for name in regions if name not in self.family.classes]
        if unknown:
            known = ", ".join(self.family.classes)
            raise InputError(f"the face parser ({self.family.name}) has no region named "
                             f"{', '.join(unknown)}; it knows {known}")
        return [self.family.classes[name] for name in regions]

    def regions(self, crop: AlignedCrop, regions: Sequence[str]) -> np.ndarray:
        """float32 (S, S) for a crop of S px: 1 where the best class is one of `regions`
        (decided at the model's size, then resized linearly, so edges are soft)."""
        wanted = self.class_indices(regions)
        scores = self._run(crops_to_nchw(resize_crop(crop.image, self.size_px), self.family))
        labels = scores.reshape(scores.shape[-3:]).argmax(axis=0)
        chosen = np.isin(labels, wanted).astype(np.float32)
        return np.clip(resize_crop(chosen, crop.image.shape[0]), 0.0, 1.0)
