"""The Pipeline: built from one Settings object; owns the model store, sessions and caches.

A Pipeline is not shared between threads; build one per worker. Two pipelines with different
settings live side by side in one process (nothing here is module-level state).
"""

from __future__ import annotations

import io
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Self, cast

import numpy as np

from . import geometry
from .config import Settings
from .content_hash import HashMemo
from .embedding_cache import EmbeddingCache, default_cache_dir, sha256_bytes
from .errors import NoFaceError
from .geometry import DisplayConversion
from .io.images import atomic_write_bytes, decode_image, read_image_bytes
from .masks import box_mask, combine_masks, landmark_hull_mask
from .models.manifest import Family, Manifest, load_manifest
from .models.store import LocatedModel, ModelStore, default_models_dir, offline_from_env
from .paste import paste_into
from .runtime.sessions import SessionPool, resolve_providers
from .runtime.signature import Signature, pick_family, require
from .selection import largest_face, select_faces
from .stages import FAMILY_CLASSES
from .stages.swap import read_emap
from .timing import StageClock
from .types import Face, FrameResult, SourceIdentity
from .vectors import mean_direction

log = logging.getLogger(__name__)

ProgressCallback = Callable[[str, int, "int | None"], None]


@dataclass(frozen=True, slots=True)
class LoadedModel:
    """A model ready to run: where it came from, its family, and the stage object running it."""

    located: LocatedModel
    family: Family
    stage: Any


