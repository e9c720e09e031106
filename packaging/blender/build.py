"""Build the facefuse Blender extension: one zip per platform, dependencies bundled as wheels.

    python packaging/blender/build.py [--platform linux-x64 ...] [--out dist/blender]
                                      [--wheel-cache DIR] [--gpu] [--refresh | --offline]

Steps: build the engine wheel from this repository (``pip wheel --no-deps``); for each platform
resolve the engine's runtime dependencies for CPython 3.11 with numpy pinned to Blender's 1.26.4
(``pip download --only-binary=:all: --platform ...``) and drop numpy itself, which Blender ships;
stage a copy of addon/blender with the wheels under ./wheels/ and ``version`` (facefuse's, from
core/facefuse/version.py, the one place it is written), ``wheels`` and ``platforms`` written
into its manifest; run Blender's own ``blender_ext.py build --split-platforms`` and ``validate``.

Each platform gets its own staging folder, so a platform's zip holds exactly the closure pip
resolved for it (macOS, for example, resolves older onnxruntime and av than Linux).
Plain Python 3.11+: the standard library, pip, and blender_ext.py from the bpy wheel.
"""

from __future__ import annotations

import argparse
import importlib.util
import logging
import os
import re
import shutil
import subprocess
import sys
import tempfile
import tomllib
import zipfile
from collections.abc import Sequence
from pathlib import Path

log = logging.getLogger("facefuse.blender.build")

REPO_ROOT = Path(__file__).resolve().parents[2]
VERSION_FILE = REPO_ROOT / "core" / "facefuse" / "version.py"
_VERSION_RE = re.compile(r'^__version__ = "([^"]+)"$', re.MULTILINE)

# Blender platform -> pip --platform tags. pip does not widen manylinux_2_28 to older glibc tags,
# so they are listed; Blender 4.2+ on Linux needs glibc 2.28 (VFX platform 2024), hence no newer.
# macOS: pip widens 13_0 to 12_0/11_0 and universal2 itself. 13.0 is the floor of
# opencv-python-headless 4.11.0.86's arm64 wheel, so a lower target cannot resolve.
PLATFORM_TAGS: dict[str, tuple[str, ...]] = {
    "linux-x64": tuple(f"manylinux_2_{minor}_x86_64" for minor in range(28, 16, -1))
    + ("manylinux2014_x86_64", "manylinux2010_x86_64", "manylinux1_x86_64"),
    "windows-x64": ("win_amd64",),
    "macos-arm64": ("macosx_13_0_arm64",),
}
ALL_PLATFORMS: tuple[str, ...] = tuple(PLATFORM_TAGS)
CUDA_PLATFORMS = frozenset({"linux-x64", "windows-x64"})  # onnxruntime-gpu has no macOS wheel

PYTHON_VERSION = "3.11"  # Blender 4.2-5.0
ABI = "cp311"
BLENDER_NUMPY = "numpy==1.26.4"  # what Blender 4.2-5.0 ship; every wheel must accept it
PINS = (BLENDER_NUMPY, "opencv-python-headless==4.11.0.86")  # last opencv allowing numpy 1.x
NEVER_BUNDLE = frozenset({"numpy"})  # shared with Blender and every other extension
BUILD_REQUIREMENTS = ("hatchling>=1.21",)  # cached so engine-wheel rebuilds work offline
INDEX_MODES = ("cache-first", "offline", "refresh")

_NAME_RE = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)")


class BuildError(RuntimeError):
    """A build step failed; the message says which and why."""


def normalize(name: str) -> str:
    """PEP 503 name: lower case, runs of '-', '_', '.' become '-'."""
    return re.sub(r"[-_.]+", "-", name).lower()


def wheel_project(path: Path | str) -> str:
    """Normalised project name from a wheel file name."""
    return normalize(Path(path).name.split("-")[0])


def find_blender_ext() -> Path:
    """blender_ext.py inside the installed bpy package (found without importing bpy)."""
    spec = importlib.util.find_spec("bpy")
    if spec is None or not spec.submodule_search_locations:
        raise BuildError("bpy is not installed in this Python; pass --blender-ext PATH "
                         "(bpy/<ver>/scripts/addons_core/bl_pkg/cli/blender_ext.py)")
    for location in spec.submodule_search_locations:
        found = sorted(Path(location).glob("*/scripts/addons_core/bl_pkg/cli/blender_ext.py"))
        if found:
            return found[-1]
    raise BuildError(f"blender_ext.py not found inside bpy at {spec.submodule_search_locations}")


