"""Fixtures shared by every test folder.

- Real test data: `testdata` (skips cleanly without it); user folders isolated (autouse).
- Contract models (tests/contract_models.py), built once per session: `contract_dir` and
  `settings` (the pipeline on them: tests/stages, tests/integration); `render_models` and
  `render_cache` for whole renders (tests/integration, tests/hosts; tests/render_media.py has
  the media and request helpers that go with them).

The contract models need onnxruntime, which tests/unit never loads: the fixtures import
tests.contract_models when a test first asks for them, not when this file is loaded.

Markers (registered in pyproject.toml) are given by place, in MARKED and SLOW: `farm` (real farm
processes: dask, openjd, concurrent `facefuse render`), `qt` (the panel, pytest-qt), `blender`
(bpy), `lua` (the Resolve launcher in lupa), `slow` (over about 5 s each on 2 cores). Select
with -m, e.g. ``pytest -m "not slow and not farm"`` for a quick run. On two free cores the tests
other than farm and bpy may run on two workers (pytest-xdist, in the test extra):
``pytest -n 2 -m "not farm and not blender"`` then ``pytest -m "farm or blender"``; the farm tests
time the signals and peak memory of the processes they start, and the bpy ones share one Blender.
"""

from __future__ import annotations

import os
import shutil
from fnmatch import fnmatchcase
from pathlib import Path

import pytest

from facefuse.config import Settings

# Helper modules that assert: rewrite their asserts like a test module's (messages that show the
# values compared). This must run before any test module imports them.
pytest.register_assert_rewrite(
    "tests.render_media", "tests.integration.render_helpers",
    "tests.integration.farm_helpers", "tests.hosts.addon.blender_helpers")

REPO_ROOT = Path(__file__).resolve().parents[1]
YUNET_FILE = "face_detection_yunet_2023mar.onnx"


def testdata_dir() -> Path:
    return Path(os.environ.get("FACEFUSE_TESTDATA", REPO_ROOT.parent / "shared" / "testdata"))


@pytest.fixture(scope="session")
def testdata() -> Path:
    """../shared/testdata (or $FACEFUSE_TESTDATA); skips the test when it is absent."""
    root = testdata_dir()
    if not (root / "models").is_dir() or not (root / "media").is_dir():
        pytest.skip(f"real test data not found at {root} (set FACEFUSE_TESTDATA to its folder)")
    return root


