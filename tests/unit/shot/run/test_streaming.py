import threading
import time

import pytest

from facefuse.shot.run.streaming import stream


def test_everything_arrives_in_order():
    seen = []
    assert stream(iter(range(50)), lambda x: x * 2, seen.append, depth=2) is True
    assert seen == [x * 2 for x in range(50)]


def test_cancel_stops_early_and_keeps_what_was_processed():
    seen, processed = [], []

    def process(x):
        processed.append(x)
        return x

    assert stream(iter(range(1000)), process, seen.append,
                  cancelled=lambda: len(processed) >= 10, depth=3) is False
    assert seen == processed == list(range(10))


def test_in_flight_items_stay_bounded():
    produced = []
    slow_sink_started = threading.Event()

    def source():
        for i in range(100):
            produced.append(i)
            yield i

    def sink(x):
        slow_sink_started.set()
        time.sleep(0.002)

    consumed = []

    def process(x):
        consumed.append(x)
        # the reader may run at most inbox depth + 1 ahead of the consumer
        assert len(produced) - len(consumed) <= 4
        return x

    stream(source(), process, sink, depth=3)
    assert len(consumed) == 100


@pytest.mark.parametrize("where", ["source", "process", "sink"])
def test_an_error_in_any_stage_is_raised_and_nothing_hangs(where):
    def source():
        for i in range(100):
            if where == "source" and i == 5:
                raise RuntimeError("boom")
            yield i

    def process(x):
        if where == "process" and x == 5:
            raise RuntimeError("boom")
        return x

    def sink(x):
        if where == "sink" and x == 5:
            raise RuntimeError("boom")

    with pytest.raises(RuntimeError, match="boom"):
        stream(source(), process, sink, depth=2)


def test_prefetch_yields_in_order_from_another_thread_and_stays_bounded():
    from facefuse.shot.run.streaming import prefetch

    produced, threads = [], set()

    def source():
        for i in range(40):
            produced.append(i)
            threads.add(threading.current_thread().name)
            yield i

    seen = []
    for item in prefetch(source(), depth=3):
        time.sleep(0.001)
        assert len(produced) - len(seen) <= 3 + 2  # queue + one being put + one handed out
        seen.append(item)
    assert seen == list(range(40))
    assert threads == {"facefuse-prefetch"}


def test_prefetch_raises_the_readers_error_and_stops_when_closed_early():
    from facefuse.shot.run.streaming import prefetch

    def failing():
        yield 1
        raise ValueError("broken file")

    with pytest.raises(ValueError, match="broken file"):
        list(prefetch(failing()))

    produced = []

    def endless():
        while True:
            produced.append(1)
            yield len(produced)

    items = prefetch(endless(), depth=2)
    assert next(items) == 1
    items.close()  # the reader thread is stopped and joined
    stopped_at = len(produced)
    time.sleep(0.05)
    assert len(produced) == stopped_at
    assert not any(t.name == "facefuse-prefetch" for t in threading.enumerate())


def test_payload_bytes_counts_arrays_through_tuples_and_dataclasses():
    from dataclasses import dataclass

    import numpy as np

    from facefuse.shot.run.streaming import payload_bytes

    @dataclass(frozen=True)
    class Item:
        frame: np.ndarray
        matte: np.ndarray | None
        label: str

    frame = np.zeros((10, 20, 3), np.uint8)
    assert payload_bytes(frame) == 600
    assert payload_bytes((7, frame, {"decode": 1.0})) == 600
    assert payload_bytes(Item(frame, np.zeros((10, 20), np.float32), "x")) == 600 + 800
    assert payload_bytes(Item(frame, None, "x")) == 600
    assert payload_bytes("text") == payload_bytes(None) == 0


def test_byte_queue_is_bounded_by_bytes_and_count_and_admits_one_item_whatever_its_size():
    import numpy as np

    from facefuse.shot.run.streaming import ByteQueue

    mib = np.zeros(2**20, np.uint8)
    q = ByteQueue(depth=4, budget_bytes=int(2.5 * 2**20))
    assert q.put(mib, timeout=0) and q.put(mib, timeout=0)
    assert not q.put(mib, timeout=0.01)  # a third MiB would pass the budget
    assert q.held_bytes == 2 * 2**20 and q.qsize() == 2
    assert q.put(0, timeout=0)  # nothing to count: only the depth bounds it
    assert q.get() is mib and q.put(mib, timeout=0)
    big = ByteQueue(depth=4, budget_bytes=10)
    assert big.put(mib, timeout=0)  # an empty queue takes any item
    assert not big.put(mib, timeout=0.01)
    few = ByteQueue(depth=2)
    assert few.put(1, timeout=0) and few.put(2, timeout=0) and not few.put(3, timeout=0.01)
    few.clear()
    assert few.qsize() == 0 and few.held_bytes == 0
    with pytest.raises(IndexError):
        few.get(timeout=0.01)


@pytest.mark.parametrize("budget_mib, ahead", [(2.5, 3), (100, 5)])
def test_stream_keeps_the_frames_in_flight_within_the_byte_budget(budget_mib, ahead):
    import numpy as np

    produced, consumed = [], []

    def source():
        for i in range(40):
            produced.append(i)
            yield i, np.zeros(2**20, np.uint8)  # a 1 MiB "frame"

    def process(item):
        consumed.append(item[0])
        time.sleep(0.001)  # the reader gets ahead as far as the inbox lets it
        return item

    most = []
    stream(source(), process, lambda item: most.append(len(produced) - len(consumed)),
           depth=4, budget_bytes=int(budget_mib * 2**20))
    assert len(consumed) == 40
    # inbox (2 MiB of frames under 2.5 MiB; 4 under 100 MiB) + the one the reader holds
    assert max(most) <= ahead


