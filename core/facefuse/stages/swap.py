"""Face swapping (inswapper family): target crop + source identity latent -> swapped crop.

The swapper takes the aligned *target* crop (arcface_128 template, 128 px, float32 BGR 0..255, see
facefuse.types) and a (1, 512) *latent* computed from the source's L2-normalised ArcFace embedding
and the model's "emap" matrix, which inswapper stores as its LAST graph initializer.
"""

from __future__ import annotations

import io
import logging
from pathlib import Path
from typing import Any, Self

import numpy as np
import onnx
import onnxruntime as ort
from onnx import numpy_helper

from ..cache.embeddings import UNREADABLE_NPY
from ..config import Settings
from ..errors import ModelContractError
from ..io.files import atomic_write_bytes
from ..models.manifest import Family
from ..types import AlignedCrop
from ..vectors import l2_normalise
from .roles import ModelFile
from .tensors import check_crop_size, crops_to_nchw, input_dtype, nchw_to_crop

log = logging.getLogger(__name__)

TARGET_INPUT = "target"
SOURCE_INPUT = "source"


def read_emap(model_path: Path | str) -> np.ndarray:
    """The swapper's emap: its last graph initializer, float32 (W, W), W = the source input width.

    Reads the graph with the onnx package (external data, if any, from beside the file); a float16
    emap (the fp16 model twin) is converted to float32. Raises ModelContractError when the model has
    no initializer, no "source" input, or the last initializer is not a W x W matrix.
    """
    path = Path(model_path)
    try:
        model = onnx.load(str(path), load_external_data=False)
    except Exception as exc:  # onnx raises DecodeError / OSError variants
        raise ModelContractError(f"{path.name} cannot be read as an ONNX model: {exc}") from exc
    if not model.graph.initializer:
        raise ModelContractError(f"{path.name} holds no initializers, so it carries no emap "
                                 "matrix; it is not an inswapper-style swapper")
    emap = numpy_helper.to_array(model.graph.initializer[-1], base_dir=str(path.parent))
    width = _source_width(model.graph, path.name)
    if emap.ndim != 2 or emap.shape != (width, width):
        raise ModelContractError(
            f"{path.name}: the last initializer (the emap) has shape {tuple(emap.shape)}, but the "
            f"swapper's source input is {width} wide, so it must be a {width}x{width} matrix")
    log.debug("%s: emap %dx%d (%s) read from the last initializer", path.name, width, width,
              emap.dtype)
    return np.ascontiguousarray(emap, dtype=np.float32)


def cached_emap(model: ModelFile) -> np.ndarray:
    """The swapper's emap, kept in model.derived_dir as .npy by the model's sha256: reading it
    from the ONNX file parses the whole model (555 MB for inswapper_128) in every process.

    A cached copy that is damaged (0-byte, truncated) or implausible (not a square float32
    matrix of finite values) is ignored with a warning, read again from the model and replaced;
    a folder that cannot be written only costs time."""
    cached = model.derived_dir / f"emap-{model.sha256()[:16]}.npy"
    if cached.is_file():
        try:
            loaded = np.load(cached, allow_pickle=False)
        except UNREADABLE_NPY as exc:
            log.warning("ignoring the damaged emap cache %s (%s); reading the emap from %s",
                        cached, exc, model.path.name)
        else:
            problem = _emap_problem(loaded)
            if problem is None:
                return np.ascontiguousarray(loaded)
            log.warning("ignoring the emap cache %s: %s; reading the emap from %s", cached,
                        problem, model.path.name)
    emap = read_emap(model.path)
    buffer = io.BytesIO()
    np.save(buffer, emap, allow_pickle=False)
    try:
        model.derived_dir.mkdir(parents=True, exist_ok=True)
        atomic_write_bytes(cached, buffer.getvalue())
    except OSError as exc:  # a read-only models folder only costs time
        log.warning("cannot cache the swapper's emap in %s (%s); going on without it",
                    model.derived_dir, exc.strerror or exc)
    return emap


def _emap_problem(emap: object) -> str | None:
    """Why a cached emap is not a float32 (W, W) matrix of finite values, or None."""
    if not isinstance(emap, np.ndarray):
        return "it is not an array"
    if emap.dtype != np.float32 or emap.ndim != 2 or emap.shape[0] != emap.shape[1] \
            or emap.shape[0] == 0:
        return f"it is {emap.dtype} {tuple(emap.shape)}, not a float32 square matrix"
    if not np.all(np.isfinite(emap)):
        return "it holds NaN or infinite values"
    return None


