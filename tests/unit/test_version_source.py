"""One version source: core/facefuse/version.py. The package metadata (hatch), the command
line, `facefuse.__version__` and the Blender extension's manifest (written by
packaging/blender/build.py) all take it from there; no other file writes it."""

from __future__ import annotations

import importlib.util
import shutil
import tomllib
from pathlib import Path
from types import ModuleType

import pytest

import facefuse
from facefuse.cli.main import main

ROOT = Path(__file__).resolve().parents[2]
MANIFEST = ROOT / "addon" / "blender" / "blender_manifest.toml"


def _build_script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("facefuse_blender_build_version",
                                                  ROOT / "packaging" / "blender" / "build.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_hatch_reads_the_version_file() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert project["tool"]["hatch"]["version"]["path"] == "core/facefuse/version.py"
    assert "version" in project["project"]["dynamic"]


def test_the_cli_says_the_one_version(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["--version"])
    assert capsys.readouterr().out.strip() == f"facefuse {facefuse.__version__}"


def test_the_blender_manifest_gets_the_version_from_the_build(tmp_path: Path) -> None:
    assert "version" not in tomllib.loads(MANIFEST.read_text(encoding="utf-8"))
    build = _build_script()
    assert build.engine_version() == facefuse.__version__
    staged = tmp_path / "blender_manifest.toml"
    shutil.copy(MANIFEST, staged)
    build.write_manifest_fields(staged, ["./wheels/a.whl"], ["linux-x64"])
    written = tomllib.loads(staged.read_text(encoding="utf-8"))
    assert written["version"] == facefuse.__version__
    assert written["wheels"] == ["./wheels/a.whl"] and written["platforms"] == ["linux-x64"]
