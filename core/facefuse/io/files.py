"""Files written whole or not at all: a temporary name beside the target, then a rename.

Kept free of image libraries, so caches and model bookkeeping can write files without
loading OpenCV.

Temporary names are hidden and say who writes them:
``.{stem}.{pid}-{place}-{started}.{random}.tmp{ext}`` (``ext`` kept where a library picks the
format by it). ``place`` is io.owners.place_tag (a short hash of the host name and pid namespace)
and ``started`` the writer's start time (``x`` when unknown), so a later run can tell a temporary
whose writer is gone (a SIGKILL, a power cut) from one still being written, by the owner rule the
locks use (io.owners.owner_is_gone), and sweep only the former (`sweep_stale_temporaries`; every
command sweeps each folder it writes into with `sweep_leftovers`). Scratch folders
(`scratch_folder`) are named by the same rule and swept the same way. The
part taken from the target's name is shortened so the whole name stays within the folder's
NAME_MAX.
"""

from __future__ import annotations

import errno
import os
import re
import secrets
import shutil
import stat
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from types import MappingProxyType

from ..errors import InputError, OutputError
from .owners import ProcessOwner, here, owner_is_gone

NAME_MAX_DEFAULT = 255
PATH_MAX_DEFAULT = 4096
FOREIGN_HOST_STALE_S = 7 * 24 * 3600.0  # a temporary of another host is swept after a week
_TEMP = re.compile(r"^\.(?P<part>.*)\.(?P<pid>\d+)-(?P<host>[0-9a-f]{8})(?:-(?P<started>\d+|x))?"
                   r"\.[0-9a-f]{8}(?P<cut>~?)\.tmp(?P<ext>\.[^./]*)?$", re.DOTALL)
# What a failed write's errno means to the user.
_WRITE_REASONS = MappingProxyType({
    errno.ENOSPC: "the disk is full",
    errno.EDQUOT: "the disk quota is exceeded",
    errno.EACCES: "permission denied",
    errno.EPERM: "permission denied",
    errno.EROFS: "the file system is read-only",
})


def host_tag() -> str:
    """8 hex digits naming this host and pid namespace in temporary names (io.owners.here)."""
    return here()


def owner_tag() -> str:
    """What a temporary's name says of its writer: ``{pid}-{place}-{started}``."""
    owner = ProcessOwner.current()
    started = "x" if owner.started is None else str(owner.started)
    return f"{owner.pid}-{owner.place}-{started}"


def path_max(folder: Path) -> int:
    """The longest path (bytes) the folder's file system takes; PATH_MAX_DEFAULT when unknown."""
    try:
        return int(os.pathconf(folder, "PC_PATH_MAX"))
    except (OSError, ValueError):
        return PATH_MAX_DEFAULT


def check_path_length(path: Path, label: str) -> None:
    """InputError when a name in `path` is longer than its folder takes (NAME_MAX, mostly 255
    bytes) or the whole path longer than PATH_MAX (mostly 4096 bytes), before anything is
    written. Folders that do not exist yet are judged by the nearest one that does."""
    path = Path(path)
    probe = path.parent
    while not os.path.isdir(probe) and probe != probe.parent:  # no OSError for long names
        probe = probe.parent
    limit = path_max(probe)
    length = len(os.fsencode(str(path)))
    if length >= limit:
        raise InputError(f"{label}: the path {str(path)[:40]}... is {length} bytes, and the "
                         f"system takes paths of at most {limit - 1} bytes (PATH_MAX {limit}); "
                         "choose a shorter one")
    most = name_max(probe)
    for part in path.parts:
        size = len(os.fsencode(part))
        if size > most:
            raise InputError(f"{label}: the name {part[:40]}... is {size} bytes, and the file "
                             f"system takes names of at most {most} bytes; choose a shorter one")


