"""`facefuse render` killed and signalled mid-render, for real.

SIGKILL leaves only complete frames under final names (at most one stale hidden temporary
per writer, the frames being written); a re-run skips exactly the finished frames (damaged
ones are rendered again) and ends byte-identical to an uninterrupted render. SIGTERM cancels
between frames: exit 143, complete frames only, no temporary file, resumable; also during
pass 1 (nothing cached), on a video output (no file at all) and while waiting for another
process's analysis. SIGINT: exit 130, complete frames only.

`farm` (tests/integration/conftest.py) is a 120-frame clip and its uninterrupted reference
render, made once per session; tests/integration/farm_helpers.py starts and reads the processes.
"""

from __future__ import annotations

import signal
import subprocess
import time
from pathlib import Path

import numpy as np

from facefuse.shot.output.writers import WRITE_WORKERS
from tests.integration.farm_helpers import (
    CLIP_FRAMES,
    SIGTERM_EXIT,
    Farm,
    as_uint8,
    assert_identical_to,
    assert_only_outputs,
    collect,
    farm_clip,
    finish,
    read_pixels,
    run,
    start,
    temp_files,
    wait_for_frames,
    wait_for_lines,
)
from tests.media_factory import read_marker
from tests.render_media import make_face_clip


def test_sigkill_leaves_complete_frames_and_a_rerun_finishes_identically(farm: Farm,
                                                                         tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    command = farm.command(out / "out.####.png")
    proc = start(farm, command, tmp_path / "killed")
    wait_for_frames(proc, out, 30, "png")
    proc.send_signal(signal.SIGKILL)
    assert proc.wait(timeout=30) == -signal.SIGKILL

    # Only complete frames under final names; the frames being encoded when the process died
    # (at most WRITE_WORKERS at once) may remain as hidden temporaries.
    done = assert_only_outputs(out, "png", max_temps=WRITE_WORKERS)
    assert 30 <= len(done) < CLIP_FRAMES, "the kill must land mid-render"
    first_missing = min(set(range(1, CLIP_FRAMES + 1)) - set(done))
    assert max(done) < first_missing + WRITE_WORKERS, "frames are written nearly in order"
    assert_identical_to(done, farm.reference)
    stale = temp_files(out)

    # What a crash on a file system without atomic rename (or a full disk) leaves: a truncated
    # and an empty file under final names. A re-run must render those again, not skip them.
    damaged = (3, 7)
    data = done[damaged[0]].read_bytes()
    done[damaged[0]].write_bytes(data[:len(data) // 2])
    done[damaged[1]].write_bytes(b"")
    kept = [n for n in done if n not in damaged]

    resumed = run(farm, command, tmp_path / "resumed")
    assert resumed.returncode == 0, resumed.stderr
    summary = resumed.summary
    assert summary["skipped"] == len(kept)
    assert summary["swapped"] + summary["no_face"] == CLIP_FRAMES - len(kept)
    assert summary["frames"] == CLIP_FRAMES and summary["failed"] == []
    assert [r["frame"] for r in resumed.frames if r["status"] == "skipped"] == kept
    final = assert_only_outputs(out, "png", max_temps=len(stale))
    assert list(final) == list(range(1, CLIP_FRAMES + 1))
    assert_identical_to(final, farm.reference)
    print(f"\nSIGKILL after {len(done)} frames, {len(stale)} stale temporary file(s) "
          f"{[p.name for p in stale]}; resume skipped {summary['skipped']}")


def test_sigterm_cancels_cleanly_with_exit_143_and_resumes(farm: Farm, tmp_path: Path) -> None:
    """EXR output this time: the display-referred 8-bit frames are stored scene-linear in half
    float, which encodes back to the same 8-bit code values."""
    out = tmp_path / "out"
    out.mkdir()
    command = farm.command(out / "out.####.exr")
    proc = start(farm, command, tmp_path / "termed")
    wait_for_frames(proc, out, 25, "exr")
    proc.send_signal(signal.SIGTERM)
    cancelled = finish(proc, tmp_path / "termed", timeout=60)

    assert cancelled.returncode == SIGTERM_EXIT, cancelled.stderr
    assert cancelled.summary["cancelled"] is True
    assert cancelled.summary["failed"] == []
    done = assert_only_outputs(out, "exr", max_temps=0)  # a clean stop leaves no temporary
    assert 25 <= len(done) < CLIP_FRAMES
    reported = [r["frame"] for r in cancelled.frames]
    assert reported == list(done) == list(range(1, len(done) + 1)), \
        "exactly the reported frames are on disk"
    for number, path in done.items():
        expected = read_pixels(farm.reference[number])
        assert np.array_equal(as_uint8(read_pixels(path))[..., :3], expected[..., :3]), number

    resumed = run(farm, command, tmp_path / "resumed")
    assert resumed.returncode == 0, resumed.stderr
    assert resumed.summary["skipped"] == len(done)
    assert resumed.summary["swapped"] == CLIP_FRAMES - len(done)
    final = assert_only_outputs(out, "exr", max_temps=0)
    assert list(final) == list(range(1, CLIP_FRAMES + 1))
    for number, path in final.items():
        expected = read_pixels(farm.reference[number])
        assert np.array_equal(as_uint8(read_pixels(path))[..., :3], expected[..., :3]), number
        assert read_marker(as_uint8(read_pixels(path))[..., 2::-1]) == number - 1


def test_sigint_exits_130_with_complete_frames_and_no_temporary(farm: Farm,
                                                                tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    proc = start(farm, farm.command(out / "out.####.png"), tmp_path / "interrupted")
    # early: the render now writes these small frames at ~70 a second, so on a loaded machine
    # a signal sent after 20 once landed after the last
    wait_for_frames(proc, out, 8, "png")
    proc.send_signal(signal.SIGINT)
    interrupted = finish(proc, tmp_path / "interrupted", timeout=60)
    assert interrupted.returncode == 130, interrupted.stderr
    done = assert_only_outputs(out, "png", max_temps=0)
    assert 8 <= len(done) < CLIP_FRAMES
    assert [r["frame"] for r in interrupted.frames] == list(done) == list(range(1, len(done) + 1))
    assert_identical_to(done, farm.reference)


def test_sigterm_on_a_video_output_leaves_no_file(farm: Farm, tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    log = tmp_path / "video"
    proc = start(farm, farm.command(out / "out.mkv", "--codec", "mjpeg"), log)
    wait_for_lines(proc, log, 20)
    assert any(p.name.endswith(".tmp.mkv") for p in out.iterdir()), "being written"
    proc.send_signal(signal.SIGTERM)
    result = finish(proc, log, timeout=60)
    assert result.returncode == SIGTERM_EXIT, result.stderr
    assert result.summary["cancelled"] is True and result.summary["swapped"] < CLIP_FRAMES
    assert list(out.iterdir()) == [], "neither the video nor its temporary file may remain"


def test_sigterm_during_analysis_exits_143_promptly_and_caches_only_what_it_analysed(
        farm: Farm, tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    log = tmp_path / "early"
    cache = tmp_path / "node" / "embeddings"
    proc = start(farm, farm.command(out / "out.####.png", verbose=True), log, cache=cache)
    wait_for_lines(proc, log, 0, needle=f"analysing {CLIP_FRAMES} frames")
    time.sleep(0.5)
    proc.send_signal(signal.SIGTERM)
    signalled = time.monotonic()
    result = finish(proc, log, timeout=60)
    stopped_s = time.monotonic() - signalled
    assert result.returncode == SIGTERM_EXIT, result.stderr
    assert result.summary["cancelled"] is True
    assert result.summary["swapped"] == result.summary["no_face"] == 0
    assert result.frames == [] and list(out.iterdir()) == []
    assert stopped_s < 10, f"took {stopped_s:.1f} s to stop"
    for entry in (cache / "analysis").glob("*.npz"):  # kept for the resume, never as whole
        with np.load(entry) as saved:
            assert 0 < len(saved["frames"]) < CLIP_FRAMES
    print(f"\nSIGTERM during pass 1: stopped {stopped_s:.2f} s after the signal")


def test_sigterm_while_waiting_for_another_process_analysis_stops_promptly(
        farm: Farm, tmp_path: Path, testdata: Path) -> None:
    """Two chunks of one shot share a cache: the second waits for the first's analysis. A
    SIGTERM to the waiting one must cancel it now, not when the other process is done. The
    shot is long enough that the first's analysis (several seconds) outlasts the second's
    start-up on a loaded machine."""
    frames = 4 * CLIP_FRAMES
    clip = make_face_clip(tmp_path / "long.mkv", frames=frames, **farm_clip(testdata))
    cache = tmp_path / "shared" / "cache"
    first_log, second_log = tmp_path / "first", tmp_path / "second"
    for name in ("a", "b"):
        (tmp_path / name).mkdir()
    first = start(farm, farm.command(tmp_path / "a" / "out.####.png", "--chunk", "1/2",
                                     clip=clip, verbose=True), first_log, cache=cache)
    try:
        wait_for_lines(first, first_log, 0, needle=f"analysing {frames} frames")
        second = start(farm, farm.command(tmp_path / "b" / "out.####.png", "--chunk", "2/2",
                                          clip=clip, verbose=True), second_log, cache=cache)
        wait_for_lines(second, second_log, 0, needle="waiting for the analysis of")
        written = first_log.with_suffix(".out").read_text()
        assert first.poll() is None and '"frame"' not in written, \
            "the first process must still be in pass 1 (no frame written yet)"
        second.send_signal(signal.SIGTERM)
        signalled = time.monotonic()
        try:
            second.wait(timeout=30)
        except subprocess.TimeoutExpired:
            second.kill()
            second.wait()
        latency = time.monotonic() - signalled
    finally:
        first.send_signal(signal.SIGTERM)
        first.wait(timeout=60)
    assert latency < 3, (f"the waiting process took {latency:.1f} s to honour SIGTERM: it "
                         "waited for the other process's analysis to end")
    result = collect(second.returncode, second_log)
    assert result.returncode == SIGTERM_EXIT, result.stderr
    assert result.summary["cancelled"] is True and result.frames == []
