"""Pass 2 while pass 1 runs: the analysis as it grows, and the targets of frames it has made final.

For a selector whose decisions are local (make.plan_horizon: `many`), frame k's targets are
final once the analysis covers every analysed frame up to k + horizon: planning on that prefix
gives k exactly the targets a plan of the whole range gives. So a render need not wait for the
whole analysis before it swaps its first frame.

AnalysisFeed is written by the analysis thread (one frame at a time) and read by pass 2's
reader thread; it locks itself. EarlyTargets, used by that one reader thread, hands out each
frame's targets, waiting until the frame is final and planning again on a longer prefix when
needed. It plans only when the final frontier has moved by max(MIN_STEP, GROWTH * prefix)
frames, so the planning cost of a whole shot stays a small multiple of one plan of it. The plan
of the finished analysis is the same call a render of a cached analysis makes (one code path).
"""

from __future__ import annotations

import logging
import math
import threading
import time
from collections.abc import Callable, Sequence

from ..plan.analysis import ShotAnalysis
from ..plan.plan import PlannedFace, ShotPlan

log = logging.getLogger(__name__)

Planner = Callable[[ShotAnalysis], ShotPlan]
"""make.make_plan with the render's options bound (see render.RenderJob._plan)."""

MIN_STEP = 16  # frames the final frontier moves at least before planning again
GROWTH = 0.25  # ... and at least this share of the prefix already planned on
WAIT_POLL_S = 0.1  # how often a waiting reader looks at its stop check


class AnalysisStopped(Exception):
    """A frame's targets will not become final: pass 1 failed or stopped, or the render is
    stopping (cancel, --fail-fast, a pass-2 error). Internal to render."""


class AnalysisFeed:
    """The analysis of the analysed frames `wanted` as pass 1 adds to it (see the module
    docstring). `cached`: what the cache already held (its frames count as covered).

    covered: the length of the longest prefix of `wanted` whose every frame is analysed (a
    frame that failed to decode counts once pass 1 has tried it: it has no faces)."""

    def __init__(self, wanted: Sequence[int], cached: ShotAnalysis) -> None:
        self.wanted = tuple(wanted)
        self._index = {number: i for i, number in enumerate(self.wanted)}
        self._faces = {n: cached.faces[n] for n in self.wanted if n in cached.faces}
        self._signatures = {n: cached.signatures[n] for n in self._faces
                            if n in cached.signatures}
        self._failures: dict[int, str] = {}
        self._tried = set(self._faces)
        self._covered = 0
        self._done = False
        self._error: BaseException | None = None
        self._changed = threading.Condition()
        self._advance()

    @classmethod
    def complete(cls, wanted: Sequence[int], analysis: ShotAnalysis) -> AnalysisFeed:
        """A feed of a finished analysis (a cached one, or pass 1 run before pass 2)."""
        feed = cls(wanted, ShotAnalysis())
        feed.add(analysis.over(wanted))
        feed.finish()
        return feed

    def index(self, number: int) -> int:
        """The position of an analysed frame in `wanted`."""
        return self._index[number]

    def found(self, number: int) -> int:
        """How many faces the analysis found in frame `number` (0 until it is analysed)."""
        with self._changed:
            return len(self._faces.get(number, ()))

    def add(self, part: ShotAnalysis, tried: Sequence[int] = ()) -> None:
        """Frames pass 1 has analysed (`part`), and frames it tried that did not decode."""
        with self._changed:
            self._faces.update(part.faces)
            self._signatures.update(part.signatures)
            self._failures.update(part.failures)
            self._tried.update(part.faces)
            self._tried.update(part.failures)
            self._tried.update(tried)
            self._advance()
            self._changed.notify_all()

    def finish(self, error: BaseException | None = None) -> None:
        """Pass 1 has ended: complete when `error` is None and it was not stopped early."""
        with self._changed:
            self._done, self._error = True, error
            self._changed.notify_all()

    def _advance(self) -> None:
        while self._covered < len(self.wanted) and self.wanted[self._covered] in self._tried:
            self._covered += 1

    def wait(self, covered: int, stop: Callable[[], bool]) -> None:
        """Return once the first `covered` frames of `wanted` are analysed, or pass 1 has
        finished with the whole range. AnalysisStopped when pass 1 failed or stopped short, or
        stop() turns True while waiting (it is polled every WAIT_POLL_S)."""
        covered = min(covered, len(self.wanted))
        with self._changed:
            while self._covered < covered:
                if self._done or stop():
                    raise AnalysisStopped("the analysis stopped before the frames were final")
                self._changed.wait(WAIT_POLL_S)

    def prefix(self) -> tuple[ShotAnalysis, int]:
        """The analysis of the covered prefix of `wanted` (ShotAnalysis.over: a frame that did
        not decode has no faces) and its length."""
        with self._changed:
            analysis = ShotAnalysis(dict(self._faces), dict(self._signatures),
                                    dict(self._failures))
            covered = self._covered
        return analysis.over(self.wanted[:covered]), covered


class EarlyTargets:
    """Each frame's targets, as soon as they are final (see the module docstring).

    horizon: make.plan_horizon's frames (0 for a feed that is complete already).
    stop: polled while waiting; True ends the wait with AnalysisStopped.
    plan: planning of an analysis (its milliseconds are the caller's to time)."""

    def __init__(self, feed: AnalysisFeed, horizon: int, plan: Planner,
                 stop: Callable[[], bool]) -> None:
        self.feed, self.horizon, self._plan, self._stop = feed, horizon, plan, stop
        self.plan: ShotPlan | None = None  # the latest plan made
        self._planned = 0  # frames of `wanted` the current plan was made on
        self.plans = 0  # how many times it planned
        self.plan_s = 0.0  # seconds spent planning, in all

    def targets(self, number: int) -> tuple[PlannedFace, ...]:
        """The faces to swap in frame `number` (one of the analysed frames), waiting until
        they are final. AnalysisStopped when they will not be (see AnalysisFeed.wait)."""
        if self._stop():  # a stopped pass 1 may have handed out part of the shot only
            raise AnalysisStopped("the render is stopping")
        total = len(self.feed.wanted)
        needed = min(total, self.feed.index(number) + self.horizon + 1)
        if self._planned < needed:
            step = max(MIN_STEP, math.ceil(GROWTH * self._planned))
            self.feed.wait(max(needed, min(total, self._planned + step)), self._stop)
            self._replan()
        assert self.plan is not None  # planned above
        return self.plan.faces(number)

    def _replan(self) -> None:
        analysis, covered = self.feed.prefix()
        started = time.perf_counter()
        self.plan = self._plan(analysis)
        self.plan_s += time.perf_counter() - started
        self._planned, self.plans = covered, self.plans + 1
        log.debug("planned on %d of %d analysed frames (plan %d)", covered,
                  len(self.feed.wanted), self.plans)
