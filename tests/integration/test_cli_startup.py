"""The command line starts without loading the engine: ONNX Runtime, FFmpeg (PyAV), OpenCV,
OpenImageIO and OpenColorIO load only when a command that needs them runs, so `facefuse models
list`, `--help` and the farm commands answer at once (each cli module imports them where its
command runs)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ENGINE = ("onnxruntime", "onnx", "av", "cv2", "OpenImageIO", "PyOpenColorIO",
          "facefuse.shot.run.render", "facefuse.pipeline")

PROBE = f"""
import json, sys
from facefuse.cli.main import main
code = main(sys.argv[1:])
print(json.dumps({{"code": code, "loaded": [m for m in {ENGINE!r} if m in sys.modules]}}))
"""


def _probe(tmp_path: Path, *argv: str) -> dict:
    env = {**os.environ, "FACEFUSE_MODELS": str(tmp_path / "models"),
           "FACEFUSE_CACHE": str(tmp_path / "cache")}
    done = subprocess.run([sys.executable, "-c", PROBE, *argv], capture_output=True, text=True,
                          env=env, check=False, timeout=120)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_models_list_loads_no_engine_library(tmp_path: Path) -> None:
    result = _probe(tmp_path, "models", "list")
    assert result == {"code": 0, "loaded": []}


def test_a_command_line_usage_error_loads_no_engine_library(tmp_path: Path) -> None:
    result = _probe(tmp_path, "render", "-s", "a.jpg", "-i", "in.mp4", "-o", "o.mp4",
                    "--codec", "no-such-codec")
    assert result == {"code": 2, "loaded": []}


def test_a_bad_setting_is_refused_before_the_engine_loads(tmp_path: Path) -> None:
    result = _probe(tmp_path, "render", "-s", "a.jpg", "-i", "in.mp4", "-o", "o.mp4",
                    "--threads", "-2", "--providers", "cuda,cpu")
    assert result == {"code": 2, "loaded": []}


def test_the_doctor_loads_the_engine_when_it_runs(tmp_path: Path) -> None:
    # the same probe sees the engine once a command needs it (so the tests above can fail)
    result = _probe(tmp_path, "doctor", "--json")
    assert result["code"] == 0 and "onnxruntime" in result["loaded"]
