"""Proving a model file holds the manifest's bytes, hashing each file once.

Verified files are remembered in ``<models_dir>/verified.json`` by size and mtime_ns, so a
500 MB model is hashed once, not on every run; a file whose size or mtime changed is hashed
again. That quick check cannot see bytes changed in place with the size and mtime kept (a
damaged disk, a tool that restores times): a full check (``full=True``, `facefuse models
verify`) hashes the file whatever the record says and refreshes or drops the record.
verified.json is a cache: an unreadable one is ignored and rewritten, and failing to write it
is only a warning.
"""

from __future__ import annotations

import json
import logging
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..cache.hashes import sha256_file
from .download import mismatch_message
from .manifest import ModelEntry

log = logging.getLogger(__name__)

RECORDS_FILE = "verified.json"
QUICK_REASON = "size and mtime match the record of an earlier sha256 check"
HASHED_REASON = "sha256 checked"


@dataclass(frozen=True, slots=True)
class VerifyResult:
    """Whether a manifest model's file is present and holds the manifest's bytes, and why not.
    hashed: whether this check read the file's bytes (False: trusted from verified.json by its
    size and mtime, or not present)."""

    name: str
    path: Path
    present: bool
    ok: bool
    reason: str
    hashed: bool = False


class VerifiedRecords:
    """verified.json of one models folder: which files were hashed right, at which size and
    mtime_ns. Read and written whole at each call (no state kept between calls)."""

    def __init__(self, models_dir: Path) -> None:
        self.models_dir = Path(models_dir)

    @property
    def path(self) -> Path:
        return self.models_dir / RECORDS_FILE

    def verify(self, entry: ModelEntry, path: Path, full: bool = False) -> VerifyResult:
        """Check `path` against `entry`: quick (trusted when remembered with its size and
        mtime_ns unchanged, otherwise hashed), or with `full` always hashed. A right file is
        remembered, a wrong one forgotten; nothing is ever deleted."""
        try:
            stat = path.stat()
        except FileNotFoundError:
            return VerifyResult(entry.name, path, False, False, f"{path} is not downloaded")
        if not full and is_remembered(self.load().get(entry.file), stat, entry):
            return VerifyResult(entry.name, path, True, True, QUICK_REASON)
        digest = sha256_file(path)
        if stat.st_size != entry.size_bytes or digest != entry.sha256:
            self.forget(entry.file)
            return VerifyResult(entry.name, path, True, False, mismatch_message(
                str(path), str(stat.st_size), digest, entry.size_bytes, entry.sha256),
                hashed=True)
        self.remember(entry.file, path, digest, stat)
        return VerifyResult(entry.name, path, True, True, HASHED_REASON, hashed=True)

    def load(self) -> dict[str, Any]:
        """The records, {} when the file is missing or unreadable (a warning for the latter)."""
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return {}
        except (OSError, ValueError) as exc:
            log.warning("ignoring unreadable %s (%s); files will be hashed again", self.path, exc)
            return {}
        return data if isinstance(data, dict) else {}

    def remember(self, file: str, path: Path, digest: str,
                 stat: os.stat_result | None = None) -> None:
        """Record `file` as holding `digest` at `path`'s present size and mtime_ns."""
        stat = stat if stat is not None else path.stat()
        records = self.load()
        records[file] = {"size": stat.st_size, "mtime_ns": stat.st_mtime_ns, "sha256": digest}
        self._save(records)

    def forget(self, file: str) -> None:
        """Drop the record of `file`, if any."""
        records = self.load()
        if records.pop(file, None) is not None:
            self._save(records)

    def _save(self, records: dict[str, Any]) -> None:
        """Write verified.json atomically; failing is only a warning (it is a cache)."""
        try:
            fd, tmp = tempfile.mkstemp(dir=self.models_dir, prefix=RECORDS_FILE, suffix=".tmp")
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                json.dump(records, handle, indent=1, sort_keys=True)
            os.replace(tmp, self.path)
        except OSError as exc:
            log.warning("could not write %s: %s", self.path, exc)


def is_remembered(record: Any, stat: os.stat_result, entry: ModelEntry) -> bool:
    """Whether a verified.json record vouches for a file of this stat as `entry`'s bytes."""
    return (isinstance(record, dict) and record.get("sha256") == entry.sha256
            and record.get("size") == stat.st_size == entry.size_bytes
            and record.get("mtime_ns") == stat.st_mtime_ns)
