"""HeldFrames: what pass 1 holds on for pass 2 is always the first frames pass 2 asks for, within
the budget, let go as pass 2 takes or passes them; DecodedFrame.for_another_pass gives a frame of
its own of the same decoded picture."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field

import av
import numpy as np

from facefuse.io.video.frame import DecodedFrame
from facefuse.shot.run.held_frames import HeldFrames
from facefuse.types import Roi

SIZE = 100  # bytes each stand-in frame holds


@dataclass
class _Frame:
    """A pass-1 frame: counts the frames made of it for pass 2."""

    number: int
    handed: list[int] = field(default_factory=list)
    nbytes: int = SIZE

    def for_another_pass(self) -> _Frame:
        self.handed.append(self.number)
        return _Frame(self.number)


def _offer(held: HeldFrames, numbers: range | list[int]) -> dict[int, _Frame]:
    frames = {n: _Frame(n) for n in numbers}
    for number, frame in frames.items():
        held.offer(number, frame)  # type: ignore[arg-type]
    return frames


def test_every_rendered_frame_that_fits_is_handed_on_and_taken_once() -> None:
    held = HeldFrames(range(1, 6), 10 * SIZE)
    _offer(held, range(1, 6))
    assert held.held == 5 and held.held_bytes == 5 * SIZE == held.peak_bytes
    for number in range(1, 6):
        frame = held.take(number)
        assert frame is not None and frame.number == number  # type: ignore[attr-defined]
    assert held.taken == 5 and held.held_bytes == 0


def test_frames_analysed_but_not_rendered_are_not_held() -> None:
    held = HeldFrames([4, 5, 6], 10 * SIZE)  # a chunk of an analysed range 1-8
    frames = _offer(held, range(1, 9))
    assert [n for n, f in frames.items() if f.handed] == [4, 5, 6]
    assert held.peak_bytes == 3 * SIZE


def test_holding_stops_at_the_first_frame_that_does_not_fit() -> None:
    held = HeldFrames(range(1, 9), 3 * SIZE)
    frames = _offer(held, range(1, 9))
    assert [n for n, f in frames.items() if f.handed] == [1, 2, 3, 4]  # the 4th tried, too big
    assert held.held == 3 and held.held_bytes == 3 * SIZE
    assert [held.take(n) is not None for n in range(1, 6)] == [True, True, True, False, False]


def test_the_budget_bounds_what_is_held_at_once_not_the_range() -> None:
    held = HeldFrames(range(1, 12), 3 * SIZE)
    _offer(held, range(1, 4))
    assert held.take(1) is not None and held.take(2) is not None
    _offer(held, range(4, 6))  # 1 and 2 are gone: 3, 4 and 5 fit
    assert [held.take(n) is not None for n in (3, 4, 5)] == [True] * 3
    _offer(held, range(6, 10))  # 9 does not fit beside 6-8: holding ends there, for good
    _offer(held, range(10, 12))
    assert [held.take(n) is not None for n in (6, 7, 8, 9, 10)] == [True] * 3 + [False] * 2
    assert held.taken == 8 and held.held == 8 and held.peak_bytes == 3 * SIZE


def test_a_rendered_frame_that_never_came_ends_the_holding() -> None:
    held = HeldFrames(range(1, 7), 100 * SIZE)
    frames = _offer(held, [1, 2, 4, 5])  # 3 failed to decode (or its analysis was cached)
    assert [n for n, f in frames.items() if f.handed] == [1, 2]
    assert held.take(1) is not None and held.take(2) is not None
    assert held.take(3) is None  # pass 2 decodes 3 and the rest itself


def test_frames_pass_two_passes_are_let_go() -> None:
    held = HeldFrames(range(1, 6), 10 * SIZE)
    _offer(held, range(1, 6))
    frame = held.take(4)  # a resumed render: 1-3 are written already
    assert frame is not None and held.held_bytes == SIZE
    held.close()
    assert held.held_bytes == 0 and held.take(5) is None


def test_a_zero_budget_holds_nothing() -> None:
    held = HeldFrames(range(1, 4), 0)
    frames = _offer(held, range(1, 4))
    assert not any(f.handed for f in frames.values()) and held.take(1) is None


def test_offers_and_takes_on_two_threads_hand_on_every_frame_in_order() -> None:
    count = 2000
    held = HeldFrames(range(count), 64 * SIZE)
    taken: list[int] = []
    offered = threading.Semaphore(0)

    def pass_one() -> None:
        for number in range(count):
            held.offer(number, _Frame(number))  # type: ignore[arg-type]
            offered.release()

    thread = threading.Thread(target=pass_one)
    thread.start()
    for number in range(count):
        offered.acquire()  # pass 2 asks for a frame once pass 1 is past it (early_targets)
        frame = held.take(number)
        if frame is None:
            break
        taken.append(frame.number)  # type: ignore[attr-defined]
    thread.join()
    # a prefix in order, each frame taken once, never more held at once than the budget, and
    # nothing left held once pass 2 has taken all it could
    assert taken == list(range(len(taken))) and len(taken) == held.taken <= held.held
    assert 0 < held.peak_bytes <= 64 * SIZE and held.held_bytes == 0


def _decoded(fmt: str = "yuv420p") -> av.VideoFrame:
    rng = np.random.default_rng(5)
    bgr = rng.integers(0, 256, (48, 64, 3), np.uint8)
    return av.VideoFrame.from_ndarray(bgr, format="bgr24").reformat(format=fmt)


def test_another_pass_gets_the_same_picture_and_none_of_the_conversions() -> None:
    picture = _decoded()
    first = DecodedFrame.of_picture(picture, "bgr24")
    region = first.region(Roi(8, 8, 40, 40))
    assert region is not None and first.small(32) is not None
    second = first.for_another_pass()
    assert second is not first and second.converted() is None
    assert second.nbytes == sum(p.buffer_size for p in picture.planes)  # the picture alone
    assert np.array_equal(second.to_ndarray(), DecodedFrame.of_picture(picture, "bgr24")
                          .to_ndarray())
    second.to_ndarray()[:] = 0  # pasting into the second leaves the first's pixels alone
    assert region.pixels.any() and first.region(Roi(8, 8, 40, 40)) is region


def test_another_pass_of_a_picture_converted_whole_keeps_the_conversion() -> None:
    picture = _decoded("rgb24")  # not read by parts: the reader converts it whole at once
    first = DecodedFrame.of_picture(picture, "bgr24")
    whole = first.to_ndarray()
    second = first.for_another_pass()
    assert second.to_ndarray() is whole
    plate = DecodedFrame.of_array(np.ones((4, 4, 3), np.float32))
    assert plate.for_another_pass().to_ndarray() is plate.to_ndarray()
