"""Read -> process -> write in three threads joined by bounded queues.

Decoding and encoding overlap inference while only a few items wait in each queue, so memory
stays flat however long the shot is. The caller's process() runs on the calling thread; an
exception in any stage stops the others and is raised. With `workers` > 1, process() runs on
that many worker threads instead (`_Workers`), each taking the next item as soon as it is free,
while the calling thread hands the results to the writer strictly in the items' order: an
item's exception is raised on the calling thread when its turn comes, after every item before
it went to the writer, and cancelled() is checked before each item is taken, in order, as with
one worker. `prefetch` is the reading half alone: an iterator whose items a worker thread
produces ahead.

Each queue is bounded twice: by a count (`depth`, 4 by default) and by the bytes its waiting
items hold (QUEUE_BYTES, see payload_bytes), so the frames in flight do not grow with the frame
size unnoticed: at 1080p (6 MiB a BGR frame) a queue holds 4 frames, at 4K (24 MiB) 2, and a
4K float32 plate (127 MiB) 1. An item always enters an empty queue, however large. The items
`stream` holds between reading and writing (read, not yet through sink()) are bounded as a whole
too, by `in_flight` (`depth` by default, plus one for each worker past the first): the reader
takes a token before it reads an item and the writer gives it back once sink() is done with it.
Whichever stage is the slowest, then, no more frames are held than keep the three stages busy
with one to spare: a slow writer holds the reader back at once rather than after both queues
have filled (at 1080p, with a writer converting whole frames, 4 frames instead of 11).
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable, Generator, Iterable, Iterator
from dataclasses import fields, is_dataclass
from typing import Any, TypeVar

import numpy as np

In = TypeVar("In")
Out = TypeVar("Out")

_END = object()
_GONE = object()  # no item came: the stage that would take it has stopped
_POLL_S = 0.1
QUEUE_DEPTH = 4  # items a queue holds at most
QUEUE_BYTES = 64 * 2**20  # bytes the items waiting in one queue hold at most (one always fits)


def payload_bytes(item: object) -> int:
    """The bytes of the pixel buffers an item holds: the `nbytes` of anything that states it
    (numpy arrays, io.video.frame.DecodedFrame), summed through tuples, lists and
    dataclass fields (shot.writers.FrameToWrite); anything else counts 0."""
    stated = getattr(item, "nbytes", None)
    if isinstance(stated, int | np.integer):
        return int(stated)
    if isinstance(item, tuple | list):
        return sum(payload_bytes(part) for part in item)
    if is_dataclass(item) and not isinstance(item, type):
        return sum(payload_bytes(getattr(item, f.name)) for f in fields(item))
    return 0


class ByteQueue:
    """A FIFO between two threads that holds at most `depth` items and at most `budget_bytes`
    of payload (payload_bytes), except that an item always enters an empty queue."""

    def __init__(self, depth: int = QUEUE_DEPTH, budget_bytes: int = QUEUE_BYTES) -> None:
        self.depth, self.budget_bytes = max(1, depth), budget_bytes
        self._items: deque[tuple[object, int]] = deque()
        self._bytes = 0
        self._changed = threading.Condition()

    def put(self, item: object, timeout: float) -> bool:
        """Add `item` as soon as it fits; False if it did not within `timeout` seconds."""
        size = payload_bytes(item)
        with self._changed:
            if not self._changed.wait_for(lambda: self._fits(size), timeout):
                return False
            self._items.append((item, size))
            self._bytes += size
            self._changed.notify_all()
            return True

    def get(self, timeout: float | None = None) -> object:
        """The oldest item, waiting for one (IndexError after `timeout` seconds without)."""
        with self._changed:
            if not self._changed.wait_for(lambda: bool(self._items), timeout):
                raise IndexError("no item arrived in time")
            item, size = self._items.popleft()
            self._bytes -= size
            self._changed.notify_all()
            return item

    def clear(self) -> None:
        """Drop every waiting item (a producer blocked on the queue can then notice a stop)."""
        with self._changed:
            self._items.clear()
            self._bytes = 0
            self._changed.notify_all()

    def qsize(self) -> int:
        return len(self._items)

    @property
    def held_bytes(self) -> int:
        return self._bytes

    def _fits(self, size: int) -> bool:
        if not self._items:
            return True
        return len(self._items) < self.depth and self._bytes + size <= self.budget_bytes


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


def _put(q: ByteQueue, item: object, alive: Callable[[], bool]) -> bool:
    """Put as soon as there is room, unless alive() turns False first (then returns False)."""
    while alive():
        if q.put(item, timeout=_POLL_S):
            return True
    return False


def stream(source: Iterator[In], process: Callable[[In], Out], sink: Callable[[Out], None],
           cancelled: Callable[[], bool] = lambda: False, depth: int = QUEUE_DEPTH,
           budget_bytes: int = QUEUE_BYTES, in_flight: int | None = None,
           workers: int = 1) -> bool:
    """Run every source item through process() into sink(), in order; each of the two queues
    holds at most `depth` items and `budget_bytes` (see ByteQueue), and at most `in_flight`
    items (default `depth` + `workers` - 1) are read and not yet through sink() (see the
    module docstring). workers: process() runs on the calling thread (1) or on that many
    worker threads, its results still handed to sink() in order.

    Returns True when the source was exhausted, False when cancelled() stopped it early; items
    already processed are still handed to sink() before returning.
    """
    inbox, outbox = ByteQueue(depth, budget_bytes), ByteQueue(depth, budget_bytes)
    stop = threading.Event()
    tokens = threading.Semaphore(max(1, in_flight if in_flight is not None
                                     else depth + workers - 1))

    def write() -> None:
        while (item := outbox.get()) is not _END:
            sink(item)  # type: ignore[arg-type]
            tokens.release()

    reader = _Stage(lambda: _feed(source, inbox, stop, tokens), "facefuse-read")
    writer = _Stage(write, "facefuse-write")
    reader.thread.start()
    writer.thread.start()
    writer_alive = writer.thread.is_alive
    pool = _Workers(inbox, process, cancelled, writer_alive, workers) if workers > 1 else None
    finished = False
    try:
        finished = (_process_here(inbox, outbox, process, cancelled, writer_alive)
                    if pool is None else _hand_on(pool, outbox, writer_alive))
    finally:
        stop.set()
        if pool is not None:
            pool.close()
        inbox.clear()
        _put(outbox, _END, writer_alive)
        writer.thread.join()
        reader.thread.join()
    for stage in (reader, writer):
        if stage.error is not None:
            raise stage.error
    return finished


def _process_here(inbox: ByteQueue, outbox: ByteQueue, process: Callable[[Any], object],
                  cancelled: Callable[[], bool], writer_alive: Callable[[], bool]) -> bool:
    """process() each item on the calling thread into `outbox`; True once the source ended."""
    while True:
        item = _get(inbox, writer_alive)  # a writer that failed holds tokens for good
        if item is _END or cancelled() or not writer_alive():
            return item is _END
        if not _put(outbox, process(item), writer_alive):
            return False


def _hand_on(pool: _Workers, outbox: ByteQueue, writer_alive: Callable[[], bool]) -> bool:
    """The workers' results into `outbox` in the items' order; True once the source ended."""
    index = 0
    while True:
        done, result = pool.result(index)
        if done is not None:
            return done
        if not _put(outbox, result, writer_alive):
            return False
        index += 1


class _Workers:
    """`workers` threads that take the items of `inbox` one at a time, in order (each checks
    cancelled() before it takes one, as the calling thread does with one worker), run
    process() on them side by side and keep each result (or exception) under its item's index
    for result(), which hands them out in order."""

    def __init__(self, inbox: ByteQueue, process: Callable[[Any], object],
                 cancelled: Callable[[], bool], alive: Callable[[], bool],
                 workers: int) -> None:
        self._inbox, self._process, self._cancelled = inbox, process, cancelled
        self._alive = alive
        self._taking = threading.Lock()  # one worker takes the next item at a time
        self._changed = threading.Condition()
        # index -> (the exception process() raised, else None; its result)
        self._results: dict[int, tuple[BaseException | None, object]] = {}
        self._taken = 0  # items taken so far (the next one's index)
        self._end: int | None = None  # index at which the items stop
        self._finished = False  # ... because the source was exhausted
        self._closed = False
        self._failed = False  # process() raised: no more items are taken
        self._threads = [threading.Thread(target=self._work, name=f"facefuse-swap_{i}",
                                          daemon=True) for i in range(workers)]
        for thread in self._threads:
            thread.start()

    def result(self, index: int) -> tuple[bool | None, object]:
        """(None, result of item `index`) once it is processed, raising its exception if
        process() raised; (finished, None) when the items stop at `index` (finished: the
        source was exhausted; False: cancelled, or the writer stopped)."""
        with self._changed:
            self._changed.wait_for(lambda: index in self._results or self._end == index)
            if index not in self._results:
                return self._finished, None
            error, value = self._results.pop(index)
        if error is not None:
            raise error
        return None, value

    def close(self) -> None:
        """Stop taking items and wait for every worker to end (each finishes its item)."""
        with self._changed:
            self._closed = True
            self._changed.notify_all()
        for thread in self._threads:
            thread.join()

    def _running(self) -> bool:
        return not self._closed and self._alive()

    def _work(self) -> None:
        try:
            while (taken := self._take()) is not None:
                index, item = taken
                try:
                    self._keep(index, None, self._process(item))
                except BaseException as exc:  # noqa: BLE001 - raised in order by result()
                    self._keep(index, exc, None)
        except BaseException as exc:  # noqa: BLE001 - taking failed (cancelled() raised)
            with self._changed:
                index = self._taken
                self._taken, self._end = index + 1, index + 1
                self._results[index] = (exc, None)
                self._changed.notify_all()

    def _take(self) -> tuple[int, object] | None:
        """The next item and its index; None when the items stop (and the index says where)."""
        with self._taking:
            if self._end is not None or self._closed or self._failed:
                return None  # (after a failure no result past it is handed out)
            item = _get(self._inbox, self._running)
            stopped = item is _END or item is _GONE or self._cancelled()
            with self._changed:
                index = self._taken
                if stopped:
                    self._end, self._finished = index, item is _END
                    self._changed.notify_all()
                    return None
                self._taken += 1
            return index, item

    def _keep(self, index: int, error: BaseException | None, value: object) -> None:
        with self._changed:
            self._failed = self._failed or error is not None
            self._results[index] = (error, value)
            self._changed.notify_all()


def _feed(source: Iterable[object], inbox: ByteQueue, stop: threading.Event,
          tokens: threading.Semaphore | None = None) -> None:
    """Put every item of `source`, then the end marker, into `inbox` until `stop` is set;
    with `tokens`, take one before reading each item."""
    def running() -> bool:
        return not stop.is_set()

    items = iter(source)
    try:
        while tokens is None or _acquire(tokens, running):
            item = next(items, _END)
            if item is _END or not _put(inbox, item, running):
                return
    finally:
        _put(inbox, _END, running)


def _get(q: ByteQueue, alive: Callable[[], bool]) -> object:
    """The oldest item as soon as there is one, or _GONE once alive() turns False."""
    while alive():
        try:
            return q.get(timeout=_POLL_S)
        except IndexError:
            continue
    return _GONE


def _acquire(tokens: threading.Semaphore, alive: Callable[[], bool]) -> bool:
    """Take a token as soon as one is free, unless alive() turns False first."""
    while alive():
        if tokens.acquire(timeout=_POLL_S):
            return True
    return False


def prefetch(source: Iterable[In], depth: int = QUEUE_DEPTH,
             budget_bytes: int = QUEUE_BYTES) -> Generator[In, None, None]:
    """The items of `source` in order, produced by a worker thread up to `depth` items (and
    `budget_bytes`, see ByteQueue) ahead of the consumer, so decoding overlaps whatever the
    consumer does with each item. An exception in the worker is raised here; closing the
    iterator early stops the worker and closes `source` when it is a generator (so a file it
    holds open is released at once)."""
    inbox = ByteQueue(depth, budget_bytes)
    stop = threading.Event()

    reader = _Stage(lambda: _feed(source, inbox, stop), "facefuse-prefetch")
    reader.thread.start()
    try:
        while (item := inbox.get()) is not _END:
            yield item  # type: ignore[misc]
    finally:
        stop.set()
        inbox.clear()
        reader.thread.join()
        if isinstance(source, Generator):
            source.close()
    if reader.error is not None:
        raise reader.error
