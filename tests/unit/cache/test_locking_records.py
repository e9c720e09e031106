"""A lock whose record cannot be read is judged like a dead owner's (issue 24, items 14 and 16):
an empty, garbage or out-of-range record (a creation time past year 9999, NaN, an infinite start
time) is taken over after FileLock's short grace, not waited on for stale_s (120 s for the
analysis) and never fatal. The grace keeps the race care: a record just created (the O_EXCL
fallback writes it a moment after the name appears) is waited on."""

from __future__ import annotations

import json
import logging
import os
import socket
import time
from pathlib import Path

import pytest

from facefuse.cache.locking import UNREADABLE_GRACE_S, FileLock, LockOwner, LockWaitCancelled

GARBAGE = {"empty": "", "blank": " \n", "text": "garbage", "empty object": "{}",
           "list": "[1, 2]", "truncated": '{"pid": 12, "host": "', "binary": "\x00\x01\xff",
           "pid not a number": '{"pid": "x", "host": "h", "created": 1}',
           "pid 0": '{"pid": 0, "host": "h", "created": 1.0}',
           "pid -1": '{"pid": -1, "host": "h", "created": 1.0}'}


def _record(**changes: object) -> str:
    record = {"pid": 999_999, "host": socket.gethostname(), "started": None,
              "created": time.time(), "token": "t", "pid_namespace": None, **changes}
    return json.dumps(record).replace('"INF"', "1e400")


OUT_OF_RANGE = {"created 1e300": _record(created=1e300), "created -1e300": _record(created=-1e300),
                "created NaN": _record(created=float("nan")),
                "created Infinity": _record(created=float("inf")),
                "started 1e400": _record(started="INF")}


def _aged(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    old = time.time() - UNREADABLE_GRACE_S - 1
    os.utime(path, (old, old))
    return path


@pytest.mark.parametrize("text", [*GARBAGE.values(), *OUT_OF_RANGE.values()],
                         ids=[*GARBAGE, *OUT_OF_RANGE])
def test_an_unreadable_record_is_taken_over_at_once(tmp_path: Path, text: str,
                                                    caplog: pytest.LogCaptureFixture) -> None:
    path = _aged(tmp_path / "shot.lock", text)
    assert LockOwner.from_json(text) is None
    started = time.monotonic()
    deadline = started + 10.0
    with caplog.at_level(logging.WARNING), FileLock(
            path, stale_s=120.0, poll_s=0.02,
            cancelled=lambda: time.monotonic() > deadline) as lock:
        assert lock.held
    assert time.monotonic() - started < 5.0
    assert "empty or unreadable" in caplog.text or "names no process" in caplog.text
    assert list(tmp_path.iterdir()) == []


def test_a_record_being_written_is_waited_on(tmp_path: Path) -> None:
    path = tmp_path / "shot.lock"
    path.write_text("", encoding="utf-8")  # just created: its writer may be writing it
    deadline = time.monotonic() + min(0.5, UNREADABLE_GRACE_S / 2)
    with pytest.raises(LockWaitCancelled):
        FileLock(path, stale_s=120.0, poll_s=0.02,
                 cancelled=lambda: time.monotonic() > deadline).__enter__()
    assert path.exists()


def test_a_lock_replaced_while_judged_is_left_to_its_new_owner(tmp_path: Path) -> None:
    """The takeover removes the lock only if it still holds the record judged unreadable."""
    path = _aged(tmp_path / "shot.lock", "garbage")
    lock = FileLock(path, stale_s=120.0)
    fresh = LockOwner.current().to_json()
    path.write_text(fresh, encoding="utf-8")
    lock._take_over("garbage")
    assert path.read_text(encoding="utf-8") == fresh


def test_a_readable_record_in_range_still_names_its_owner() -> None:
    owner = LockOwner.from_json(_record(created=1.7e9, started=123))
    assert owner is not None and owner.started == 123 and "since 20" in owner.describe()
