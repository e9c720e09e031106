"""One lock rule for impossible owners and odd lock paths (issue 34, class 3): a whole record
naming a pid no process can have (2**70, 2**40, negative, not a number) is stale at once, on
this host or another, fresh or old, never waited on for stale_s; a lock name taken by a folder,
a FIFO or a device is one sentence at once (OutputError, exit 6), never a wait that does not
end, and a FIFO there is never opened for a blocking read.
"""

from __future__ import annotations

import json
import os
import socket
import time
from pathlib import Path

import pytest

from facefuse.cache.locking import FileLock, LockOwner
from facefuse.errors import ExitCode, OutputError
from facefuse.io.owners import ProcessOwner, owner_is_gone

pytestmark = pytest.mark.timeout(20)


def _record(pid: object, host: str) -> str:
    return json.dumps({"pid": pid, "host": host, "started": None, "created": time.time(),
                       "token": "t", "pid_namespace": None})


def _take(path: Path) -> float:
    """Seconds FileLock took to get `path` (a wait past 5 s is cancelled: the test fails)."""
    started = time.monotonic()
    deadline = started + 5.0
    with FileLock(path, stale_s=120.0, poll_s=0.02,
                  cancelled=lambda: time.monotonic() > deadline) as lock:
        assert lock.held
    return time.monotonic() - started


@pytest.mark.parametrize("host", ["here", "another host"])
@pytest.mark.parametrize("pid", [2**70, 2**40, 2**32, -5, "abc", None, 1.5e300])
def test_a_fresh_record_naming_an_impossible_pid_is_taken_over_at_once(
        tmp_path: Path, pid: object, host: str) -> None:
    path = tmp_path / "shot.lock"
    path.write_text(_record(pid, socket.gethostname() if host == "here" else "farm-07"))
    assert _take(path) < 1.0  # not UNREADABLE_GRACE_S, not stale_s
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("pid", [2**31, 2**63 + 1])
def test_a_pid_past_pid_t_is_a_gone_owner_not_an_overflow(pid: int) -> None:
    assert owner_is_gone(ProcessOwner(pid, ProcessOwner.current().place, None))


def test_a_record_being_written_is_still_given_its_grace(tmp_path: Path) -> None:
    """Half a record (the O_EXCL fallback writes it just after the name appears) is no whole
    JSON object: it keeps its grace, so a live writer is never robbed."""
    path = tmp_path / "shot.lock"
    path.write_text(_record(os.getpid(), socket.gethostname())[:20])
    assert LockOwner.from_json(path.read_text()) is None
    assert _take(path) >= 1.0


@pytest.mark.parametrize("kind", ["folder", "fifo", "folder with files", "link to a folder",
                                  "link to nothing"])
def test_a_lock_path_that_is_not_a_file_is_one_sentence_at_once(tmp_path: Path,
                                                                 kind: str) -> None:
    path = tmp_path / "shot.lock"
    if kind == "fifo":
        os.mkfifo(path)
    elif kind.startswith("link"):
        (tmp_path / "elsewhere").mkdir()
        path.symlink_to(tmp_path / ("elsewhere" if kind == "link to a folder" else "gone"))
    else:
        path.mkdir()
        if kind == "folder with files":
            (path / "x").write_text("mine")
    started = time.monotonic()
    deadline = started + 5.0
    with pytest.raises(OutputError, match=r"the lock file .*shot\.lock is (a folder|a FIFO|a "
                       r"symbolic link to nothing)") \
            as caught, FileLock(path, stale_s=120.0, poll_s=0.02,
                                cancelled=lambda: time.monotonic() > deadline):
        pass
    assert time.monotonic() - started < 1.0
    assert caught.value.exit_code == ExitCode.OUTPUT and "\n" not in str(caught.value)
    assert os.path.lexists(path) and (kind != "folder with files" or (path / "x").exists())
