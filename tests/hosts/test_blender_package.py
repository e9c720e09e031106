"""The packaged Blender extension: what the linux-x64 zip holds, and that Blender installs it.

The zip comes from the session fixture ``blender_extension_zip`` (packaging/blender/build.py).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path
from types import ModuleType

import pytest
from packaging.requirements import Requirement
from packaging.tags import compatible_tags, cpython_tags
from packaging.utils import canonicalize_name, parse_wheel_filename

from facefuse import __version__

ADDON_MODULE = "bl_ext.user_default.facefuse"
ADDON_DIR = Path(__file__).resolve().parents[2] / "addon" / "blender"
BLENDER_NUMPY = "1.26.4"
# Blender 4.2-5.0 on Linux: CPython 3.11, x86_64, glibc 2.28.
LINUX_X64_PLATFORMS = [f"manylinux_2_{minor}_x86_64" for minor in range(28, 16, -1)] + [
    "manylinux2014_x86_64", "manylinux2010_x86_64", "manylinux1_x86_64", "linux_x86_64"]
LINUX_X64_CP311 = frozenset(
    [*cpython_tags((3, 11), ["cp311"], LINUX_X64_PLATFORMS),
     *compatible_tags((3, 11), "cp311", LINUX_X64_PLATFORMS)])
MARKER_ENV = {"python_version": "3.11", "python_full_version": "3.11.9", "sys_platform": "linux",
              "platform_system": "Linux", "platform_machine": "x86_64", "os_name": "posix",
              "implementation_name": "cpython", "platform_python_implementation": "CPython",
              "extra": ""}


def _manifest(zip_path: Path) -> dict:
    with zipfile.ZipFile(zip_path) as zf:
        return tomllib.loads(zf.read("blender_manifest.toml").decode("utf-8"))


def _wheel_names(zip_path: Path) -> list[str]:
    with zipfile.ZipFile(zip_path) as zf:
        return sorted(n.removeprefix("wheels/") for n in zf.namelist()
                      if n.startswith("wheels/") and n.endswith(".whl"))


def _wheel_metadata(zip_path: Path, wheel_name: str) -> str:
    """METADATA of a wheel nested in the extension zip."""
    with (zipfile.ZipFile(zip_path) as outer, outer.open(f"wheels/{wheel_name}") as fh,
          zipfile.ZipFile(fh) as wheel):
        name = next(n for n in wheel.namelist()
                    if n.count("/") == 1 and n.endswith(".dist-info/METADATA"))
        return wheel.read(name).decode("utf-8")


def _numpy_requirements(metadata: str) -> list[Requirement]:
    reqs = [Requirement(line.split(":", 1)[1].strip()) for line in metadata.splitlines()
            if line.startswith("Requires-Dist:")]
    return [r for r in reqs if canonicalize_name(r.name) == "numpy"
            and (r.marker is None or r.marker.evaluate(MARKER_ENV))]


def test_zip_is_named_for_linux_x64(blender_extension_zip: Path) -> None:
    assert blender_extension_zip.is_file()
    assert blender_extension_zip.name.startswith("facefuse-")
    assert blender_extension_zip.name.endswith("-linux_x64.zip")


def test_zip_validates_with_blender_ext(blender_extension_zip: Path,
                                        blender_build: ModuleType) -> None:
    proc = subprocess.run([sys.executable, str(blender_build.find_blender_ext()), "validate",
                           str(blender_extension_zip)], check=False, capture_output=True,
                          text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_manifest_lists_exactly_the_bundled_wheels(blender_extension_zip: Path) -> None:
    manifest = _manifest(blender_extension_zip)
    bundled = _wheel_names(blender_extension_zip)
    assert manifest["id"] == "facefuse"
    assert manifest["version"] == __version__  # written by the build from facefuse's one source
    assert f"facefuse-{__version__}-py3-none-any.whl" in bundled
    assert sorted(w.removeprefix("./wheels/") for w in manifest["wheels"]) == bundled
    # blender_ext.py --split-platforms records what this platform's zip holds: Blender reads this.
    generated = manifest["build"]["generated"]
    assert sorted(w.removeprefix("./wheels/") for w in generated["wheels"]) == bundled


def test_zip_holds_every_module_of_the_addon(blender_extension_zip: Path) -> None:
    """Each addon/blender/*.py is packaged at the zip's root, and nothing else is."""
    source = sorted(p.name for p in ADDON_DIR.glob("*.py"))
    with zipfile.ZipFile(blender_extension_zip) as zf:
        packaged = sorted(n for n in zf.namelist() if n.endswith(".py") and "/" not in n)
    assert packaged == source


def test_platforms_is_linux_x64_only(blender_extension_zip: Path) -> None:
    manifest = _manifest(blender_extension_zip)
    assert manifest["platforms"] == ["linux-x64"]
    assert manifest["build"]["generated"]["platforms"] == ["linux-x64"]


def test_permissions_declare_files_and_network(blender_extension_zip: Path) -> None:
    permissions = _manifest(blender_extension_zip).get("permissions", {})
    assert permissions.get("files"), "reads footage and writes plates: declare [permissions] files"
    assert permissions.get("network"), "downloads models: declare [permissions] network"


def test_numpy_is_never_bundled(blender_extension_zip: Path) -> None:
    projects = {canonicalize_name(parse_wheel_filename(w)[0]) for w in
                _wheel_names(blender_extension_zip)}
    assert "numpy" not in projects, "Blender ships numpy; a bundled one would shadow it"


def test_bundles_the_engine_and_opencv_4_11(blender_extension_zip: Path) -> None:
    versions = {str(name): str(version) for name, version, _, _ in
                map(parse_wheel_filename, _wheel_names(blender_extension_zip))}
    assert "facefuse" in versions
    assert versions.get("opencv-python-headless") == "4.11.0.86"
    assert "onnxruntime" in versions


def test_every_wheel_runs_on_cp311_linux_x86_64(blender_extension_zip: Path) -> None:
    misfits = [w for w in _wheel_names(blender_extension_zip)
               if not set(parse_wheel_filename(w)[3]) & LINUX_X64_CP311]
    assert misfits == []


def test_every_wheel_accepts_blenders_numpy(blender_extension_zip: Path) -> None:
    refusals = {}
    for wheel in _wheel_names(blender_extension_zip):
        for req in _numpy_requirements(_wheel_metadata(blender_extension_zip, wheel)):
            if not req.specifier.contains(BLENDER_NUMPY, prereleases=True):
                refusals[wheel] = str(req)
    assert refusals == {}


# A fresh Blender started after the install, as a user's next session would be: the extension
# site-packages then comes before the environment's own, so imports resolve to the bundled wheels.
FRESH_SESSION_PROBE = r"""
import json, sys
import bpy, numpy as np
import av, cv2, facefuse, onnx, onnxruntime as ort, OpenImageIO as oiio, PyOpenColorIO
from onnx import TensorProto, helper
graph = helper.make_graph([helper.make_node("Identity", ["x"], ["y"])], "g",
    [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
    [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])])
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=8)
session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
frame = np.zeros((16, 16, 3), np.uint8)
checks = {
    "cv2": cv2.resize(frame, (8, 8)).shape == (8, 8, 3),
    "onnxruntime": session.run(None, {"x": np.ones(2, np.float32)})[0].tolist() == [1.0, 1.0],
    "av": av.VideoFrame.from_ndarray(frame, format="rgb24").to_ndarray().shape == (16, 16, 3),
    "OpenImageIO": oiio.ImageBuf(oiio.ImageSpec(4, 4, 3, "float")).get_pixels().shape[:2] == (4, 4),
}
files = {m.__name__: m.__file__ for m in (av, cv2, facefuse, onnx, ort, oiio, PyOpenColorIO)}
print("PROBE " + json.dumps({"numpy": np.__version__, "files": files, "checks": checks}))
"""


def _fresh_session_probe(cwd: Path) -> dict:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}  # BLENDER_USER_* inherited
    proc = subprocess.run([sys.executable, "-c", FRESH_SESSION_PROBE], cwd=cwd, env=env,
                          check=False, capture_output=True, text=True, timeout=120)
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("PROBE ")]
    assert proc.returncode == 0 and lines, proc.stdout[-3000:] + proc.stderr[-3000:]
    return json.loads(lines[-1].removeprefix("PROBE "))


def _user_default_repo_index(bpy: ModuleType) -> int:
    repos = bpy.context.preferences.extensions.repos
    return next(i for i, repo in enumerate(repos) if repo.module == "user_default")


@pytest.mark.slow
def test_installs_enables_loads_and_uninstalls_in_blender(
        blender_extension_zip: Path, blender_user_dirs, tmp_path: Path) -> None:
    import addon_utils
    import bpy

    package_dir = blender_user_dirs.extensions / "user_default" / "facefuse"
    site = blender_user_dirs.site_packages
    if package_dir.exists():
        pytest.skip(f"{package_dir} is already installed by another fixture; uninstall it there")
    result = bpy.ops.extensions.package_install_files(
        filepath=str(blender_extension_zip), repo="user_default", enable_on_install=True)
    try:
        assert result == {"FINISHED"}
        assert ADDON_MODULE in bpy.context.preferences.addons
        assert addon_utils.check(ADDON_MODULE) == (True, True)
        assert not list(site.glob("numpy*")), "numpy must come from Blender, not the extension"

        probe = _fresh_session_probe(tmp_path)
        assert probe["numpy"] == BLENDER_NUMPY
        assert all(Path(f).is_relative_to(site) for f in probe["files"].values()), probe["files"]
        assert all(probe["checks"].values()), probe["checks"]
    finally:
        disabled = bpy.ops.preferences.addon_disable(module=ADDON_MODULE)
        removed = bpy.ops.extensions.package_uninstall(
            repo_index=_user_default_repo_index(bpy), pkg_id="facefuse")
    assert disabled == {"FINISHED"} and removed == {"FINISHED"}
    assert ADDON_MODULE not in bpy.context.preferences.addons
    assert not package_dir.exists()
    assert not list(site.glob("facefuse*")), "uninstall leaves the engine wheel behind"
