"""Read -> process -> write in three threads joined by bounded queues.

Decoding and encoding overlap inference while at most 2 * depth items are in flight, so memory
stays flat however long the shot is. The caller's process() runs on the calling thread (ONNX
Runtime sessions stay on one thread); an exception in any stage stops the others and is raised.
`prefetch` is the reading half alone: an iterator whose items a worker thread produces ahead.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable, Generator, Iterable, Iterator
from typing import TypeVar

In = TypeVar("In")
Out = TypeVar("Out")

_END = object()
_POLL_S = 0.1


class _Stage:
    """A worker thread that remembers the first exception it raised."""

    def __init__(self, target: Callable[[], None], name: str) -> None:
        self.error: BaseException | None = None
        self._target = target
        self.thread = threading.Thread(target=self._run, name=name, daemon=True)

    def _run(self) -> None:
        try:
            self._target()
        except BaseException as exc:  # noqa: BLE001 - handed to the calling thread to re-raise
            self.error = exc


def _put(q: queue.Queue[object], item: object, alive: Callable[[], bool]) -> bool:
    """Put as soon as there is room, unless alive() turns False first (then returns False)."""
    while alive():
        try:
            q.put(item, timeout=_POLL_S)
            return True
        except queue.Full:
            continue
    return False


def stream(source: Iterator[In], process: Callable[[In], Out], sink: Callable[[Out], None],
           cancelled: Callable[[], bool] = lambda: False, depth: int = 4) -> bool:
    """Run every source item through process() into sink(), in order.

    Returns True when the source was exhausted, False when cancelled() stopped it early; items
    already processed are still handed to sink() before returning.
    """
    inbox: queue.Queue[object] = queue.Queue(maxsize=depth)
    outbox: queue.Queue[object] = queue.Queue(maxsize=depth)
    stop = threading.Event()

    def write() -> None:
        while (item := outbox.get()) is not _END:
            sink(item)  # type: ignore[arg-type]

    reader = _Stage(lambda: _feed(source, inbox, stop), "facefuse-read")
    writer = _Stage(write, "facefuse-write")
    reader.thread.start()
    writer.thread.start()
    writer_alive = writer.thread.is_alive
    finished = False
    try:
        while True:
            item = inbox.get()
            if item is _END or cancelled() or not writer_alive():
                finished = item is _END
                break
            if not _put(outbox, process(item), writer_alive):  # type: ignore[arg-type]
                break
    finally:
        stop.set()
        _drain(inbox)
        _put(outbox, _END, writer_alive)
        writer.thread.join()
        reader.thread.join()
    for stage in (reader, writer):
        if stage.error is not None:
            raise stage.error
    return finished


def _feed(source: Iterable[object], inbox: queue.Queue[object], stop: threading.Event) -> None:
    """Put every item of `source`, then the end marker, into `inbox` until `stop` is set."""
    def running() -> bool:
        return not stop.is_set()

    try:
        for item in source:
            if not _put(inbox, item, running):
                return
    finally:
        _put(inbox, _END, running)


def _drain(q: queue.Queue[object]) -> None:
    """Empty a queue so a producer blocked on it can notice the stop and leave."""
    while True:
        try:
            q.get_nowait()
        except queue.Empty:
            return


def prefetch(source: Iterable[In], depth: int = 4) -> Generator[In, None, None]:
    """The items of `source` in order, produced by a worker thread up to `depth` ahead of the
    consumer (so decoding overlaps whatever the consumer does with each item). An exception in
    the worker is raised here; closing the iterator early stops the worker and closes `source`
    when it is a generator (so a file it holds open is released at once)."""
    inbox: queue.Queue[object] = queue.Queue(maxsize=depth)
    stop = threading.Event()

    reader = _Stage(lambda: _feed(source, inbox, stop), "facefuse-prefetch")
    reader.thread.start()
    try:
        while (item := inbox.get()) is not _END:
            yield item  # type: ignore[misc]
    finally:
        stop.set()
        _drain(inbox)
        reader.thread.join()
        if isinstance(source, Generator):
            source.close()
    if reader.error is not None:
        raise reader.error
