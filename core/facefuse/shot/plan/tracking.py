"""Face tracks across the frames of a shot: association and re-identification.

A Track is one person's faces through a shot (frame numbers ascending, a face per listed frame).
``build_tracks`` links per-frame detections greedily in frame order: in each frame an optimal
one-to-one assignment between live tracks and detections maximises IoU with the track's last
box plus cosine similarity to the track's running mean embedding. Tracks outlive up to
``max_gap`` frames without a detection; after that a face comes back to its track only through
its embedding (re-identification). ``build_shot_tracks`` runs it shot by shot between cuts
(shot.plan.cuts), so no track crosses a cut; shot.plan.people groups the tracks into people and
picks the people to swap for the whole range, so the choice does not flicker from frame to frame as
per-frame selection (selection.py) can.
"""

from __future__ import annotations

import bisect
import functools
import itertools
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace

import numpy as np

from ...errors import InputError
from ...types import Face
from ...vectors import l2_normalise

log = logging.getLogger(__name__)

FrameDetections = Mapping[int, Sequence[Face]] | Sequence[tuple[int, Sequence[Face]]]

# Per-frame assignment is solved exactly while the larger side (tracks or faces) has at most
# this many members (a memoised search over column subsets); greedy by score beyond.
EXACT_ASSIGNMENT_MAX = 8
# fill_short_gaps fills runs of at most this many frames without a face.
MAX_FILLED_FRAMES = 3


@dataclass(frozen=True, slots=True, eq=False)
class Track:
    """One person's faces through a shot.

    track_id: unique within one build_tracks result. frames: strictly ascending frame numbers.
    faces: one Face per frame number (frame pixels).
    """

    track_id: int
    frames: tuple[int, ...]
    faces: tuple[Face, ...]

    def __post_init__(self) -> None:
        if len(self.frames) != len(self.faces):
            raise ValueError(f"track {self.track_id}: {len(self.frames)} frames but "
                             f"{len(self.faces)} faces")
        if any(b <= a for a, b in itertools.pairwise(self.frames)):
            raise ValueError(f"track {self.track_id}: frame numbers must be strictly ascending")

    @property
    def length(self) -> int:
        """Number of frames with a face (gaps not counted)."""
        return len(self.frames)

    @property
    def mean_area_px(self) -> float:
        """Mean box area in square frame pixels (0.0 for an empty track)."""
        return float(np.mean([face.area_px for face in self.faces])) if self.faces else 0.0

    @property
    def mean_embedding(self) -> np.ndarray | None:
        """L2-normalised float32 (D,) mean of the faces' normalised embeddings, or None."""
        return _mean_identity(self.faces)

    def opening_embedding(self, span_frames: int) -> np.ndarray | None:
        """L2-normalised float32 (D,) mean of the normalised embeddings of the faces in the
        track's first span_frames frame numbers (frames[0] to frames[0] + span_frames - 1), or
        None when none of them carries one. Unlike mean_embedding it is known once the
        analysis reaches span_frames past the track's start, however long the track goes on."""
        return _mean_identity([face for frame, face in zip(self.frames, self.faces)
                               if frame < self.frames[0] + span_frames])

    def kps_series(self) -> np.ndarray:
        """The landmarks over the track: float32 (length, 5, 2) frame pixels."""
        return np.stack([face.kps5 for face in self.faces]).astype(np.float32)


def _mean_identity(faces: Sequence[Face]) -> np.ndarray | None:
    """L2-normalised float32 (D,) mean of the faces' normalised embeddings, or None when none
    of them carries one."""
    vectors = [_unit(face.embedding) for face in faces if face.embedding is not None]
    return _unit(np.sum(vectors, axis=0)).astype(np.float32) if vectors else None


def _unit(vector: np.ndarray) -> np.ndarray:
    """float64 (D,) scaled to unit length (a zero vector stays zero)."""
    return l2_normalise(np.ravel(vector), dtype=np.float64)


