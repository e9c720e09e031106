"""How the command line reads the values a user types (shot.contract.option_types, io.sequences):
one sentence and exit 2 for a value past what facefuse can number or write, never a traceback
later (issue 34, class 4)."""

from __future__ import annotations

import argparse
from fractions import Fraction
from pathlib import Path

import pytest

from facefuse.errors import InputError
from facefuse.io.sequences import LARGEST_FRAME, FramePattern, parse_frame_range
from facefuse.shot.contract.frames import parse_frame_list
from facefuse.shot.contract.option_types import OPTION_TYPES


@pytest.mark.parametrize("text, expected", [
    ("p1=dir/a=b.jpg", ("p1", Path("dir/a=b.jpg"))),
    ("p2=x.jpg", ("p2", Path("x.jpg"))),
    ("p1==b.jpg", ("p1", Path("=b.jpg"))),
    ("ref:me.jpg=dir/a=b.jpg", ("ref:me.jpg", Path("dir/a=b.jpg"))),
])
def test_assign_splits_at_the_first_equals_sign(text: str, expected: tuple[str, Path]) -> None:
    assert OPTION_TYPES["assignments"](text) == expected


def test_assign_of_a_reference_picture_with_equals_signs_splits_after_the_picture(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "a=b.jpg").write_bytes(b"picture")
    assert OPTION_TYPES["assignments"]("ref:a=b.jpg=c=d.jpg") == ("ref:a=b.jpg", Path("c=d.jpg"))


@pytest.mark.parametrize("text", ["p1", "=x.jpg", "p1="])
def test_assign_without_both_halves_is_refused(text: str) -> None:
    with pytest.raises(argparse.ArgumentTypeError, match="is not PERSON=IMAGE"):
        OPTION_TYPES["assignments"](text)


@pytest.mark.parametrize("text", ["1e400", "1e-30", "2000000", "1/1000000000"])
def test_a_rate_no_video_can_carry_is_refused(text: str) -> None:
    with pytest.raises(argparse.ArgumentTypeError, match="outside the frame rates"):
        OPTION_TYPES["rate"](text)


def test_a_rate_finer_than_any_clock_is_rounded() -> None:
    assert OPTION_TYPES["rate"]("24000/1001") == Fraction(24000, 1001)
    assert OPTION_TYPES["rate"]("24.0000000000000000000001") == 24


@pytest.mark.parametrize("text, message", [
    (str(2**63 - 8), "past the largest frame number"), (str(2**63), "past the largest"),
    (str(LARGEST_FRAME + 1), "past the largest"), ("-5", "is negative"),
    ("1e3", "is not a whole frame number"), ("ten", "is not a whole frame number")])
def test_a_start_number_facefuse_cannot_number_is_refused(text: str, message: str) -> None:
    with pytest.raises(argparse.ArgumentTypeError, match=message):
        OPTION_TYPES["frame"](text)


def test_the_largest_start_number_is_taken() -> None:
    assert OPTION_TYPES["frame"](str(LARGEST_FRAME)) == LARGEST_FRAME


@pytest.mark.parametrize("text", [f"1-{2**63}", str(LARGEST_FRAME + 1), f"{2**70}-{2**71}"])
def test_a_range_past_the_largest_frame_is_refused(text: str) -> None:
    with pytest.raises(InputError, match="past the largest frame number facefuse takes"):
        parse_frame_range(text)
    with pytest.raises(InputError, match="past the largest frame number facefuse takes"):
        parse_frame_list(f"1-3,{text}")


def test_a_file_numbered_past_the_largest_frame_is_no_frame_of_its_sequence() -> None:
    pattern = FramePattern.parse("plate.####.png")
    assert pattern.number_of(f"plate.{LARGEST_FRAME}.png") == LARGEST_FRAME
    assert pattern.number_of(f"plate.{2**64}.png") is None
