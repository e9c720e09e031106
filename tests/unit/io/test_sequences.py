"""Frame patterns, frame ranges, chunks and gaps (no pixels)."""

from __future__ import annotations

from pathlib import Path

import pytest

from facefuse.errors import InputError
from facefuse.io.sequences import (
    FramePattern,
    chunk_of,
    find_gaps,
    is_frame_pattern,
    parse_chunk,
    parse_frame_range,
    sequence_of_frame,
)


@pytest.mark.parametrize(("text", "padding", "prefix", "suffix"), [
    ("plates/shot.####.exr", 4, "shot.", ".exr"),
    ("plates/shot.%04d.exr", 4, "shot.", ".exr"),
    ("plates/shot_%d.dpx", 1, "shot_", ".dpx"),
    ("plates/shot.#.png", 1, "shot.", ".png"),
    ("plates/shot.######.tif", 6, "shot.", ".tif"),
])
def test_parse(text: str, padding: int, prefix: str, suffix: str) -> None:
    pattern = FramePattern.parse(text)
    assert (pattern.padding, pattern.prefix, pattern.suffix) == (padding, prefix, suffix)
    assert pattern.folder == Path("plates") and pattern.display == text


@pytest.mark.parametrize(("text", "frame", "name"), [
    ("out/shot.####.exr", 1001, "shot.1001.exr"),
    ("out/shot.####.exr", 42, "shot.0042.exr"),
    ("out/shot.####.exr", 10000, "shot.10000.exr"),
    ("out/shot.%04d.exr", 7, "shot.0007.exr"),
    ("out/shot.%d.exr", 7, "shot.7.exr"),
    ("out/shot.#.exr", 1001, "shot.1001.exr"),
    ("out/shot.#.exr", 0, "shot.0.exr"),
])
def test_path(text: str, frame: int, name: str) -> None:
    assert FramePattern.parse(text).path(frame) == Path("out") / name


def test_negative_frame_is_refused() -> None:
    with pytest.raises(InputError, match="negative"):
        FramePattern.parse("shot.####.exr").path(-1)


def test_scan_finds_frames_including_past_the_padding(tmp_path: Path) -> None:
    for frame in (1001, 1002, 1003, 1005, 10000):
        (tmp_path / f"shot.{frame}.exr").write_bytes(b"x")
    for unrelated in ("shot.1004.exr.tmp", ".shot.1004.ab12cd34.tmp.exr", "shot.1004.dpx",
                      "other.1004.exr", "shot.0999a.exr", "shot.999.exr", "shot.01006.exr",
                      "shot..exr", "shot.-001.exr", "notes.txt"):
        (tmp_path / unrelated).write_bytes(b"x")
    (tmp_path / "shot.1007.exr").mkdir()
    found = FramePattern.parse(str(tmp_path / "shot.####.exr")).scan()
    assert list(found) == [1001, 1002, 1003, 1005, 10000]
    assert found[10000] == tmp_path / "shot.10000.exr"
    assert found[1001] == tmp_path / "shot.1001.exr"


def test_scan_unpadded_and_zero_padded(tmp_path: Path) -> None:
    for name in ("a.1.png", "a.2.png", "a.10.png", "a.0.png", "a.03.png", "b.0001.png",
                 "b.0012.png", "b.012.png"):
        (tmp_path / name).write_bytes(b"x")
    assert list(FramePattern.parse(str(tmp_path / "a.%d.png")).scan()) == [0, 1, 2, 10]
    assert list(FramePattern.parse(str(tmp_path / "b.####.png")).scan()) == [1, 12]


def test_scan_of_a_missing_folder_is_empty(tmp_path: Path) -> None:
    assert FramePattern.parse(str(tmp_path / "none" / "a.####.exr")).scan() == {}


@pytest.mark.parametrize(("text", "message"), [
    ("shot.exr", "no frame token"),
    ("shot.1001.exr", "no frame token"),
    ("shot.%4d.exr", "no frame token"),
    ("shot.####.%04d.exr", "2 frame tokens"),
    ("shot_##_##.exr", "2 frame tokens"),
])
def test_bad_patterns(text: str, message: str) -> None:
    with pytest.raises(InputError, match=message):
        FramePattern.parse(text)


def test_token_in_a_folder_name_is_literal() -> None:
    pattern = FramePattern.parse("take#2/shot.####.exr")
    assert pattern.folder == Path("take#2") and pattern.padding == 4
    assert not is_frame_pattern("take#2/shot.exr")