def _source_width(graph: onnx.GraphProto, model_name: str) -> int:
    """The fixed last dimension of the graph input named "source"."""
    for value in graph.input:
        if value.name == SOURCE_INPUT:
            dims = value.type.tensor_type.shape.dim
            if dims and dims[-1].HasField("dim_value"):
                return int(dims[-1].dim_value)
    raise ModelContractError(f"{model_name} has no graph input named {SOURCE_INPUT!r} with a fixed "
                             "width; it is not an inswapper-style swapper")


def source_latent(embedding: np.ndarray, emap: np.ndarray, normalise: bool = True) -> np.ndarray:
    """The swapper's source input: float32 (1, W) = l2_normalise(embedding) @ emap.

    embedding: (W,) or (1, W) recogniser output (any scale). emap: float32 (W, W) from read_emap.
    normalise=True then divides the latent by its own norm. That is what InsightFace's reference
    code does, and inswapper was trained with InsightFace's code, so it is our default;
    FaceFusion skips this step (normalise=False reproduces it).
    """
    vector = l2_normalise(np.asarray(embedding, dtype=np.float32).reshape(-1))
    if vector.shape[0] != emap.shape[0]:
        raise ModelContractError(
            f"the source embedding has {vector.shape[0]} values but the swapper's emap takes "
            f"{emap.shape[0]}; use a recogniser with {emap.shape[0]}-d embeddings (ArcFace)")
    latent = vector.astype(np.float64) @ np.asarray(emap, dtype=np.float64)
    if normalise:
        latent = latent / max(float(np.linalg.norm(latent)), 1e-12)
    return latent.reshape(1, -1).astype(np.float32)


class InswapperSwapper:
    """One inswapper session (fp32 or fp16 twin), its family's numbers and its emap matrix."""

    def __init__(self, session: ort.InferenceSession, family: Family, emap: np.ndarray,
                 normalise_latent: bool = True) -> None:
        names = {node.name for node in session.get_inputs()}
        if not {TARGET_INPUT, SOURCE_INPUT} <= names:
            raise ModelContractError(f"the swapper model's inputs are {sorted(names)}; an "
                                     f"inswapper model takes {TARGET_INPUT!r} and {SOURCE_INPUT!r}")
        self.session = session
        self.family = family
        self.emap = emap
        self.normalise_latent = normalise_latent
        log.debug("inswapper inputs: %s; latent normalised: %s",
                  ", ".join(f"{n.name} {n.type}" for n in session.get_inputs()), normalise_latent)

    @classmethod
    def build(cls, session: Any, family: Family, settings: Settings, model: ModelFile) -> Self:
        """The emap from the model file (cached), latent normalisation from the settings."""
        return cls(session, family, cached_emap(model), normalise_latent=settings.normalise_latent)

    def latent(self, embedding: np.ndarray) -> np.ndarray:
        """The (1, W) float32 source latent for a source embedding (see source_latent)."""
        return source_latent(embedding, self.emap, self.normalise_latent)

    def swap(self, crop: AlignedCrop, latent: np.ndarray) -> np.ndarray:
        """The target crop with the source identity: float32 BGR 0..255 (S, S, 3), clipped.

        crop: AlignedCrop of the family's size on its template. latent: (1, W) from latent().
        """
        check_crop_size(crop.image, self.family)
        feeds = self._feeds(crops_to_nchw(crop.image, self.family), latent)
        output_name = self.session.get_outputs()[0].name
        (output,) = self.session.run([output_name], feeds)
        return nchw_to_crop(output, self.family)

    def _feeds(self, target: np.ndarray, latent: np.ndarray) -> dict[str, np.ndarray]:
        """Inputs by name, each cast to the float type the session declares for it."""
        dtypes = {node.name: input_dtype(node) for node in self.session.get_inputs()}
        source = np.asarray(latent, dtype=np.float32).reshape(1, -1)
        return {TARGET_INPUT: target.astype(dtypes[TARGET_INPUT]),
                SOURCE_INPUT: source.astype(dtypes[SOURCE_INPUT])}
