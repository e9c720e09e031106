"""Verified file transfer: downloads, copies and zip extraction that never leave wrong bytes
behind.

A source is an ``http://`` or ``https://`` URL, or a ``file://`` URL (a local file or a mounted
share: ``file:///mnt/models/x.onnx``; on Windows also ``file://server/share/x.onnx``). Bytes
stream into a caller-chosen ``.part`` file, hashed as they arrive; the part is renamed onto the
final path (``os.replace``, atomic in one directory) only when its size and sha256 equal the
expected ones, and is deleted when they do not. An interrupted transfer keeps its part and
resumes (an HTTP Range request, or a seek in the local file); failures that another attempt may
fix are retried in rounds over the mirror list, with exponential backoff. A source that cannot
work (HTTP 404, a missing file, wrong bytes, another kind of URL, a host name that does not
resolve: no network or no name server) is dropped and the next one tried, never retried.
`FileLock` keeps two processes from writing the same file.

This module knows nothing of manifests or model names: `facefuse.models.store` decides what to
fetch and where, and passes the expected size and sha256 in.
"""

from __future__ import annotations

import hashlib
import http.client
import logging
import os
import stat
import time
import urllib.error
import urllib.parse
import urllib.request
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import IO, Any

from ..cache.hashes import sha256_file
from ..cache.locking import FileLock
from ..errors import ChecksumError, DownloadError, ModelError, ModelMissingError
from ..io.files import write_error
from ..version import __version__
from .urls import unresolved_host, unresolved_message

log = logging.getLogger(__name__)

ByteProgress = Callable[[int, int], None]
"""on_progress(bytes_done, bytes_total), called after each chunk is written."""

CHUNK_BYTES = 1 << 20
USER_AGENT = f"facefuse/{__version__}"
PERMANENT_HTTP_CODES = frozenset({400, 401, 403, 404, 410})


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """How hard `download_verified` tries.

    retries: extra rounds over the URL list after the first; round n waits wait_s * 2**(n - 1)
    seconds first. timeout_s: per-connection socket timeout.
    """

    retries: int = 3
    timeout_s: float = 30.0
    wait_s: float = 1.0


class _Retryable(Exception):
    """A transfer failed in a way that another attempt may fix."""


class _Permanent(Exception):
    """A source that no attempt will make work (a missing file, an unsupported URL)."""


# ---- downloads ------------------------------------------------------------------------------

def download_verified(urls: tuple[str, ...], part_path: Path, final_path: Path, size: int,
                      sha256: str, *, label: str, policy: RetryPolicy,
                      lock: FileLock | None = None,
                      on_progress: ByteProgress | None = None) -> None:
    """Download size bytes with digest sha256 to final_path, via part_path, from the first URL
    that works.

    urls are http(s) or file URLs (see the module docstring). part_path (same directory as
    final_path) is resumed if present. Retryable failures are retried in rounds per policy; HTTP
    400/401/403/404/410, a missing or unreadable local file, wrong bytes and unsupported URLs
    drop a URL for good. label names the file in logs and errors. Raises ChecksumError (nothing
    kept) when the last URL tried held other bytes, else DownloadError when every attempt failed.
    """
    dead: set[str] = set()
    unresolved: dict[str, str] = {}  # url -> its host name, which did not resolve
    errors: list[str] = []
    mismatch: ChecksumError | None = None
    for attempt in range(policy.retries + 1):
        if attempt:
            time.sleep(policy.wait_s * 2 ** (attempt - 1))
        for url in (u for u in urls if u not in dead):
            _refresh(lock)
            mismatch = None
            try:
                _fetch_checked(url, part_path, size, sha256, label, policy.timeout_s, lock,
                               on_progress)
            except ChecksumError as exc:
                dead.add(url)
                mismatch = exc
                errors.append(str(exc))
            except _Permanent as exc:
                dead.add(url)
                errors.append(f"{url}: {exc}")
            except urllib.error.HTTPError as exc:
                if exc.code in PERMANENT_HTTP_CODES:
                    dead.add(url)
                errors.append(f"{url}: HTTP {exc.code}")
            except (_Retryable, OSError, http.client.HTTPException) as exc:
                host = unresolved_host(exc, url)
                if host is not None:
                    dead.add(url)
                    unresolved[url] = host
                errors.append(f"{url}: {exc}")
            else:
                _replace(part_path, final_path)
                return
            log.log(logging.INFO if url in unresolved else logging.WARNING,
                    "could not fetch %s from one source (%s)", label, errors[-1])
        if len(dead) == len(set(urls)):
            break
    if mismatch is not None:
        raise mismatch
    if unresolved and set(unresolved) == set(urls):
        raise DownloadError(unresolved_message(label, unresolved.values()))
    raise DownloadError(f"could not download {label} after {len(errors)} attempts; "
                        f"last error: {errors[-1] if errors else 'no URL'}")


