"""Source-face embeddings on disk, keyed by content: a hit runs no model at all.

Key = sha256 of (image bytes' sha256, detector identity, recogniser identity, detector size).
Model identities are the manifest sha256 for manifest models, and path + size + mtime for user
files. One .npy file per entry; writes are atomic.
"""

from __future__ import annotations

import hashlib
import io
from pathlib import Path

import numpy as np

from ..io.files import atomic_write_bytes


class EmbeddingCache:
    """Embeddings of source images in `directory` (created on first write)."""

    def __init__(self, directory: Path) -> None:
        self.directory = Path(directory)

    @staticmethod
    def key(image_sha256: str, detector_id: str, recogniser_id: str, detector_size_px: int) -> str:
        text = "\n".join([image_sha256, detector_id, recogniser_id, str(detector_size_px)])
        return hashlib.sha256(text.encode("utf-8")).hexdigest()

    def _path(self, key: str) -> Path:
        return self.directory / f"{key}.npy"

    def get(self, key: str) -> np.ndarray | None:
        """The cached float32 (D,) embedding, or None (a damaged entry counts as a miss)."""
        path = self._path(key)
        if not path.is_file():
            return None
        try:
            vector = np.load(path, allow_pickle=False)
        except (OSError, ValueError):
            return None
        return vector.astype(np.float32) if vector.ndim == 1 else None

    def put(self, key: str, embedding: np.ndarray) -> None:
        self.directory.mkdir(parents=True, exist_ok=True)
        buffer = io.BytesIO()
        np.save(buffer, np.asarray(embedding, dtype=np.float32), allow_pickle=False)
        atomic_write_bytes(self._path(key), buffer.getvalue())
