"""Fixtures of the farm tests: a short shot, its reference render, and the farm tools.

`shot` is a 36-frame clip (render_media.make_face_clip with farm_helpers.farm_clip: a real face
YuNet finds in every frame, frame i carrying marker i) with the contract colour swapper, rendered
once per session by one real `facefuse render` process: the reference every farm run must match
byte for byte. `facefuse_program` is an executable that runs this checkout's facefuse with this
interpreter, as a farm's `facefuse` on PATH would. These tests need the farm extra (openjd-cli,
dask[distributed]); the numpy-2 CI run, which installs the engine alone, does not collect
tests/hosts/farm.
"""

from __future__ import annotations

import os
import stat
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.integration import farm_helpers
from tests.integration.farm_helpers import Farm

SHOT_FRAMES = 36


@pytest.fixture(autouse=True)
def _no_process_outlives_its_test() -> Iterator[None]:
    yield
    farm_helpers.kill_started()


@pytest.fixture(scope="session")
def shot(tmp_path_factory: pytest.TempPathFactory, testdata: Path, contract_dir: Path) -> Farm:
    """The clip, models and source, and the reference render of all its frames (PNG)."""
    root = tmp_path_factory.mktemp("farm-shot")
    return farm_helpers.rendered_farm(root, SHOT_FRAMES, testdata, contract_dir,
                                      root / "ref-cache")


@pytest.fixture(scope="session")
def facefuse_program(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """`facefuse` for task commands: this interpreter running this checkout's package."""
    path = tmp_path_factory.mktemp("bin") / "facefuse"
    path.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m facefuse "$@"\n')
    path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return path


def farm_env(**extra: str) -> dict[str, str]:
    """This environment with the checkout first on PYTHONPATH (workers import it) and `extra`."""
    root = Path(__file__).resolve().parents[3]
    paths = [str(root / "core"), str(root)]
    current = os.environ.get("PYTHONPATH")
    return {**os.environ, "PYTHONPATH": os.pathsep.join(paths + ([current] if current else [])),
            **extra}
