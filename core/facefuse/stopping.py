"""SIGTERM and SIGINT stop every entry point the same way: the one decision, written once.

While `stop_signals()` runs, either signal sets a Stop instead of killing the process: the work
polls `stop.is_set` (the render's `cancel`) between frames and phases, ends what it started
(complete files kept under their final names, scratch and temporaries removed, locks released)
and the entry point exits with `stop.exit_code`: 143 for SIGTERM (a farm's or a host's cancel),
130 for SIGINT (Ctrl-C). A second SIGINT while stopping raises KeyboardInterrupt, for a user who
will not wait (the with-blocks still clean up on the way out). Blocks nest: an inner one shares
the outer's Stop, so a command that runs several renders stops once, with one code. Outside the
main thread (where no handler can be set) the Stop is never set, and a signal the process was
started ignoring (nohup, a shell's background job) stays ignored.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from types import FrameType, MappingProxyType

from .errors import ExitCode

SIGNALS = (signal.SIGTERM, signal.SIGINT)
_CODES: Mapping[int, ExitCode] = MappingProxyType({signal.SIGTERM: ExitCode.TERMINATED,
                                                   signal.SIGINT: ExitCode.INTERRUPTED})


class Cancelled(Exception):
    """Work its cancel callback stopped before it finished; nothing half-written is left."""


def stopped_exit_code(terminated: bool) -> ExitCode:
    """The exit code of work a signal stopped: 143 after SIGTERM (`terminated`), else 130."""
    return _CODES[signal.SIGTERM if terminated else signal.SIGINT]


class Stop:
    """Whether (and by which signal) the work was asked to stop."""

    def __init__(self) -> None:
        self._event = threading.Event()
        self.signal: int | None = None

    def is_set(self) -> bool:
        """The cancel callback the engine polls."""
        return self._event.is_set()

    def set(self, signum: int) -> None:
        if self.signal is None:
            self.signal = signum
        self._event.set()

    @property
    def exit_code(self) -> ExitCode:
        """143 after SIGTERM, 130 after SIGINT (OK when no signal came)."""
        return _CODES.get(self.signal, ExitCode.OK) if self.signal is not None else ExitCode.OK

    @property
    def name(self) -> str:
        """'SIGTERM' or 'SIGINT' (how a message names what stopped the work)."""
        return signal.Signals(self.signal).name if self.signal is not None else "nothing"

    @property
    def terminated(self) -> bool:
        """Whether SIGTERM (not Ctrl-C) stopped the work."""
        return self.signal == signal.SIGTERM


class _Handler:
    """The handler installed for both signals: sets the Stop; a second SIGINT interrupts."""

    def __init__(self, stop: Stop) -> None:
        self.stop = stop

    def __call__(self, signum: int, frame: FrameType | None) -> None:
        if signum == signal.SIGINT and self.stop.signal == signal.SIGINT:
            raise KeyboardInterrupt
        self.stop.set(signum)


@contextmanager
def stop_signals() -> Iterator[Stop]:
    """A Stop set by SIGTERM or SIGINT while the block runs (see the module docstring); the
    previous handlers come back after it."""
    current = signal.getsignal(signal.SIGTERM)
    if isinstance(current, _Handler):  # nested: the outer block's Stop
        yield current.stop
        return
    stop = Stop()
    handler = _Handler(stop)
    try:  # a signal the process was started ignoring (nohup, a background job) stays ignored
        previous = {signum: signal.signal(signum, handler) for signum in SIGNALS
                    if signal.getsignal(signum) is not signal.SIG_IGN}
    except ValueError:  # not the main thread: no handler can be set here
        yield stop
        return
    try:
        yield stop
    finally:
        for signum, old in previous.items():
            signal.signal(signum, old)
