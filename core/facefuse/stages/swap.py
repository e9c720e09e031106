"""Face swapping: target crop + source identity latent -> swapped crop (one class per family).

Every swapper takes the aligned *target* crop (its family's template at the model's own size,
float32 BGR 0..255, see facefuse.types) on the input "target" and a (1, 512) *latent* on "source",
and returns the swapped crop as its first output. The families differ in the latent and the
normalisation:
- inswapper: latent = the source's L2-normalised ArcFace embedding @ the model's "emap" matrix,
  which inswapper stores as its LAST graph initializer; crop x / 255, output [0, 1].
- hyperswap: latent = the L2-normalised embedding itself; crop and output in [-1, 1].
A crop of k times the model's size is swapped by pixel boost (stages.boost): k*k sub-images.
The sub-images of every face of a frame go through the model together (swap_all) when its
batch dimension is free, else one run each (the published inswapper and HyperSwap files fix
it at 1).
"""

from __future__ import annotations

import io
import logging
from collections.abc import Sequence
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
from .boost import merge_phases, split_phases
from .roles import ModelFile
from .tensors import batch_is_free, crops_to_nchw, input_dtype, nchw_to_crops

log = logging.getLogger(__name__)

TARGET_INPUT = "target"
SOURCE_INPUT = "source"
NEUTRAL_WEIGHT = 0.5  # the swapper weight that leaves the source identity as it is
WEIGHT_SPAN = 0.35  # weight 0 mixes in this much of the target, weight 1 pushes as far away
MAX_BATCH = 32  # crops in one swapper run (a face at pixel boost 1024 on inswapper: 64)


def blend_identity(source: np.ndarray, target: np.ndarray, weight: float) -> np.ndarray:
    """The identity embedding a swapper weight asks for: float32 (D,).

    source' = source * (1 - k) + normalised(target) * k, with k going linearly from 0.35 at
    weight 0 (more of the target's own identity) through 0 at weight 0.5 (the source unchanged)
    to -0.35 at weight 1 (pushed away from the target). source: the identity's (D,) embedding;
    target: the target face's (D,) embedding, any scale.
    """
    if not 0.0 <= weight <= 1.0:
        raise ValueError(f"the swapper weight must be within 0..1, not {weight}")
    k = WEIGHT_SPAN * (1.0 - 2.0 * float(weight))
    source_vector = np.asarray(source, dtype=np.float64).reshape(-1)
    target_vector = l2_normalise(np.asarray(target, dtype=np.float32).reshape(-1))
    if source_vector.shape != target_vector.shape:
        raise ModelContractError(f"the target face's embedding has {target_vector.shape[0]} "
                                 f"values and the source's {source_vector.shape[0]}; both must "
                                 "come from the same recogniser")
    blended = source_vector * (1.0 - k) + target_vector.astype(np.float64) * k
    return blended.astype(np.float32)


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


