"""cache.locking.FileLock knows its owner (issue 8, item 5): a lock left by a process that is gone
(SIGKILL) or whose pid now belongs to another process is taken over at once; a live owner is
waited on with one warning naming it; takeover is race-free; a folder where no lock can be made
means working without it, with a warning."""

from __future__ import annotations

import json
import logging
import os
import socket
import subprocess
import sys
import threading
import time
from dataclasses import replace
from pathlib import Path

import pytest

from facefuse.cache.locking import (
    FileLock,
    LockOwner,
    LockWaitCancelled,
    pid_namespace,
    process_start,
)


def _dead_pid() -> int:
    """The pid of a process that has exited (and been reaped)."""
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def _write_owner(path: Path, owner: LockOwner) -> None:
    path.write_text(owner.to_json(), encoding="utf-8")


def test_the_lock_file_names_its_owner(tmp_path: Path) -> None:
    path = tmp_path / "x.lock"
    with FileLock(path, stale_s=60.0) as lock:
        record = json.loads(path.read_text(encoding="utf-8"))
        assert lock.held
        assert record["pid"] == os.getpid() and record["host"] == socket.gethostname()
        assert record["created"] <= time.time() and record["token"]
        if sys.platform.startswith("linux"):
            assert record["started"] == process_start(os.getpid()) is not None
    assert not path.exists() and list(tmp_path.iterdir()) == []


@pytest.mark.skipif(os.name != "posix", reason="the owner probe uses signal 0 (POSIX)")
def test_a_lock_whose_owner_died_is_taken_over_at_once(tmp_path: Path,
                                                       caplog: pytest.LogCaptureFixture) -> None:
    path = tmp_path / "shot.lock"
    dead = LockOwner(_dead_pid(), socket.gethostname(), None, time.time(), "t", pid_namespace())
    _write_owner(path, dead)  # fresh mtime: the old 120 s staleness rule would wait
    started = time.monotonic()
    with caplog.at_level(logging.WARNING), FileLock(path, stale_s=120.0) as lock:
        assert lock.held
    assert time.monotonic() - started < 5.0
    assert f"pid {dead.pid}" in caplog.text and "no longer runs" in caplog.text
    assert list(tmp_path.iterdir()) == []


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="start times from /proc")
def test_a_reused_pid_is_told_apart_by_its_start_time(tmp_path: Path) -> None:
    path = tmp_path / "m.onnx.lock"
    mine = LockOwner.current()
    assert mine.started is not None
    _write_owner(path, replace(mine, started=mine.started - 1))  # same pid, another process
    started = time.monotonic()
    with FileLock(path, stale_s=120.0) as lock:
        assert lock.held
    assert time.monotonic() - started < 5.0