@pytest.fixture(autouse=True)
def _isolated_user_dirs(tmp_path_factory: pytest.TempPathFactory,
                        monkeypatch: pytest.MonkeyPatch) -> None:
    """Never let a test read or write the developer's real model or embedding cache, nor read
    their studio settings file or signing key."""
    base = tmp_path_factory.getbasetemp()
    monkeypatch.setenv("FACEFUSE_MODELS", str(base / "user-models"))
    monkeypatch.setenv("FACEFUSE_CACHE", str(base / "user-cache"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(base / "user-config"))
    for name in ("FACEFUSE_OFFLINE", "FACEFUSE_STUDIO", "FACEFUSE_SIGN_CERT", "FACEFUSE_SIGN_KEY"):
        monkeypatch.delenv(name, raising=False)


# --- markers by place --------------------------------------------------------------------------

# node id patterns (fnmatch: * also crosses folders) -> markers
MARKED: dict[str, tuple[str, ...]] = {
    "tests/hosts/farm/*": ("farm",),
    "tests/integration/test_farm_*": ("farm",),
    "tests/hosts/*test_blender_farm.py::*": ("farm",),
    "tests/hosts/*test_blender*": ("blender",),
    "tests/hosts/test_panel.py::*": ("qt",),
    "tests/hosts/test_resolve_launcher.py::*": ("lua",),
}
# over about 5 s each (pytest --durations, whole suite, 2 shared cores), by test name so that a
# test keeps its mark when its file moves
SLOW: tuple[str, ...] = (
    "*::test_headless_renders_one_chunk_then_finishes_the_marked_strips*",
    "*::test_peak_memory_does_not_grow_with_shot_length*",
    "*::test_two_real_workers_one_killed_mid_task*",
    "*::test_disable_and_enable_again_is_symmetric*",
    "*::test_openjd_run_in_chunks_equals_one_render_and_resumes*",
    "*::test_openjd_blend_job_with_a_blender_binary*",
    "*::test_concurrent_chunks_equal_one_unchunked_render*",
    "*::test_openjd_blend_job_renders_exactly_the_marked_strips_frames*",
    "*::test_the_commands_open_the_panel_and_return_when_it_closes*",
    "*::test_sigterm_cancels_cleanly_with_exit_143_and_resumes*",
    "*::test_without_task_chunking_listed_chunks_give_the_same_files*",
    "*::test_two_workers_given_the_same_chunk_at_once*",
    "*::test_a_corrupt_analysis_cache_entry_is_recomputed*",
    "*::test_a_many_plan_is_final_a_horizon_behind_the_analysis*",
    "*::test_no_parameter_writes_outside_the_output_folder*",
    "*::test_overlapping_ranges_in_concurrent_processes_never_corrupt_a_frame*",
)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        names = {name for pattern, marks in MARKED.items() if fnmatchcase(item.nodeid, pattern)
                 for name in marks}
        if any(fnmatchcase(item.nodeid, pattern) for pattern in SLOW):
            names.add("slow")
        if "qtbot" in getattr(item, "fixturenames", ()):
            names.add("qt")
        for name in sorted(names):
            item.add_marker(name)


# --- contract models ---------------------------------------------------------------------------

@pytest.fixture(scope="session")
def contract_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The contract models, built once per run: identity_swapper, colour_swapper,
    identity_restorer, codeformer_contract and recogniser_512 (.onnx)."""
    from tests import contract_models

    root = tmp_path_factory.mktemp("contract-models")
    contract_models.identity_swapper(root / "identity_swapper.onnx")
    contract_models.colour_swapper(root / "colour_swapper.onnx")
    contract_models.identity_restorer(root / "identity_restorer.onnx")
    contract_models.codeformer_contract(root / "codeformer_contract.onnx")
    contract_models.contract_recogniser(root / "recogniser_512.onnx", dim=512)
    return root


@pytest.fixture()
def settings(contract_dir: Path, testdata: Path, tmp_path: Path) -> Settings:
    """Real YuNet detector, contract recogniser and identity swapper; offline; CPU."""
    return Settings(
        detector=str(testdata / "models" / YUNET_FILE),
        recogniser=str(contract_dir / "recogniser_512.onnx"),
        swapper=str(contract_dir / "identity_swapper.onnx"),
        providers=("CPUExecutionProvider",), models_dir=tmp_path / "models",
        cache_dir=tmp_path / "cache", offline=True,
    )


# --- whole renders -----------------------------------------------------------------------------

@pytest.fixture(scope="session")
def render_models(tmp_path_factory: pytest.TempPathFactory, testdata: Path) -> Path:
    """A folder with the contract models and YuNet under its manifest file name (built once), so
    the detector is located by manifest name and carries its sha256 into provenance."""
    from tests import contract_models

    root = tmp_path_factory.mktemp("render-models")
    contract_models.identity_swapper(root / "identity_swapper.onnx")
    contract_models.colour_swapper(root / "colour_swapper.onnx")
    contract_models.contract_recogniser(root / "recogniser_512.onnx", dim=512)
    shutil.copy2(testdata / "models" / YUNET_FILE, root / YUNET_FILE)
    return root


@pytest.fixture(scope="session")
def render_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One embeddings cache for the session: the analysis cache sits beside it (../analysis), so
    a shot analysed by one test is not detected again by the next one (detection is the slow
    part on a CPU). Tests of the analysis cache itself should use their own folder."""
    return tmp_path_factory.mktemp("render-cache") / "embeddings"
