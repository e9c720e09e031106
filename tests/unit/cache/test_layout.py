"""CacheLayout: every cache under one root, the environment's and the user folder's defaults,
and what `cache info` / `cache clear` count."""

from __future__ import annotations

from pathlib import Path

import pytest

from facefuse.cache.layout import CacheLayout


def test_every_cache_lives_under_the_root(tmp_path: Path):
    layout = CacheLayout.at(tmp_path / "scratch")
    parts = layout.parts()
    assert list(parts) == ["embeddings", "analysis", "previews", "hashes"]
    for path in parts.values():
        assert path.parent == tmp_path / "scratch"
    assert not (tmp_path / "scratch").exists(), "nothing is created before it is written"


def test_explicit_beats_the_environment_beats_the_user_folder(tmp_path: Path,
                                                             monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("FACEFUSE_CACHE", str(tmp_path / "env"))
    assert CacheLayout.at(tmp_path / "mine").root == tmp_path / "mine"
    assert CacheLayout.at().root == tmp_path / "env"
    monkeypatch.delenv("FACEFUSE_CACHE")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert CacheLayout.at().root == tmp_path / "xdg" / "facefuse"


def test_usage_and_clear_count_files_of_every_part(tmp_path: Path):
    layout = CacheLayout.at(tmp_path)
    layout.embeddings.mkdir()
    (layout.embeddings / f"{'a' * 64}.npy").write_bytes(b"1234")
    layout.analysis.mkdir()
    (layout.analysis / f"{'b' * 64}.npz").write_bytes(b"12")
    layout.hashes.write_text("{}")
    (tmp_path / "someone-elses.txt").write_text("keep me")
    assert layout.usage() == {"embeddings": (1, 4), "analysis": (1, 2), "previews": (0, 0),
                              "hashes": (1, 2)}
    assert layout.clear().removed == 3
    assert layout.usage() == {name: (0, 0) for name in layout.parts()}
    assert (tmp_path / "someone-elses.txt").read_text() == "keep me"
