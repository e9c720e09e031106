"""Models already on disk: tampered files detected and left in place, hashes remembered by size
and mtime (and checked again when either changes), unreadable records, refusing to overwrite
a bad file unless forced, and the real YuNet file against the shipped manifest's hash.

`server` (a local HTTP server, 127.0.0.1 only) and `real_manifest` (the shipped manifest) come
from tests/unit/models/conftest.py; what the server answers and the store builders from
tests/unit/models/store_helpers.py.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
from pathlib import Path

import pytest

from facefuse.errors import ChecksumError
from facefuse.models.manifest import Manifest
from tests.unit.models.store_helpers import (
    PAYLOAD,
    PAYLOAD_SHA,
    Served,
    ServerState,
    count_hashers,
    make_manifest,
    make_store,
    swapper_entry,
)


def test_tampered_file_is_detected_and_left_in_place(server: ServerState, tmp_path: Path,
                                                     real_manifest: Manifest) -> None:
    server.files["/m.onnx"] = Served(PAYLOAD)
    store = make_store(make_manifest(real_manifest, swapper_entry((server.url("/m.onnx"),))),
                       tmp_path)
    path = store.fetch("m")
    tampered = PAYLOAD[:-1] + bytes([PAYLOAD[-1] ^ 1])
    mtime_ns = path.stat().st_mtime_ns
    path.write_bytes(tampered)
    os.utime(path, ns=(mtime_ns + 2_000_000_000, mtime_ns + 2_000_000_000))

    result = store.verify("m")
    assert result.present and not result.ok
    assert PAYLOAD_SHA in result.reason and hashlib.sha256(tampered).hexdigest() in result.reason
    with pytest.raises(ChecksumError) as info:
        store.locate("m", "swapper")
    assert hashlib.sha256(tampered).hexdigest() in str(info.value)
    assert path.read_bytes() == tampered
    assert not store.status()[0].verified
    assert len(server.requests) == 1


def test_same_bytes_with_new_mtime_are_hashed_again_and_remembered(
        server: ServerState, tmp_path: Path, real_manifest: Manifest,
        monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "m.onnx").write_bytes(PAYLOAD)
    store = make_store(make_manifest(real_manifest, swapper_entry(("https://x.invalid/m",))),
                       tmp_path)
    hashers = count_hashers(monkeypatch)
    assert store.verify("m").reason == "sha256 checked" and len(hashers) == 1
    assert store.verify("m").ok and len(hashers) == 1
    os.utime(tmp_path / "m.onnx", ns=(1, 1))
    assert store.verify("m").ok and len(hashers) == 2


def test_verify_of_a_missing_file(tmp_path: Path, real_manifest: Manifest) -> None:
    store = make_store(make_manifest(real_manifest, swapper_entry(("https://x.invalid/m",))),
                       tmp_path)
    result = store.verify("m")
    assert not result.present and not result.ok and result.path == tmp_path / "m.onnx"


def test_unreadable_records_only_cost_a_rehash(tmp_path: Path, real_manifest: Manifest) -> None:
    (tmp_path / "m.onnx").write_bytes(PAYLOAD)
    (tmp_path / "verified.json").write_text("{not json")
    store = make_store(make_manifest(real_manifest, swapper_entry(("https://x.invalid/m",))),
                       tmp_path)
    assert store.verify("m").ok
    assert "m.onnx" in json.loads((tmp_path / "verified.json").read_text())


def test_fetch_refuses_to_overwrite_a_bad_file_unless_forced(server: ServerState, tmp_path: Path,
                                                             real_manifest: Manifest) -> None:
    server.files["/m.onnx"] = Served(PAYLOAD)
    (tmp_path / "m.onnx").write_bytes(b"something else")
    store = make_store(make_manifest(real_manifest, swapper_entry((server.url("/m.onnx"),))),
                       tmp_path)
    with pytest.raises(ChecksumError, match="delete it and run: facefuse models fetch m$"):
        store.fetch("m")
    assert (tmp_path / "m.onnx").read_bytes() == b"something else"
    assert store.fetch("m", force=True).read_bytes() == PAYLOAD
    assert store.verify("m").ok


# ---- the real YuNet file against the shipped manifest's hash ------------------------------

def test_real_yunet_is_verified_against_the_shipped_hash(server: ServerState, tmp_path: Path,
                                                         real_manifest: Manifest,
                                                         testdata: Path) -> None:
    data = (testdata / "models" / "face_detection_yunet_2023mar.onnx").read_bytes()
    server.files["/yunet.onnx"] = Served(data)
    real = real_manifest.models["yunet_2023mar"]
    entry = dataclasses.replace(real, urls=(server.url("/yunet.onnx"),))
    store = make_store(make_manifest(real_manifest, entry), tmp_path)
    located = store.locate("yunet_2023mar", "detector")
    assert located.path.name == "face_detection_yunet_2023mar.onnx"
    assert located.path.read_bytes() == data and store.verify("yunet_2023mar").ok
