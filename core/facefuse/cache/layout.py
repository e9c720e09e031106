"""Where everything facefuse caches lives: one root folder and fixed names under it.

The root is the folder a user names (Settings.cache_dir, `--cache-dir`), else $FACEFUSE_CACHE,
else the user cache folder (platformdirs). Nothing a render caches is written outside the root,
so a farm job given a scratch cache folder keeps to it.

`clear` removes only what facefuse writes there: each part's own names (CACHED_NAMES: hex
digests with the part's format), the temporaries of those names, the locks of those digests and
the scratch folders (io.files.scratch_folder: a killed preview's) whose writer is gone. It never
follows a symlink (a linked part or file is left, so nothing
outside the root is touched), never enters a subfolder, and leaves live locks and anything else;
what it left is counted and named (Cleared.describe).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType

import platformdirs

from ..io import files
from .locking import LockOwner, owner_is_gone

CACHE_ENV = "FACEFUSE_CACHE"
# The files facefuse writes in each cache part (cache.embeddings, shot.plan.analysis,
# shot.looks.previews, cache.hashes), by name.
CACHED_NAMES = MappingProxyType({
    "embeddings": re.compile(r"[0-9a-f]{64}\.npy"),
    "analysis": re.compile(r"[0-9a-f]{64}\.npz"),
    "previews": re.compile(r"(?:(?:source|reference|preview|faces|frame)-[0-9a-f]{16}"
                           r"|face-[0-9a-f]{16}-\d+)\.png"),
    "hashes": re.compile(r"file-hashes\.json"),
})

_LOCK = re.compile(r"[0-9a-f]{64}\.lock")


@dataclass(frozen=True, slots=True)
class Cleared:
    """What `CacheLayout.clear` did: how many files it removed, and what it left (paths)."""

    root: Path
    removed: int
    left: tuple[Path, ...]

    def describe(self) -> str:
        """One sentence for the user."""
        text = f"removed {self.removed} cached files from {self.root}"
        if not self.left:
            return text
        shown = ", ".join(str(p) for p in self.left[:3])
        more = f" and {len(self.left) - 3} more" if len(self.left) > 3 else ""
        return (f"{text}; left {len(self.left)} entries facefuse did not write there or that "
                f"are links or in use: {shown}{more}")


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
        """Per-shot detections (shot.plan.analysis) and the locks chunks wait on."""
        return self.root / "analysis"

    @property
    def previews(self) -> Path:
        """Preview pictures for host UIs (shot.looks.previews)."""
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

    def clear(self) -> Cleared:
        """Delete the files facefuse cached (see the module docstring; the folders stay)."""
        removed: list[Path] = []
        left: list[Path] = []
        for part, path in self.parts().items():
            if path.is_symlink():
                left.append(path)
            elif part == "hashes":
                if path.is_file():
                    path.unlink(missing_ok=True)
                    removed.append(path)
                elif path.exists():
                    left.append(path)
            elif path.is_dir():
                done, kept = _clear_part(path, CACHED_NAMES[part])
                removed += done
                left += kept
        return Cleared(self.root, len(removed), tuple(left))


def _clear_part(folder: Path, names: re.Pattern[str]) -> tuple[list[Path], list[Path]]:
    """(removed, left) in one cache folder: its own entries (plain files) and the temporaries of
    such names whose writer is gone are removed; links, folders and other names are left."""
    def cached(part: str, cut: bool, ext: str) -> bool:
        return not cut and names.fullmatch(part + ext) is not None

    swept = files.sweep_stale_temporaries(folder, cached) + files.sweep_leftovers(folder)
    removed: list[Path] = list(swept)
    left: list[Path] = []
    with os.scandir(folder) as entries:
        for entry in entries:
            plain = entry.is_file(follow_symlinks=False)
            if plain and (names.fullmatch(entry.name) or _dead_lock(entry)):
                Path(entry.path).unlink(missing_ok=True)
                removed.append(Path(entry.path))
            else:
                left.append(Path(entry.path))
    return removed, left


def _dead_lock(entry: os.DirEntry[str]) -> bool:
    """Whether `entry` is a lock of a cache entry (its digest and .lock) whose owner is gone; a
    live or unreadable one is left for FileLock to judge."""
    if _LOCK.fullmatch(entry.name) is None:
        return False
    try:
        text = Path(entry.path).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return False
    owner = LockOwner.from_json(text)
    return owner is not None and owner_is_gone(owner)


def _files(path: Path) -> list[Path]:
    """The plain files of a cache part (links neither counted nor followed)."""
    if path.is_symlink():
        return []
    if path.is_file():
        return [path]
    found = []
    for folder, _, names in os.walk(path):  # never into a linked folder
        found += [Path(folder, n) for n in names if not Path(folder, n).is_symlink()]
    return found


def _usage(path: Path) -> tuple[int, int]:
    files = _files(path)
    return len(files), sum(f.stat().st_size for f in files)