def default_wheel_cache() -> Path:
    """$FACEFUSE_WHEEL_CACHE, else the user cache folder (XDG / macOS / Windows conventions)."""
    if env := os.environ.get("FACEFUSE_WHEEL_CACHE"):
        return Path(env)
    if sys.platform == "win32":
        base = Path(os.environ.get("LOCALAPPDATA", Path.home() / "AppData" / "Local"))
    elif sys.platform == "darwin":
        base = Path.home() / "Library" / "Caches"
    else:
        base = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache"))
    return base / "facefuse" / "blender-wheels"


def _run(cmd: Sequence[str | Path], what: str) -> subprocess.CompletedProcess[str]:
    argv = [str(part) for part in cmd]
    log.debug("$ %s", " ".join(argv))
    proc = subprocess.run(argv, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        tail = "\n".join((proc.stdout + proc.stderr).strip().splitlines()[-25:])
        raise BuildError(f"{what} failed (exit {proc.returncode}):\n{tail}")
    return proc


def _pip(args: Sequence[str | Path], what: str, cache: Path, index: str) -> None:
    """Run pip against the wheel cache and/or the package index.

    ``index``: "cache-first" tries the cache alone (no network) and then the index as well,
    "offline" never asks the index, "refresh" always does.
    """
    base: list[str | Path] = [sys.executable, "-m", "pip", "--disable-pip-version-check"]
    links: list[str | Path] = ["--find-links", cache]
    if index in ("cache-first", "offline"):
        try:
            _run([*base, *args, "--no-index", *links], what)
            return
        except BuildError as exc:
            if index == "offline":
                raise BuildError(f"{exc}\n(offline: the wheel cache {cache} lacks a full set)") \
                    from exc
            log.info("%s: not all in %s, asking the package index", what, cache)
    _run([*base, *args, *links], what)


def _fill_cache(files: Sequence[Path], cache: Path) -> None:
    cache.mkdir(parents=True, exist_ok=True)
    for path in files:
        if not (cache / path.name).exists():
            shutil.copy2(path, cache / path.name)


def build_engine_wheel(repo_root: Path, dest: Path, cache: Path,
                       index: str = "cache-first") -> Path:
    """``pip wheel --no-deps`` of the repository into ``dest``; returns the facefuse wheel."""
    dest.mkdir(parents=True, exist_ok=True)
    tools = dest / "build-requirements"
    _pip(["download", "-q", "-d", tools, *BUILD_REQUIREMENTS], "download the build backend",
         cache, index)
    _fill_cache(sorted(tools.glob("*.whl")), cache)
    _pip(["wheel", "-q", "--no-deps", "-w", dest, repo_root], "build the facefuse wheel",
         cache, "offline" if index == "offline" else "cache-first")
    wheels = sorted(dest.glob("facefuse-*.whl"))
    if len(wheels) != 1:
        raise BuildError(f"expected one facefuse wheel in {dest}, found {wheels}")
    return wheels[0]


def runtime_requirements(repo_root: Path, gpu: bool = False) -> list[str]:
    """The engine's [project].dependencies; ``gpu`` swaps onnxruntime for onnxruntime-gpu."""
    with open(repo_root / "pyproject.toml", "rb") as fh:
        deps: list[str] = tomllib.load(fh)["project"]["dependencies"]
    result = []
    for dep in deps:
        match = _NAME_RE.match(dep)
        if match and gpu and normalize(match.group(1)) == "onnxruntime":
            dep = "onnxruntime-gpu" + dep[match.end():]
        result.append(dep)
    return result


def download_dependencies(requirements: Sequence[str], platform: str, dest: Path, cache: Path,
                          index: str = "cache-first") -> list[Path]:
    """Resolve and download the dependency closure for one Blender platform into ``dest``.

    numpy is pinned to Blender's version while resolving, so every wheel accepts it, and is then
    left out. Returns the wheels to bundle, sorted by file name.
    """
    dest.mkdir(parents=True, exist_ok=True)
    constraints = dest / "constraints.txt"
    constraints.write_text("\n".join(PINS) + "\n", encoding="utf-8")
    args: list[str | Path] = [
        "download", "-q", "-d", dest, "--only-binary=:all:", "--python-version", PYTHON_VERSION,
        "--implementation", "cp", "--abi", ABI, "-c", constraints,
    ]
    for tag in PLATFORM_TAGS[platform]:
        args += ["--platform", tag]
    _pip([*args, *requirements], f"resolve wheels for {platform}", cache, index)
    downloaded = sorted(dest.glob("*.whl"))
    _fill_cache(downloaded, cache)
    keep = [w for w in downloaded if wheel_project(w) not in NEVER_BUNDLE]
    for wheel in set(downloaded) - set(keep):
        wheel.unlink()
    return keep


def engine_version(version_file: Path = VERSION_FILE) -> str:
    """facefuse's version, read from core/facefuse/version.py (not imported: plain text)."""
    match = _VERSION_RE.search(version_file.read_text(encoding="utf-8"))
    if match is None:
        raise BuildError(f"no __version__ = \"...\" line in {version_file}")
    return match[1]


def write_manifest_fields(manifest: Path, wheels: Sequence[str], platforms: Sequence[str],
                          version: str | None = None) -> None:
    """Insert top-level ``version`` (default: engine_version()), ``wheels`` and ``platforms``
    before the first table of the manifest."""
    version = version or engine_version()
    text = manifest.read_text(encoding="utf-8")
    before = tomllib.loads(text)
    taken = {"version", "wheels", "platforms"} & set(before)
    if taken:
        raise BuildError(f"{manifest} already sets {sorted(taken)}; the build writes them, "
                         "remove them from the source manifest")
    lines = text.splitlines(keepends=True)
    at = next((i for i, line in enumerate(lines) if line.lstrip().startswith("[")), len(lines))
    block = ["\n# Written by packaging/blender/build.py.\n", f'version = "{version}"\n',
             "wheels = [\n", *(f'  "{w}",\n' for w in wheels), "]\n",
             "platforms = [" + ", ".join(f'"{p}"' for p in platforms) + "]\n\n"]
    new_text = "".join(lines[:at] + block + lines[at:])
    after = tomllib.loads(new_text)
    expected = {**before, "version": version, "wheels": list(wheels),
                "platforms": list(platforms)}
    if after != expected:
        raise BuildError(f"could not insert wheels/platforms into {manifest} cleanly")
    manifest.write_text(new_text, encoding="utf-8")


def stage_extension(addon_dir: Path, wheels: Sequence[Path], platform: str, stage: Path) -> Path:
    """Copy the add-on source to ``stage`` with ``wheels/`` and a filled-in manifest."""
    shutil.copytree(addon_dir, stage, ignore=shutil.ignore_patterns(
        "__pycache__", "*.pyc", "wheels", "*.zip"))
    (stage / "wheels").mkdir()
    for wheel in wheels:
        shutil.copy2(wheel, stage / "wheels" / wheel.name)
    write_manifest_fields(stage / "blender_manifest.toml",
                          [f"./wheels/{w.name}" for w in wheels], [platform])
    return stage


def run_blender_ext(blender_ext: Path, *args: str | Path) -> str:
    """Run Blender's blender_ext.py with this Python; returns its output."""
    return _run([sys.executable, blender_ext, *args], f"blender_ext.py {args[0]}").stdout


def zip_wheels(zip_path: Path) -> list[str]:
    """Names of the wheels inside an extension zip."""
    with zipfile.ZipFile(zip_path) as zf:
        return sorted(n.rsplit("/", 1)[-1] for n in zf.namelist()
                      if n.startswith("wheels/") and n.endswith(".whl"))


def _build_one(blender_ext: Path, stage: Path, out_dir: Path, platform: str, gpu: bool) -> Path:
    manifest = tomllib.loads((stage / "blender_manifest.toml").read_text(encoding="utf-8"))
    stem = f"{manifest['id']}-{manifest['version']}" + ("-cuda" if gpu else "")
    run_blender_ext(blender_ext, "build", "--split-platforms", "--source-dir", stage,
                    "--output-filepath", out_dir / f"{stem}.zip")
    zip_path = out_dir / f"{stem}-{platform.replace('-', '_')}.zip"
    if not zip_path.is_file():
        raise BuildError(f"blender_ext.py build did not write {zip_path}")
    run_blender_ext(blender_ext, "validate", zip_path)
    staged = sorted(p.name for p in (stage / "wheels").glob("*.whl"))
    if zip_wheels(zip_path) != staged:  # blender_ext silently drops wheels of other platforms
        raise BuildError(f"{zip_path.name} lacks staged wheels: "
                         f"{sorted(set(staged) - set(zip_wheels(zip_path)))}")
    return zip_path


def build_extension(repo_root: Path = REPO_ROOT, out_dir: Path = REPO_ROOT / "dist" / "blender",
                    platforms: Sequence[str] = ALL_PLATFORMS, wheel_cache: Path | None = None, *,
                    gpu: bool = False, addon_dir: Path | None = None,
                    blender_ext: Path | None = None, index: str = "cache-first") -> list[Path]:
    """Build one validated extension zip per platform into ``out_dir``; returns their paths.

    ``gpu`` bundles onnxruntime-gpu instead of onnxruntime for linux-x64 and windows-x64 (zip
    names get ``-cuda``); macOS keeps onnxruntime. ``index``: "cache-first" (use the wheel cache
    when it satisfies the build, else ask the package index), "offline" or "refresh".
    """
    repo_root = Path(repo_root).resolve()
    out_dir = Path(out_dir).resolve()
    addon_dir = Path(addon_dir or repo_root / "addon" / "blender")
    cache = Path(wheel_cache or default_wheel_cache()).resolve()
    if index not in INDEX_MODES:
        raise BuildError(f"index must be one of {INDEX_MODES}, not {index!r}")
    unknown = [p for p in platforms if p not in PLATFORM_TAGS]
    if unknown:
        raise BuildError(f"unknown platform(s) {unknown}; choose from {list(PLATFORM_TAGS)}")
    if not (addon_dir / "blender_manifest.toml").is_file():
        raise BuildError(f"no blender_manifest.toml in {addon_dir}")
    blender_ext = Path(blender_ext or find_blender_ext())
    out_dir.mkdir(parents=True, exist_ok=True)
    zips = []
    with tempfile.TemporaryDirectory(prefix="facefuse-blender-") as tmp_name:
        tmp = Path(tmp_name)
        engine = build_engine_wheel(repo_root, tmp / "engine", cache, index)
        log.info("engine wheel: %s", engine.name)
        for platform in platforms:
            cuda = gpu and platform in CUDA_PLATFORMS
            if gpu and not cuda:
                log.warning("%s has no onnxruntime-gpu wheel; bundling onnxruntime", platform)
            deps = download_dependencies(runtime_requirements(repo_root, cuda), platform,
                                         tmp / "deps" / platform, cache, index)
            stage = stage_extension(addon_dir, [engine, *deps], platform, tmp / "stage" / platform)
            zips.append(_build_one(blender_ext, stage, out_dir, platform, cuda))
            log.info("built %s", zips[-1].name)
    return zips


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--platform", action="append", choices=ALL_PLATFORMS, dest="platforms",
                        help="repeatable; default: all of " + ", ".join(ALL_PLATFORMS))
    parser.add_argument("--out", type=Path, default=REPO_ROOT / "dist" / "blender")
    parser.add_argument("--wheel-cache", type=Path, default=None,
                        help=f"downloaded wheels are kept here (default {default_wheel_cache()})")
    parser.add_argument("--gpu", action="store_true",
                        help="bundle onnxruntime-gpu (CUDA) instead of onnxruntime "
                             "on Linux and Windows")
    index = parser.add_mutually_exclusive_group()
    index.add_argument("--refresh", dest="index", action="store_const", const="refresh",
                       default="cache-first",
                       help="resolve against PyPI even if the wheel cache has a full set")
    index.add_argument("--offline", dest="index", action="store_const", const="offline",
                       help="never contact the package index; use only the wheel cache")
    parser.add_argument("--addon-dir", type=Path, default=None,
                        help="extension source (default addon/blender)")
    parser.add_argument("--blender-ext", type=Path, default=None,
                        help="blender_ext.py to use (default: the one inside the installed bpy)")
    parser.add_argument("-v", "--verbose", action="store_true")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.DEBUG if args.verbose else logging.INFO,
                        format="%(message)s")
    try:
        zips = build_extension(REPO_ROOT, args.out, args.platforms or ALL_PLATFORMS,
                               args.wheel_cache, gpu=args.gpu, addon_dir=args.addon_dir,
                               blender_ext=args.blender_ext, index=args.index)
    except BuildError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    for zip_path in zips:
        print(f"{zip_path}  {zip_path.stat().st_size / 1e6:.1f} MB")
        for name in zip_wheels(zip_path):
            print(f"    {name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