def check_regular_file(path: Path, what: str) -> None:
    """InputError unless `path` names a regular file (links followed): a device (/dev/zero),
    a FIFO, a socket or a folder is refused before anything reads it (it could block or never
    end)."""
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        raise InputError(f"the {what} {path} does not exist") from None
    except OSError as exc:
        raise InputError(f"the {what} {path} cannot be read: {_reason(exc)}") from exc
    if stat.S_ISDIR(mode):
        raise InputError(f"the {what} {path} is a folder, not a file")
    if not stat.S_ISREG(mode):
        raise InputError(f"the {what} {path} is not a regular file (a device, FIFO or socket); "
                         "give a file")


def name_max(folder: Path) -> int:
    """The longest file name (bytes) the folder takes; NAME_MAX_DEFAULT when it cannot say."""
    try:
        return int(os.pathconf(folder, "PC_NAME_MAX"))
    except (OSError, ValueError):
        return NAME_MAX_DEFAULT


def temporary_path(path: Path, keep_suffix: bool = False) -> Path:
    """A fresh hidden temporary name beside `path` (see the module docstring).

    keep_suffix: end the name with `path`'s extension (``.tmp.exr``) for writers that choose the
    format by it. The part taken from `path`'s name is cut (marked with ``~``) to fit NAME_MAX.
    """
    path = Path(path)
    ext = path.suffix if keep_suffix else ""
    part = path.stem if keep_suffix else path.name
    owner = f"{owner_tag()}.{secrets.token_hex(4)}"
    limit = name_max(path.parent)
    fixed = len(os.fsencode(f"..{owner}.tmp{ext}"))
    encoded = os.fsencode(part)
    cut = ""
    if fixed + len(encoded) > limit:
        cut = "~"
        encoded = encoded[:max(0, limit - fixed - 1)]
        part = encoded.decode("utf-8", "ignore") if encoded else ""
        while len(os.fsencode(part)) > len(encoded):  # undecodable (surrogate) bytes
            part = part[:-1]
    return path.with_name(f".{part}.{owner}{cut}.tmp{ext}")


def create_temporary(path: Path, keep_suffix: bool = False) -> tuple[int, Path]:
    """Create (O_EXCL, mode following the umask) a temporary beside `path`: (fd, its path)."""
    for _ in range(16):
        tmp = temporary_path(path, keep_suffix)
        try:
            return os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666), tmp
        except FileExistsError:
            continue
    raise FileExistsError(errno.EEXIST, "no free temporary name", str(path))


def atomic_write_bytes(path: Path, data: bytes) -> None:
    """Write bytes to a temporary name in the same folder, then os.replace onto `path`."""
    path = Path(path)
    handle, tmp_name = create_temporary(path)
    try:
        with os.fdopen(handle, "wb") as tmp:
            tmp.write(data)
            tmp.flush()
            os.fsync(tmp.fileno())
        os.replace(tmp_name, path)
    except BaseException:
        tmp_name.unlink(missing_ok=True)
        raise


def write_error(path: Path, exc: OSError) -> OutputError:
    """One sentence for an OSError met while writing `path` (disk full, read-only, ...)."""
    return OutputError(f"cannot write {path}: {_reason(exc)}")


def _reason(exc: OSError) -> str:
    return _WRITE_REASONS.get(exc.errno or -1) or exc.strerror or str(exc)


def is_write_failure(exc: OSError) -> bool:
    """Whether `exc` is a disk-full or permission failure the user must fix."""
    return exc.errno in _WRITE_REASONS


def check_folder_writable(folder: Path) -> None:
    """OutputError unless files can be created in `folder`, or, when it does not exist yet, in
    the nearest folder above it (where it will be created). Creates nothing that stays."""
    folder = Path(folder)
    probe = folder
    while not probe.exists() and probe != probe.parent:
        probe = probe.parent
    if not probe.is_dir():
        raise InputError(f"the output folder {folder} cannot be created: {probe} is a file")
    try:
        handle, tmp = create_temporary(probe / "facefuse-write-check")
    except OSError as exc:
        where = folder if probe == folder else probe
        raise OutputError(f"the output folder {where} is not writable: {_reason(exc)}") from exc
    os.close(handle)
    tmp.unlink(missing_ok=True)


