"""Who wrote a file that says so, and whether that writer still runs: the one owner rule.

Lock records (cache.locking) and temporary names (io.files) both name their writer: its pid,
its place (the host and, on Linux, the pid namespace: containers sharing a host name number
their processes on their own) and the process's start time (Linux: /proc/<pid>/stat field 22,
so a reused pid is told apart). A writer is gone only when it ran in this very place and its
pid is dead (a zombie too: killed, not yet reaped by its parent) or now belongs to a process
started at another time; a writer elsewhere is never judged by its pid (callers fall back to
how long the file has gone untouched).
"""

from __future__ import annotations

import hashlib
import os
import socket
from dataclasses import dataclass
from pathlib import Path

PROC_STAT_START_FIELD = 22  # starttime, in clock ticks since boot (man 5 proc)
PROC_STAT_STATE_FIELD = 3  # state: Z is a zombie (ended, not yet reaped), X dead
_ENDED_STATES = frozenset("ZX")


def process_start(pid: int) -> int | None:
    """The start time of process pid in clock ticks since boot (Linux only; None elsewhere or
    when the process does not exist)."""
    fields = _stat_fields(pid)
    try:
        return int(fields[PROC_STAT_START_FIELD - 3])
    except (IndexError, ValueError):
        return None


def process_ended(pid: int) -> bool:
    """Whether process pid has ended though its pid still shows (Linux: a zombie)."""
    fields = _stat_fields(pid)
    return bool(fields) and fields[PROC_STAT_STATE_FIELD - 3] in _ENDED_STATES


def _stat_fields(pid: int) -> list[str]:
    """The fields of /proc/<pid>/stat after the name (field 3 first); [] where there is none."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text(encoding="ascii", errors="replace")
    except OSError:
        return []
    return text[text.rfind(")") + 2:].split()  # the name in parentheses may hold spaces


def pid_namespace() -> str | None:
    """This process's pid namespace (Linux: e.g. 'pid:[4026531836]'), else None."""
    try:
        return os.readlink("/proc/self/ns/pid")
    except (OSError, AttributeError):
        return None


def place_tag(host: str, namespace: str | None) -> str:
    """8 hex digits naming a host and pid namespace (what a temporary's name records)."""
    text = host if namespace is None else f"{host}\0{namespace}"
    return hashlib.sha256(text.encode("utf-8", "replace")).hexdigest()[:8]


def here() -> str:
    """The place tag of this process."""
    return place_tag(socket.gethostname(), pid_namespace())


@dataclass(frozen=True, slots=True)
class ProcessOwner:
    """A writer as a file records it: pid, place tag (place_tag) and start time (or None)."""

    pid: int
    place: str
    started: int | None

    @classmethod
    def current(cls) -> ProcessOwner:
        pid = os.getpid()
        return cls(pid, here(), process_start(pid))


def owner_is_gone(owner: ProcessOwner) -> bool:
    """Whether the owner, in this place (host and pid namespace), certainly no longer runs: its
    pid is dead, or now belongs to a process started at another time. False for an owner in
    another place, or where no safe signal-0 probe exists (not POSIX)."""
    if owner.place != here() or os.name != "posix":
        return False
    if owner.pid <= 0:
        return True  # no process writes with pid 0 (and a signal to it reaches a group)
    try:
        os.kill(owner.pid, 0)
    except (ProcessLookupError, OverflowError):  # OverflowError: past pid_t, no such process
        return True
    except OSError:
        pass  # alive, run by another user (PermissionError), or cannot tell
    if process_ended(owner.pid):
        return True
    now_started = process_start(owner.pid)
    return owner.started is not None and now_started is not None and now_started != owner.started
