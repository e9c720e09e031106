"""Face recognition: aligned 112 px crop -> L2-normalised identity embedding (ArcFace family).

The recogniser sees an AlignedCrop (float32 BGR 0..255, see facefuse.types) warped onto the family's
template; the family says the colour order and the (x - mean) / std normalisation. Any embedding
size works (production ArcFace: 512; the MobileFaceNet in the test data: 128).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any, Self

import numpy as np
import onnxruntime as ort

from ..config import Settings
from ..geometry import warp_crop
from ..models.manifest import Family
from ..types import AlignedCrop, Face
from ..vectors import cosine_similarity, l2_normalise
from .roles import ModelFile
from .tensors import batch_is_free, check_crop_size, crops_to_nchw, input_dtype

log = logging.getLogger(__name__)

__all__ = ["ArcFaceEmbedder", "cosine_similarity", "l2_normalise"]

class ArcFaceEmbedder:
    """One recogniser session and its family's numbers (template, size, colour, mean, std)."""

    def __init__(self, session: ort.InferenceSession, family: Family) -> None:
        self.session = session
        self.family = family
        node = session.get_inputs()[0]
        log.debug("recogniser input %s %s %s", node.name, node.shape, node.type)

    @classmethod
    def build(cls, session: Any, family: Family, settings: Settings, model: ModelFile) -> Self:
        return cls(session, family)

    @property
    def batch_is_dynamic(self) -> bool:
        """True when the model's first input has a free (named or unknown) batch dimension."""
        return batch_is_free(self.session.get_inputs()[:1])

    def crop(self, frame: np.ndarray, face: Face) -> AlignedCrop:
        """Warp face (frame pixels) onto the family template.

        frame: (H, W, 3|4) BGR(A) uint8/uint16/float32. Returns an AlignedCrop, float32 BGR
        0..255, of the family's input size.
        """
        return warp_crop(frame, face.kps5, *self.family.crop_spec())

    def embed(self, crop: AlignedCrop) -> np.ndarray:
        """Identity embedding of one aligned crop: float32 (D,), L2-normalised."""
        return self._run(crops_to_nchw(crop.image, self.family))[0]

    def embed_many(self, crops: Sequence[AlignedCrop]) -> np.ndarray:
        """Embeddings of several crops, float32 (N, D), rows L2-normalised.

        One batched run when the batch dimension is dynamic, else one run per crop.
        No crops give a (0, 0) array.
        """
        if len(crops) == 0:
            return np.zeros((0, 0), dtype=np.float32)
        if self.batch_is_dynamic:
            images = np.stack([c.image for c in crops])
            return self._run(crops_to_nchw(images, self.family))
        return np.stack([self.embed(c) for c in crops])

    def _run(self, tensor: np.ndarray) -> np.ndarray:
        """Feed an NCHW tensor to the single input; returns (N, D) float32 L2-normalised rows."""
        node = self.session.get_inputs()[0]
        check_crop_size(tensor.transpose(0, 2, 3, 1), self.family)
        output_name = self.session.get_outputs()[0].name
        (output,) = self.session.run([output_name], {node.name: tensor.astype(input_dtype(node))})
        rows = np.asarray(output, dtype=np.float32).reshape(tensor.shape[0], -1)
        return l2_normalise(rows)
