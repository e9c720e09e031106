"""What the command line prints is a report on the work, never the work itself: a reader that
goes away (`facefuse render --progress json | head -2`, a closed terminal) stops the lines on
that stream, not the render. `reports_only()` wraps stdout and stderr for one command: the first
write or flush that finds the pipe closed (BrokenPipeError) makes the stream drop every later
line, and points its file descriptor at os.devnull so that nothing buffered fails again when
the interpreter exits. Any other write error is left to the caller.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import Any, TextIO

from .printable import printable


class ReportStream:
    """A text stream whose writes end quietly once its reader has gone (see the module
    docstring); everything else is the wrapped stream's."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream
        self.gone = False

    def write(self, text: str) -> int:
        if not self.gone:
            try:
                return self.stream.write(printable(text))  # user data never steers a terminal
            except BrokenPipeError:
                self._lose_reader()
        return len(text)

    def writelines(self, lines: Iterable[str]) -> None:
        for line in lines:
            self.write(line)

    def flush(self) -> None:
        if not self.gone:
            try:
                self.stream.flush()
            except BrokenPipeError:
                self._lose_reader()

    def _lose_reader(self) -> None:
        self.gone = True
        try:
            descriptor = self.stream.fileno()
        except (OSError, ValueError, AttributeError):  # an in-memory stream has none
            return
        devnull = os.open(os.devnull, os.O_WRONLY)
        try:
            os.dup2(devnull, descriptor)
        finally:
            os.close(devnull)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.stream, name)


@contextmanager
def reports_only() -> Iterator[None]:
    """sys.stdout and sys.stderr as ReportStreams while the block runs (restored after)."""
    saved = sys.stdout, sys.stderr
    sys.stdout = ReportStream(saved[0])  # type: ignore[assignment]
    sys.stderr = ReportStream(saved[1])  # type: ignore[assignment]
    try:
        yield
    finally:
        sys.stdout, sys.stderr = saved
