import threading
import time

import pytest

from facefuse.shot.streaming import stream


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
    from facefuse.shot.streaming import prefetch

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
    from facefuse.shot.streaming import prefetch

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
