"""The Pipeline, the frame API: detect, embed, select and swap the faces of one frame.

Built from one Settings object; owns its ModelLoader (store, sessions, stages) and caches. The
swap of a frame's target faces (cut, swap, mask, paste, restore) is swapping.FaceSwap's.
A Pipeline is not shared between threads (build one per worker), except that swap_frame and
swap_faces may run on several threads at once, as pass 2's swap workers run them
(Settings.swap_workers): its models load once under a lock, each batch-1 model of the swap has
a session per worker, and the swap's caches lock themselves (swapping.FaceSwap). Two pipelines
with different settings live side by side in one process (nothing here is module-level state).
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
from .models.manifest import Manifest
from .runtime.loading import DownloadProgress, ModelLoader
from .runtime.sessions import SessionTimer
from .selection import largest_face, select_faces
from .swapping import FaceSwap, embed_crops, embed_faces
from .timing import StageClock
from .types import AlignedCrop, Face, FramePart, FrameResult, Roi, SourceIdentity
from .vectors import mean_direction

if TYPE_CHECKING:  # the frame type only: importing io.video loads PyAV
    from .io.video.frame import Frame

log = logging.getLogger(__name__)


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
        self._swapping = FaceSwap(settings, self.models)
        self._reference: np.ndarray | None = None

    # -- identities ---------------------------------------------------------------------------
    def source_identity(self, paths: Sequence[Path]) -> SourceIdentity:
        """The identity of one or more source images: the normalised mean of their embeddings.

        Each image's embedding is its largest face's (a picture with several faces gets a
        warning naming the one used, on every use). Raises NoFaceError naming the first image
        without a face. Cached per image content (a picture of one face).
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
        faces = self.detect(frame)
        face = largest_face(faces)
        if face is None:
            raise NoFaceError(f"no face found in {label}; use a photo where the face is visible")
        recogniser = self.models.load("recogniser")
        crop = geometry.warp_crop(frame, face.kps5, *recogniser.family.crop_spec())
        embedding = self.models.embedder().embed(crop)
        if len(faces) > 1:  # not cached, so every run that uses the picture says it
            x1, y1, x2, y2 = (round(float(v)) for v in face.bbox_xyxy)
            log.warning("%s shows %d faces; the largest is used (box %d,%d-%d,%d px); crop the "
                        "picture to one face to use another", label, len(faces), x1, y1, x2, y2)
        elif self.settings.use_embedding_cache:
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
        return embed_faces(self.models, frame, faces, colour, origin)

    def embed_crops(self, faces: Sequence[Face], crops: Sequence[AlignedCrop]
                    ) -> tuple[Face, ...]:
        """Copies of `faces` carrying the embeddings of their recogniser crops (crops[i] is
        faces[i]'s; one batched run when the recogniser's batch is dynamic)."""
        return embed_crops(self.models, faces, crops)

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
        return self._swapping.swap(frame, identity, targets, colour, faces, clock,
                                   in_place=in_place, matte=matte, part=part,
                                   identities=identities)

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
        return self._swapping.footprint(targets, width, height)

    def check_options(self) -> None:
        """Refuse, before any frame is written, options that do not fit the chosen models: a
        pixel boost that is not a multiple of the swapper's size, mask regions the parser does
        not know (InputError)."""
        self._swapping.swap_size_px(self.models.swapper())
        if self.settings.parser:
            self.models.parser().class_indices(self.settings.mask_regions)

    # -- lifetime -----------------------------------------------------------------------------
    def close(self) -> None:
        """Free every session; the pipeline can be used again (sessions are re-created)."""
        self._swapping.clear()
        self.models.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()
