"""Where everything facefuse caches lives: one root folder and fixed names under it.

The root is the folder a user names (Settings.cache_dir, `--cache-dir`), else $FACEFUSE_CACHE,
else the user cache folder (platformdirs). Nothing a render caches is written outside the root,
so a farm job given a scratch cache folder keeps to it.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import platformdirs

CACHE_ENV = "FACEFUSE_CACHE"


@dataclass(frozen=True, slots=True)
class CacheLayout:
    """The cache folders under `root`; nothing is created until something is written."""

    root: Path

    @classmethod
    def at(cls, explicit: Path | None = None) -> CacheLayout:
        """explicit, else $FACEFUSE_CACHE, else the user cache folder's `facefuse`."""
        if explicit is not None:
            return cls(Path(explicit))
        env = os.environ.get(CACHE_ENV)
        if env:
            return cls(Path(env))
        return cls(Path(platformdirs.user_cache_dir("facefuse")))

    @property
    def embeddings(self) -> Path:
        """Source-image identity embeddings (cache.embeddings)."""
        return self.root / "embeddings"

    @property
    def analysis(self) -> Path:
        """Per-shot detections (shot.analysis) and the locks chunks wait on."""
        return self.root / "analysis"

    @property
    def previews(self) -> Path:
        """Preview pictures for host UIs (shot.previews)."""
        return self.root / "previews"

    @property
    def hashes(self) -> Path:
        """The remembered sha256 of shot and model files (cache.hashes.HashMemo)."""
        return self.root / "file-hashes.json"

    def parts(self) -> dict[str, Path]:
        """Each cache by name (`facefuse cache info` lists them in this order)."""
        return {"embeddings": self.embeddings, "analysis": self.analysis,
                "previews": self.previews, "hashes": self.hashes}

    def usage(self) -> dict[str, tuple[int, int]]:
        """Name -> (files, bytes) of each cache."""
        return {name: _usage(path) for name, path in self.parts().items()}

    def clear(self) -> int:
        """Delete every cached file (the folders stay); returns how many were removed."""
        removed = 0
        for path in self.parts().values():
            for file in _files(path):
                file.unlink(missing_ok=True)
                removed += 1
        return removed


def _files(path: Path) -> list[Path]:
    if path.is_file():
        return [path]
    return [p for p in path.rglob("*") if p.is_file()] if path.is_dir() else []


def _usage(path: Path) -> tuple[int, int]:
    files = _files(path)
    return len(files), sum(f.stat().st_size for f in files)