class CropSwapper:
    """What every swapper family shares: one session, the model's crop size, pixel boost and
    batching. Subclasses say how an identity embedding becomes the model's source input."""

    def __init__(self, session: ort.InferenceSession, family: Family) -> None:
        nodes = {node.name: node for node in session.get_inputs()}
        if not {TARGET_INPUT, SOURCE_INPUT} <= set(nodes):
            raise ModelContractError(f"the swapper model's inputs are {sorted(nodes)}; a "
                                     f"{family.name} model takes {TARGET_INPUT!r} and "
                                     f"{SOURCE_INPUT!r}")
        self.session = session
        self.family = family
        self.size_px = _fixed_size(nodes[TARGET_INPUT].shape, family)
        width = (nodes[SOURCE_INPUT].shape or [None])[-1]
        self.source_width = width if isinstance(width, int) else None
        self.batch_is_dynamic = batch_is_free([nodes[TARGET_INPUT], nodes[SOURCE_INPUT]])
        log.debug("%s swapper: %d px crops, inputs %s, batch %s", family.name, self.size_px,
                  ", ".join(f"{n.name} {n.shape} {n.type}" for n in session.get_inputs()),
                  "free" if self.batch_is_dynamic else "fixed")

    @property
    def template(self) -> str:
        """The warp template the target crop is made on."""
        template, _ = self.family.crop_spec()
        return template

    def latent(self, embedding: np.ndarray) -> np.ndarray:
        """The (1, W) float32 source input for an identity embedding."""
        raise NotImplementedError

    def swap(self, crop: AlignedCrop, latent: np.ndarray) -> np.ndarray:
        """The target crop with the source identity: float32 BGR 0..255 (S, S, 3), clipped.

        crop: AlignedCrop on the family's template, S = k * size_px (k > 1: pixel boost, k*k
        phase-shifted sub-images swapped with the same latent and re-interleaved).
        latent: (1, W) from latent().
        """
        return self.swap_all([crop], [latent])[0]

    def swap_all(self, crops: Sequence[AlignedCrop], latents: Sequence[np.ndarray]
                 ) -> list[np.ndarray]:
        """swap() of every crop with its own latent, in order: the sub-images of all of them
        (k*k each with pixel boost) go through the model together, in runs of up to
        MAX_BATCH when its batch dimension is free, else one run each. On the CPU provider a
        batched run gives the same bits as runs one by one (tests/stages/test_batching.py)."""
        if len(crops) != len(latents):
            raise ValueError(f"{len(latents)} latents for {len(crops)} crops")
        if not crops:
            return []
        factors = [self._boost_factor(crop) for crop in crops]
        tiles = [crop.image[None] if k == 1 else split_phases(crop.image, k)
                 for crop, k in zip(crops, factors)]
        sources = [np.repeat(np.asarray(latent, np.float32).reshape(1, -1), len(t), 0)
                   for latent, t in zip(latents, tiles)]
        out = self.swap_tiles(np.concatenate(tiles), np.concatenate(sources))
        ends = np.cumsum([len(t) for t in tiles])
        return [part[0] if k == 1 else merge_phases(part, k)
                for part, k in zip(np.split(out, ends[:-1]), factors)]

    def _boost_factor(self, crop: AlignedCrop) -> int:
        if crop.image.shape[0] % self.size_px or crop.image.shape[:2] != (crop.size_px,) * 2:
            raise ValueError(f"crop is {crop.image.shape[1]}x{crop.image.shape[0]} px; this "
                             f"{self.family.name} model takes {self.size_px} px crops or "
                             "multiples of that (pixel boost)")
        return int(crop.image.shape[0] // self.size_px)

    def swap_tiles(self, images: np.ndarray, sources: np.ndarray) -> np.ndarray:
        """Swap (N, S, S, 3) crops of the model's size, crop i with source row i of (N, W):
        (N, S, S, 3), in runs of up to MAX_BATCH when the model's batch dimension is free,
        else one run per crop."""
        step = MAX_BATCH if self.batch_is_dynamic else 1
        return np.concatenate([self._run(images[i:i + step], sources[i:i + step])
                               for i in range(0, len(images), step)])

    def _run(self, images: np.ndarray, sources: np.ndarray) -> np.ndarray:
        dtypes = {node.name: input_dtype(node) for node in self.session.get_inputs()}
        feeds = {TARGET_INPUT: crops_to_nchw(images, self.family).astype(dtypes[TARGET_INPUT]),
                 SOURCE_INPUT: np.asarray(sources, np.float32).astype(dtypes[SOURCE_INPUT])}
        output_name = self.session.get_outputs()[0].name
        (output,) = self.session.run([output_name], feeds)
        return nchw_to_crops(output, self.family)


def _fixed_size(shape: Any, family: Family) -> int:
    """The square crop size a target input (1, 3, H, W) fixes, else the family's input size."""
    dims = list(shape or ())[-2:]
    if len(dims) == 2 and all(isinstance(d, int) and d > 0 for d in dims):
        if dims[0] != dims[1]:
            raise ModelContractError(f"the swapper's target input is {dims[1]}x{dims[0]}; "
                                     "swappers take square crops")
        return int(dims[0])
    _, size = family.crop_spec()
    return size


class InswapperSwapper(CropSwapper):
    """One inswapper session (fp32 or fp16 twin, any crop size of its family) and its emap."""

    def __init__(self, session: ort.InferenceSession, family: Family, emap: np.ndarray,
                 normalise_latent: bool = True) -> None:
        super().__init__(session, family)
        self.emap = emap
        self.normalise_latent = normalise_latent
        log.debug("inswapper latent normalised: %s", normalise_latent)

    @classmethod
    def build(cls, session: Any, family: Family, settings: Settings, model: ModelFile) -> Self:
        """The emap from the model file (cached), latent normalisation from the settings."""
        return cls(session, family, cached_emap(model), normalise_latent=settings.normalise_latent)

    def latent(self, embedding: np.ndarray) -> np.ndarray:
        """The (1, W) float32 source latent for a source embedding (see source_latent)."""
        return source_latent(embedding, self.emap, self.normalise_latent)


class HyperswapSwapper(CropSwapper):
    """One HyperSwap session (1a, 1b, 1c): the source input is the normalised embedding."""

    @classmethod
    def build(cls, session: Any, family: Family, settings: Settings, model: ModelFile) -> Self:
        return cls(session, family)

    def latent(self, embedding: np.ndarray) -> np.ndarray:
        """The L2-normalised embedding as float32 (1, W); W must be the source input's width."""
        vector = l2_normalise(np.asarray(embedding, dtype=np.float32).reshape(-1))
        width = self.source_width
        if width is not None and vector.shape[0] != width:
            raise ModelContractError(
                f"the source embedding has {vector.shape[0]} values but the swapper takes "
                f"{width}; use a recogniser with {width}-d embeddings (ArcFace)")
        return vector.reshape(1, -1).astype(np.float32)
