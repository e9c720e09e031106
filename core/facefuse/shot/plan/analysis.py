"""Per-shot analysis (pass 1 of a render): detections with embeddings and a cut-detection
signature for every frame, cached.

The cache key is the input's content hash plus everything that changes detections (detector and
recogniser identities, detector size and threshold, colour space) and the version of what an
entry holds, so a re-render with another swapper, enhancer or mask skips analysis. Cuts,
tracking, grouping into people, shot-level selection and smoothing are cheap and run on every
render from the cached analysis (shot.plan.plan).
"""

from __future__ import annotations

import hashlib
import io
import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ...cache.embeddings import UNREADABLE_NPY, unit_rows_problem
from ...geometry import DisplayConversion
from ...io.files import atomic_write_bytes
from ...pipeline import Pipeline
from ...types import Face
from .cuts import (
    FrameSignature,
    find_cuts,
    frame_signature,
    pack_signatures,
    signatures_problem,
    unpack_signatures,
)

log = logging.getLogger(__name__)

Detections = Mapping[int, tuple[Face, ...]]
DEFAULT_RATE_HZ = 24.0  # image sequences carry no rate; smoothing assumes film rate
# What an analysis cache entry holds and how it was found: each frame's detections, embeddings
# and cut signature, from pictures whose 4:2:x chroma io.video.yuv upsamples; a clip stored
# sideways (display rotation) analysed from its pictures shrunk as stored and turned upright;
# 10-bit planar pictures from a small picture swscale shrinks from their planes, and
# io.video.yuv's regions. Part of the key, so an entry found another way is never read.
ANALYSIS_VERSION = 5


@dataclass(frozen=True, slots=True)
class AnalysisKey:
    """What decides a shot's detections."""

    content_sha256: str
    detector: str
    recogniser: str
    detector_size_px: int
    detector_score: float
    colorspace: str | None
    version: int = ANALYSIS_VERSION

    @property
    def digest(self) -> str:
        text = "\n".join(str(v) for v in (self.content_sha256, self.detector, self.recogniser,
                                          self.detector_size_px, self.detector_score,
                                          self.colorspace))
        text += f"\nanalysis-v{self.version}"
        return hashlib.sha256(text.encode("utf-8")).hexdigest()


@dataclass(frozen=True, slots=True, eq=False)
class ShotAnalysis:
    """What pass 1 knows of a shot: the faces per frame number (frame pixels, with embeddings)
    and the cut-detection signature of every frame that decoded; `failures`: the frames that
    did not decode in this run, each with the reason the input's reader gave (a render fails
    them with that reason; never cached, so such a frame is read again by every run)."""

    faces: Mapping[int, tuple[Face, ...]] = field(default_factory=dict)
    signatures: Mapping[int, FrameSignature] = field(default_factory=dict)
    failures: Mapping[int, str] = field(default_factory=dict)

    def merged(self, newer: ShotAnalysis) -> ShotAnalysis:
        """This analysis with `newer`'s frames added (newer wins where both have a frame)."""
        failures = {n: why for n, why in {**self.failures, **newer.failures}.items()
                    if n not in newer.faces}
        return ShotAnalysis({**self.faces, **newer.faces},
                            {**self.signatures, **newer.signatures}, failures)

    def over(self, frames: Sequence[int]) -> ShotAnalysis:
        """The analysis of `frames` only; a frame not analysed (it failed to decode) has no
        faces and no signature."""
        return ShotAnalysis({n: self.faces.get(n, ()) for n in frames},
                            {n: self.signatures[n] for n in frames if n in self.signatures},
                            {n: self.failures[n] for n in frames if n in self.failures})

    @property
    def cuts(self) -> tuple[int, ...]:
        """The frame numbers that start a new shot (cuts.find_cuts)."""
        return find_cuts(self.signatures)


class AnalysisCache:
    """One .npz per analysis key under `directory`; writes are atomic, readers never see halves."""

    def __init__(self, directory: Path) -> None:
        self.directory = Path(directory)

    def path(self, key: AnalysisKey) -> Path:
        return self.directory / f"{key.digest}.npz"

    def load(self, key: AnalysisKey) -> ShotAnalysis:
        """The cached analysis; empty when nothing is cached, or the entry is damaged (0-byte,
        truncated) or implausible (inconsistent shapes, NaN, embeddings that are not unit
        length, histograms that do not sum to 1): then a warning names the file, and the render
        analyses and replaces it."""
        path = self.path(key)
        if not path.is_file():
            return ShotAnalysis()
        try:
            with np.load(path, allow_pickle=False) as data:
                arrays = {name: data[name] for name in data.files}
        except (*UNREADABLE_NPY, KeyError) as exc:
            log.warning("ignoring the damaged analysis cache %s (%s); the shot will be analysed "
                        "again", path, exc)
            return ShotAnalysis()
        problem = detections_problem(arrays) or signatures_problem(arrays)
        if problem is not None:
            log.warning("ignoring the analysis cache %s: %s; the shot will be analysed again",
                        path, problem)
            return ShotAnalysis()
        return ShotAnalysis(unpack_detections(arrays), unpack_signatures(arrays))

    def save(self, key: AnalysisKey, analysis: ShotAnalysis) -> None:
        buffer = io.BytesIO()
        arrays = {**pack_detections(analysis.faces), **pack_signatures(analysis.signatures)}
        np.savez(buffer, **arrays)  # type: ignore[arg-type]
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
            atomic_write_bytes(self.path(key), buffer.getvalue())
        except OSError as exc:  # a read-only cache only costs time on the next render
            log.warning("cannot write the analysis cache in %s (%s); going on without it",
                        self.directory, exc.strerror or exc)


