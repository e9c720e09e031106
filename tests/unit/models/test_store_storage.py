"""A fetch on storage that refuses it, and a part left by an earlier run that holds other bytes.

A models folder on a read-only or a full file system is exit 6 (an output cannot be written)
with one sentence, at once, never exit 4 after a round of retries as if the source were at
fault; a models folder that is a file is exit 2. A `.part` of other bytes (another build, a
damaged disk) is dropped and the model fetched again from its start in the same fetch.

`server` (a local HTTP server, 127.0.0.1 only) and `real_manifest` come from
tests/unit/models/conftest.py. The file systems are real tmpfs mounts (skipped where mounting
is not allowed).
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from facefuse.errors import ExitCode, InputError, OutputError
from facefuse.models.manifest import Manifest
from tests.unit.models.store_helpers import (
    PAYLOAD,
    Served,
    ServerState,
    make_manifest,
    make_store,
    swapper_entry,
)


def _tmpfs(folder: Path, options: str) -> Iterator[Path]:
    if os.geteuid() != 0 or shutil.which("mount") is None:
        pytest.skip("mounting a tmpfs needs root and mount(8)")
    folder.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(folder)],
                          capture_output=True, text=True, check=False)
    if done.returncode:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.strip()}")
    yield folder
    subprocess.run(["umount", "-l", str(folder)], check=False, capture_output=True)


@pytest.fixture
def read_only(tmp_path: Path) -> Iterator[Path]:
    yield from _tmpfs(tmp_path / "read-only", "size=64k,ro")


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """64 KiB: far less than the 300 KB test model."""
    yield from _tmpfs(tmp_path / "small", "size=64k")


def _store(server: ServerState, folder: Path, real_manifest: Manifest, **served: object):
    server.files["/m.onnx"] = Served(PAYLOAD, **served)  # type: ignore[arg-type]
    return make_store(make_manifest(real_manifest, swapper_entry((server.url("/m.onnx"),))),
                      folder, retries=3, retry_wait_s=0.5)


@pytest.mark.parametrize("where", ["the folder", "a folder to create in it"])
def test_a_read_only_models_folder_is_exit_6_at_once(where: str, server: ServerState,
                                                     read_only: Path,
                                                     real_manifest: Manifest) -> None:
    folder = read_only if where == "the folder" else read_only / "models"
    store = _store(server, folder, real_manifest)
    with pytest.raises(OutputError, match="read-only") as info:
        store.fetch("m")
    assert info.value.exit_code == ExitCode.OUTPUT
    assert server.requests == []  # refused before any download, and never retried


def test_a_full_models_folder_is_exit_6_at_once_naming_the_file(
        server: ServerState, small_disk: Path, real_manifest: Manifest) -> None:
    store = _store(server, small_disk, real_manifest)
    with pytest.raises(OutputError, match=r"cannot write .*m\.onnx\.part: the disk is full"):
        store.fetch("m")
    assert len(server.requests) == 1  # no retry: another attempt cannot make room
    assert not (small_disk / "m.onnx").exists()


def test_a_models_folder_that_is_a_file_is_a_usage_error(server: ServerState, tmp_path: Path,
                                                         real_manifest: Manifest) -> None:
    (tmp_path / "models").write_bytes(b"not a folder")
    with pytest.raises(InputError, match="is a file"):
        _store(server, tmp_path / "models", real_manifest).fetch("m")


@pytest.mark.parametrize("stale", [
    pytest.param(bytes(len(PAYLOAD)), id="whole size, other bytes"),
    pytest.param(bytes(len(PAYLOAD) // 3), id="a third, other bytes (resumed by Range)"),
    pytest.param(PAYLOAD[:1000] + bytes(len(PAYLOAD) - 1000), id="right start, other end"),
])
def test_a_stale_part_of_other_bytes_is_dropped_and_the_same_fetch_succeeds(
        stale: bytes, server: ServerState, tmp_path: Path, real_manifest: Manifest) -> None:
    (tmp_path / "m.onnx.part").write_bytes(stale)
    store = _store(server, tmp_path, real_manifest)
    assert store.fetch("m").read_bytes() == PAYLOAD
    assert not (tmp_path / "m.onnx.part").exists()
    assert len(server.requests) <= 2  # the resumed attempt (if any), then one from the start
