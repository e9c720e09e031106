"""The stage roles as typing Protocols, and how a stage class builds itself.

Every stage class (one per model family, see FAMILY_CLASSES) has a `build` classmethod taking
the session, the manifest family, the Settings and the model file, and picks from the settings
what it needs, so the code that loads models never branches on class names.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, Self

import numpy as np

from ..config import Settings
from ..models.manifest import Family
from ..types import AlignedCrop, Face


@dataclass(frozen=True, slots=True)
class ModelFile:
    """The file a stage's session was made from.

    derived_dir: where data derived from the model may be kept (e.g. the swapper's emap).
    sha256: returns the file's content hash (computed on first use for a user's own file)."""

    path: Path
    derived_dir: Path
    sha256: Callable[[], str]


class Stage(Protocol):
    """What every stage class offers the model loader."""

    @classmethod
    def build(cls, session: Any, family: Family, settings: Settings, model: ModelFile) -> Self:
        ...


class Detector(Protocol):
    @property
    def input_size(self) -> tuple[int, int]:
        """Detector input (width, height) in pixels."""
        ...

    def detect(self, frame: np.ndarray) -> tuple[Face, ...]:
        """Faces in a BGR(A) uint8 frame, in frame pixels, best score first."""
        ...


class Embedder(Protocol):
    def embed(self, crop: AlignedCrop) -> np.ndarray:
        """float32 (D,) L2-normalised identity embedding of one aligned crop."""
        ...

    def embed_many(self, crops: Sequence[AlignedCrop]) -> np.ndarray:
        """float32 (N, D) embeddings, rows L2-normalised."""
        ...


class Swapper(Protocol):
    @property
    def template(self) -> str:
        """The warp template of the target crop."""
        ...

    @property
    def size_px(self) -> int:
        """The model's own crop size; crops of a multiple of it are swapped by pixel boost."""
        ...

    def latent(self, embedding: np.ndarray) -> np.ndarray:
        """The source input the model takes for an identity embedding."""
        ...

    def swap(self, crop: AlignedCrop, latent: np.ndarray) -> np.ndarray:
        """The crop with the source identity: float32 BGR 0..255 (S, S, 3)."""
        ...

    def swap_all(self, crops: Sequence[AlignedCrop], latents: Sequence[np.ndarray]
                 ) -> list[np.ndarray]:
        """swap() of each crop with its latent, batched where the model allows."""
        ...


class Restorer(Protocol):
    def enhance(self, crop: AlignedCrop) -> np.ndarray:
        """The restored crop: float32 BGR 0..255 (S, S, 3)."""
        ...

    @property
    def batch_is_dynamic(self) -> bool:
        """True when enhance_all runs its crops through the model together."""
        ...

    def enhance_all(self, crops: Sequence[AlignedCrop]) -> list[np.ndarray]:
        """enhance() of each crop, in one run where the model's batch dimension is free."""
        ...


class Occluder(Protocol):
    def occlude(self, crop: AlignedCrop) -> np.ndarray:
        """float32 (S, S) in [0, 1]: 1 where the face in the crop is visible, 0 occluded."""
        ...


class Parser(Protocol):
    def class_indices(self, regions: Sequence[str]) -> list[int]:
        """The model's class indices of region names (InputError for one it does not map)."""
        ...

    def regions(self, crop: AlignedCrop, regions: Sequence[str]) -> np.ndarray:
        """float32 (S, S) in [0, 1]: 1 where the crop shows one of the named face regions."""
        ...
