"""A lock file that works across processes and machines sharing a folder (farm storage).

Created atomically (a complete record hard-linked to the lock's name, else O_EXCL), so exactly
one process wins. The file holds its owner as JSON: pid, host, the process's start time (Linux:
/proc/<pid>/stat field 22, so a reused pid is told apart), the lock's creation time, a random
token and (Linux) the pid namespace. A waiter on the same host and in the same pid namespace
(not another container) takes a lock whose owner is gone over at once (io.owners.owner_is_gone,
the rule the sweep of temporaries uses too); so is a lock whose record cannot be read (empty,
garbage, a time out of range) once it has gone UNREADABLE_GRACE_S untouched (a record is
complete when the lock's name appears, except where hard links fail and it is written after
O_EXCL: microseconds). Any other lock is broken when its mtime, refreshed by the holder while it
works, is older than stale_s. Taking over is race-free: breakers take turns through a
short-lived `<lock>.break` file and remove the lock only while it still holds the record judged
stale, then the lock is created anew. A folder where no lock can be created (read-only) means
working without the lock, with a warning.
"""

from __future__ import annotations

import json
import logging
import math
import os
import socket
import stat
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from types import TracebackType
from typing import Any, Self

from ..errors import OutputError
from ..io import owners
from ..io.owners import pid_namespace, process_start

__all__ = ["FileLock", "LockOwner", "LockWaitCancelled", "owner_is_gone", "pid_namespace",
           "process_start"]

log = logging.getLogger(__name__)

RECORD_MAX_BYTES = 64 * 1024  # a record is ~200 bytes; more is garbage, read no further
BREAKER_STALE_S = 10.0  # a breaker holds its file for microseconds: older, its process died
UNREADABLE_GRACE_S = 2.0  # an unreadable record untouched this long is no lock being written
LATEST_TIME_S = 253402300799.0  # 9999-12-31 23:59:59 UTC: a later creation time is garbage
MAX_PID = 2**32 - 1  # no system numbers a process higher (pid_t and Windows' DWORD: 32 bits)


class LockWaitCancelled(Exception):
    """The wait for a lock was given up because the caller was cancelled."""


@dataclass(frozen=True, slots=True)
class LockOwner:
    """Who holds a lock: what its file says."""

    pid: int
    host: str
    started: int | None  # the process's start time in clock ticks since boot (Linux), else None
    created: float  # when the lock was taken (seconds since the epoch)
    token: str
    pid_namespace: str | None = None  # Linux: containers sharing a host name have their own pids

    @classmethod
    def current(cls) -> LockOwner:
        pid = os.getpid()
        return cls(pid, socket.gethostname(), process_start(pid), time.time(), uuid.uuid4().hex,
                   pid_namespace())

    def to_json(self) -> str:
        return json.dumps({"pid": self.pid, "host": self.host, "started": self.started,
                           "created": self.created, "token": self.token,
                           "pid_namespace": self.pid_namespace})

    @classmethod
    def from_json(cls, text: str) -> LockOwner | None:
        """The owner a lock file names, or None for an empty or unreadable record."""
        try:
            raw: Any = json.loads(text)
            started, namespace = raw.get("started"), raw.get("pid_namespace")
            owner = cls(int(raw["pid"]), str(raw["host"]),
                        int(started) if started is not None else None, float(raw["created"]),
                        str(raw.get("token", "")), str(namespace) if namespace else None)
        except (ValueError, TypeError, KeyError, AttributeError, OverflowError, RecursionError):
            return None
        in_range = math.isfinite(owner.created) and 0.0 <= owner.created <= LATEST_TIME_S
        if not 0 < owner.pid <= MAX_PID or not in_range or (
                owner.started is not None and owner.started < 0):
            return None
        return owner

    @property
    def process(self) -> owners.ProcessOwner:
        """The owner as the shared owner rule (io.owners) sees it."""
        return owners.ProcessOwner(self.pid, owners.place_tag(self.host, self.pid_namespace),
                                   self.started)

    def describe(self) -> str:
        since = datetime.fromtimestamp(self.created).isoformat(sep=" ", timespec="seconds")
        return f"pid {self.pid} on host {self.host} since {since}"


