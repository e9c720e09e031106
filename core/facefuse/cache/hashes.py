"""Content hashes of files, remembered by (path, size, mtime) so a shot or model is hashed once.

Per-shot analysis is cached under the input's content hash: renaming or copying a clip keeps
its analysis, editing it invalidates it.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
from collections.abc import Sequence
from pathlib import Path

from ..io.files import atomic_write_bytes, check_regular_file

log = logging.getLogger(__name__)

CHUNK_BYTES = 1 << 20


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def sha256_file(path: Path) -> str:
    """sha256 hex digest of a file, read in chunks."""
    hasher = hashlib.sha256()
    with open(path, "rb") as handle:
        while chunk := handle.read(CHUNK_BYTES):
            hasher.update(chunk)
    return hasher.hexdigest()


class HashMemo:
    """A JSON file mapping absolute paths to {size, mtime_ns, sha256}, read once per instance;
    new hashes are written back by flush() (content_sha256 flushes once for a whole shot)."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self._records: dict[str, dict[str, int | str]] | None = None
        self._dirty = False
        self._write_warned = False

    def _loaded(self) -> dict[str, dict[str, int | str]]:
        """The remembered records; a missing, damaged (0-byte, truncated, not JSON) or foreign
        file counts as empty, and records of the wrong shape are dropped (hashed again)."""
        if self._records is None:
            try:
                data = json.loads(self.path.read_text(encoding="utf-8"))
            except FileNotFoundError:
                data = {}
            except (OSError, ValueError) as exc:
                log.warning("ignoring the damaged file-hash memo %s (%s); files will be hashed "
                            "again", self.path, exc)
                data = {}
            self._records = {path: record for path, record in data.items()
                             if _is_record(record)} if isinstance(data, dict) else {}
        return self._records

    def sha256(self, file: Path) -> str:
        """The file's sha256, hashed only when its size or mtime changed since last time.
        InputError for anything but a regular file (a FIFO or device would block or never end)."""
        file = Path(file).resolve()
        check_regular_file(file, "input file")
        stat = file.stat()
        records = self._loaded()
        known = records.get(str(file))
        if (known and known.get("size") == stat.st_size
                and known.get("mtime_ns") == stat.st_mtime_ns):
            return str(known["sha256"])
        digest = sha256_file(file)
        records[str(file)] = {"size": stat.st_size, "mtime_ns": stat.st_mtime_ns, "sha256": digest}
        self._dirty = True
        return digest

    def flush(self) -> None:
        """Write new hashes back (atomically; the last writer of concurrent processes wins)."""
        if not self._dirty or self._records is None:
            return
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            atomic_write_bytes(self.path, json.dumps(self._records).encode("utf-8"))
            self._dirty = False
        except OSError as exc:  # a read-only cache only costs speed
            if not self._write_warned:
                self._write_warned = True
                log.warning("cannot remember file hashes in %s (%s); going on without it",
                            self.path, exc.strerror or exc)


def _is_record(record: object) -> bool:
    """Whether a memo record has an int size and mtime_ns and a 64-digit hex sha256."""
    if not isinstance(record, dict):
        return False
    digest = record.get("sha256")
    return (isinstance(record.get("size"), int) and isinstance(record.get("mtime_ns"), int)
            and isinstance(digest, str) and len(digest) == 64
            and all(c in "0123456789abcdef" for c in digest))


def content_sha256(files: Sequence[Path], memo: HashMemo) -> str:
    """One sha256 over the contents of several files, in the given order."""
    combined = hashlib.sha256()
    for file in files:
        combined.update(memo.sha256(file).encode("ascii"))
        combined.update(os.fsencode(Path(file).suffix))
    memo.flush()
    return combined.hexdigest()
