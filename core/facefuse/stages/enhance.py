"""Face restoration (GFPGAN 1.4, GPEN-512, CodeFormer): aligned 512 px crop -> restored crop.

The restorers take an AlignedCrop on the ffhq_512 template (float32 BGR 0..255, see
facefuse.types), normalised to [-1, 1] in RGB ((x / 255 - 0.5) / 0.5, i.e. family mean 127.5 and
std 127.5), and return the same range; tensors.nchw_to_crops maps it back to the crop convention.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any, Self

import numpy as np
import onnxruntime as ort

from ..config import Settings
from ..errors import InputError, ModelContractError
from ..models.manifest import Family
from ..types import AlignedCrop
from .roles import ModelFile
from .tensors import batch_is_free, check_crop_size, crops_to_nchw, input_dtype, nchw_to_crops

log = logging.getLogger(__name__)

CODEFORMER_IMAGE_INPUT = "input"
CODEFORMER_WEIGHT_INPUT = "weight"


def codeformer_weight(fidelity: float, node: ort.NodeArg) -> np.ndarray:
    """CodeFormer's `weight` feed: the fidelity as a scalar (declared rank 0) or a (1,) array,
    in the float type the input declares (float64 for the published model)."""
    rank = len(node.shape) if node.shape is not None else 0
    dtype = input_dtype(node)
    return np.full((1,) * rank, fidelity, dtype=dtype) if rank else np.array(fidelity, dtype=dtype)


class FaceRestorer:
    """One single-input restorer session (GFPGAN 1.4, GPEN-512) and its family's numbers."""

    def __init__(self, session: ort.InferenceSession, family: Family) -> None:
        self.session = session
        self.family = family

    @classmethod
    def build(cls, session: Any, family: Family, settings: Settings, model: ModelFile) -> Self:
        return cls(session, family)

    @property
    def batch_is_dynamic(self) -> bool:
        """True when the image input's batch dimension is free (a named or unknown size)."""
        return batch_is_free([self._image_node()])

    def enhance(self, crop: AlignedCrop) -> np.ndarray:
        """Restored crop: float32 BGR 0..255 (S, S, 3). crop: AlignedCrop of the family's size."""
        return self.enhance_all([crop])[0]

    def enhance_all(self, crops: Sequence[AlignedCrop]) -> list[np.ndarray]:
        """enhance() of each crop, in order: one run for all of them when the model's batch
        dimension is free, else one run each. On the CPU provider a batched run gives the
        same bits as runs one by one (tests/stages/test_batching.py)."""
        if not crops:
            return []
        if not self.batch_is_dynamic:
            return [self._restore(crop.image[None])[0] for crop in crops]
        return list(self._restore(np.stack([crop.image for crop in crops])))

    def _restore(self, images: np.ndarray) -> np.ndarray:
        check_crop_size(images, self.family)
        node = self._image_node()
        tensor = crops_to_nchw(images, self.family).astype(input_dtype(node))
        return nchw_to_crops(self._run(self._feeds(tensor)), self.family)

    def _image_node(self) -> ort.NodeArg:
        return self.session.get_inputs()[0]

    def _feeds(self, tensor: np.ndarray) -> dict[str, np.ndarray]:
        """The image tensor on the first input, by its name."""
        return {self._image_node().name: tensor}

    def _run(self, feeds: dict[str, np.ndarray]) -> np.ndarray:
        output_name = self.session.get_outputs()[0].name
        (output,) = self.session.run([output_name], feeds)
        return np.asarray(output)


class CodeFormerRestorer(FaceRestorer):
    """A CodeFormer session: the image plus `weight`, the fidelity in [0, 1]
    (0: strongest restoration, 1: closest to the input face; default 0.5)."""

    def __init__(self, session: ort.InferenceSession, family: Family,
                 fidelity: float = 0.5) -> None:
        if not 0.0 <= fidelity <= 1.0:
            raise InputError(f"CodeFormer fidelity must be within 0..1, not {fidelity}")
        names = {node.name for node in session.get_inputs()}
        if not {CODEFORMER_IMAGE_INPUT, CODEFORMER_WEIGHT_INPUT} <= names:
            raise ModelContractError(
                f"the CodeFormer model's inputs are {sorted(names)}; it must take "
                f"{CODEFORMER_IMAGE_INPUT!r} and {CODEFORMER_WEIGHT_INPUT!r}")
        super().__init__(session, family)
        self.fidelity = float(fidelity)
        log.debug("codeformer fidelity %.3f", self.fidelity)

    @classmethod
    def build(cls, session: Any, family: Family, settings: Settings, model: ModelFile) -> Self:
        """Fidelity from the settings."""
        return cls(session, family, fidelity=settings.codeformer_fidelity)

    def _image_node(self) -> ort.NodeArg:
        return next(node for node in self.session.get_inputs()
                    if node.name == CODEFORMER_IMAGE_INPUT)

    def _feeds(self, tensor: np.ndarray) -> dict[str, np.ndarray]:
        """The image on `input` and the fidelity on `weight`, in its declared type."""
        weight = next(node for node in self.session.get_inputs()
                      if node.name == CODEFORMER_WEIGHT_INPUT)
        return {CODEFORMER_IMAGE_INPUT: tensor,
                CODEFORMER_WEIGHT_INPUT: codeformer_weight(self.fidelity, weight)}