def test_prefetch_stays_within_the_byte_budget():
    import numpy as np

    from facefuse.shot.run.streaming import prefetch

    produced = []

    def source():
        for i in range(20):
            produced.append(i)
            yield np.zeros(2**20, np.uint8)

    ahead = []
    for n, _ in enumerate(prefetch(source(), depth=4, budget_bytes=int(1.5 * 2**20))):
        time.sleep(0.005)
        ahead.append(len(produced) - (n + 1))
    assert max(ahead) <= 2 and len(ahead) == 20


@pytest.mark.parametrize("in_flight", [None, 2, 6])
def test_a_slow_writer_holds_the_reader_back_to_the_items_in_flight(in_flight):
    produced, written = [], []

    def source():
        for i in range(30):
            produced.append(i)
            yield i

    def sink(x):
        time.sleep(0.002)  # the slowest stage: without the bound both queues would fill
        written.append(x)

    most = []

    def process(x):
        most.append(len(produced) - len(written))
        return x

    assert stream(source(), process, sink, depth=4, in_flight=in_flight) is True
    assert written == list(range(30))
    assert max(most) <= (4 if in_flight is None else in_flight)


def test_a_writer_failing_with_every_token_held_stops_the_stream() -> None:
    def sink(x):
        time.sleep(0.01)  # the reader has taken every token by now
        raise OSError("disk full")

    done = []
    worker = threading.Thread(target=lambda: done.append(
        pytest.raises(OSError, stream, iter(range(100)), lambda x: x, sink, depth=4)),
        daemon=True)
    worker.start()
    worker.join(timeout=10)
    assert done, "the stream must end when its writer fails"


# --- several workers (stream(workers=N)): process() side by side, results in order ------------

def _jittered(x):
    """x * 3, after a pause that differs from item to item (later items often finish first)."""
    time.sleep(((x * 7) % 5) * 0.001)
    return x * 3


@pytest.mark.parametrize("workers", [2, 4])
def test_workers_process_side_by_side_and_the_sink_gets_every_result_in_order(workers):
    seen, threads = [], set()
    before = threading.active_count()

    def process(x):
        threads.add(threading.current_thread().name)
        return _jittered(x)

    assert stream(iter(range(60)), process, seen.append, depth=2, workers=workers) is True
    assert seen == [x * 3 for x in range(60)]
    assert threads <= {f"facefuse-swap_{i}" for i in range(workers)} and len(threads) > 1
    assert threading.active_count() == before  # every worker ended with the stream


def test_workers_run_at_once():
    busy, peak = [0], [0]
    lock = threading.Lock()

    def process(x):
        with lock:
            busy[0] += 1
            peak[0] = max(peak[0], busy[0])
        time.sleep(0.01)
        with lock:
            busy[0] -= 1
        return x

    stream(iter(range(24)), process, lambda x: None, workers=4)
    assert peak[0] == 4


@pytest.mark.parametrize("workers", [2, 4])
def test_a_workers_error_is_raised_after_every_item_before_it_went_to_the_sink(workers):
    seen = []
    before = threading.active_count()

    class Boom(Exception):
        pass

    def process(x):
        if x == 9:
            raise Boom("item 9")
        return _jittered(x)

    with pytest.raises(Boom, match="item 9"):
        stream(iter(range(100)), process, seen.append, depth=2, workers=workers)
    assert seen == [x * 3 for x in range(9)]  # in order, nothing after the failed item
    assert threading.active_count() == before


@pytest.mark.parametrize("workers", [2, 4])
def test_a_cancel_with_workers_stops_taking_items_and_keeps_the_ones_taken(workers):
    seen, processed = [], []
    lock = threading.Lock()

    def process(x):
        with lock:
            processed.append(x)
        return _jittered(x)

    assert stream(iter(range(1000)), process, seen.append, workers=workers,
                  cancelled=lambda: len(processed) >= 10) is False
    assert 10 <= len(processed) < 10 + workers
    assert seen == [x * 3 for x in sorted(processed)] == [x * 3 for x in range(len(seen))]


@pytest.mark.parametrize("where", ["source", "sink"])
def test_a_reader_or_writer_error_with_workers_is_raised_and_nothing_hangs(where):
    before = threading.active_count()

    def source():
        for i in range(100):
            if where == "source" and i == 5:
                raise RuntimeError("boom")
            yield i

    def sink(x):
        if where == "sink" and x == 15:
            raise RuntimeError("boom")

    with pytest.raises(RuntimeError, match="boom"):
        stream(source(), _jittered, sink, depth=2, workers=3)
    assert threading.active_count() == before


def test_workers_keep_the_items_in_flight_within_the_bound():
    produced, written = [], []

    def source():
        for i in range(40):
            produced.append(i)
            yield i

    def sink(x):
        time.sleep(0.002)
        written.append(x)

    most = []

    def process(x):
        most.append(len(produced) - len(written))
        return x

    assert stream(source(), process, sink, depth=4, workers=3) is True
    assert written == list(range(40))
    assert max(most) <= 4 + 3 - 1  # in_flight's default: depth + workers - 1


def test_workers_take_no_item_once_one_failed():
    taken = []

    def process(x):
        taken.append(x)
        if x == 3:
            raise RuntimeError("item 3")
        time.sleep(0.05 if x < 3 else 0.001)  # the items before the failed one are slow
        return x

    with pytest.raises(RuntimeError, match="item 3"):
        stream(iter(range(200)), process, lambda x: None, depth=100, in_flight=100, workers=2)
    assert max(taken) <= 3 + 2  # what was taken while the failure was not yet known
