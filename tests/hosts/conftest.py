"""Host fixtures: an isolated Blender user folder, skipping host tests cleanly, the extension.

bpy reads its user folders when it is first imported, so this module points Blender at a fresh
temporary folder as soon as pytest loads it, before any test module can import bpy. Tests that
need bpy live in files named ``test_blender*.py``: when bpy cannot run here (not installed, wrong
Python, or numpy 2 where bpy 5.0.1 needs Blender's numpy 1.26) those files are reported as skipped
with the reason instead of failing to import (this applies to tests/hosts/addon/ too, whose
conftest.py installs the add-on for its modules). The other host tests need libraries of the test
extra too (HOST_LIBRARIES: the Qt panel, Lua, the farms): where one is missing, their files are
reported as skipped, naming it and the install command.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import shutil
import sys
import tempfile
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from fnmatch import fnmatch
from functools import cache
from pathlib import Path
from types import ModuleType

import pytest

from tests.render_media import render_settings

REPO_ROOT = Path(__file__).resolve().parents[2]
BUILD_SCRIPT = REPO_ROOT / "packaging" / "blender" / "build.py"
BPY_TEST_PREFIX = "test_blender"


@dataclass(frozen=True, slots=True)
class BlenderUserDirs:
    """Where this test session's Blender keeps its preferences, scripts and extensions."""

    root: Path
    config: Path
    scripts: Path
    datafiles: Path
    extensions: Path

    @property
    def site_packages(self) -> Path:
        """The one site-packages all extensions' wheels are unpacked into."""
        py = f"python{sys.version_info.major}.{sys.version_info.minor}"
        return self.extensions / ".local" / "lib" / py / "site-packages"


def _isolate_blender_user_dirs() -> BlenderUserDirs:
    """Point every BLENDER_USER_* folder bpy 5.0.1 reads at a new temporary folder."""
    root = Path(tempfile.mkdtemp(prefix="facefuse-blender-user-"))
    dirs = BlenderUserDirs(root, root / "config", root / "scripts", root / "datafiles",
                           root / "extensions")
    # BLENDER_USER_RESOURCES alone moves all four; the others guard against a caller's own values.
    os.environ["BLENDER_USER_RESOURCES"] = str(root)
    os.environ["BLENDER_USER_CONFIG"] = str(dirs.config)
    os.environ["BLENDER_USER_SCRIPTS"] = str(dirs.scripts)
    os.environ["BLENDER_USER_DATAFILES"] = str(dirs.datafiles)
    os.environ["BLENDER_USER_EXTENSIONS"] = str(dirs.extensions)
    return dirs


_USER_DIRS = _isolate_blender_user_dirs()
# the Qt panel's tests draw offscreen, whatever the caller's display (set before Qt loads)
# (FACEFUSE_TEST_QT_PLATFORM=xcb under xvfb-run runs them on an X server instead)
os.environ["QT_QPA_PLATFORM"] = os.environ.get("FACEFUSE_TEST_QT_PLATFORM", "offscreen")


def pytest_unconfigure() -> None:
    shutil.rmtree(_USER_DIRS.root, ignore_errors=True)


@cache
def bpy_unavailable_reason() -> str | None:
    """None when bpy imports and can run here; otherwise why not (imports bpy on first call)."""
    try:
        import numpy
    except ImportError:
        return "numpy is not installed (bpy needs numpy 1.26)"
    if int(numpy.__version__.split(".")[0]) >= 2:
        return (f"bpy 5.0.1 is built for numpy 1.x (Blender 4.2-5.0 ship numpy 1.26), found numpy "
                f"{numpy.__version__}; use a Python 3.11 environment with numpy<2")
    if importlib.util.find_spec("bpy") is None:
        return ("bpy is not installed (pip install -e '.[test]' on CPython 3.11 x86_64 installs "
                "bpy==5.0.1)")
    try:
        import bpy  # noqa: F401
    except Exception as exc:  # noqa: BLE001 - any failure to start Blender: cannot test here
        return f"bpy failed to import: {type(exc).__name__}: {exc}"
    return None