def _fetch_checked(url: str, part: Path, size: int, sha256: str, label: str, timeout_s: float,
                   lock: FileLock | None, on_progress: ByteProgress | None) -> None:
    """One attempt from url into part, checked (_check_part); a part left by an earlier run
    that turns out to hold other bytes is dropped and the file fetched again from its start
    at once: the stale part was wrong, not the source."""
    resumed = _file_size(part) > 0
    try:
        done, digest = _fetch_once(url, part, size, label, timeout_s, lock, on_progress)
        _check_part(part, done, digest, size, sha256, url)
    except ChecksumError:
        if not resumed:
            raise
        log.info("the partial download of %s held other bytes; fetching it again from the "
                 "start", label)
        done, digest = _fetch_once(url, part, size, label, timeout_s, lock, on_progress)
        _check_part(part, done, digest, size, sha256, url)


def _fetch_once(url: str, part: Path, size: int, label: str, timeout_s: float,
                lock: FileLock | None, on_progress: ByteProgress | None) -> tuple[int, str]:
    """One attempt from url into part: (bytes in part, sha256)."""
    scheme = urllib.parse.urlsplit(url).scheme.lower()
    if scheme == "file":
        return _copy_local(file_url_path(url), part, size, label, lock, on_progress)
    if scheme in ("http", "https"):
        return _transfer(url, part, size, label, timeout_s, lock, on_progress)
    raise _Permanent("is not an http://, https:// or file:// URL")


def file_url_path(url: str) -> Path:
    """The local path a file:// URL names (percent-escapes decoded). A host other than
    localhost is a Windows share (UNC path); elsewhere it is refused (_Permanent)."""
    parts = urllib.parse.urlsplit(url)
    host = parts.netloc
    if host.lower() in ("", "localhost"):
        return Path(urllib.request.url2pathname(parts.path))
    if os.name == "nt":
        return Path(urllib.request.url2pathname(f"//{host}{parts.path}"))
    raise _Permanent(f"names the host {host!r}; give the share's mounted path, "
                     "as file:///mount/point/...")


def _copy_local(source: Path, part: Path, size: int, label: str, lock: FileLock | None,
                on_progress: ByteProgress | None) -> tuple[int, str]:
    """Copy a local file into part, resuming a part it fits; returns (bytes in part, sha256)."""
    offset = _file_size(part)
    if offset == size:  # complete from an earlier run that stopped before the rename
        return size, sha256_file(part)
    with _open_source(source) as handle:
        info = os.fstat(handle.fileno())
        if not stat.S_ISREG(info.st_mode):
            raise _Permanent("is not a regular file")
        start = offset if offset <= min(size, info.st_size) else 0
        log.info("copying %s from %s%s", label, source, f" (resuming at {start})" if start else "")
        hasher = _hash_prefix(part, start)
        handle.seek(start)
        with _open_part(part, start) as out:
            done = _copy(handle, out, hasher, start, size, lock, on_progress)
    return done, hasher.hexdigest()


def _open_source(source: Path) -> IO[bytes]:
    try:
        return open(source, "rb")
    except OSError as exc:
        raise _Permanent(f"cannot be read ({exc.strerror or exc})") from exc


def _transfer(url: str, part: Path, size: int, label: str, timeout_s: float,
              lock: FileLock | None, on_progress: ByteProgress | None) -> tuple[int, str]:
    """One request: resume part (Range) or start over; returns (bytes in part, sha256)."""
    offset = _file_size(part)
    if offset == size:  # complete from an earlier run that stopped before the rename
        return size, sha256_file(part)
    if offset > size:
        part.unlink()
        offset = 0
    request = urllib.request.Request(url, headers={"User-Agent": USER_AGENT})
    if offset:
        request.add_header("Range", f"bytes={offset}-")
    log.info("downloading %s from %s%s", label, url, f" (resuming at {offset})" if offset else "")
    try:
        response = urllib.request.urlopen(request, timeout=timeout_s)
    except urllib.error.HTTPError as exc:
        if exc.code == 416:  # the partial file does not fit the server's: start over
            part.unlink(missing_ok=True)
            raise _Retryable(f"HTTP 416 when resuming at byte {offset}") from exc
        raise
    with response:
        start = _resume_start(response, offset)
        hasher = _hash_prefix(part, start)
        with _open_part(part, start) as out:
            done = _copy(response, out, hasher, start, size, lock, on_progress)
        _raise_if_cut(response, start, done, size)
    return done, hasher.hexdigest()


def _resume_start(response: http.client.HTTPResponse, offset: int) -> int:
    """Where the body starts in the file: offset on a matching 206, 0 on a 200."""
    if response.status == 200:
        return 0
    content_range = response.headers.get("Content-Range", "")
    if response.status == 206 and content_range.startswith(f"bytes {offset}-"):
        return offset
    raise _Retryable(f"unexpected answer to a resumed request: {response.status} "
                     f"{content_range or '(no Content-Range)'}")


def _raise_if_cut(response: http.client.HTTPResponse, start: int, done: int, size: int) -> None:
    """A body shorter than expected is retryable unless the server says it sent all of it."""
    if done >= size:
        return
    length = response.headers.get("Content-Length")
    if length is None or done < start + int(length):
        raise _Retryable(f"the connection closed after {done} of {size} bytes")