def pack_detections(detections: Detections) -> dict[str, np.ndarray]:
    """Flatten {frame: faces} into arrays: frames, counts, boxes, kps, scores, embeddings."""
    frames = sorted(detections)
    faces = [face for n in frames for face in detections[n]]
    dim = next((f.embedding.shape[0] for f in faces if f.embedding is not None), 0)
    embeddings = np.zeros((len(faces), dim), np.float32)
    for row, face in enumerate(faces):
        if face.embedding is not None and dim:
            embeddings[row] = face.embedding
    return {
        "frames": np.asarray(frames, np.int64),
        "counts": np.asarray([len(detections[n]) for n in frames], np.int64),
        "boxes": np.asarray([f.bbox_xyxy for f in faces], np.float32).reshape(-1, 4),
        "kps": np.asarray([f.kps5 for f in faces], np.float32).reshape(-1, 5, 2),
        "scores": np.asarray([f.score for f in faces], np.float32),
        "embeddings": embeddings,
    }


DETECTION_ARRAYS = ("frames", "counts", "boxes", "kps", "scores", "embeddings")


def detections_problem(data: Mapping[str, np.ndarray]) -> str | None:
    """Why packed detections cannot be trusted, or None: every array present, shapes consistent
    with each other, finite boxes, landmarks and scores, and embeddings finite and unit length
    (all-zero rows mean "no embedding")."""
    absent = [name for name in DETECTION_ARRAYS if name not in data]
    if absent:
        return f"it lacks {', '.join(absent)}"
    frames, counts = data["frames"], data["counts"]
    boxes, kps, scores, embeddings = data["boxes"], data["kps"], data["scores"], data["embeddings"]
    if not (np.issubdtype(frames.dtype, np.integer) and np.issubdtype(counts.dtype, np.integer)):
        return "frame numbers or counts are not integers"
    if frames.ndim != 1 or counts.shape != frames.shape or np.any(counts < 0):
        return "frame numbers and face counts do not match"
    faces = int(counts.sum())
    shapes = {"boxes": (boxes, (faces, 4)), "kps": (kps, (faces, 5, 2)),
              "scores": (scores, (faces,))}
    for name, (array, shape) in shapes.items():
        if array.shape != shape or not np.issubdtype(array.dtype, np.floating):
            return f"{name} has shape {array.shape} {array.dtype}, expected {shape} float"
        if not np.all(np.isfinite(array)):
            return f"{name} holds NaN or infinite values"
    if embeddings.ndim != 2 or embeddings.shape[0] != faces:
        return f"embeddings have shape {embeddings.shape} for {faces} faces"
    if embeddings.shape[1] and faces:
        return unit_rows_problem(embeddings, allow_zero=True)
    return None


def unpack_detections(data: Mapping[str, np.ndarray]) -> dict[int, tuple[Face, ...]]:
    """The inverse of pack_detections (an all-zero embedding row is a face without one).
    Check untrusted arrays with detections_problem first."""
    result: dict[int, tuple[Face, ...]] = {}
    row = 0
    embeddings = data["embeddings"]
    has_embeddings = embeddings.shape[1] > 0
    for frame, count in zip(data["frames"].tolist(), data["counts"].tolist()):
        result[int(frame)] = tuple(
            Face(data["boxes"][i].copy(), data["kps"][i].copy(), float(data["scores"][i]),
                 embeddings[i].copy() if has_embeddings and np.any(embeddings[i]) else None)
            for i in range(row, row + count))
        row += count
    return result


FrameAnalyser = Callable[[np.ndarray], tuple[Face, ...]]
"""Detect and embed the faces of one decoded frame."""


def analyse_frame(number: int, frame: np.ndarray | object, analyse: FrameAnalyser,
                  colour: DisplayConversion | None = None) -> ShotAnalysis:
    """The detections and cut signature of one decoded frame (colour: the plate-to-display
    conversion detection uses, for the signature); empty for a frame that failed to decode
    (not an array)."""
    if not isinstance(frame, np.ndarray):
        return ShotAnalysis()
    return ShotAnalysis({number: analyse(frame)}, {number: frame_signature(frame, colour)})


def missing_frames(wanted: Sequence[int], cached: Mapping[int, object]) -> tuple[int, ...]:
    return tuple(n for n in wanted if n not in cached)


def analysis_key(pipeline: Pipeline, content_sha256: str, colour_name: str | None) -> AnalysisKey:
    """The analysis cache key of a shot whose content is `content_sha256`, decoded with the
    conversion named `colour_name`, with `pipeline`'s detector, recogniser and detection options
    (its digest names the shot: plan.shot_id_of)."""
    settings = pipeline.settings
    return AnalysisKey(content_sha256, pipeline.models.identity("detector"),
                       pipeline.models.identity("recogniser"), settings.detector_size_px,
                       settings.detector_score, colour_name)