class Pipeline:
    """Detect, select, swap, enhance and paste back faces in frames.

    settings: the one Settings object. manifest: defaults to the shipped one.
    on_download(name, done_bytes, total_bytes): progress of model downloads, if any happen.
    """

    def __init__(self, settings: Settings, manifest: Manifest | None = None,
                 on_download: ProgressCallback | None = None) -> None:
        self.settings = settings
        self.manifest = manifest if manifest is not None else load_manifest()
        self.models_dir = default_models_dir(settings.models_dir)
        self.store = ModelStore(self.manifest, self.models_dir,
                                offline=settings.offline or offline_from_env(),
                                on_progress=on_download)
        self.providers = resolve_providers(settings.providers)
        self.sessions = SessionPool(self.providers, cache_dir=self.models_dir)
        self.embedding_cache = EmbeddingCache(default_cache_dir(settings.cache_dir))
        self._hashes = HashMemo(self.embedding_cache.directory.parent / "model-hashes.json")
        self._located: dict[str, LocatedModel] = {}
        self._loaded: dict[str, LoadedModel] = {}
        self._latents: dict[bytes, np.ndarray] = {}
        self._box_masks: dict[int, np.ndarray] = {}
        self._reference: np.ndarray | None = None

    # -- models ---------------------------------------------------------------------------
    def _model_option(self, role: str) -> str:
        option = {"detector": self.settings.detector, "recogniser": self.settings.recogniser,
                  "swapper": self.settings.swapper, "enhancer": self.settings.enhancer}[role]
        if option is None:
            raise ValueError(f"no {role} is configured")
        return option

    def locate(self, role: str) -> LocatedModel:
        """Where the model for `role` is (fetched and verified if needed); no session is made."""
        if role not in self._located:
            self._located[role] = self.store.locate(self._model_option(role), role)
        return self._located[role]

    def model(self, role: str) -> LoadedModel:
        """The loaded model for `role`: session created once, contract checked, stage built."""
        if role not in self._loaded:
            located = self.locate(role)
            session = self.sessions.get(located.path)
            family = self._family_for(role, located, Signature.of_session(session))
            stage = self._build_stage(role, family, session, located.path)
            self._loaded[role] = LoadedModel(located, family, stage)
        return self._loaded[role]

    def _family_for(self, role: str, located: LocatedModel, signature: Signature) -> Family:
        if located.entry is not None:
            family = self.manifest.families[located.entry.family]
            require(signature, family, located.label)
            return family
        return pick_family(signature, self.manifest.families_for_role(role), located.label)

    def _build_stage(self, role: str, family: Family, session: Any, path: Path) -> Any:
        cls = FAMILY_CLASSES[family.class_name]
        s = self.settings
        if family.class_name == "ScrfdDetector":
            size = (s.detector_size_px, s.detector_size_px)
            return cls(session, family, score_threshold=s.detector_score, input_size=size)
        if role == "detector":  # YuNet's input size is fixed by the model
            return cls(session, family, score_threshold=s.detector_score)
        if role == "swapper":
            return cls(session, family, self._emap(path), normalise_latent=s.normalise_latent)
        if family.class_name == "CodeFormerRestorer":
            return cls(session, family, fidelity=s.codeformer_fidelity)
        return cls(session, family)

    def _emap(self, path: Path) -> np.ndarray:
        """The swapper's emap, kept beside the models as .npy by the model's sha256: reading it
        from the ONNX file parses the whole model (555 MB for inswapper_128) in every process."""
        cached = self.models_dir / f"emap-{self.model_sha256('swapper')[:16]}.npy"
        if cached.is_file():
            try:
                return np.load(cached, allow_pickle=False)
            except (OSError, ValueError):
                log.warning("ignoring the damaged emap cache %s", cached)
        emap = read_emap(path)
        buffer = io.BytesIO()
        np.save(buffer, emap, allow_pickle=False)
        try:
            self.models_dir.mkdir(parents=True, exist_ok=True)
            atomic_write_bytes(cached, buffer.getvalue())
        except OSError as exc:  # a read-only models folder only costs time
            log.debug("cannot cache the emap in %s: %s", self.models_dir, exc)
        return emap

    def model_sha256(self, role: str) -> str:
        """The sha256 of the role's model file: from the manifest, or hashed once (remembered by
        size and mtime) for a user's own file."""
        located = self.locate(role)
        if located.entry is not None:
            return located.entry.sha256
        digest = self._hashes.sha256(located.path)
        self._hashes.flush()
        return digest

    def model_identity(self, role: str) -> str:
        """A content identity of the role's model: its label and sha256."""
        return f"{self.locate(role).label}:{self.model_sha256(role)}"

    def models_used(self) -> dict[str, dict[str, str]]:
        """Role -> {model, path, sha256} for the models located so far."""
        return {role: {"model": located.label, "path": str(located.path),
                       "sha256": self.model_sha256(role)}
                for role, located in self._located.items()}

    # -- identities ---------------------------------------------------------------------------
    def source_identity(self, paths: Sequence[Path]) -> SourceIdentity:
        """The identity of one or more source images: the normalised mean of their embeddings.

        Raises NoFaceError naming the first image without a face. Cached per image content.
        """
        embeddings, digests = [], []
        for path in paths:
            data = read_image_bytes(Path(path))
            digest = sha256_bytes(data)
            embeddings.append(self._image_embedding(data, digest, str(path)))
            digests.append(digest)
        return SourceIdentity(mean_direction(embeddings), tuple(digests))

    def _image_embedding(self, data: bytes, digest: str, label: str) -> np.ndarray:
        key = EmbeddingCache.key(digest, self.model_identity("detector"),
                                 self.model_identity("recogniser"), self.settings.detector_size_px)
        if self.settings.use_embedding_cache:
            cached = self.embedding_cache.get(key)
            if cached is not None:
                log.info("embedding cache hit for %s", label)
                return cached
        frame = decode_image(data, label)
        face = largest_face(self.detect(frame))
        if face is None:
            raise NoFaceError(f"no face found in {label}; use a photo where the face is visible")
        embedder = self.model("recogniser").stage
        embedding = embedder.embed(embedder.crop(frame, face))
        if self.settings.use_embedding_cache:
            self.embedding_cache.put(key, embedding)
        return embedding

    def reference_embedding(self) -> np.ndarray | None:
        """The identity to look for with the reference selector (from settings.reference_images)."""
        if self._reference is None and self.settings.reference_images:
            identity = self.source_identity(self.settings.reference_images)
            self._reference = identity.embedding
        return self._reference

    # -- frames -------------------------------------------------------------------------------
    # `colour` converts a plate's colour space to the models' display space and back (see
    # geometry.DisplayConversion); None means the frame is already display-referred.

    def detect(self, frame: np.ndarray, colour: DisplayConversion | None = None
               ) -> tuple[Face, ...]:
        """All faces in a frame (any supported dtype; see types.py), best score first.

        Deep or colour-managed frames are shrunk to the detector's size before conversion, which
        is all the detector sees anyway; the faces are scaled back to frame pixels.
        """
        detector = self.model("detector").stage
        if frame.dtype == np.uint8 and colour is None:
            return cast(tuple[Face, ...], detector.detect(frame))
        small, scale = geometry.shrink_to_fit(frame[..., :3], max(detector.input_size))
        faces = detector.detect(geometry.to_display_uint8(small, colour))
        return tuple(geometry.scale_face(face, 1.0 / scale) for face in faces)

    def embed_faces(self, frame: np.ndarray, faces: Sequence[Face],
                    colour: DisplayConversion | None = None) -> tuple[Face, ...]:
        """Copies of `faces` carrying their embeddings (one batched recogniser run)."""
        if not faces:
            return ()
        recogniser = self.model("recogniser")
        crops = [geometry.warp_crop(frame, face.kps5, *recogniser.family.crop_spec(), colour)
                 for face in faces]
        vectors = recogniser.stage.embed_many(crops)
        return tuple(_with_embedding(face, vector) for face, vector in zip(faces, vectors))

    def select(self, frame: np.ndarray, faces: Sequence[Face],
               colour: DisplayConversion | None = None) -> tuple[Face, ...]:
        """The faces the settings' selector picks for swapping."""
        if self.settings.selector != "reference":
            return select_faces(faces, self.settings.selector)
        return select_faces(self.embed_faces(frame, faces, colour), "reference",
                            self.reference_embedding(), self.settings.similarity)

    def process_frame(self, frame: np.ndarray, identity: SourceIdentity,
                      colour: DisplayConversion | None = None) -> FrameResult:
        """Detect, select and swap the faces of `frame` to `identity` (input left unmodified)."""
        clock = StageClock()
        with clock.measure("detect"):
            faces = self.detect(frame, colour)
        with clock.measure("select"):
            targets = self.select(frame, faces, colour)
        return self.swap_faces(frame, identity, targets, colour, faces=faces, clock=clock)

    def swap_faces(self, frame: np.ndarray, identity: SourceIdentity, targets: Sequence[Face],
                   colour: DisplayConversion | None = None, faces: Sequence[Face] | None = None,
                   clock: StageClock | None = None) -> FrameResult:
        """Swap the given target faces (e.g. tracked, smoothed ones) without detecting again.

        faces: every face seen in the frame, for the result record (default: the targets).
        """
        clock = clock if clock is not None else StageClock()
        out = frame.copy()
        matte = np.zeros(frame.shape[:2], np.float32) if targets else None
        latent = self._latent(identity)
        for face in targets:
            self._swap_face(frame, out, face, latent, matte, clock, colour)
            if self.settings.enhancer:
                with clock.measure("enhance"):
                    self._enhance_face(out, face, colour)
        seen = tuple(faces) if faces is not None else tuple(targets)
        return FrameResult(out, seen, tuple(targets), matte, clock.snapshot())

    def _swap_face(self, frame: np.ndarray, out: np.ndarray, face: Face, latent: np.ndarray,
                   matte: np.ndarray | None, clock: StageClock,
                   colour: DisplayConversion | None) -> None:
        swapper = self.model("swapper")
        with clock.measure("swap"):
            crop = geometry.warp_crop(frame, face.kps5, *swapper.family.crop_spec(), colour)
            swapped = swapper.stage.swap(crop, latent)
        with clock.measure("paste"):
            mask = self._swap_mask(crop.size_px, geometry.transform_points(face.kps5,
                                                                           crop.frame_to_crop))
            roi, roi_mask = paste_into(out, swapped, mask, crop.frame_to_crop, colour)
            if matte is not None and not roi.empty:
                rows, cols = roi.slices()
                np.maximum(matte[rows, cols], roi_mask, out=matte[rows, cols])

    def _swap_mask(self, size_px: int, kps5_crop: np.ndarray) -> np.ndarray:
        mask = self._box_mask(size_px)
        if self.settings.landmark_mask:
            hull = landmark_hull_mask(kps5_crop, size_px, blur=self.settings.mask_blur)
            mask = combine_masks(mask, hull)
        return mask

    def _box_mask(self, size_px: int) -> np.ndarray:
        if size_px not in self._box_masks:
            self._box_masks[size_px] = box_mask(size_px, self.settings.mask_blur,
                                                self.settings.mask_padding)
        return self._box_masks[size_px]

    def _enhance_face(self, out: np.ndarray, face: Face,
                      colour: DisplayConversion | None) -> None:
        enhancer = self.model("enhancer")
        crop = geometry.warp_crop(out, face.kps5, *enhancer.family.crop_spec(), colour)
        restored = enhancer.stage.enhance(crop)
        mask = self._box_mask(crop.size_px) * np.float32(self.settings.enhancer_blend)
        paste_into(out, restored, mask, crop.frame_to_crop, colour)

    def _latent(self, identity: SourceIdentity) -> np.ndarray:
        key = np.ascontiguousarray(identity.embedding, dtype=np.float32).tobytes()
        if key not in self._latents:
            self._latents[key] = self.model("swapper").stage.latent(identity.embedding)
        return self._latents[key]

    # -- lifetime -----------------------------------------------------------------------------
    def close(self) -> None:
        """Free every session; the pipeline can be used again (sessions are re-created)."""
        self._loaded.clear()
        self._latents.clear()
        self.sessions.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


def _with_embedding(face: Face, vector: np.ndarray) -> Face:
    return replace(face, embedding=np.asarray(vector, np.float32))
