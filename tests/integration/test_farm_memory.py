"""Peak RSS of a 400-frame render equals that of a 60-frame one (streaming, bounded queues).

`farm` (tests/integration/conftest.py) is a 120-frame clip and its uninterrupted reference
render, made once per session; tests/integration/farm_helpers.py starts and reads the processes.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from tests.integration.farm_helpers import (
    LONG_FRAMES,
    SHORT_FRAMES,
    Farm,
    Run,
    collect,
    farm_clip,
    start,
)
from tests.render_media import make_face_clip


def _peak_rss_mb(farm: Farm, command: list[str], log: Path,
                 cache: Path) -> tuple[float, float, Run]:
    """Peak resident memory (MB) and CPU seconds of one render process: its own rusage, through
    wait4 (RUSAGE_CHILDREN would report the largest child this test process ever had)."""
    proc = start(farm, command, log, cache)
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    return (usage.ru_maxrss / 1024.0, usage.ru_utime + usage.ru_stime,
            collect(proc.returncode, log))


def test_peak_memory_does_not_grow_with_shot_length(farm: Farm, testdata: Path,
                                                    tmp_path: Path) -> None:
    """60 and 400 frames at 640x360 (0.7 MB a frame: keeping every decoded frame would cost
    240 MB more), each through both passes (own empty cache) into an MJPEG video."""
    size = (640, 360)
    peaks, seconds, cpu = {}, {}, {}
    for frames in (SHORT_FRAMES, LONG_FRAMES):
        clip = make_face_clip(tmp_path / f"clip{frames}.mkv", frames=frames,
                              **farm_clip(testdata, size))
        command = farm.command(tmp_path / f"out{frames}.mkv", "--codec", "mjpeg", clip=clip)
        started = time.perf_counter()
        peaks[frames], cpu[frames], result = _peak_rss_mb(farm, command, tmp_path / f"mem{frames}",
                                             tmp_path / f"cache{frames}" / "embeddings")
        seconds[frames] = time.perf_counter() - started
        assert result.returncode == 0, result.stderr
        assert result.summary["swapped"] == frames
    print(f"\npeak RSS at {size[0]}x{size[1]}: "
          + ", ".join(f"{n} frames {peaks[n]:.1f} MB ({seconds[n]:.1f} s, {cpu[n]:.1f} s CPU)"
                    for n in peaks))
    assert peaks[LONG_FRAMES] < peaks[SHORT_FRAMES] * 1.10 + 24, peaks
