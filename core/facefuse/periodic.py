"""`every`: an action repeated on a thread of its own while a block runs, and once at its end
(the bench's CPU sampling, the render's handing back of freed memory)."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager


@contextmanager
def every(interval_s: float, action: Callable[[], object], name: str) -> Iterator[None]:
    """Call action() every `interval_s` seconds from a daemon thread called `name` while the
    block runs, then once more on the calling thread when it ends (however it ends)."""
    done = threading.Event()

    def repeat() -> None:
        while not done.wait(interval_s):
            action()

    thread = threading.Thread(target=repeat, name=name, daemon=True)
    thread.start()
    try:
        yield
    finally:
        done.set()
        thread.join()
        action()
