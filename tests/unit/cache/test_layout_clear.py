"""`facefuse cache clear` removes only what facefuse wrote (issue 24, item 3): each part's own
names and formats; never a link (so nothing outside the cache root), never a subfolder or a
file of another name; and it says what it left."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from facefuse.cache.layout import CacheLayout
from facefuse.cache.locking import LockOwner
from facefuse.io import files

DIGEST = "ab" * 32


@pytest.fixture()
def layout(tmp_path: Path) -> CacheLayout:
    layout = CacheLayout.at(tmp_path / "cache")
    for part in (layout.embeddings, layout.analysis, layout.previews):
        part.mkdir(parents=True)
    (layout.embeddings / f"{DIGEST}.npy").write_bytes(b"e")
    (layout.analysis / f"{DIGEST}.npz").write_bytes(b"a")
    (layout.previews / f"source-{'1' * 16}.png").write_bytes(b"p")
    (layout.previews / f"face-{'2' * 16}-3.png").write_bytes(b"p")
    layout.hashes.write_text("{}")
    return layout


def _outside(tmp_path: Path) -> Path:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "precious.txt").write_text("mine")
    (outside / f"{DIGEST}.npz").write_text("mine too")
    (outside / f"source-{'3' * 16}.png").write_text("mine as well")
    return outside


def test_its_own_files_are_removed(layout: CacheLayout) -> None:
    cleared = layout.clear()
    assert cleared.removed == 5 and cleared.left == ()
    assert layout.usage() == {name: (0, 0) for name in layout.parts()}
    assert cleared.describe() == f"removed 5 cached files from {layout.root}"


def test_files_of_other_names_and_subfolders_are_left_and_named(layout: CacheLayout) -> None:
    keep = [layout.embeddings / "notes.txt", layout.previews / "holiday.png",
            layout.analysis / "mine" / "keep.npz", layout.analysis / f"{DIGEST}.npz.bak"]
    for path in keep:
        path.parent.mkdir(exist_ok=True)
        path.write_text("keep")
    cleared = layout.clear()
    assert cleared.removed == 5
    assert all(path.exists() for path in keep)
    assert "left 4 entries" in cleared.describe() and "notes.txt" in cleared.describe()


@pytest.mark.parametrize("part", ["embeddings", "analysis", "previews"])
def test_a_part_linked_out_of_the_root_is_not_followed(tmp_path: Path, layout: CacheLayout,
                                                       part: str) -> None:
    outside = _outside(tmp_path)
    folder = layout.parts()[part]
    for entry in folder.iterdir():
        entry.unlink()
    folder.rmdir()
    folder.symlink_to(outside, target_is_directory=True)
    cleared = layout.clear()
    assert sorted(p.name for p in outside.iterdir()) == sorted(
        ["precious.txt", f"{DIGEST}.npz", f"source-{'3' * 16}.png"])
    assert folder in cleared.left and folder.is_symlink()


def test_linked_files_are_left(tmp_path: Path, layout: CacheLayout) -> None:
    outside = _outside(tmp_path)
    link = layout.embeddings / f"{'cd' * 32}.npy"
    link.symlink_to(outside / "precious.txt")
    layout.hashes.unlink()
    layout.hashes.symlink_to(outside / "precious.txt")
    cleared = layout.clear()
    assert link.is_symlink() and layout.hashes.is_symlink()
    assert (outside / "precious.txt").read_text() == "mine"
    assert {link, layout.hashes} <= set(cleared.left)


def test_stale_temporaries_of_its_names_go_live_ones_stay(layout: CacheLayout) -> None:
    live = files.temporary_path(layout.analysis / f"{'ef' * 32}.npz")
    live.write_bytes(b"being written")
    cleared = layout.clear()
    assert live.exists() and live in cleared.left


def test_locks_of_dead_owners_go_live_ones_stay(layout: CacheLayout) -> None:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    namespace = LockOwner.current().pid_namespace
    dead = LockOwner(child.pid, socket.gethostname(), None, time.time(), "t", namespace)
    (layout.analysis / f"{'0' * 64}.lock").write_text(dead.to_json())
    live = layout.analysis / f"{'1' * 64}.lock"
    live.write_text(LockOwner.current().to_json())
    assert json.loads(live.read_text())["pid"] == os.getpid()
    cleared = layout.clear()
    assert not (layout.analysis / f"{'0' * 64}.lock").exists()
    assert live.exists() and live in cleared.left
