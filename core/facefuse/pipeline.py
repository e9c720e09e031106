"""The Pipeline, the frame API: detect, embed, select and swap the faces of one frame.

Built from one Settings object; owns its ModelLoader (store, sessions, stages) and caches.
A Pipeline is not shared between threads; build one per worker. Two pipelines with different
settings live side by side in one process (nothing here is module-level state).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Self

import numpy as np

from . import geometry
from .cache.embeddings import EmbeddingCache
from .cache.hashes import HashMemo, sha256_bytes
from .cache.layout import CacheLayout
from .config import Settings
from .errors import NoFaceError
from .geometry import DisplayConversion
from .io.images import decode_image, read_image_bytes
from .masks import box_mask, combine_masks, keep_out, landmark_hull_mask, soften_model_mask
from .models.manifest import Manifest
from .paste import crop_footprint, part_slices, paste_into, warp_from_roi
from .runtime.loading import DownloadProgress, ModelLoader
from .runtime.sessions import SessionTimer
from .selection import largest_face, select_faces
from .stages import Swapper
from .stages.boost import boost_factor
from .stages.swap import NEUTRAL_WEIGHT, blend_identity
from .timing import StageClock
from .types import (
    AlignedCrop,
    Face,
    FramePart,
    FrameResult,
    Pasted,
    Roi,
    SourceIdentity,
    enclosing,
)
from .vectors import mean_direction

if TYPE_CHECKING:  # the frame type only: importing io.video loads PyAV
    from .io.video.frame import Frame

log = logging.getLogger(__name__)

BLENDED_LATENTS_KEPT = 64  # targets (tracks, in a render) whose blended latent is kept
MOUTH_REGIONS = ("mouth",)  # the parser's inside of the lips, which the mouth mask keeps


class Pipeline:
    """Detect, select, swap, enhance and paste back faces in frames.

    settings: the one Settings object. manifest: defaults to the shipped one.
    on_download(name, done_bytes, total_bytes): progress of model downloads, if any happen.
    timer: when given, session creation and inference are timed into it (`facefuse bench`).
    """

    def __init__(self, settings: Settings, manifest: Manifest | None = None,
                 on_download: DownloadProgress | None = None,
                 timer: SessionTimer | None = None) -> None:
        self.settings = settings
        self.cache = CacheLayout.at(settings.cache_dir)
        self.hashes = HashMemo(self.cache.hashes)
        self.models = ModelLoader(settings, self.hashes, manifest, on_download, timer)
        self.embedding_cache = EmbeddingCache(self.cache.embeddings)
        self._latents: dict[bytes, np.ndarray] = {}
        self._blended: dict[bytes, np.ndarray] = {}  # latents at a swapper weight, per target
        self._box_masks: dict[int, np.ndarray] = {}
        self._reference: np.ndarray | None = None

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
        key = EmbeddingCache.key(digest, self.models.identity("detector"),
                                 self.models.identity("recogniser"),
                                 self.settings.detector_size_px)
        if self.settings.use_embedding_cache:
            cached = self.embedding_cache.get(key)
            if cached is not None:
                log.info("embedding cache hit for %s", label)
                return cached
        frame = decode_image(data, label)
        face = largest_face(self.detect(frame))
        if face is None:
            raise NoFaceError(f"no face found in {label}; use a photo where the face is visible")
        recogniser = self.models.load("recogniser")
        crop = geometry.warp_crop(frame, face.kps5, *recogniser.family.crop_spec())
        embedding = self.models.embedder().embed(crop)
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
        detector = self.models.detector()
        if frame.dtype == np.uint8 and colour is None:
            return detector.detect(frame)
        small, scale = geometry.shrink_to_fit(frame[..., :3], max(detector.input_size))
        faces = detector.detect(geometry.to_display_uint8(small, colour))
        return tuple(geometry.scale_face(face, 1.0 / scale) for face in faces)

    def embed_faces(self, frame: np.ndarray, faces: Sequence[Face],
                    colour: DisplayConversion | None = None,
                    origin: tuple[int, int] = (0, 0)) -> tuple[Face, ...]:
        """Copies of `faces` carrying their embeddings (one batched recogniser run); `frame`
        holds the frame from pixel `origin` (see swap_faces' part)."""
        if not faces:
            return ()
        spec = self.models.load("recogniser").family.crop_spec()
        return self.embed_crops(faces, [geometry.warp_crop(frame, face.kps5, *spec, colour,
                                                           origin) for face in faces])

    def embed_crops(self, faces: Sequence[Face], crops: Sequence[AlignedCrop]
                    ) -> tuple[Face, ...]:
        """Copies of `faces` carrying the embeddings of their recogniser crops (crops[i] is
        faces[i]'s; one batched run when the recogniser's batch is dynamic)."""
        if not faces:
            return ()
        vectors = self.models.embedder().embed_many(crops)
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
                   clock: StageClock | None = None, *, in_place: bool = False,
                   matte: bool = True, part: FramePart | None = None,
                   identities: Sequence[SourceIdentity] | None = None) -> FrameResult:
        """Swap the given target faces (e.g. tracked, smoothed ones) without detecting again.

        faces: every face seen in the frame, for the result record (default: the targets).
        in_place: paste into `frame` itself (the result's frame is then `frame`), for a caller
        that owns a freshly decoded frame; otherwise `frame` is left unmodified and the result
        is a copy. Either way every crop is cut from the frame as it came in, before any paste,
        so the two give the same pixels. matte: False skips the full-frame float32 matte (the
        result's matte is then None), for callers that write no matte or patch.
        part: `frame` holds only this part of the frame (at least swap_footprint of the
        targets, or reaching the frame's edge where that does); targets, crops and the
        result's `pasted` stay in whole-frame pixels and the matte is the part's. The maths is
        the whole frame's: the same pixels are written (geometry.warp_crop says how exactly).
        identities: one per target, each face's own (a shot plan's people with their own
        sources); None: `identity` for every target.
        """
        clock = clock if clock is not None else StageClock()
        origin = _origin(part)
        own = identities if identities is not None else [identity] * len(targets)
        if len(own) != len(targets):
            raise ValueError(f"{len(own)} identities for {len(targets)} targets")
        cut = [self._cut_face(frame, face, who, clock, colour, origin)
               for face, who in zip(targets, own)]
        with clock.measure("swap"):  # every face's crops in one swapper run where it can
            swaps = self.models.swapper().swap_all([c for c, _ in cut], [lat for _, lat in cut])
        out = frame if in_place else frame.copy()
        union = np.zeros(frame.shape[:2], np.float32) if targets and matte else None
        pasted: list[tuple[Roi, np.ndarray]] = []
        batch_restore = self._restores_together(targets, frame.shape, part)
        for face, (crop, _), swapped_crop in zip(targets, cut, swaps):
            swapped = self._swap_face(out, face, (crop, swapped_crop), union, clock, colour,
                                      part)
            pasted.append(swapped)
            if self.settings.enhancer and not batch_restore:
                with clock.measure("enhance"):
                    pasted.append(self._enhance_face(out, face, colour, swapped, part))
        if batch_restore:
            with clock.measure("enhance"):
                restored = self._enhance_faces(out, targets, colour, pasted, part)
            pasted = [p for pair in zip(pasted, restored) for p in pair]
        seen = tuple(faces) if faces is not None else tuple(targets)
        return FrameResult(out, seen, tuple(targets), union, clock.snapshot(),
                           tuple(Pasted(roi, mask) for roi, mask in pasted if not roi.empty))

    def swap_frame(self, frame: Frame, identity: SourceIdentity, targets: Sequence[Face],
                   colour: DisplayConversion | None = None, *, matte: bool = True,
                   identities: Sequence[SourceIdentity] | None = None) -> FrameResult:
        """swap_faces on a frame as read (io.video.frame), pasting into the frame's own
        pixels: only the part the swap reads and writes, where the frame converts by parts
        (frame.pixels_for; the whole frame when colour-managed), nothing at all without a
        target inside the frame. The conversion is timed as "colour". The result's frame is
        the pixels pasted into and its matte (matte: see swap_faces) the whole frame's; the
        writer takes `frame` itself back with the result's `pasted`. identities: see
        swap_faces."""
        clock = StageClock()
        footprint = self.swap_footprint(targets, frame.width, frame.height)
        if footprint is None:  # no targets (or none inside the frame: swapped, nothing pasted)
            empty = np.zeros((0, 0, frame.shape[2]), frame.dtype)
            return FrameResult(empty, tuple(targets), tuple(targets), None, clock.snapshot())
        with clock.measure("colour"):
            whole = colour is not None
            region = None if whole else frame.pixels_for(footprint)
            pixels = frame.to_ndarray() if region is None else region.pixels
        part = None if region is None or region.whole else region.part
        result = self.swap_faces(pixels, identity, targets, colour, clock=clock, in_place=True,
                                 matte=matte, part=part, identities=identities)
        if part is None or result.matte is None:
            return result
        union = np.zeros((frame.height, frame.width), np.float32)
        union[part.box.slices()] = result.matte
        return replace(result, matte=union)

    def swap_footprint(self, targets: Sequence[Face], width: int, height: int) -> Roi | None:
        """The box of a `width` x `height` frame that swap_faces reads and writes for
        `targets`: the union of every crop it cuts from the frame (the swapper's at its swap
        size, the restorer's with an enhancer, the recogniser's where it embeds a target
        itself), each as paste.crop_roi covers it; None without targets."""
        swapper = self.models.swapper()
        specs = [(swapper.template, self._swap_size_px(swapper))]
        if self.settings.enhancer:
            specs.append(self.models.load("enhancer").family.crop_spec())
        embeds = self.settings.swapper_weight != NEUTRAL_WEIGHT
        own = [self.models.load("recogniser").family.crop_spec()] if embeds else []
        return enclosing(crop_footprint((height, width), face.kps5, template, size_px)
                         for face in targets
                         for template, size_px in specs + (own if face.embedding is None else []))

    def _cut_face(self, frame: np.ndarray, face: Face, identity: SourceIdentity,
                  clock: StageClock, colour: DisplayConversion | None,
                  origin: tuple[int, int]) -> tuple[AlignedCrop, np.ndarray]:
        """The swapper's crop of `face` and the latent to swap it to, from the unpasted frame
        (holding the frame from pixel `origin`)."""
        swapper = self.models.swapper()
        with clock.measure("swap"):
            crop = geometry.warp_crop(frame, face.kps5, swapper.template,
                                      self._swap_size_px(swapper), colour, origin)
            return crop, self._face_latent(frame, face, identity, colour, origin)

    def _swap_face(self, out: np.ndarray, face: Face, cut: tuple[AlignedCrop, np.ndarray],
                   matte: np.ndarray | None, clock: StageClock,
                   colour: DisplayConversion | None,
                   part: FramePart | None) -> tuple[Roi, np.ndarray]:
        """Paste one swapped face into `out`; cut: the target crop and its swapped pixels.
        Returns where it was pasted and the mask used there."""
        crop, swapped = cut
        with clock.measure("mask"):
            masks = self._target_masks(crop)
            masks += self._swapped_masks(replace(crop, image=swapped))
        with clock.measure("paste"):
            kps5_crop = geometry.transform_points(face.kps5, crop.frame_to_crop)
            mask = combine_masks(self._swap_mask(crop.size_px, kps5_crop), *masks)
            roi, roi_mask = paste_into(out, swapped, mask, crop.frame_to_crop, colour, part)
            if matte is not None and not roi.empty:
                rows, cols = part_slices(roi, part)
                np.maximum(matte[rows, cols], roi_mask, out=matte[rows, cols])
        return roi, roi_mask

    def check_options(self) -> None:
        """Refuse, before any frame is written, options that do not fit the chosen models: a
        pixel boost that is not a multiple of the swapper's size, mask regions the parser does
        not know (InputError)."""
        self._swap_size_px(self.models.swapper())
        if self.settings.parser:
            self.models.parser().class_indices(self.settings.mask_regions)

    def _swap_size_px(self, swapper: Swapper) -> int:
        """The crop size swapped: the model's own, or the pixel-boost size (a multiple of it)."""
        label = self.models.locate("swapper").label
        return swapper.size_px * boost_factor(self.settings.pixel_boost, swapper.size_px, label)

    def _target_masks(self, crop: AlignedCrop) -> list[np.ndarray]:
        """Masks found on the target crop before the swap: occlusion, and the mouth to keep."""
        masks = []
        if self.settings.occluder:
            masks.append(soften_model_mask(self.models.occluder().occlude(crop)))
        if self.settings.mouth_mask:
            mouth = self.models.parser().regions(crop, MOUTH_REGIONS)
            masks.append(keep_out(mouth))
        return masks

    def _swapped_masks(self, swapped: AlignedCrop) -> list[np.ndarray]:
        """The region mask, found on the swapped crop (the face the viewer will see)."""
        if not self.settings.parser:
            return []
        regions = self.models.parser().regions(swapped, self.settings.mask_regions)
        return [soften_model_mask(regions)]

    def _face_latent(self, frame: np.ndarray, face: Face, identity: SourceIdentity,
                     colour: DisplayConversion | None,
                     origin: tuple[int, int] = (0, 0)) -> np.ndarray:
        """The identity's latent (cached), or at a swapper weight other than 0.5 the latent of
        the identity blended with this target face's own (see stages.swap.blend_identity); the
        target's embedding is the face's own when it carries one, else computed here."""
        if self.settings.swapper_weight == NEUTRAL_WEIGHT:
            return self._latent(identity)
        target = face.embedding
        if target is None:
            target = self.embed_faces(frame, [face], colour, origin)[0].embedding
        assert target is not None  # embed_faces always sets it
        key = b"".join(np.ascontiguousarray(v, dtype=np.float32).tobytes()
                       for v in (identity.embedding, target))
        if key not in self._blended:  # a render's faces carry their track's one embedding
            if len(self._blended) >= BLENDED_LATENTS_KEPT:
                del self._blended[next(iter(self._blended))]  # the oldest
            blended = blend_identity(identity.embedding, target, self.settings.swapper_weight)
            self._blended[key] = self.models.swapper().latent(blended)
        return self._blended[key]

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

    def _enhance_face(self, out: np.ndarray, face: Face, colour: DisplayConversion | None,
                      swapped: tuple[Roi, np.ndarray],
                      part: FramePart | None = None) -> tuple[Roi, np.ndarray]:
        """Restore the swapped face; returns where it was pasted and the mask used there. With
        occlusion, region or mouth masks the restorer is held to the swap's own mask too, so
        what those masks kept of the target stays the target's."""
        spec = self.models.load("enhancer").family.crop_spec()
        crop = geometry.warp_crop(out, face.kps5, *spec, colour, _origin(part))
        restored = self.models.restorer().enhance(crop)
        return self._paste_restored(out, crop, restored, colour, swapped, part)

    def _restores_together(self, targets: Sequence[Face], shape: tuple[int, ...],
                           part: FramePart | None) -> bool:
        """Whether the restorer takes every face of the frame in one run: it has a free batch
        dimension, and no face's crops reach another's, so cutting each restorer crop after
        all the swaps are pasted reads the pixels the face-by-face order reads."""
        if not self.settings.enhancer or len(targets) < 2:
            return False
        if not self.models.restorer().batch_is_dynamic:
            return False
        whole = (part.height, part.width) if part is not None else shape[:2]
        swapper = self.models.swapper()
        specs = [(swapper.template, self._swap_size_px(swapper)),
                 self.models.load("enhancer").family.crop_spec()]
        boxes = [enclosing(crop_footprint(whole, face.kps5, template, size_px)
                           for template, size_px in specs) for face in targets]
        return all(not _overlap(a, b) for i, a in enumerate(boxes) for b in boxes[i + 1:])

    def _enhance_faces(self, out: np.ndarray, targets: Sequence[Face],
                       colour: DisplayConversion | None,
                       swapped: Sequence[tuple[Roi, np.ndarray]],
                       part: FramePart | None) -> list[tuple[Roi, np.ndarray]]:
        """_enhance_face for every face with one restorer run (see _restores_together)."""
        spec = self.models.load("enhancer").family.crop_spec()
        crops = [geometry.warp_crop(out, face.kps5, *spec, colour, _origin(part))
                 for face in targets]
        restored = self.models.restorer().enhance_all(crops)
        return [self._paste_restored(out, crop, image, colour, pasted, part)
                for crop, image, pasted in zip(crops, restored, swapped)]

    def _paste_restored(self, out: np.ndarray, crop: AlignedCrop, restored: np.ndarray,
                        colour: DisplayConversion | None, swapped: tuple[Roi, np.ndarray],
                        part: FramePart | None) -> tuple[Roi, np.ndarray]:
        mask = self._box_mask(crop.size_px)
        if self._uses_model_masks():
            roi, roi_mask = swapped
            mask = combine_masks(mask, warp_from_roi(roi_mask, crop.frame_to_crop, roi,
                                                     crop.size_px))
        return paste_into(out, restored, mask * np.float32(self.settings.enhancer_blend),
                          crop.frame_to_crop, colour, part)

    def _uses_model_masks(self) -> bool:
        return bool(self.settings.occluder or self.settings.parser or self.settings.mouth_mask)

    def _latent(self, identity: SourceIdentity) -> np.ndarray:
        key = np.ascontiguousarray(identity.embedding, dtype=np.float32).tobytes()
        if key not in self._latents:
            self._latents[key] = self.models.swapper().latent(identity.embedding)
        return self._latents[key]

    # -- lifetime -----------------------------------------------------------------------------
    def close(self) -> None:
        """Free every session; the pipeline can be used again (sessions are re-created)."""
        self._latents.clear()
        self._blended.clear()
        self.models.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


def _origin(part: FramePart | None) -> tuple[int, int]:
    """The frame pixel an array holding `part` starts at ((0, 0): the whole frame)."""
    return part.origin_xy if part is not None else (0, 0)


def _overlap(a: Roi | None, b: Roi | None) -> bool:
    if a is None or b is None:
        return False
    return a.x0 < b.x1 and b.x0 < a.x1 and a.y0 < b.y1 and b.y0 < a.y1


def _with_embedding(face: Face, vector: np.ndarray) -> Face:
    return replace(face, embedding=np.asarray(vector, np.float32))
