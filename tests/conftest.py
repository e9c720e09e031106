"""Shared fixtures: where the real test data lives, and skipping cleanly without it."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]


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
    """Never let a test read or write the developer's real model or embedding cache."""
    base = tmp_path_factory.getbasetemp()
    monkeypatch.setenv("FACEFUSE_MODELS", str(base / "user-models"))
    monkeypatch.setenv("FACEFUSE_CACHE", str(base / "user-cache"))
    monkeypatch.delenv("FACEFUSE_OFFLINE", raising=False)
