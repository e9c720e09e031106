"""The model store: finds model files, downloads missing ones, and proves they are the right bytes.

A manifest model lives at ``<models_dir>/<entry.file>``. Nothing is ever written under that name
unless its size and sha256 equal the manifest's: downloads stream into ``<file>.part`` in the same
directory (so the final ``os.replace`` is atomic), hashing as bytes arrive. An interrupted
download keeps its ``.part`` and resumes with an HTTP Range request. A ``<file>.lock`` file
(created with O_EXCL, refreshed while the transfer runs, broken when stale) keeps two processes
from writing the same file.

Sources are http(s) or file:// URLs (a studio's mirror on a share); offline mode uses only
the file:// ones. This module decides what to fetch and where. The transfer itself (resume,
retries over mirrors, the lock file, zip members, hashing) is `facefuse.models.download`;
remembering what was verified is `facefuse.models.verification`; the folder, offline mode and
the messages that point a user to missing models are `facefuse.models.locations`.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path

from ..cache.locking import FileLock
from ..errors import ChecksumError, DownloadError, ModelContractError, ModelError, ModelMissingError
from ..io.files import check_folder_writable, make_folder
from .download import (
    ByteProgress,
    RetryPolicy,
    download_verified,
    extract_member,
    file_matches,
)
from .locations import (
    bad_file_message,
    by_hand,
    fetch_command,
    looks_like_model_path,
    missing_models_message,
)
from .manifest import ROLES, Manifest, ModelEntry, file_name_problem
from .urls import is_local_url, url_file_name
from .verification import VerifiedRecords, VerifyResult, is_remembered

log = logging.getLogger(__name__)

ProgressCallback = Callable[[str, int, int | None], None]

@dataclass(frozen=True, slots=True)
class LocatedModel:
    """A model file ready to load. entry is None for a user's own .onnx file (never hashed)."""

    path: Path
    entry: ModelEntry | None
    label: str


@dataclass(frozen=True, slots=True)
class ModelStatus:
    """One row of `facefuse models list`. verified comes from verified.json only (no hashing)."""

    name: str
    role: str
    family: str
    file: str
    size_bytes: int
    licence: str
    present: bool
    verified: bool
    path: Path
    use: str = "research"


