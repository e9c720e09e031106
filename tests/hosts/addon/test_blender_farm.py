"""A .blend on a render farm: `facefuse farm openjd --blend` writes a job whose tasks run the
extension's headless entry, and the real `openjd run` of it renders exactly the frames of the
strips marked Swap on Farm (the trimmed range; unmarked strips untouched), in chunks.

Both task forms run here: bpy as a Python module (the default), and `--blender PATH`, whose
command line (`PATH -b FILE --python-expr ... -- --chunk N/M`) is served by a stand-in that
does what Blender does with it (opens the file, runs the expression with Blender's sys.argv),
since no Blender binary is installed here.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

bpy = pytest.importorskip("bpy", reason="bpy (Blender as a Python module) is not installed")

from tests.hosts.addon.blender_helpers import TRIM_START, TRIMMED, marked_shot

OPENJD = Path(sys.executable).with_name("openjd")
REPO = Path(__file__).resolve().parents[3]
BLENDER_STAND_IN = '''import sys
import bpy
args = sys.argv[1:]
assert args[0] == "-b" and args[2] == "--python-expr", args
bpy.ops.wm.open_mainfile(filepath=args[1])
sys.argv = ["blender", *args]  # what Blender's sys.argv holds; the entry reads after "--"
exec(compile(args[3], "<python-expr>", "exec"))
'''


def env() -> dict[str, str]:
    paths = [str(REPO / "core"), str(REPO), os.environ.get("PYTHONPATH", "")]
    return {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in paths if p)}


def bundle_and_run(shot: SimpleNamespace, job: Path, *options: str
                   ) -> subprocess.CompletedProcess[str]:
    made = subprocess.run([sys.executable, "-m", "facefuse", "farm", "openjd", "--blend",
                           str(shot.blend), "--bundle", str(job), *options],
                          capture_output=True, text=True, env=env(), timeout=60, check=False)
    assert made.returncode == 0, made.stderr
    return subprocess.run([str(OPENJD), "run", str(job / "template.yaml"), "-p",
                           f"file://{job / 'job_parameters.json'}"], capture_output=True,
                          text=True, env=env(), timeout=300, check=False)


def test_openjd_blend_job_renders_exactly_the_marked_strips_frames(
        shot: SimpleNamespace, clip: Path, testdata: Path) -> None:
    marked_shot(shot, clip, testdata)
    run = bundle_and_run(shot, shot.folder / "job", "--chunks", "3", "--python", sys.executable)
    log = run.stdout + run.stderr
    assert run.returncode == 0, log[-3000:]
    assert log.count("Running Task") == 3
    assert log.count("openjd_status: Scene/plate: swapping") == 3
    assert log.count("openjd_progress: 100") == 3, "each task reports its share to the end"
    expected = [f"plate.{n:04d}.png" for n in range(TRIM_START + 1, TRIM_START + TRIMMED + 1)]
    assert sorted(p.name for p in shot.out.iterdir()) == expected
    assert not (shot.folder / "facefuse" / "unmarked").exists()


def test_openjd_blend_job_with_a_blender_binary(shot: SimpleNamespace, clip: Path,
                                               testdata: Path) -> None:
    marked_shot(shot, clip, testdata)
    blender = shot.folder / "blender"
    blender.write_text(f"#!{sys.executable}\n{BLENDER_STAND_IN}")
    blender.chmod(0o755)
    job = shot.folder / "job"
    run = bundle_and_run(shot, job, "--chunks", "2", "--blender", str(blender))
    log = run.stdout + run.stderr
    assert run.returncode == 0, log[-3000:]
    values = json.loads((job / "job_parameters.json").read_text())
    assert values["Blender"] == str(blender) and values["Chunks"] == 2
    assert log.count("Running Task") == 2
    expected = [f"plate.{n:04d}.png" for n in range(TRIM_START + 1, TRIM_START + TRIMMED + 1)]
    assert sorted(p.name for p in shot.out.iterdir()) == expected