def make_folder(folder: Path) -> None:
    """Create `folder` and its parents if missing; OutputError naming the folder if that fails."""
    try:
        Path(folder).mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise OutputError(f"the output folder {folder} cannot be created: {_reason(exc)}") from exc


def sweep_stale_temporaries(folder: Path, belongs: Callable[[str, bool, str], bool],
                            protect: frozenset[tuple[int, int]] = frozenset(),
                            now: float | None = None) -> list[Path]:
    """Remove the temporaries in `folder` whose writer is gone; return what was removed.

    belongs(part, cut, ext): whether a temporary made for a name of this stem (cut: shortened
    to a prefix) and extension is one of the caller's outputs; others are never touched. A
    temporary written in this place (host and pid namespace) is stale when its writer is gone
    (io.owners.owner_is_gone: the rule the locks use); one of another place only after
    FOREIGN_HOST_STALE_S without change. Files whose (device, inode) is in `protect`
    (the inputs of a render) are never removed, whatever their name.
    """
    folder = Path(folder)
    if not folder.is_dir():
        return []
    place = here()
    now = time.time() if now is None else now
    removed = []
    for entry in folder.iterdir():
        match = _TEMP.match(entry.name)
        if match is None or not belongs(match["part"], bool(match["cut"]), match["ext"] or ""):
            continue
        started = match["started"]
        owner = ProcessOwner(int(match["pid"]), match["host"],
                             None if started in (None, "x") else int(started))
        try:
            if entry.is_symlink() or not (entry.is_file() or entry.is_dir()):
                continue
            st = entry.stat()
            if (st.st_dev, st.st_ino) in protect:
                continue
            if owner.place == place:
                if not owner_is_gone(owner):
                    continue
            elif now - st.st_mtime < FOREIGN_HOST_STALE_S:
                continue
            if entry.is_dir():
                shutil.rmtree(entry)
            else:
                entry.unlink()
        except FileNotFoundError:
            continue
        except OSError:  # not ours to remove (permissions): left, as any other file
            continue
        removed.append(entry)
    return removed


def file_ids(paths: Iterable[Path | str]) -> frozenset[tuple[int, int]]:
    """(device, inode) of those of `paths` that exist: what a sweep's `protect` takes."""
    ids = set()
    for path in paths:
        try:
            st = os.stat(path)
        except (OSError, ValueError):
            continue
        ids.add((st.st_dev, st.st_ino))
    return frozenset(ids)


def sweep_leftovers(folder: Path, protect: frozenset[tuple[int, int]] = frozenset()
                    ) -> list[Path]:
    """Remove every temporary (file or scratch folder) named by the rule of this module in
    `folder` whose writer is gone, whatever it was made for: what a killed run of any command
    left there. Every command sweeps each folder it writes into before writing."""
    return sweep_stale_temporaries(folder, lambda part, cut, ext: True, protect)


@contextmanager
def scratch_folder(parent: Path, name: str) -> Iterator[Path]:
    """A fresh hidden scratch folder in `parent`, named as a temporary (``.{name}.{owner}...
    .tmp``) and removed when the block ends however it ends; one a killed run left is swept by
    the next sweep_leftovers of `parent` (done here first)."""
    parent = Path(parent)
    make_folder(parent)
    sweep_leftovers(parent)
    for _ in range(16):
        path = temporary_path(parent / name)
        try:
            path.mkdir()
            break
        except FileExistsError:
            continue
        except OSError as exc:
            raise write_error(parent, exc) from exc
    else:
        raise OutputError(f"no free scratch folder name in {parent}")
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)
