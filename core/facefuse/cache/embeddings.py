"""Source-face embeddings on disk, keyed by content: a hit runs no model at all.

Key = sha256 of (image bytes' sha256, detector identity, recogniser identity, detector size).
Model identities are the manifest sha256 for manifest models, and path + size + mtime for user
files. One .npy file per entry; writes are atomic. What a read returns is checked (a finite,
unit-length float vector): a damaged or poisoned entry is a miss, recomputed and replaced, and
a cache folder that cannot be written only costs time.
"""

from __future__ import annotations

import hashlib
import io
import logging
import zipfile
from pathlib import Path

import numpy as np

from ..io.files import atomic_write_bytes

log = logging.getLogger(__name__)

UNIT_NORM_TOLERANCE = 1e-3
UNREADABLE_NPY = (OSError, ValueError, EOFError, zipfile.BadZipFile)
"""What numpy raises for a 0-byte, truncated or otherwise damaged .npy / .npz file."""


def unit_rows_problem(rows: np.ndarray, allow_zero: bool = False) -> str | None:
    """Why `rows` (D,) or (N, D) are not finite, float, L2-normalised embeddings (within
    UNIT_NORM_TOLERANCE), or None when they are. allow_zero: all-zero rows mean "none"."""
    if not np.issubdtype(rows.dtype, np.floating):
        return f"dtype {rows.dtype} is not a float type"
    if rows.ndim not in (1, 2) or rows.shape[-1] == 0:
        return f"shape {rows.shape} is not (D,) or (N, D)"
    if not np.all(np.isfinite(rows)):
        return "it holds NaN or infinite values"
    norms = np.linalg.norm(rows.astype(np.float64), axis=-1).reshape(-1)
    unit = np.abs(norms - 1.0) <= UNIT_NORM_TOLERANCE
    ok = unit | (norms == 0.0) if allow_zero else unit
    if not np.all(ok):
        return "a vector does not have unit length"
    return None


class EmbeddingCache:
    """Embeddings of source images in `directory` (created on first write)."""

    def __init__(self, directory: Path) -> None:
        self.directory = Path(directory)
        self._write_warned = False

    @staticmethod
    def key(image_sha256: str, detector_id: str, recogniser_id: str, detector_size_px: int) -> str:
        text = "\n".join([image_sha256, detector_id, recogniser_id, str(detector_size_px)])
        return hashlib.sha256(text.encode("utf-8")).hexdigest()

    def _path(self, key: str) -> Path:
        return self.directory / f"{key}.npy"

    def get(self, key: str) -> np.ndarray | None:
        """The cached float32 (D,) unit embedding, or None: a missing, damaged (0-byte,
        truncated) or implausible entry (NaN, huge values, wrong shape) is a miss."""
        path = self._path(key)
        if not path.is_file():
            return None
        try:
            vector = np.load(path, allow_pickle=False)
        except UNREADABLE_NPY as exc:
            log.warning("ignoring the damaged embedding cache entry %s (%s); it will be "
                        "computed again", path, exc)
            return None
        problem = unit_rows_problem(vector) if isinstance(vector, np.ndarray) else "not an array"
        if problem is None and vector.ndim != 1:
            problem = f"shape {vector.shape} is not (D,)"
        if problem is not None:
            log.warning("ignoring the embedding cache entry %s: %s; it will be computed again",
                        path, problem)
            return None
        return vector.astype(np.float32)

    def put(self, key: str, embedding: np.ndarray) -> None:
        """Store an embedding; a cache folder that cannot be written is warned about once."""
        buffer = io.BytesIO()
        np.save(buffer, np.asarray(embedding, dtype=np.float32), allow_pickle=False)
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
            atomic_write_bytes(self._path(key), buffer.getvalue())
        except OSError as exc:  # a read-only cache only costs time on the next run
            if not self._write_warned:
                self._write_warned = True
                log.warning("cannot write the embedding cache in %s (%s); going on without it",
                            self.directory, exc.strerror or exc)