class _SkippedBpyModule(pytest.Module):
    """A bpy test file collected where bpy cannot run: reported as skipped, never imported."""

    def collect(self) -> list[pytest.Item | pytest.Collector]:
        pytest.skip(f"{self.path.name}: {bpy_unavailable_reason() or 'bpy unavailable'}")


# Test files (fnmatch patterns, relative to tests/hosts) -> (module, the pip name providing it)
HOST_LIBRARIES: dict[str, tuple[tuple[str, str], ...]] = {
    "test_panel*.py": (("PySide6", "PySide6-Essentials"), ("pytestqt", "pytest-qt")),
    "test_resolve_launcher.py": (("lupa", "lupa"),),
    "farm/test_*.py": (("distributed", "dask[distributed]"), ("openjd.model", "openjd-model"),
                       ("yaml", "PyYAML")),
    "addon/test_blender_farm.py": (("openjd.cli", "openjd-cli"),),
    "test_otio_*.py": (("opentimelineio", "opentimelineio"),),
}
INSTALL_HINT = "pip install -e '.[test]'"


def _installed(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except ModuleNotFoundError:  # a dotted name whose parent package is missing
        return False


def missing_libraries_reason(module_path: Path) -> str | None:
    """None when a host test file's libraries are all installed; otherwise which are not."""
    relative = module_path.relative_to(Path(__file__).parent).as_posix()
    missing = [pip for pattern, needs in HOST_LIBRARIES.items() if fnmatch(relative, pattern)
               for module, pip in needs if not _installed(module)]
    if not missing:
        return None
    verb = "is" if len(missing) == 1 else "are"
    return f"{', '.join(missing)} {verb} not installed: {INSTALL_HINT}"


class _SkippedHostModule(pytest.Module):
    """A host test file whose libraries are missing: reported as skipped, never imported."""

    def collect(self) -> list[pytest.Item | pytest.Collector]:
        pytest.skip(f"{self.path.name}: {missing_libraries_reason(self.path)}")


def pytest_pycollect_makemodule(module_path: Path,
                                parent: pytest.Collector) -> pytest.Module | None:
    if module_path.name.startswith(BPY_TEST_PREFIX) and bpy_unavailable_reason():
        return _SkippedBpyModule.from_parent(parent, path=module_path)
    if missing_libraries_reason(module_path):
        return _SkippedHostModule.from_parent(parent, path=module_path)
    return None


@pytest.fixture(scope="session")
def blender_user_dirs() -> BlenderUserDirs:
    """This session's Blender user folders (bpy can only read them once, so one per session).

    Fails loudly if bpy was imported before this conftest set them, i.e. if bpy is using the
    developer's real Blender configuration.
    """
    if reason := bpy_unavailable_reason():
        pytest.skip(reason)
    import bpy

    actual = Path(bpy.utils.user_resource("EXTENSIONS"))
    if actual != _USER_DIRS.extensions:
        pytest.fail(f"bpy uses {actual}, not the isolated {_USER_DIRS.extensions}: bpy was "
                    "imported before tests/hosts/conftest.py set BLENDER_USER_*")
    return _USER_DIRS


def load_build_module() -> ModuleType:
    """packaging/blender/build.py as a module (packaging/ is not a Python package)."""
    spec = importlib.util.spec_from_file_location("facefuse_blender_build", BUILD_SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses and pickling look modules up by name
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="session")
def blender_build() -> ModuleType:
    """The extension build script's functions (build_extension, find_blender_ext, zip_wheels...)."""
    return load_build_module()


def _index_reachable(timeout_s: float = 10.0) -> bool:
    url = os.environ.get("PIP_INDEX_URL", "https://pypi.org/simple").rstrip("/") + "/pip/"
    try:
        with urllib.request.urlopen(urllib.request.Request(url, method="HEAD"), timeout=timeout_s):
            return True
    except OSError:
        return False


@pytest.fixture(scope="session")
def blender_extension_zip(blender_build: ModuleType,
                          tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The linux-x64 extension zip, built once per session from addon/blender and this repo.

    Wheels come from a persistent cache ($FACEFUSE_WHEEL_CACHE, else the user cache folder's
    facefuse/blender-wheels), so only the first run on a machine downloads (~150 MB from PyPI);
    later runs build offline in about ten seconds.
    """
    addon_dir = REPO_ROOT / "addon" / "blender"
    if not (addon_dir / "blender_manifest.toml").is_file():
        pytest.skip(f"no extension source: {addon_dir / 'blender_manifest.toml'} is missing")
    if importlib.util.find_spec("bpy") is None:
        pytest.skip("bpy is not installed: its blender_ext.py builds and validates the zip")
    out_dir = tmp_path_factory.mktemp("blender-extension")
    wheel_cache = blender_build.default_wheel_cache()
    build = blender_build.build_extension
    try:
        zips = build(REPO_ROOT, out_dir, ["linux-x64"], wheel_cache, index="offline")
    except blender_build.BuildError:
        if not _index_reachable():
            pytest.skip(f"PyPI cannot be reached and the wheel cache {wheel_cache} lacks the "
                        "wheels (set FACEFUSE_WHEEL_CACHE to a filled cache, or go online once)")
        zips = build(REPO_ROOT, out_dir, ["linux-x64"], wheel_cache, index="cache-first")
    assert len(zips) == 1, zips
    return zips[0]


@pytest.fixture(autouse=True)
def _panel_settings_store(request: pytest.FixtureRequest,
                          tmp_path_factory: pytest.TempPathFactory,
                          monkeypatch: pytest.MonkeyPatch) -> None:
    """The Qt panel's tests remember settings in a folder of their own, never the user's; the
    question before a render replaces finished frames made otherwise is answered Replace
    (a modal box would wait for a click forever; tests of the question set their own)."""
    if not request.path.name.startswith("test_panel"):
        return
    from PySide6.QtCore import QSettings

    from addon.panel import rendering

    folder = tmp_path_factory.mktemp("qt-settings")
    QSettings.setPath(QSettings.Format.IniFormat, QSettings.Scope.UserScope, str(folder))
    monkeypatch.setattr(rendering, "ask_replace", lambda parent, replacement: True)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Blender reports an operator's error through sys.excepthook, as it should; pytest-qt's
    capture of exceptions in the Qt event loop (for the Qt panel's tests) would take those for
    Qt errors, so the bpy tests opt out of it."""
    if not config.pluginmanager.hasplugin("pytest-qt"):
        return  # the marker is pytest-qt's
    for item in items:
        if item.path.name.startswith(BPY_TEST_PREFIX):
            item.add_marker(pytest.mark.qt_no_exception_capture)


@pytest.fixture()
def base(render_models: Path, render_cache: Path):
    """The Qt panel tests' settings: real YuNet, the contract recogniser, the colour swapper."""
    return render_settings(render_models, render_cache.parent, swapper="colour")


@pytest.fixture()
def source(testdata: Path) -> Path:
    return testdata / "media" / "astronaut.png"


@pytest.fixture()
def consent_record(tmp_path: Path) -> Callable[..., Path]:
    """Writes a consent record (docs/consent.md) into the test's folder: `performer`'s, under
    `name`, scoped to `project` (None: any project), holding for every day and shot."""
    def write(performer: str = "Jane Doe", name: str = "jane.consent.json",
              project: str | None = None) -> Path:
        data = {"schema": "facefuse.consent/1", "performer": performer,
                "document": {"name": "rider.pdf",
                             "sha256": hashlib.sha256(performer.encode()).hexdigest()},
                "scope": {} if project is None else {"project": project},
                "recorded_by": "A. Producer", "recorded_on": "2026-10-30"}
        path = tmp_path / name
        path.write_text(json.dumps(data), encoding="utf-8")
        return path
    return write