# ---- zip members ----------------------------------------------------------------------------

def extract_member(zip_path: Path, member: str, part_path: Path, final_path: Path, size: int,
                   sha256: str, *, source_url: str, lock: FileLock | None = None,
                   on_progress: ByteProgress | None = None) -> None:
    """Extract member of the zip at zip_path to final_path, via part_path, if it holds size bytes
    with digest sha256.

    member is matched by exact path, else by a unique base name. source_url (where the zip came
    from) names the origin in errors. Raises ModelError for an unreadable zip, ModelMissingError
    when no single member matches, ChecksumError (deleting the part) for other bytes.
    """
    try:
        with zipfile.ZipFile(zip_path) as archive:
            found = _find_member(archive, member, zip_path)
            with archive.open(found) as source, _open_part(part_path, 0) as out:
                hasher = hashlib.sha256()
                done = _copy(source, out, hasher, 0, size, lock, on_progress)
    except zipfile.BadZipFile as exc:
        part_path.unlink(missing_ok=True)
        raise ModelError(f"{zip_path.name} is not a readable zip archive: {exc}") from exc
    _check_part(part_path, done, hasher.hexdigest(), size, sha256, f"{source_url} (member {found})")
    _replace(part_path, final_path)


def _find_member(archive: zipfile.ZipFile, member: str, zip_path: Path) -> str:
    """The member by exact path, else the unique member with that base name."""
    names = archive.namelist()
    if member in names:
        return member
    base = PurePosixPath(member).name
    matches = [n for n in names if PurePosixPath(n).name == base]
    if len(matches) == 1:
        return matches[0]
    found = "several" if matches else "no"
    raise ModelMissingError(f"{zip_path.name} has {found} members named {base}")


# ---- shared by both -------------------------------------------------------------------------

def _copy(source: IO[bytes], out: IO[bytes], hasher: Any, done: int, size: int,
          lock: FileLock | None, on_progress: ByteProgress | None) -> int:
    """Stream source into out (at most size + 1 bytes), hashing and reporting progress. A
    write the local disk refuses (full, read-only) is an OutputError: no source fixes it."""
    limit = size + 1  # one byte more than expected is enough to know the size is wrong
    while done < limit:
        chunk = source.read(min(CHUNK_BYTES, limit - done))
        if not chunk:
            break
        _write_part(out, chunk)
        hasher.update(chunk)
        done += len(chunk)
        _refresh(lock)
        if on_progress is not None:
            on_progress(done, size)
    _write_part(out, b"")
    return done


def _open_part(part: Path, start: int) -> IO[bytes]:
    """The part file, appended to from `start` (0: written afresh); OutputError when the
    folder refuses it."""
    try:
        return open(part, "ab" if start else "wb")
    except OSError as exc:
        raise write_error(part, exc) from exc


def _write_part(out: IO[bytes], chunk: bytes) -> None:
    """Write `chunk` to the part and flush it (b"": flush only); OutputError on failure."""
    try:
        if chunk:
            out.write(chunk)
        out.flush()
    except OSError as exc:
        raise write_error(Path(str(out.name)), exc) from exc


def _replace(part: Path, final: Path) -> None:
    try:
        os.replace(part, final)
    except OSError as exc:
        raise write_error(final, exc) from exc


def _refresh(lock: FileLock | None) -> None:
    if lock is not None:
        lock.refresh()


def _check_part(part: Path, done: int, digest: str, size: int, sha256: str, url: str) -> None:
    """Raise ChecksumError (deleting part) unless part holds exactly the expected bytes."""
    if done == size and digest == sha256:
        return
    part.unlink(missing_ok=True)
    got = f"more than {size}" if done > size else str(done)
    raise ChecksumError(mismatch_message(f"the download from {url}", got, digest, size, sha256)
                        + "; nothing was kept")


# ---- hashing and small helpers ----------------------------------------------------------------

def file_matches(path: Path, size: int, sha256: str) -> bool:
    """Whether path exists with exactly size bytes and digest sha256 (hashed only if the size
    fits)."""
    return _file_size(path) == size and sha256_file(path) == sha256


def mismatch_message(what: str, got: str, digest: str, expected_size: int,
                     expected_sha: str) -> str:
    """'<what> has <got> bytes and sha256 <digest>, expected <size> bytes and sha256 <sha>'."""
    return (f"{what} has {got} bytes and sha256 {digest}, "
            f"expected {expected_size} bytes and sha256 {expected_sha}")


def _hash_prefix(part: Path, length: int) -> Any:
    """A sha256 hasher fed with the first `length` bytes already in part (resuming)."""
    hasher = hashlib.sha256()
    if length:
        with open(part, "rb") as handle:
            while chunk := handle.read(min(CHUNK_BYTES, length)):
                hasher.update(chunk)
                length -= len(chunk)
    return hasher


def _file_size(path: Path) -> int:
    try:
        return path.stat().st_size
    except FileNotFoundError:
        return 0