def box_iou_matrix(boxes_a: np.ndarray, boxes_b: np.ndarray) -> np.ndarray:
    """Pairwise IoU of xyxy boxes: (N, 4) x (M, 4) -> float64 (N, M); empty unions give 0."""
    a = np.asarray(boxes_a, dtype=np.float64).reshape(-1, 1, 4)
    b = np.asarray(boxes_b, dtype=np.float64).reshape(1, -1, 4)
    size = np.clip(np.minimum(a[..., 2:], b[..., 2:]) - np.maximum(a[..., :2], b[..., :2]), 0, None)
    inter = size[..., 0] * size[..., 1]
    area_a = np.prod(np.clip(a[..., 2:] - a[..., :2], 0, None), axis=-1)
    area_b = np.prod(np.clip(b[..., 2:] - b[..., :2], 0, None), axis=-1)
    union = area_a + area_b - inter
    iou = np.zeros_like(inter)
    np.divide(inter, union, out=iou, where=union > 0)
    return iou


# --------------------------------------------------------------------------------------------
# One-to-one assignment.


def assign(score: np.ndarray, allowed: np.ndarray) -> list[tuple[int, int]]:
    """Pairs (row, col) of allowed cells, each row and column at most once, maximising the total
    score (scores of allowed cells must be positive). Exact while max(N, M) <= EXACT_ASSIGNMENT_MAX,
    greedy (best score first) beyond. score: (N, M) float; allowed: (N, M) bool. Deterministic;
    ties go to lower indices. Returns the pairs sorted by row.
    """
    n_rows, n_cols = score.shape
    if n_rows == 0 or n_cols == 0:
        return []
    if n_rows > n_cols:
        return sorted((r, c) for c, r in assign(score.T, allowed.T))
    if n_cols > EXACT_ASSIGNMENT_MAX:
        return _greedy_assign(score, allowed)
    return _exact_assign(score, allowed)


def _exact_assign(score: np.ndarray, allowed: np.ndarray) -> list[tuple[int, int]]:
    """Best assignment by a memoised search over (row, set of used columns); rows <= cols."""
    n_rows, n_cols = score.shape

    @functools.cache
    def best(row: int, used: int) -> tuple[float, tuple[int, ...]]:
        if row == n_rows:
            return 0.0, ()
        total, cols = best(row + 1, used)
        top, top_cols = total, (-1, *cols)  # this row unmatched
        for col in range(n_cols):
            if allowed[row, col] and not (used >> col) & 1:
                total, cols = best(row + 1, used | (1 << col))
                if total + score[row, col] > top + 1e-12:
                    top, top_cols = total + float(score[row, col]), (col, *cols)
        return top, top_cols

    _, picked = best(0, 0)
    return [(row, col) for row, col in enumerate(picked) if col >= 0]


def _greedy_assign(score: np.ndarray, allowed: np.ndarray) -> list[tuple[int, int]]:
    rows, cols = np.nonzero(allowed)
    order = np.argsort(-score[rows, cols], kind="stable")
    taken_rows: set[int] = set()
    taken_cols: set[int] = set()
    pairs = []
    for r, c in zip(rows[order].tolist(), cols[order].tolist()):
        if r not in taken_rows and c not in taken_cols:
            pairs.append((r, c))
            taken_rows.add(r)
            taken_cols.add(c)
    return sorted(pairs)


# --------------------------------------------------------------------------------------------
# Building tracks.


@dataclass(frozen=True, slots=True)
class _Rules:
    iou_threshold: float
    similarity_threshold: float
    veto_similarity: float
    max_gap: int


@dataclass(slots=True)
class _OpenTrack:
    """A track while it is being built (local to one build_tracks call)."""

    track_id: int
    frames: list[int] = field(default_factory=list)
    faces: list[Face] = field(default_factory=list)
    embedding_sum: np.ndarray | None = None

    def add(self, frame: int, face: Face) -> None:
        self.frames.append(frame)
        self.faces.append(face)
        if face.embedding is not None:
            vector = _unit(face.embedding)
            self.embedding_sum = vector if self.embedding_sum is None else (
                self.embedding_sum + vector)

    def freeze(self) -> Track:
        return Track(self.track_id, tuple(self.frames), tuple(self.faces))


