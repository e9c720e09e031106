"""The tally of a render's frames: the one place that counts frames and reports them to the host.

A frame is settled once the writer has all its files in place (or it failed); a frame found
already done is skipped. Each is counted (FrameCounts, which the render's summary is made of) and
reported (FrameReport; the swap phase's PhaseProgress), with its stage times recorded.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import replace
from types import MappingProxyType

from ...timing import RenderTimings
from ..contract.request import FrameReport, PhaseCallback, PhaseProgress, ProgressCallback
from ..output.writers import FrameToWrite
from .pass_one import PassOne

log = logging.getLogger(__name__)


class FrameCounts:
    """Per-run tallies, touched only by the thread that settles frames."""

    def __init__(self) -> None:
        self.swapped = self.no_face = self.skipped = self.unselected = self.corrected = 0
        self.failed: list[tuple[int, str]] = []


class FrameTally:
    """Counts and reports one render's frames as they settle or are skipped (see the module
    docstring); used only by the thread that settles frames at the time."""

    def __init__(self, report: ProgressCallback, phase: PhaseCallback, timings: RenderTimings,
                 pass_one: PassOne) -> None:
        self.report, self.phase, self.timings, self.pass_one = report, phase, timings, pass_one
        self.counts = FrameCounts()
        self.found: dict[int, int] = {}  # faces the analysis found, per frame number
        self.corrected: set[int] = set()  # frames the plan says the user's corrections keep
        self.settled = 0
        self.todo_total = 0

    def skip(self, number: int) -> None:
        """Count and report a frame whose output is already done."""
        self.counts.skipped += 1
        self.report(FrameReport(number, "skipped"))

    def settle(self, items: Iterable[FrameToWrite]) -> None:
        """Count and report frames the writer has settled (all their files are in place)."""
        for settled in items:
            item = self._timed_item(settled)
            if item.frame is None:
                self.counts.failed.append((item.number, item.error))
                log.error("frame %d failed: %s", item.number, item.error)
                self.report(FrameReport(item.number, "failed", 0, item.ms, item.error,
                                        self.found.get(item.number, 0)))
            else:
                self._count(item)
            self.settled += 1
            self.phase(PhaseProgress("swap", self.settled, self.todo_total))

    def _count(self, item: FrameToWrite) -> None:
        """Count and report a written frame: swapped, no face found, or faces found and none
        swapped (unselected; corrected where the user's corrections decided so)."""
        found = self.found.get(item.number, 0)
        corrected = False
        if item.faces:
            self.counts.swapped += 1
            status = "swapped"
        elif found == 0:
            self.counts.no_face += 1
            status = "no_face"
        else:
            self.counts.unselected += 1
            corrected = item.number in self.corrected
            self.counts.corrected += int(corrected)
            status = "unselected"
        self.report(FrameReport(item.number, status, item.faces, item.ms, found=found,
                                corrected=corrected))

    def _timed_item(self, item: FrameToWrite) -> FrameToWrite:
        """Record a settled frame's pass-2 stage times; the item with its analysis stage times
        (this run's, prefixed "analysis." except detect and embed) added for the host."""
        self.timings.frame("swap", item.ms)
        if item.frame is not None:
            self.timings.mark("first_output")
        analysed = self.pass_one.take_ms(item.number)
        if not analysed:
            return item
        ms = {(k if k in ("detect", "embed") else f"analysis.{k}"): v for k, v in analysed.items()}
        return replace(item, ms=MappingProxyType({**ms, **item.ms}))
