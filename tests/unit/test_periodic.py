"""periodic.every: an action repeated on its own thread while a block runs, then once more."""

from __future__ import annotations

import threading
import time

import pytest

from facefuse.periodic import every


def test_the_action_repeats_on_its_thread_and_runs_once_more_at_the_end() -> None:
    calls: list[str] = []
    with every(0.01, lambda: calls.append(threading.current_thread().name), "facefuse-tick"):
        deadline = time.monotonic() + 5
        while calls.count("facefuse-tick") < 3 and time.monotonic() < deadline:
            time.sleep(0.005)
    assert calls.count("facefuse-tick") >= 3
    assert calls[-1] == threading.current_thread().name  # the last call, on the caller
    assert "facefuse-tick" not in {t.name for t in threading.enumerate()}


def test_the_thread_ends_and_the_last_call_happens_when_the_block_raises() -> None:
    calls: list[int] = []
    with pytest.raises(KeyError), every(60, lambda: calls.append(1), "facefuse-tock"):
        raise KeyError("stop")
    assert calls == [1]
    assert "facefuse-tock" not in {t.name for t in threading.enumerate()}
