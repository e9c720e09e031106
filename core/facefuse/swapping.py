"""The swap of one frame's target faces, which the Pipeline delegates (Pipeline.swap_faces).

Each face's crop is cut from the frame as it came in and given the latent of its identity
(blended with the face's own at a swapper weight other than 0.5); every crop is swapped in one
swapper run where it can, then masked (box, landmark hull, occlusion, regions, mouth) and
pasted back, and with an enhancer restored (every face in one restorer run where their crops
never meet). The latents and box masks are kept across frames, under a lock: pass 2's swap
workers swap several frames at once with one FaceSwap, and each cached value depends on its key
alone (an identity, a target's embedding, a crop size), so the frames' pixels do not depend on
the order the workers reach them.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import replace

import numpy as np

from . import geometry
from .config import Settings
from .geometry import DisplayConversion
from .masks import box_mask, combine_masks, keep_out, landmark_hull_mask, soften_model_mask
from .paste import crop_footprint, part_slices, paste_into, warp_from_roi
from .runtime.loading import ModelLoader
from .stages import Swapper
from .stages.boost import boost_factor
from .stages.swap import NEUTRAL_WEIGHT, blend_identity
from .timing import StageClock
from .types import AlignedCrop, Face, FramePart, FrameResult, Pasted, Roi, SourceIdentity, enclosing

BLENDED_LATENTS_KEPT = 64  # targets (tracks, in a render) whose blended latent is kept
MOUTH_REGIONS = ("mouth",)  # the parser's inside of the lips, which the mouth mask keeps



def embed_faces(models: ModelLoader, frame: np.ndarray, faces: Sequence[Face],
                colour: DisplayConversion | None = None,
                origin: tuple[int, int] = (0, 0)) -> tuple[Face, ...]:
    """Pipeline.embed_faces with `models`: copies of `faces` carrying their embeddings."""
    if not faces:
        return ()
    spec = models.load("recogniser").family.crop_spec()
    return embed_crops(models, faces, [geometry.warp_crop(frame, face.kps5, *spec, colour,
                                                          origin) for face in faces])


def embed_crops(models: ModelLoader, faces: Sequence[Face], crops: Sequence[AlignedCrop]
                ) -> tuple[Face, ...]:
    """Pipeline.embed_crops with `models`."""
    if not faces:
        return ()
    vectors = models.embedder().embed_many(crops)
    return tuple(replace(face, embedding=np.asarray(vector, np.float32))
                 for face, vector in zip(faces, vectors))


class FaceSwap:
    """Swaps, masks, pastes and restores the target faces of frames (see the module docstring)
    with `models` as `settings` say."""

    def __init__(self, settings: Settings, models: ModelLoader) -> None:
        self.settings, self.models = settings, models
        self._latents: dict[bytes, np.ndarray] = {}
        self._blended: dict[bytes, np.ndarray] = {}  # latents at a swapper weight, per target
        self._box_masks: dict[int, np.ndarray] = {}
        self._kept = threading.Lock()  # guards the three caches above (module docstring)

    def swap(self, frame: np.ndarray, identity: SourceIdentity, targets: Sequence[Face],
             colour: DisplayConversion | None = None, faces: Sequence[Face] | None = None,
             clock: StageClock | None = None, *, in_place: bool = False,
             matte: bool = True, part: FramePart | None = None,
             identities: Sequence[SourceIdentity] | None = None) -> FrameResult:
        """Pipeline.swap_faces, which says what each argument means."""
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

    def footprint(self, targets: Sequence[Face], width: int, height: int) -> Roi | None:
        """Pipeline.swap_footprint: the box of the frame `swap` reads and writes for `targets`
        (every crop it cuts), None without targets."""
        swapper = self.models.swapper()
        specs = [(swapper.template, self.swap_size_px(swapper))]
        if self.settings.enhancer:
            specs.append(self.models.load("enhancer").family.crop_spec())
        embeds = self.settings.swapper_weight != NEUTRAL_WEIGHT
        own = [self.models.load("recogniser").family.crop_spec()] if embeds else []
        return enclosing(crop_footprint((height, width), face.kps5, template, size_px)
                         for face in targets
                         for template, size_px in specs + (own if face.embedding is None else []))

    def swap_size_px(self, swapper: Swapper) -> int:
        """The crop size swapped: the model's own, or the pixel-boost size (a multiple of it)."""
        label = self.models.locate("swapper").label
        return swapper.size_px * boost_factor(self.settings.pixel_boost, swapper.size_px, label)

    def clear(self) -> None:
        """Forget the identities' latents (the box masks stay: they depend on settings only)."""
        with self._kept:
            self._latents.clear()
            self._blended.clear()

    def _cut_face(self, frame: np.ndarray, face: Face, identity: SourceIdentity,
                  clock: StageClock, colour: DisplayConversion | None,
                  origin: tuple[int, int]) -> tuple[AlignedCrop, np.ndarray]:
        """The swapper's crop of `face` and the latent to swap it to, from the unpasted frame
        (holding the frame from pixel `origin`)."""
        swapper = self.models.swapper()
        with clock.measure("swap"):
            crop = geometry.warp_crop(frame, face.kps5, swapper.template,
                                      self.swap_size_px(swapper), colour, origin)
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
            target = embed_faces(self.models, frame, [face], colour, origin)[0].embedding
        assert target is not None  # embed_faces always sets it
        key = b"".join(np.ascontiguousarray(v, dtype=np.float32).tobytes()
                       for v in (identity.embedding, target))
        swapper = self.models.swapper()
        with self._kept:
            if key not in self._blended:  # a render's faces carry their track's one embedding
                if len(self._blended) >= BLENDED_LATENTS_KEPT:
                    del self._blended[next(iter(self._blended))]  # the oldest
                blended = blend_identity(identity.embedding, target,
                                         self.settings.swapper_weight)
                self._blended[key] = swapper.latent(blended)
            return self._blended[key]

    def _latent(self, identity: SourceIdentity) -> np.ndarray:
        key = np.ascontiguousarray(identity.embedding, dtype=np.float32).tobytes()
        swapper = self.models.swapper()
        with self._kept:
            if key not in self._latents:
                self._latents[key] = swapper.latent(identity.embedding)
            return self._latents[key]

    def _swap_mask(self, size_px: int, kps5_crop: np.ndarray) -> np.ndarray:
        mask = self._box_mask(size_px)
        if self.settings.landmark_mask:
            hull = landmark_hull_mask(kps5_crop, size_px, blur=self.settings.mask_blur)
            mask = combine_masks(mask, hull)
        return mask

    def _box_mask(self, size_px: int) -> np.ndarray:
        with self._kept:
            if size_px not in self._box_masks:
                self._box_masks[size_px] = box_mask(size_px, self.settings.mask_blur,
                                                    self.settings.mask_padding)
            return self._box_masks[size_px]

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
        specs = [(swapper.template, self.swap_size_px(swapper)),
                 self.models.load("enhancer").family.crop_spec()]
        boxes = [enclosing(crop_footprint(whole, face.kps5, template, size_px)
                           for template, size_px in specs) for face in targets]
        return all(not _overlap(a, b) for i, a in enumerate(boxes) for b in boxes[i + 1:])

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


def _origin(part: FramePart | None) -> tuple[int, int]:
    """The frame pixel an array holding `part` starts at ((0, 0): the whole frame)."""
    return part.origin_xy if part is not None else (0, 0)


def _overlap(a: Roi | None, b: Roi | None) -> bool:
    if a is None or b is None:
        return False
    return a.x0 < b.x1 and b.x0 < a.x1 and a.y0 < b.y1 and b.y0 < a.y1