def _similarities(tracks: Sequence[_OpenTrack], faces: Sequence[Face]) -> np.ndarray:
    """Cosine similarity (N tracks, M faces) of running means to embeddings; NaN where either
    is missing."""
    sims = np.full((len(tracks), len(faces)), np.nan)
    means = [(i, _unit(t.embedding_sum)) for i, t in enumerate(tracks)
             if t.embedding_sum is not None]
    vectors = [(j, _unit(f.embedding)) for j, f in enumerate(faces) if f.embedding is not None]
    if means and vectors:
        rows, cols = [i for i, _ in means], [j for j, _ in vectors]
        sims[np.ix_(rows, cols)] = np.stack([m for _, m in means]) @ np.stack(
            [v for _, v in vectors]).T
    return sims


def _live_scores(tracks: Sequence[_OpenTrack], faces: Sequence[Face],
                 rules: _Rules) -> tuple[np.ndarray, np.ndarray]:
    """Score = IoU + similarity (clipped to 0..1; 0 when unknown) and which pairs may match:
    IoU >= iou_threshold or similarity >= similarity_threshold, unless both faces carry
    embeddings and their similarity is below veto_similarity (someone else in the same place)."""
    iou = box_iou_matrix(np.stack([t.faces[-1].bbox_xyxy for t in tracks]),
                         np.stack([f.bbox_xyxy for f in faces]))
    sims = _similarities(tracks, faces)
    known = ~np.isnan(sims)
    sim = np.where(known, sims, 0.0)
    allowed = (iou >= rules.iou_threshold) | (known & (sim >= rules.similarity_threshold))
    allowed &= ~(known & (sim < rules.veto_similarity))
    return iou + np.clip(sim, 0.0, 1.0), allowed


def _reid_scores(tracks: Sequence[_OpenTrack], faces: Sequence[Face],
                 rules: _Rules) -> tuple[np.ndarray, np.ndarray]:
    """Ended tracks take a face back only on similarity >= similarity_threshold."""
    sims = _similarities(tracks, faces)
    allowed = ~np.isnan(sims) & (np.nan_to_num(sims, nan=-1.0) >= rules.similarity_threshold)
    return np.nan_to_num(sims, nan=0.0), allowed


def _match(tracks: Sequence[_OpenTrack], faces: Sequence[Face], todo: list[int], frame: int,
           rules: _Rules, reid: bool) -> list[int]:
    """Give faces[todo] to `tracks` (live, or ended when reid); returns the faces left over."""
    if not tracks or not todo:
        return todo
    candidates = [faces[j] for j in todo]
    score, allowed = (_reid_scores if reid else _live_scores)(tracks, candidates, rules)
    taken = set()
    for row, col in assign(score, allowed):
        if reid:
            log.debug("frame %d: track %d re-identified (similarity %.2f)", frame,
                      tracks[row].track_id, score[row, col])
        tracks[row].add(frame, candidates[col])
        taken.add(todo[col])
    return [j for j in todo if j not in taken]


def _frames_in_order(detections: FrameDetections) -> list[tuple[int, tuple[Face, ...]]]:
    items = detections.items() if isinstance(detections, Mapping) else detections
    ordered = sorted(((int(frame), tuple(faces)) for frame, faces in items), key=lambda p: p[0])
    numbers = [frame for frame, _ in ordered]
    if len(set(numbers)) != len(numbers):
        raise ValueError("detections list a frame number more than once")
    return ordered


def _check_rules(rules: _Rules) -> None:
    if not (0.0 < rules.iou_threshold <= 1.0 and rules.similarity_threshold > 0.0
            and rules.max_gap >= 0):
        raise InputError(f"tracking needs 0 < iou_threshold <= 1, similarity_threshold > 0 and "
                         f"max_gap >= 0, not {rules.iou_threshold}, "
                         f"{rules.similarity_threshold} and {rules.max_gap}")
    if rules.veto_similarity > rules.similarity_threshold:
        raise InputError("veto_similarity must not exceed similarity_threshold")


