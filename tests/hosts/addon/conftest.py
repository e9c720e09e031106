"""The add-on installed in bpy for the test_blender_*.py modules of this folder, and a shot.

Package-scoped: the extension is installed (and a clip made) once for all the modules here, and
uninstalled when the last of them is done, before tests/hosts/test_blender_package.py installs
the zip on its own (it skips when it finds the add-on already installed).

tests/hosts/conftest.py sets BLENDER_USER_* before bpy is first imported and reports these bpy
files as skipped where bpy cannot run; so this file imports bpy (and blender_helpers, which does)
only inside the fixtures, which only those files request.
"""

from __future__ import annotations

import zipfile
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from tests.render_media import face_photo, make_face_clip

ADDON_ROOT = Path(__file__).resolve().parents[3] / "addon" / "blender"


@pytest.fixture(scope="package")
def extension_zip(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
                  ) -> Path:
    """The packaged zip with its wheels (tests/hosts/conftest.py: blender_extension_zip); where
    that cannot be built (no wheels cached, offline) addon/blender zipped here without wheels,
    which works because facefuse is importable in this environment already."""
    try:
        return Path(request.getfixturevalue("blender_extension_zip"))
    except (pytest.FixtureLookupError, pytest.skip.Exception):
        pass
    path = tmp_path_factory.mktemp("extension") / "facefuse.zip"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        for file in sorted(ADDON_ROOT.rglob("*")):
            if file.is_file() and "__pycache__" not in file.parts:
                archive.write(file, file.relative_to(ADDON_ROOT).as_posix())
    return path


@pytest.fixture(scope="package")
def addon(blender_user_dirs: Any, extension_zip: Path) -> Iterator[Any]:
    """The extension installed from its zip into the user_default repository of this
    session's throw-away Blender user folder, and enabled; uninstalled afterwards."""
    import bpy

    from tests.hosts.addon import blender_helpers as blender

    blender.uninstall()
    assert bpy.ops.extensions.package_install_files(
        filepath=str(extension_zip), repo="user_default", enable_on_install=True) == {'FINISHED'}
    assert blender.ADDON in bpy.context.preferences.addons
    yield blender.module()
    blender.uninstall()


@pytest.fixture(scope="package")
def clip(testdata: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """20 frames, 24 fps, 320x240: frame i carries marker i and a real face."""
    from tests.hosts.addon.blender_helpers import CLIP_FRAMES

    return make_face_clip(tmp_path_factory.mktemp("clip") / "plate.mp4", face_photo(testdata),
                          frames=CLIP_FRAMES)


@pytest.fixture
def shot(addon: Any, clip: Path, testdata: Path, render_models: Path, render_cache: Path,
         tmp_path: Path) -> SimpleNamespace:
    """A saved .blend with the clip as movie strip 'plate' (active), trimmed at both ends and
    set up for the contract colour swapper, real YuNet, CPU, offline; no source yet."""
    from tests.hosts.addon.blender_helpers import add_plate, configure, new_blend

    scene = new_blend(tmp_path / "shot.blend")
    strip = add_plate(scene, clip)
    configure(strip, testdata, render_models, render_cache)
    return SimpleNamespace(scene=scene, strip=strip, blend=tmp_path / "shot.blend",
                           folder=tmp_path, out=tmp_path / "facefuse" / "plate")
