"""Concurrent farm processes on one shot: --chunk N/M gives exactly the frames of the range,
byte-identical to one unchunked render; a process that analyses covers the whole --frames
range, two sharing a cache analyse once. Overlapping ranges rendered concurrently into one
folder never expose a damaged frame.

`farm` (tests/integration/conftest.py) is a 120-frame clip and its uninterrupted reference
render, made once per session; tests/integration/farm_helpers.py starts and reads the processes.
"""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np

from tests.integration.farm_helpers import (
    Farm,
    assert_identical_to,
    assert_only_outputs,
    fingerprint_of,
    finish,
    frame_files,
    read_pixels,
    run,
    start,
)


def test_concurrent_chunks_equal_one_unchunked_render(farm: Farm, tmp_path: Path) -> None:
    """Three processes render --frames 11-58 --chunk N/3 into one folder at the same time, two
    sharing an empty cache, one with its own (as on another farm node). A process that analyses
    must analyse the whole range (48 frames), the two sharing a cache only once, and the union
    must be byte-identical to one unchunked render of 11-58."""
    first, last, size = 11, 58, 16
    frames = ("--frames", f"{first}-{last}")
    out, ref, solo = (tmp_path / name for name in ("out", "ref", "solo"))
    for folder in (out, ref, solo):
        folder.mkdir()
    caches = {1: "shared", 2: "shared", 3: "own"}  # two nodes share a cache, one does not
    procs = [start(farm, farm.command(out / "out.####.png", *frames, "--chunk", f"{n}/3",
                                      verbose=True),
                   tmp_path / f"chunk{n}", cache=tmp_path / caches[n] / "embeddings")
             for n in (1, 2, 3)]
    reference = run(farm, farm.command(ref / "out.####.png", *frames), tmp_path / "ref")
    chunks = [finish(p, tmp_path / f"chunk{n}") for n, p in enumerate(procs, 1)]

    assert reference.returncode == 0, reference.stderr
    expected = frame_files(ref)
    assert list(expected) == list(range(first, last + 1))
    slices = [list(range(first + size * i, first + size * (i + 1))) for i in range(3)]
    for n, (chunk, numbers) in enumerate(zip(chunks, slices), 1):
        assert chunk.returncode == 0, chunk.stderr
        assert chunk.summary["frames"] == chunk.summary["swapped"] == size
        assert [r["frame"] for r in chunk.frames] == numbers
    analysed = [f"analysing {last - first + 1} frames" in chunk.stderr for chunk in chunks]
    assert analysed[2], "chunk 3 (own cache) did not analyse the whole --frames range"
    assert analysed[0] != analysed[1], "exactly one of the chunks sharing a cache analyses"
    files = assert_only_outputs(out, "png", max_temps=0)
    assert list(files) == list(range(first, last + 1))
    assert_identical_to(files, expected)

    # The check above can fail: a process that analysed only its own chunk decides otherwise
    # (tracks and the zero-phase smoothing look at the neighbours on both sides).
    middle = slices[1]
    alone = run(farm, farm.command(solo / "out.####.png", "--frames",
                                   f"{middle[0]}-{middle[-1]}"), tmp_path / "solo")
    assert alone.returncode == 0, alone.stderr
    differing = [n for n, path in frame_files(solo).items()
                 if not np.array_equal(read_pixels(path), read_pixels(expected[n]))]
    assert differing, "a chunk analysed alone should differ somewhere from the full-range render"
    print(f"\nframes {middle[0]}-{middle[-1]} analysed alone differ from the {first}-{last} "
          f"render at {len(differing)} of {len(middle)} frames")


def test_overlapping_ranges_in_concurrent_processes_never_corrupt_a_frame(
        farm: Farm, tmp_path: Path) -> None:
    """1-40, 20-60 and 20-60 again, at the same time, into one folder, while this test keeps
    reading the contested frames. Every file must read completely at all times and end
    byte-identical to the reference render of the range whose fingerprint it carries
    (--frames ranges are analysed and smoothed as wholes, so different ranges are different
    renders; the same range twice writes the same bytes)."""
    out = tmp_path / "out"
    out.mkdir()
    ranges = ("1-40", "20-60", "20-60")
    procs = [start(farm, farm.command(out / "out.####.png", "--frames", r), tmp_path / f"p{i}")
             for i, r in enumerate(ranges)]
    deadline = time.monotonic() + 120
    reads, corrupt = 0, []
    while any(p.poll() is None for p in procs) and time.monotonic() < deadline:
        for number, path in frame_files(out).items():
            if 20 <= number <= 40:  # written by two or three processes
                try:
                    read_pixels(path)
                    reads += 1
                except AssertionError as exc:
                    corrupt.append(str(exc))
        time.sleep(0.05)
    runs = [finish(p, tmp_path / f"p{i}") for i, p in enumerate(procs)]
    for result in runs:
        assert result.returncode == 0, result.stderr
    assert not corrupt, corrupt[:3]

    refs: dict[tuple[str, int], tuple[str, Path]] = {}  # (fingerprint, frame) -> range, file
    folders = {r: tmp_path / f"ref{r}" for r in ranges[:2]}
    ref_procs = []
    for r, folder in folders.items():
        folder.mkdir()
        ref_procs.append(start(farm, farm.command(folder / "out.####.png", "--frames", r),
                               folder))
    for (r, folder), proc in zip(folders.items(), ref_procs):
        assert finish(proc, folder).returncode == 0
        refs.update({(fingerprint_of(path), n): (r, path)
                     for n, path in frame_files(folder).items()})
    assert len(refs) == 41 + 40, "each frame of the two ranges carries a fingerprint of its own"

    files = assert_only_outputs(out, "png", max_temps=0)
    assert list(files) == list(range(1, 61))
    owners = {}
    for number, path in files.items():
        key = (fingerprint_of(path), number)
        assert key in refs, f"frame {number} carries an unknown fingerprint"
        owners[number], expected = refs[key]
        assert path.read_bytes() == expected.read_bytes(), number
    by_range = [frame_files(folder) for folder in folders.values()]
    differ = [n for n in range(20, 41)
              if not np.array_equal(read_pixels(by_range[0][n]), read_pixels(by_range[1][n]))]
    print(f"\n{reads} reads of contested frames while they were replaced, none damaged; "
          f"frames 20-40 last written by {sorted({owners[n] for n in range(20, 41)})}; the "
          f"two ranges' renders differ in pixels at {len(differ)} of those 21 frames")