def test_a_live_owner_is_waited_on_with_one_message_naming_it(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    path = tmp_path / "shot.lock"
    holder = LockOwner.current()  # this process: alive
    _write_owner(path, holder)
    deadline = time.monotonic() + 0.6
    lock = FileLock(path, stale_s=120.0, poll_s=0.02, what="the analysis of shot",
                    cancelled=lambda: time.monotonic() > deadline)
    with caplog.at_level(logging.WARNING), pytest.raises(LockWaitCancelled):
        lock.__enter__()
    waits = [r.getMessage() for r in caplog.records if "waiting for" in r.getMessage()]
    assert len(waits) == 1, waits
    assert waits[0].startswith(f"waiting for the analysis of shot held by pid {os.getpid()} "
                               f"on host {socket.gethostname()} since ")
    assert LockOwner.from_json(path.read_text(encoding="utf-8")) == holder  # left alone


@pytest.mark.parametrize("other", [
    LockOwner(1, "another-host.invalid", None, time.time(), "t"),
    LockOwner(999_999_999, socket.gethostname(), None, time.time(), "t", "pid:[another container]"),
], ids=["another host", "another pid namespace"])
def test_another_hosts_lock_keeps_the_staleness_rule(tmp_path: Path, other: LockOwner) -> None:
    path = tmp_path / "m.onnx.lock"
    _write_owner(path, other)
    deadline = time.monotonic() + 0.3
    with pytest.raises(LockWaitCancelled):  # fresh: waited on, even though pid 1 means nothing
        FileLock(path, stale_s=60.0, poll_s=0.02,
                 cancelled=lambda: time.monotonic() > deadline).__enter__()
    old = time.time() - 600
    os.utime(path, (old, old))
    with FileLock(path, stale_s=60.0, poll_s=0.02) as lock:  # untouched for 600 s: broken
        assert lock.held


@pytest.mark.skipif(os.name != "posix", reason="the owner probe uses signal 0 (POSIX)")
def test_several_waiters_never_both_take_over_a_dead_lock(tmp_path: Path) -> None:
    path = tmp_path / "shot.lock"
    _write_owner(path, LockOwner(_dead_pid(), socket.gethostname(), None, time.time(), "t",
                                 pid_namespace()))
    inside: list[int] = []
    most: list[int] = []
    guard = threading.Lock()
    errors: list[BaseException] = []

    def work() -> None:
        try:
            with FileLock(path, stale_s=120.0, poll_s=0.005):
                with guard:
                    inside.append(1)
                    most.append(len(inside))
                time.sleep(0.02)
                with guard:
                    inside.pop()
        except BaseException as exc:  # noqa: BLE001 (reported by the assertion below)
            errors.append(exc)

    threads = [threading.Thread(target=work) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=20)
    assert errors == [] and len(most) == 8 and max(most) == 1
    assert list(tmp_path.iterdir()) == []


def test_leaving_does_not_remove_a_lock_another_process_took_over(tmp_path: Path) -> None:
    path = tmp_path / "x.lock"
    with FileLock(path, stale_s=60.0):
        _write_owner(path, replace(LockOwner.current(), token="theirs"))
    assert LockOwner.from_json(path.read_text(encoding="utf-8")).token == "theirs"  # type: ignore[union-attr]


def test_an_unwritable_folder_means_working_without_the_lock(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        caplog: pytest.LogCaptureFixture) -> None:
    """A read-only analysis or models folder. The tests run as root, where chmod 0o555 does not
    stop writes, so the write of the lock's record is made to fail with PermissionError."""
    def refuse(self: Path, *args: object, **kwargs: object) -> int:
        raise PermissionError(13, "Permission denied", str(self))

    monkeypatch.setattr(Path, "write_text", refuse)
    path = tmp_path / "shot.lock"
    with caplog.at_level(logging.WARNING), FileLock(path, stale_s=60.0) as lock:
        assert not lock.held
        lock.refresh()
    assert "going on without the lock" in caplog.text and str(path) in caplog.text
    assert not path.exists()


@pytest.mark.skipif(os.name != "posix", reason="SIGKILL and the signal-0 probe are POSIX")
def test_a_lock_left_by_a_sigkilled_process_is_taken_over_at_once(tmp_path: Path) -> None:
    path = tmp_path / "m.onnx.lock"
    code = ("import sys, time; from pathlib import Path; from facefuse.cache.locking import "
            "FileLock\nwith FileLock(Path(sys.argv[1]), stale_s=120.0):\n"
            "    print('held', flush=True); time.sleep(60)\n")
    child = subprocess.Popen([sys.executable, "-c", code, str(path)], stdout=subprocess.PIPE,
                             text=True)
    try:
        assert child.stdout is not None and child.stdout.readline().strip() == "held"
    finally:
        child.kill()
        child.wait()
    record = LockOwner.from_json(path.read_text(encoding="utf-8"))
    assert record is not None and record.pid == child.pid
    started = time.monotonic()
    with FileLock(path, stale_s=120.0) as lock:
        assert lock.held
    assert time.monotonic() - started < 5.0
