"""The Blender extension on a farm: headless.main renders one chunk of the strips marked Swap
on Farm in a fresh process, then finishes them and adds the result strips; --frames are
timeline frames; bad arguments get one message and exit 2.

The extension zip is installed into the session's throw-away Blender user folder and enabled as
bl_ext.user_default.facefuse once for the modules of tests/hosts/addon/ (`addon`; `shot` is a
saved .blend with a trimmed plate strip: both in tests/hosts/addon/conftest.py; helpers in
tests/hosts/addon/blender_helpers.py).
"""

from __future__ import annotations

import importlib
import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

# tests/hosts/conftest.py points BLENDER_USER_* at a temporary folder before bpy is imported.
bpy = pytest.importorskip("bpy", reason="bpy (Blender as a Python module) is not installed")

import cv2

from facefuse.io.sequences import chunk_of
from tests.hosts.addon.blender_helpers import (
    ADDON,
    FIRST,
    STRIP_START,
    TRIM_START,
    TRIMMED,
    add_source,
    marked_shot,
    new_blend,
    result_strip,
)
from tests.media_factory import read_marker


def run_headless(*args: str, factory: bool = False) -> subprocess.CompletedProcess[str]:
    """headless.main in a fresh Python process with bpy as a module, as a farm would run it
    (factory: with Blender's factory preferences, where the add-on is not enabled)."""
    reset = ("bpy.ops.wm.read_factory_userpref()\n"
             f"assert {ADDON!r} not in bpy.context.preferences.addons\n") if factory else ""
    code = ("import sys, bpy\n" + reset +
            "from bl_ext.user_default.facefuse import headless\n"
            "sys.exit(headless.main(sys.argv[1:]))\n")
    env = {**os.environ, "BLENDER_USER_RESOURCES": os.environ["BLENDER_USER_RESOURCES"]}
    return subprocess.run([sys.executable, "-c", code, *args], env=env, capture_output=True,
                          text=True, timeout=180, check=False)


def test_headless_renders_one_chunk_then_finishes_the_marked_strips(
        shot: SimpleNamespace, clip: Path, testdata: Path) -> None:
    marked_shot(shot, clip, testdata)
    numbers = tuple(range(TRIM_START + 1, TRIM_START + TRIMMED + 1))

    chunk = run_headless(str(shot.blend), "--chunk", "2/3")
    assert chunk.returncode == 0, chunk.stdout + chunk.stderr
    assert sorted(p.name for p in shot.out.glob("plate.*.png")) == [
        f"plate.{n:04d}.png" for n in chunk_of(numbers, 2, 3)]
    assert not (shot.folder / "facefuse" / "unmarked").exists()

    rest = run_headless(str(shot.blend), "--add-strips")
    assert rest.returncode == 0, rest.stdout + rest.stderr
    assert f"{len(chunk_of(numbers, 2, 3))} already done" in rest.stdout
    assert len(list(shot.out.glob("plate.*.png"))) == TRIMMED
    assert bpy.ops.wm.open_mainfile(filepath=str(shot.blend)) == {'FINISHED'}
    swapped = result_strip(bpy.context.scene)
    assert (swapped.frame_final_start, swapped.frame_final_duration) == (FIRST, TRIMMED)

    factory = run_headless(str(shot.blend), "--strip", "plate", factory=True)
    assert factory.returncode == 0, factory.stdout + factory.stderr  # no preferences needed
    assert f"{TRIMMED} already done" in factory.stdout
    missing = run_headless(str(shot.blend), "--strip", "nope")
    assert missing.returncode == 2 and "no strip named 'nope'" in missing.stdout
    assert run_headless(str(shot.blend), "--chunk", "4/3").returncode == 2


def test_headless_frames_are_timeline_frames(shot: SimpleNamespace, testdata: Path,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    headless = importlib.import_module(f"{ADDON}.headless")
    add_source(shot.strip, testdata / "media" / "obama.jpg")
    shot.strip.facefuse.farm = True

    assert headless.main(["--frames", "1-5"]) == 0  # before the strip: nothing to do
    assert "outside frames 1-5, skipped" in capsys.readouterr().out
    assert headless.main(["--frames", f"{FIRST + 7}-{FIRST + 9}"]) == 0
    said = capsys.readouterr().out  # progress counts the timeline frames asked for
    assert "3 timeline frame(s) ->" in said and "(3/3)" in said
    assert f"timeline frame {FIRST + 7} (media {TRIM_START + 8}) " in said
    expected = [f"plate.{n:04d}.png" for n in range(TRIM_START + 8, TRIM_START + 11)]
    assert sorted(p.name for p in shot.out.glob("plate.*.png")) == expected
    assert [read_marker(cv2.imread(str(shot.out / name))) for name in expected] == [
        FIRST + 7 - STRIP_START, FIRST + 8 - STRIP_START, FIRST + 9 - STRIP_START]
    assert not [s for s in shot.scene.sequence_editor.strips if s.facefuse.result_of]


def test_headless_main_in_process_reports_bad_arguments(addon: Any, tmp_path: Path,
                                                         capsys: pytest.CaptureFixture[str]
                                                         ) -> None:
    headless = importlib.import_module(f"{ADDON}.headless")
    new_blend(None)
    assert headless.main(["--strip", "nope"]) == 2
    assert "no strip named 'nope'" in capsys.readouterr().out
    assert headless.main([]) == 2
    assert "no strip marked Swap on Farm" in capsys.readouterr().out
    assert headless.main([str(tmp_path / "gone.blend")]) == 2
    assert headless.main(["--frames", "9-3"]) == 2
    assert "starts after it ends" in capsys.readouterr().err