class ModelStore:
    """Finds, downloads and verifies the manifest's model files under one directory.

    retries: extra rounds over a model's URL list after the first; a round waits
    retry_wait_s * 2**(round - 1) seconds first. timeout_s: per-connection socket timeout.
    on_progress(name, bytes_done, bytes_total) is called as bytes arrive.
    """

    def __init__(self, manifest: Manifest, models_dir: Path, offline: bool = False,
                 on_progress: ProgressCallback | None = None, retries: int = 3,
                 timeout_s: float = 30.0, retry_wait_s: float = 1.0,
                 lock_stale_s: float = 120.0) -> None:
        self.manifest = manifest
        self.models_dir = Path(models_dir)
        self.offline = offline
        self.on_progress = on_progress
        self.retries = max(0, retries)
        self.timeout_s = timeout_s
        self.retry_wait_s = retry_wait_s
        self.lock_stale_s = lock_stale_s
        self.records = VerifiedRecords(self.models_dir)

    # ---- public -------------------------------------------------------------------------

    def path_for(self, name: str) -> Path:
        """Where the manifest model `name` lives (whether or not it is there yet): always a plain
        file name directly inside models_dir (ModelError for an entry naming anything else)."""
        return self._inside(self._entry(name).file, f"model {name}")

    def missing(self, names: Iterable[str]) -> list[ModelEntry]:
        """The manifest models among `names` whose file is not in models_dir, in order, once
        each; names that are paths or unknown to the manifest are left to `locate`."""
        entries: dict[str, ModelEntry] = {}
        for name in names:
            entry = self.manifest.models.get(name)
            if entry is not None and not self.path_for(name).exists():
                entries.setdefault(name, entry)
        return list(entries.values())

    def require_present(self, names: Iterable[str], copies: bool = True) -> None:
        """Make every manifest model of `names` present before any is loaded.

        Offline, raise one ModelMissingError naming every missing model (with sizes, the
        folder and the fetch command) that, unless `copies` is False, cannot be copied from a
        file:// source. Online, fetch the missing ones (`fetch_each`: a failed download is one
        DownloadError naming every model still missing)."""
        if self.offline:
            absent = [e for e in self.missing(names) if not (copies and self._sources(e))]
            if absent:
                raise ModelMissingError(
                    missing_models_message(self.models_dir, self.offline, absent))
            return
        for _ in self.fetch_each([e.name for e in self.missing(names)]):
            pass

    def fetch_each(self, names: Sequence[str], force: bool = False) -> Iterator[tuple[str, Path]]:
        """`fetch` each of `names` in order, yielding (name, path) as each is ready. A download
        that fails raises one DownloadError: why, then every model of `names` still missing
        with its size, and the one command that fetches them all."""
        for index, name in enumerate(names):
            try:
                path = self._fetch(name, force)
            except DownloadError as exc:
                raise DownloadError(self._failed_message(exc, names[index:])) from exc
            yield name, path

    def locate(self, name_or_path: str, role: str) -> LocatedModel:
        """A verified file for a manifest model name (fetched unless offline), or a user's file.

        A string naming an existing file, or ending in .onnx, is the user's own model: it must
        exist and is not hashed. Raises ModelMissingError, ModelContractError (a model of another
        role), ChecksumError (present file with other bytes) or DownloadError.
        """
        if role not in ROLES:
            raise ValueError(f"role must be one of {', '.join(ROLES)}, not {role!r}")
        if looks_like_model_path(name_or_path):
            return self._user_file(name_or_path)
        entry = self._entry_for_role(name_or_path, role)
        target = self.path_for(entry.name)
        if target.exists():
            result = self.verify(entry.name)
            if not result.ok:
                raise ChecksumError(bad_file_message(entry.name, result.reason))
        else:
            self.fetch(entry.name)
        return LocatedModel(target, entry, entry.name)

    def fetch(self, name: str, force: bool = False) -> Path:
        """Download model `name` (unless a verified copy is present, or force) and return its path.

        A present file with other bytes is left alone and raises ChecksumError unless force is set;
        with force it is replaced, but only by a verified download. Offline, only file:// sources
        are used (copied with the same checks); a model without one is a ModelMissingError. A
        failed download is a DownloadError saying how to fetch the model later or by hand.
        """
        try:
            return self._fetch(name, force)
        except DownloadError as exc:
            raise DownloadError(self._failed_message(exc, [name])) from exc

    def _fetch(self, name: str, force: bool) -> Path:
        """`fetch`, with a failed download's DownloadError as the transfer raised it."""
        entry = self._entry(name)
        urls = self._sources(entry)
        if not urls and self.offline:
            raise ModelMissingError(self._offline_message(entry))
        if not urls:
            raise ModelMissingError(f"model {name} has no download URL; place {entry.file} in "
                                    f"{self.models_dir} yourself")
        if entry.unconfirmed:
            log.warning("%s: its manifest record is unconfirmed (%s); the download is still "
                        "checked against that sha256", name, entry.unconfirmed)
        target = self.path_for(name)
        if target.exists() and not force and self.verify(name).ok:
            return target  # nothing to write: a read-only models folder that has it is fine
        check_folder_writable(self.models_dir)
        make_folder(self.models_dir)
        with FileLock(_sibling(target, ".lock"), self.lock_stale_s,
                      what=f"the download of {name}") as lock:
            if target.exists() and not force:
                result = self.verify(name)
                if result.ok:
                    return target
                raise ChecksumError(bad_file_message(name, result.reason))
            if force:
                _sibling(target, ".part").unlink(missing_ok=True)
            if entry.archive is not None:
                self._fetch_archive(entry, lock)
            else:
                download_verified(urls, _sibling(target, ".part"), target, entry.size_bytes,
                                  entry.sha256, label=name, policy=self._policy(), lock=lock,
                                  on_progress=self._progress_for(name))
            self.records.remember(entry.file, target, entry.sha256)
        log.info("model %s is ready at %s", name, target)
        return target

    def verify(self, name: str, full: bool = False) -> VerifyResult:
        """Check model `name`'s file: trusted from verified.json when its size and mtime_ns are
        unchanged, otherwise hashed (and remembered when right); with `full` always hashed
        (what `facefuse models verify` does). Never deletes anything."""
        return self.records.verify(self._entry(name), self.path_for(name), full=full)

    def status(self) -> list[ModelStatus]:
        """Every manifest model with its presence and remembered verification (no hashing)."""
        records = self.records.load()
        rows = []
        for entry in self.manifest.models.values():
            path = self.path_for(entry.name)
            stat = _stat_or_none(path)
            rows.append(ModelStatus(
                name=entry.name, role=self.manifest.families[entry.family].role,
                family=entry.family, file=entry.file, size_bytes=entry.size_bytes,
                licence=entry.licence, present=stat is not None,
                verified=stat is not None and is_remembered(records.get(entry.file), stat, entry),
                path=path, use=entry.use))
        return rows

    # ---- names and messages ------------------------------------------------------------

    def _entry(self, name: str) -> ModelEntry:
        try:
            return self.manifest.models[name]
        except KeyError:
            known = ", ".join(sorted(self.manifest.models))
            raise ModelMissingError(
                f"unknown model {name!r}; the manifest knows: {known}") from None

    def _entry_for_role(self, name: str, role: str) -> ModelEntry:
        known = ", ".join(m.name for m in self.manifest.models_for_role(role))
        entry = self.manifest.models.get(name)
        if entry is None:
            raise ModelMissingError(f"unknown {role} model {name!r}; known {role} models: "
                                    f"{known} (or give the path of an .onnx file)")
        other_role = self.manifest.families[entry.family].role
        if other_role != role:
            raise ModelContractError(f"{name} is a {other_role} model, not a {role}; "
                                     f"known {role} models: {known}")
        return entry

    def _user_file(self, text: str) -> LocatedModel:
        path = Path(text).expanduser()
        if not path.is_file():
            hint = next((f"; did you mean the model {m.name}?"
                         for m in self.manifest.models.values() if m.file == path.name), "")
            raise ModelMissingError(f"model file {path} does not exist{hint}")
        return LocatedModel(path, None, path.name)

    def _sources(self, entry: ModelEntry) -> tuple[str, ...]:
        """The URLs this store may fetch `entry` from (its archive's, for a zipped model): all
        of them, or offline only the file:// ones (a local file or a mounted share)."""
        urls = (entry.archive.url,) if entry.archive is not None else entry.urls
        return tuple(u for u in urls if is_local_url(u)) if self.offline else urls

    def _failed_message(self, exc: DownloadError, remaining: Sequence[str]) -> str:
        """exc, then every model of `remaining` still missing and how to fetch them all."""
        absent = self.missing(remaining) or [self._entry(remaining[0])]
        if len(absent) > 1:
            return f"{exc}; {missing_models_message(self.models_dir, False, absent)}"
        return (f"{exc}; when the network or share is back run "
                f"`{fetch_command(self.models_dir, [absent[0].name])}`, or "
                f"{by_hand(absent[0])} and put it in {self.models_dir}")

    def _offline_message(self, entry: ModelEntry) -> str:
        return missing_models_message(self.models_dir, self.offline, [entry])

    def _inside(self, file_name: str, what: str) -> Path:
        """models_dir / file_name, refused (ModelError) unless file_name is a plain file name,
        so nothing is ever written outside models_dir (a symlink placed there by the user is
        the user's choice and is followed)."""
        problem = file_name_problem(file_name)
        path = self.models_dir / file_name
        if problem is None and path.parent != self.models_dir:
            problem = "leaves the models folder"
        if problem is not None:
            raise ModelError(f"{what} has the file name {file_name!r}, which {problem}; refusing "
                             f"to write outside {self.models_dir}")
        return path

    # ---- downloads ----------------------------------------------------------------------

    def _policy(self) -> RetryPolicy:
        return RetryPolicy(retries=self.retries, timeout_s=self.timeout_s,
                           wait_s=self.retry_wait_s)

    def _progress_for(self, name: str) -> ByteProgress | None:
        return None if self.on_progress is None else partial(self.on_progress, name)

    def _fetch_archive(self, entry: ModelEntry, lock: FileLock) -> None:
        """Download the entry's zip (verified), extract its member (verified), delete the zip."""
        archive = entry.archive
        assert archive is not None
        target = self.path_for(entry.name)
        zip_path = self._inside(url_file_name(archive.url), f"the archive of model {entry.name}")
        progress = self._progress_for(entry.name)
        with FileLock(_sibling(zip_path, ".lock"), self.lock_stale_s,
                      what=f"the download of {zip_path.name}") as zip_lock:
            try:
                if not file_matches(zip_path, archive.size_bytes, archive.sha256):
                    download_verified((archive.url,), _sibling(zip_path, ".part"), zip_path,
                                      archive.size_bytes, archive.sha256, label=entry.name,
                                      policy=self._policy(), lock=zip_lock, on_progress=progress)
                extract_member(zip_path, archive.member, _sibling(target, ".part"), target,
                               entry.size_bytes, entry.sha256, source_url=archive.url, lock=lock,
                               on_progress=progress)
            finally:
                zip_path.unlink(missing_ok=True)


# ---- helpers ------------------------------------------------------------------------------

def _sibling(path: Path, suffix: str) -> Path:
    return path.with_name(path.name + suffix)


def _stat_or_none(path: Path) -> os.stat_result | None:
    try:
        return path.stat()
    except FileNotFoundError:
        return None
