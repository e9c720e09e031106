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