def owner_is_gone(owner: LockOwner) -> bool:
    """Whether the owner, on this host and in this pid namespace, certainly no longer runs (its
    pid is dead, or now belongs to a process started at another time): io.owners.owner_is_gone."""
    return owners.owner_is_gone(owner.process)


class FileLock:
    """An exclusive lock file (O_EXCL) naming its owner; see the module docstring.

    Use as a context manager; call `refresh` while working so waiting processes on other hosts
    see it is alive. `cancelled`, polled while waiting, makes entering raise LockWaitCancelled.
    `what` names what the lock guards in the waiting message (default: the lock file's stem).
    """

    def __init__(self, path: Path, stale_s: float, poll_s: float = 0.1,
                 cancelled: Callable[[], bool] | None = None, what: str | None = None) -> None:
        self.path = Path(path)
        self._stale_s = stale_s
        self._poll_s = poll_s
        self._cancelled = cancelled
        self._what = what or self.path.stem
        self._refreshed = 0.0
        self._owner: LockOwner | None = None
        self.held = False  # False also while working without a lock (a read-only folder)

    def __enter__(self) -> Self:
        waited = False
        while not self._try_create():
            if self._cancelled is not None and self._cancelled():
                raise LockWaitCancelled(f"stopped waiting for {self.path}")
            text = _read(self.path)
            if text is None:  # released meanwhile, or no lock file at all
                self._check_lock_path()
                continue
            owner = LockOwner.from_json(text)
            if owner is not None and owner_is_gone(owner):
                log.warning("taking over the lock %s: its owner, %s, no longer runs",
                            self.path, owner.describe())
                self._take_over(text)
                continue
            if owner is None and _complete_record(text):
                log.warning("taking over the lock %s: its record names no process that can "
                            "exist (%.60r)", self.path, text)
                self._take_over(text)
                continue
            if owner is None and self._unreadable_and_left(text):
                continue
            if not waited:
                holder = owner.describe() if owner is not None else "another process"
                log.warning("waiting for %s held by %s", self._what, holder)
                waited = True
            self._break_if_stale(text)
            time.sleep(self._poll_s)
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        if self.held and self._owner is not None:
            text = _read(self.path)
            mine = text is not None and (LockOwner.from_json(text) or _NOBODY).token \
                == self._owner.token
            if mine:  # a lock broken as stale and taken by another is theirs now
                self.path.unlink(missing_ok=True)
        self.held = False

    def refresh(self) -> None:
        """Touch the lock so waiting processes see it is alive (at most every stale_s / 4)."""
        now = time.monotonic()
        if self.held and now - self._refreshed >= self._stale_s / 4:
            self._refreshed = now
            try:
                os.utime(self.path)
            except OSError:
                log.debug("could not refresh the lock %s", self.path)

    def _try_create(self) -> bool:
        """Create the lock holding this process's owner record; False when another holds it.

        The record is written to a unique file first and hard-linked to the lock's name (atomic,
        fails when the name exists), so a waiter never reads a half-written record; where hard
        links are not supported the lock is created with O_EXCL and then written."""
        owner = LockOwner.current()
        record = self.path.with_name(f".{self.path.name}.{owner.token}.tmp")
        try:
            record.write_text(owner.to_json(), encoding="utf-8")
        except OSError as exc:
            return self._without_lock(exc)
        try:
            os.link(record, self.path)
        except FileExistsError:
            return False
        except OSError:
            if not self._create_exclusive(owner):
                return False
        finally:
            record.unlink(missing_ok=True)
        self._owner = owner
        self.held = True
        self._refreshed = time.monotonic()
        return True

    def _create_exclusive(self, owner: LockOwner) -> bool:
        try:
            fd = os.open(self.path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
        except OSError:  # FileExistsError, or Windows: a lock file being deleted
            return False
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(owner.to_json())
        return True

    def _without_lock(self, exc: OSError) -> bool:
        log.warning("cannot create the lock file %s (%s); going on without the lock, so another "
                    "process may do the same work at the same time",
                    self.path, exc.strerror or exc)
        self.held = False
        return True

    def _check_lock_path(self) -> None:
        """OutputError when the lock's name is taken by something no lock is (a folder, a
        FIFO, a device): nobody releases it, so waiting would never end."""
        try:
            mode = os.stat(self.path).st_mode  # links followed, as _read follows them
        except FileNotFoundError:
            if not os.path.islink(self.path):
                return  # released meanwhile
            kind = "a symbolic link to nothing"
        except OSError as exc:
            kind = f"a name facefuse cannot look at ({exc.strerror or exc})"
        else:
            if stat.S_ISREG(mode) and os.access(self.path, os.R_OK):
                return  # released and taken again meanwhile: read it on the next turn
            kind = ("a file facefuse cannot read" if stat.S_ISREG(mode) else "a folder"
                    if stat.S_ISDIR(mode) else "a FIFO, socket or device")
        raise OutputError(f"the lock file {self.path} is {kind}, not a lock facefuse made: "
                          "remove it and run again")

    def _unreadable_and_left(self, text: str) -> bool:
        """Take over a lock whose record cannot be read (empty, garbage, a time out of range)
        once it has gone UNREADABLE_GRACE_S untouched: no live holder leaves it so (a record
        is whole before the lock's name appears, or written just after O_EXCL). True when
        taken over."""
        try:
            age = time.time() - self.path.stat().st_mtime
        except FileNotFoundError:
            return True  # released meanwhile: try again
        if age < UNREADABLE_GRACE_S:
            return False
        log.warning("taking over the lock %s: its record is empty or unreadable (%d bytes), "
                    "so no running facefuse holds it", self.path, len(text))
        self._take_over(text)
        return True

    def _break_if_stale(self, text: str) -> None:
        try:
            age = time.time() - self.path.stat().st_mtime
        except FileNotFoundError:
            return
        if age > self._stale_s:
            log.warning("breaking the stale lock %s (untouched for %.0f s)", self.path, age)
            self._take_over(text)

    def _take_over(self, judged: str) -> None:
        """Remove the lock file if it still holds `judged` (the record found stale).

        Breakers take turns through a second lock file beside it (`<lock>.break`, held for the
        few microseconds a read and an unlink take), and the lock is removed only when it still
        holds the judged record: a lock another waiter created meanwhile (a new record, a new
        token) is never removed, and the lock's name is never missing while it is alive."""
        breaker = self.path.with_name(self.path.name + ".break")
        try:
            fd = os.open(breaker, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
        except FileExistsError:
            _remove_if_older(breaker, BREAKER_STALE_S)  # a breaker killed while breaking
            return
        except OSError:
            return
        os.close(fd)
        try:
            if _read(self.path) == judged:
                self.path.unlink(missing_ok=True)
        finally:
            breaker.unlink(missing_ok=True)


def _remove_if_older(path: Path, age_s: float) -> None:
    try:
        if time.time() - path.stat().st_mtime > age_s:
            path.unlink(missing_ok=True)
    except OSError:
        return


_NOBODY = LockOwner(0, "", None, 0.0, "")


def _complete_record(text: str) -> bool:
    """Whether `text` is a whole JSON object (a record written completely, whatever it names):
    one from_json cannot read names no owner (a pid of 2**70, negative or not a number), so
    no process that can exist holds it. A record being written is not whole JSON yet."""
    try:
        return isinstance(json.loads(text), dict)
    except (ValueError, RecursionError):
        return False


def _read(path: Path) -> str | None:
    """The lock's record; None when there is none or the name is not a regular file (opened
    without blocking, so a FIFO there never blocks the reader)."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        return os.read(fd, RECORD_MAX_BYTES).decode("utf-8", errors="replace")
    except OSError:
        return None
    finally:
        os.close(fd)
