"""runtime.memory: memory a render freed goes back to the system while the render runs.

Each check runs in a fresh interpreter (malloc's heaps are the process's): it fills the heap with
64 KiB buffers (below malloc's mmap threshold, so they live in its heap), frees every other one
(holes malloc cannot give back from the top of the heap) and reads the resident memory.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

PROBE = """
import sys, threading, time
import numpy as np
from facefuse.runtime.memory import returning_freed_memory

def rss_kib():
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("VmRSS"))

def holes():
    buffers = [np.ones(64 * 1024, np.uint8) for _ in range(2000)]  # 125 MiB
    del buffers[::2]  # 62 MiB freed in holes
    return buffers

if sys.argv[1] == "returned":
    with returning_freed_memory(interval_s=0.05):
        kept = holes()
        before = after = rss_kib()
        deadline = time.monotonic() + 10.0  # a loaded machine may run the thread late
        while before - after < 40 * 1024 and time.monotonic() < deadline:
            time.sleep(0.05)
            after = rss_kib()
    alive = [t.name for t in threading.enumerate() if t.name == "facefuse-memory"]
else:
    kept = holes()
    before = rss_kib()
    time.sleep(0.3)
    after, alive = rss_kib(), []
print(before - after, len(alive))
"""


def _released_kib(mode: str) -> tuple[int, int]:
    done = subprocess.run([sys.executable, "-c", PROBE, mode], capture_output=True, text=True,
                          check=True)
    released, threads = done.stdout.split()
    return int(released), int(threads)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's malloc_trim")
def test_freed_memory_goes_back_while_the_block_runs_and_the_thread_ends_with_it() -> None:
    released, threads = _released_kib("returned")
    kept_back, _ = _released_kib("kept")
    assert released >= 40 * 1024, released  # most of the 62 MiB of holes
    assert kept_back < 8 * 1024, kept_back  # without it malloc keeps them
    assert threads == 0
