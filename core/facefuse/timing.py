"""Per-stage wall-clock timing, owned by whoever measures (no global state)."""

from __future__ import annotations

import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from types import MappingProxyType


class StageClock:
    """Accumulates milliseconds per stage name."""

    def __init__(self) -> None:
        self._totals_ms: dict[str, float] = {}

    @contextmanager
    def measure(self, stage: str) -> Iterator[None]:
        start = time.perf_counter()
        try:
            yield
        finally:
            elapsed_ms = (time.perf_counter() - start) * 1000.0
            self._totals_ms[stage] = self._totals_ms.get(stage, 0.0) + elapsed_ms

    def snapshot(self) -> Mapping[str, float]:
        return MappingProxyType({k: round(v, 3) for k, v in self._totals_ms.items()})
