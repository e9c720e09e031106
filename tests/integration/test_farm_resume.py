"""Farm jobs resubmitted into a folder that already holds frames: a changed plate is rendered
again; an equivalent --frames range is not.

`farm` (tests/integration/conftest.py) is a 120-frame clip and its uninterrupted reference
render, made once per session; tests/integration/farm_helpers.py starts and reads the processes.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from tests.integration.farm_helpers import (
    CLIP_FRAMES,
    Farm,
    assert_identical_to,
    farm_clip,
    frame_files,
    read_pixels,
    run,
)
from tests.render_media import make_face_clip


def test_a_rerun_over_a_changed_plate_renders_again(farm: Farm, testdata: Path,
                                                   tmp_path: Path) -> None:
    """The plate was replaced (new conform or grade, same file name) and the shot is rendered
    again into the same folder with the same settings: the old frames show the old plate, so
    none may be skipped as finished."""
    out = tmp_path / "out"
    out.mkdir()
    for path in list(farm.reference.values())[:12]:
        shutil.copy2(path, out / path.name)
    plate = tmp_path / "shot.mkv"
    # another plate: a wider conform
    make_face_clip(plate, frames=12, **farm_clip(testdata, (352, 240)))
    result = run(farm, farm.command(out / "out.####.png", clip=plate), tmp_path / "again",
                 cache=tmp_path / "cache")
    assert result.returncode == 0, result.stderr
    assert result.summary["skipped"] == 0, "frames of the old plate were kept as finished"
    assert result.summary["swapped"] == 12
    assert all(read_pixels(path).shape[1] == 352 for path in frame_files(out).values())


def test_an_equivalent_frame_range_skips_the_finished_frames(farm: Farm,
                                                             tmp_path: Path) -> None:
    """A farm job resubmitted with --frames naming exactly the clip's range analyses the same
    frames and renders the same pixels, so the finished frames must be skipped."""
    out = tmp_path / "out"
    shutil.copytree(farm.reference[1].parent, out)
    result = run(farm, farm.command(out / "out.####.png", "--frames", f"1-{CLIP_FRAMES}"),
                 tmp_path / "again")
    assert result.returncode == 0, result.stderr
    assert result.summary["skipped"] == CLIP_FRAMES, result.summary
    assert_identical_to(frame_files(out), farm.reference)
