"""A lock file that works across processes and machines sharing a folder (farm storage).

Created with O_EXCL, so exactly one process wins; the holder refreshes its mtime while it works,
and a lock left untouched for longer than stale_s (its holder died) is broken.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable
from pathlib import Path
from types import TracebackType
from typing import Self

log = logging.getLogger(__name__)


class LockWaitCancelled(Exception):
    """The wait for a lock was given up because the caller was cancelled."""


class FileLock:
    """An exclusive lock file (O_EXCL); a lock not refreshed for stale_s seconds is broken.

    Use as a context manager; call `refresh` while working so waiting processes see it is alive.
    `cancelled`, polled while waiting, makes entering raise LockWaitCancelled.
    """

    def __init__(self, path: Path, stale_s: float, poll_s: float = 0.1,
                 cancelled: Callable[[], bool] | None = None) -> None:
        self.path = path
        self._stale_s = stale_s
        self._poll_s = poll_s
        self._cancelled = cancelled
        self._refreshed = 0.0

    def __enter__(self) -> Self:
        waited = False
        while not self._try_create():
            if self._cancelled is not None and self._cancelled():
                raise LockWaitCancelled(f"stopped waiting for {self.path}")
            if not waited:
                log.info("waiting for another process to finish writing %s", self.path.stem)
                waited = True
            self._break_if_stale()
            time.sleep(self._poll_s)
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.path.unlink(missing_ok=True)

    def refresh(self) -> None:
        """Touch the lock so waiting processes see it is alive (at most every stale_s / 4)."""
        now = time.monotonic()
        if now - self._refreshed >= self._stale_s / 4:
            self._refreshed = now
            try:
                os.utime(self.path)
            except OSError:
                log.debug("could not refresh the lock %s", self.path)

    def _try_create(self) -> bool:
        try:
            fd = os.open(self.path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
        except FileExistsError:
            return False
        with os.fdopen(fd, "w") as handle:
            handle.write(f"{os.getpid()}\n")
        self._refreshed = time.monotonic()
        return True

    def _break_if_stale(self) -> None:
        try:
            age = time.time() - self.path.stat().st_mtime
        except FileNotFoundError:
            return
        if age > self._stale_s:
            log.warning("removing the stale lock %s (untouched for %.0f s)", self.path, age)
            self.path.unlink(missing_ok=True)