def test_is_frame_pattern() -> None:
    assert is_frame_pattern("a.####.exr") and is_frame_pattern("a.%04d.exr")
    assert is_frame_pattern("a.%d.exr") and is_frame_pattern("a.#.exr")
    assert not is_frame_pattern("a.1001.exr") and not is_frame_pattern("clip.mov")


@pytest.mark.parametrize(("text", "expected"), [
    ("1001-1100", (1001, 1100)), ("1001", (1001, 1001)), (" 5 - 9 ", (5, 9)), ("0-0", (0, 0)),
])
def test_frame_range(text: str, expected: tuple[int, int]) -> None:
    assert parse_frame_range(text) == expected


@pytest.mark.parametrize("text", ["", "a-b", "1001-", "-5--1", "-5", "1-2-3", "1.5-3", "1100-1001"])
def test_bad_frame_range(text: str) -> None:
    with pytest.raises(InputError):
        parse_frame_range(text)


def test_chunks_split_near_equally() -> None:
    frames = list(range(1001, 1011))
    chunks = [chunk_of(frames, i, 3) for i in (1, 2, 3)]
    assert [len(c) for c in chunks] == [4, 3, 3]
    assert chunks[0] == (1001, 1002, 1003, 1004) and chunks[2] == (1008, 1009, 1010)
    assert sum(chunks, ()) == tuple(frames)


@pytest.mark.parametrize(("total", "count"), [(0, 1), (1, 1), (7, 7), (3, 5), (100, 7), (11, 4)])
def test_chunks_cover_everything_once(total: int, count: int) -> None:
    frames = tuple(range(total))
    chunks = [chunk_of(frames, i, count) for i in range(1, count + 1)]
    assert sum(chunks, ()) == frames
    sizes = [len(c) for c in chunks]
    assert max(sizes) - min(sizes) <= 1 and sizes == sorted(sizes, reverse=True)


@pytest.mark.parametrize(("index", "count"), [(0, 3), (4, 3), (1, 0)])
def test_chunk_of_bad_index(index: int, count: int) -> None:
    with pytest.raises(InputError):
        chunk_of([1, 2, 3], index, count)


def test_parse_chunk() -> None:
    assert parse_chunk("2/5") == (2, 5) and parse_chunk(" 1 / 1 ") == (1, 1)
    for bad in ("0/3", "4/3", "1/0", "junk", "1/", "/3", "1-3", "-1/3", ""):
        with pytest.raises(InputError):
            parse_chunk(bad)


def test_find_gaps() -> None:
    assert find_gaps([1001, 1002, 1005, 1007]) == (1003, 1004, 1006)
    assert find_gaps({3, 1, 2}) == ()
    assert find_gaps([]) == ()
    assert find_gaps([9]) == ()


@pytest.mark.parametrize(("names", "picked", "pattern", "number"), [
    (("plate.1001.png", "plate.1002.png"), "plate.1001.png", "plate.####.png", 1001),
    (("plate.0042.exr",), "plate.0042.exr", "plate.####.exr", 42),
    (("plate.1.png", "plate.2.png", "plate.10.png"), "plate.10.png", "plate.#.png", 10),
    (("shot_v2_0100.dpx", "shot_v2_0101.dpx"), "shot_v2_0101.dpx", "shot_v2_####.dpx", 101),
    (("take3.tif",), "take3.tif", "take#.tif", 3),  # a lone numbered picture: one frame
])
def test_a_picked_frame_names_its_sequence(tmp_path: Path, names, picked, pattern, number):
    for name in names:
        (tmp_path / name).write_bytes(b"x")
    found = sequence_of_frame(tmp_path / picked)
    assert found is not None
    assert found[0].display == str(tmp_path / pattern) and found[1] == number
    assert found[0].scan()[number] == tmp_path / picked


@pytest.mark.parametrize("name", ["clip.0001.mov", "plate.png", "plate.####.png", "gone.1001.png"])
def test_no_sequence_for_a_movie_an_unnumbered_picture_a_pattern_or_a_missing_file(
        tmp_path: Path, name):
    for existing in ("clip.0001.mov", "plate.png"):
        (tmp_path / existing).write_bytes(b"x")
    assert sequence_of_frame(tmp_path / name) is None
