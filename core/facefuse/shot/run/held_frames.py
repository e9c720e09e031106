"""Frames decoded once for both passes: pass 1 hands the frames it decoded on to pass 2.

A render decodes its range twice, once to analyse it and once to swap it: the second decode
costs 2.5 ms CPU a 1080p h264 frame here, a tenth of the host work of a lossless render.
Where the frames pass 2 renders fit in a memory budget (Settings.frame_memory_mib), pass 1
keeps each one it decodes (Frame.for_another_pass: the same decoded picture, none of pass 1's
conversions) and pass 2 takes it instead of decoding it again.

What is held is always the first frames pass 2 will ask for, in its order: pass 1 keeps the
rendered frames it decodes, in order, until one does not fit, or one it should have handed on
never came (its analysis was cached, or it did not decode); then it keeps no more. Pass 2
takes the held frames and decodes the rest itself, from the first one not held: a render whose
frames do not all fit decodes the rest twice, as it would without the budget, and never seeks
more than once. Each frame is let go as pass 2 takes it (or passes it: a frame a resumed render
finds already written).

Only where pass 1 runs before pass 2 (shot.run.pass_one: selectors one and reference, a resumed
render, a range no longer than the plan's horizon). Beside pass 2 (`--selector many`) pass 1
runs ahead by the plan's horizon and more: holding there would keep 300-500 MiB at 1080p and
costs more CPU than it saves (FFmpeg's pool grows by every frame held, and faulting those pages
in beside the other threads costs more than a second decode: 1080p rawvideo, 240 frames,
0.0587 -> 0.0648 CPU s/frame), so there each pass decodes its own.

The frames are the same pictures a second decode gives (decoding is deterministic), so the
rendered frames are the same, bit for bit, with or without the budget.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Sequence

from ...io.video import Frame

MIB = 2**20


class HeldFrames:
    """The frames pass 1 holds for pass 2 (see the module docstring): `rendered` are the
    frames pass 2 may ask for (ascending), `budget_bytes` what they may hold at once. offer()
    is called by pass 1's thread, take() by pass 2's reader; both lock."""

    def __init__(self, rendered: Sequence[int], budget_bytes: int) -> None:
        self._rendered = tuple(rendered)
        self._budget = budget_bytes
        self._next = 0  # the index in _rendered of the next frame to keep
        self._keeping = budget_bytes > 0 and bool(self._rendered)
        self._frames: OrderedDict[int, tuple[Frame, int]] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()
        self.held = 0  # frames held so far, in all
        self.taken = 0  # frames pass 2 took instead of decoding them
        self.peak_bytes = 0

    def offer(self, number: int, frame: Frame) -> None:
        """Pass 1 decoded frame `number` (numbers ascending): hold it on for pass 2 if it is
        the next frame pass 2 renders and fits."""
        with self._lock:
            if not self._keeping or number < self._rendered[self._next]:
                return  # analysed, not rendered
            if number > self._rendered[self._next]:
                self._keeping = False  # the next one never came: pass 2 decodes from it
                return
            handed = frame.for_another_pass()
            size = handed.nbytes
            if self._bytes + size > self._budget:
                self._keeping = False  # the frames held stay: pass 2 decodes from this one
                return
            self._frames[number] = (handed, size)
            self._bytes += size
            self.peak_bytes = max(self.peak_bytes, self._bytes)
            self.held += 1
            self._next += 1
            if self._next == len(self._rendered):
                self._keeping = False  # all of them held

    def take(self, number: int) -> Frame | None:
        """Frame `number` as pass 1 decoded it, or None: pass 2 decodes it and every frame
        after it itself (numbers ascending; the held frames before `number` are let go)."""
        with self._lock:
            while self._frames and next(iter(self._frames)) < number:
                self._bytes -= self._frames.popitem(last=False)[1][1]
            held = self._frames.pop(number, None)
            if held is None:
                self._stop()
                return None
            self._bytes -= held[1]
            self.taken += 1
            return held[0]

    def close(self) -> None:
        """Let every held frame go and hold no more (pass 2 ended)."""
        with self._lock:
            self._stop()

    @property
    def held_bytes(self) -> int:
        with self._lock:
            return self._bytes

    def _stop(self) -> None:
        self._keeping = False
        self._frames.clear()
        self._bytes = 0