def build_tracks(detections: FrameDetections, iou_threshold: float = 0.3,
                 similarity_threshold: float = 0.5, max_gap: int = 5, *,
                 veto_similarity: float = 0.2) -> tuple[Track, ...]:
    """Link per-frame detections into tracks.

    detections: frame number -> faces (a mapping, or (frame, faces) pairs in any order); faces in
    frame pixels, with or without embeddings. In each frame, live tracks (at most max_gap frame
    numbers since their last face) and faces are paired one-to-one maximising IoU(last box, box)
    + cosine(running mean embedding, embedding); a pair needs IoU >= iou_threshold or similarity
    >= similarity_threshold, and is refused when both embeddings exist and their similarity is
    below veto_similarity. Faces left over may re-join an ended track on similarity >=
    similarity_threshold; the rest start new tracks. Deterministic. Returns the tracks by
    track_id (0, 1, ... in order of first appearance).
    """
    rules = _Rules(iou_threshold, similarity_threshold, veto_similarity, max_gap)
    _check_rules(rules)
    tracks: list[_OpenTrack] = []
    ordered = _frames_in_order(detections)
    for frame, faces in ordered:
        live = [t for t in tracks if frame - t.frames[-1] - 1 <= max_gap]
        ended = [t for t in tracks if frame - t.frames[-1] - 1 > max_gap]
        todo = _match(live, faces, list(range(len(faces))), frame, rules, reid=False)
        todo = _match(ended, faces, todo, frame, rules, reid=True)
        for j in todo:
            tracks.append(_OpenTrack(len(tracks)))
            tracks[-1].add(frame, faces[j])
    log.debug("%d tracks from %d frames", len(tracks), len(ordered))
    return tuple(track.freeze() for track in tracks)


def build_shot_tracks(detections: Mapping[int, Sequence[Face]], cuts: Sequence[int]
                      ) -> tuple[Track, ...]:
    """Tracks built shot by shot: `cuts` (frame numbers that start a new shot, see shot.plan.cuts)
    split the frames, build_tracks runs on each shot alone, so no track crosses a cut. Track
    ids are renumbered 0, 1, ... across the shots in order of first appearance."""
    bounds = sorted({int(c) for c in cuts})
    shots: dict[int, dict[int, Sequence[Face]]] = {}
    for frame, faces in detections.items():
        shots.setdefault(bisect.bisect_right(bounds, int(frame)), {})[int(frame)] = faces
    tracks = [track for index in sorted(shots) for track in build_tracks(shots[index])]
    tracks.sort(key=lambda t: (t.frames[0], t.track_id))
    return tuple(replace(track, track_id=number) for number, track in enumerate(tracks))


def fill_short_gaps(track: Track, max_missing: int = MAX_FILLED_FRAMES) -> Track:
    """A copy of track with frames missing in runs of at most max_missing filled by linear
    interpolation of the neighbouring faces (a face the detector lost for a frame or two would
    otherwise flash back to the original)."""
    frames, faces = list(track.frames), list(track.faces)
    out_frames, out_faces = [frames[0]], [faces[0]]
    for (a, face_a), (b, face_b) in zip(zip(frames, faces), zip(frames[1:], faces[1:])):
        if 1 < b - a <= max_missing + 1:
            for n in range(a + 1, b):
                out_frames.append(n)
                out_faces.append(_interpolate(face_a, face_b, (n - a) / (b - a)))
        out_frames.append(b)
        out_faces.append(face_b)
    return replace(track, frames=tuple(out_frames), faces=tuple(out_faces))


def _interpolate(a: Face, b: Face, t: float) -> Face:
    return replace(a, bbox_xyxy=((1 - t) * a.bbox_xyxy + t * b.bbox_xyxy).astype(np.float32),
                   kps5=((1 - t) * a.kps5 + t * b.kps5).astype(np.float32),
                   score=min(a.score, b.score))
