"""Model downloads into the store: verified on arrival, checksum errors keep nothing,
interrupted downloads resume with Range, retries, mirrors, archives with the model inside,
and one download however many processes fetch at once (file locks, stale locks broken).

`server` (a local HTTP server, 127.0.0.1 only) and `real_manifest` (the shipped manifest) come
from tests/unit/models/conftest.py; what the server answers and the store builders from
tests/unit/models/store_helpers.py.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import threading
import time
import zipfile
from pathlib import Path

import pytest

from facefuse.errors import ChecksumError, DownloadError, ModelMissingError
from facefuse.models.manifest import ArchiveMember, Manifest
from tests.unit.models.store_helpers import (
    PAYLOAD,
    PAYLOAD_SHA,
    Served,
    ServerState,
    count_hashers,
    leftovers,
    make_manifest,
    make_store,
    swapper_entry,
)

# ---- downloads ----------------------------------------------------------------------------

def test_good_download_lands_verified_and_is_trusted(server: ServerState, tmp_path: Path,
                                                     real_manifest: Manifest,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    server.files["/m.onnx"] = Served(PAYLOAD)
    manifest = make_manifest(real_manifest, swapper_entry((server.url("/m.onnx"),)))
    progress: list[tuple[str, int, int | None]] = []
    store = make_store(manifest, tmp_path, on_progress=lambda *a: progress.append(a))

    located = store.locate("m", "swapper")
    assert located.path == tmp_path / "m.onnx" and located.entry is manifest.models["m"]
    assert located.path.read_bytes() == PAYLOAD
    assert progress[-1] == ("m", len(PAYLOAD), len(PAYLOAD))
    record = json.loads((tmp_path / "verified.json").read_text())["m.onnx"]
    assert record == {"size": len(PAYLOAD), "mtime_ns": located.path.stat().st_mtime_ns,
                      "sha256": PAYLOAD_SHA}
    assert leftovers(tmp_path) == []
    assert len(server.requests) == 1

    hashers = count_hashers(monkeypatch)
    again = make_store(manifest, tmp_path).locate("m", "swapper")
    assert again.path == located.path
    assert len(server.requests) == 1 and hashers == []
    [row] = make_store(manifest, tmp_path).status()
    assert row.present and row.verified and row.role == "swapper" and hashers == []


def test_corrupted_download_keeps_nothing(server: ServerState, tmp_path: Path,
                                          real_manifest: Manifest) -> None:
    corrupt = bytes(b ^ 0xFF if i == 1000 else b for i, b in enumerate(PAYLOAD))
    server.files["/m.onnx"] = Served(corrupt)
    url = server.url("/m.onnx")
    store = make_store(make_manifest(real_manifest, swapper_entry((url,))), tmp_path)
    with pytest.raises(ChecksumError) as info:
        store.locate("m", "swapper")
    message = str(info.value)
    assert PAYLOAD_SHA in message and hashlib.sha256(corrupt).hexdigest() in message
    assert url in message
    assert not (tmp_path / "m.onnx").exists()
    assert leftovers(tmp_path) == []
    assert len(server.requests) == 1  # a wrong hash is not retried


def test_complete_but_short_body_is_a_checksum_error(server: ServerState, tmp_path: Path,
                                                     real_manifest: Manifest) -> None:
    server.files["/m.onnx"] = Served(PAYLOAD[:-10])
    store = make_store(make_manifest(real_manifest, swapper_entry((server.url("/m.onnx"),))),
                       tmp_path)
    with pytest.raises(ChecksumError, match=f"has {len(PAYLOAD) - 10} bytes"):
        store.fetch("m")
    assert not (tmp_path / "m.onnx").exists() and leftovers(tmp_path) == []


def test_interrupted_download_resumes_with_range(server: ServerState, tmp_path: Path,
                                                 real_manifest: Manifest) -> None:
    server.files["/m.onnx"] = Served(PAYLOAD, drop_after=70_000, drops_left=1)
    store = make_store(make_manifest(real_manifest, swapper_entry((server.url("/m.onnx"),))),
                       tmp_path)
    path = store.fetch("m")
    assert path.read_bytes() == PAYLOAD
    assert server.requests == [("/m.onnx", None), ("/m.onnx", "bytes=70000-")]
    assert store.verify("m").ok and leftovers(tmp_path) == []


def test_server_ignoring_range_starts_over(server: ServerState, tmp_path: Path,
                                           real_manifest: Manifest) -> None:
    server.files["/m.onnx"] = Served(PAYLOAD, ranges=False, drop_after=70_000, drops_left=1)
    store = make_store(make_manifest(real_manifest, swapper_entry((server.url("/m.onnx"),))),
                       tmp_path)
    assert store.fetch("m").read_bytes() == PAYLOAD
    assert server.requests[1] == ("/m.onnx", "bytes=70000-")


def test_retries_exhausted_raise_download_error(server: ServerState, tmp_path: Path,
                                                real_manifest: Manifest) -> None:
    server.files["/m.onnx"] = Served(PAYLOAD, drop_after=1000, drops_left=100)
    store = make_store(make_manifest(real_manifest, swapper_entry((server.url("/m.onnx"),))),
                       tmp_path, retries=2)
    with pytest.raises(DownloadError, match="closed after"):
        store.locate("m", "swapper")
    assert len(server.requests) == 3
    assert not (tmp_path / "m.onnx").exists()
    assert (tmp_path / "m.onnx.part").stat().st_size == 3000  # kept for the next resume
    assert not (tmp_path / "m.onnx.lock").exists()

    server.files["/m.onnx"].drops_left = 0
    assert store.fetch("m").read_bytes() == PAYLOAD
    assert server.requests[-1] == ("/m.onnx", "bytes=3000-")


def test_mirror_fallback(server: ServerState, tmp_path: Path, real_manifest: Manifest) -> None:
    server.files["/good/m.onnx"] = Served(PAYLOAD)
    urls = (server.url("/gone/m.onnx"), server.url("/good/m.onnx"))
    store = make_store(make_manifest(real_manifest, swapper_entry(urls)), tmp_path)
    assert store.locate("m", "swapper").path.read_bytes() == PAYLOAD
    assert server.paths() == ["/gone/m.onnx", "/good/m.onnx"]


def test_all_mirrors_missing_is_not_retried(server: ServerState, tmp_path: Path,
                                            real_manifest: Manifest) -> None:
    urls = (server.url("/a/m.onnx"), server.url("/b/m.onnx"))
    store = make_store(make_manifest(real_manifest, swapper_entry(urls)), tmp_path, retries=5)
    with pytest.raises(DownloadError, match="HTTP 404"):
        store.fetch("m")
    assert server.paths() == ["/a/m.onnx", "/b/m.onnx"]


def test_unreachable_server_raises_download_error(tmp_path: Path,
                                                  real_manifest: Manifest) -> None:
    url = "http://127.0.0.1:9/m.onnx"  # the discard port: nothing listens there
    store = make_store(make_manifest(real_manifest, swapper_entry((url,))), tmp_path, retries=1,
                       timeout_s=2.0)
    with pytest.raises(DownloadError) as info:
        store.fetch("m")
    assert info.value.exit_code == 4 and url in str(info.value)


# ---- archives -----------------------------------------------------------------------------

def make_zip(members: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    return buffer.getvalue()


@pytest.mark.parametrize("member", ["pack/m.onnx", "m.onnx"])
def test_archive_member_is_extracted_and_verified(server: ServerState, tmp_path: Path,
                                                  real_manifest: Manifest, member: str) -> None:
    body = make_zip({"pack/other.onnx": b"other", "pack/m.onnx": PAYLOAD})
    server.files["/pack.zip"] = Served(body)
    archive = ArchiveMember(server.url("/pack.zip"), hashlib.sha256(body).hexdigest(), len(body),
                            member)
    entry = swapper_entry((), archive=archive)
    store = make_store(make_manifest(real_manifest, entry), tmp_path)
    path = store.locate("m", "swapper").path
    assert path.read_bytes() == PAYLOAD
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.onnx", "verified.json"]
    assert store.status()[0].verified


def test_archive_member_with_wrong_hash(server: ServerState, tmp_path: Path,
                                        real_manifest: Manifest) -> None:
    body = make_zip({"m.onnx": PAYLOAD[::-1]})
    server.files["/pack.zip"] = Served(body)
    archive = ArchiveMember(server.url("/pack.zip"), hashlib.sha256(body).hexdigest(), len(body),
                            "m.onnx")
    store = make_store(make_manifest(real_manifest, swapper_entry((), archive=archive)), tmp_path)
    with pytest.raises(ChecksumError, match=PAYLOAD_SHA):
        store.fetch("m")
    assert sorted(p.name for p in tmp_path.iterdir()) == []


def test_archive_without_the_member(server: ServerState, tmp_path: Path,
                                    real_manifest: Manifest) -> None:
    body = make_zip({"a/x.onnx": b"1"})
    server.files["/pack.zip"] = Served(body)
    archive = ArchiveMember(server.url("/pack.zip"), hashlib.sha256(body).hexdigest(), len(body),
                            "m.onnx")
    store = make_store(make_manifest(real_manifest, swapper_entry((), archive=archive)), tmp_path)
    with pytest.raises(ModelMissingError, match="no members named m.onnx"):
        store.fetch("m")
    assert sorted(p.name for p in tmp_path.iterdir()) == []


# ---- locking ------------------------------------------------------------------------------

def test_concurrent_fetches_download_once(server: ServerState, tmp_path: Path,
                                          real_manifest: Manifest) -> None:
    server.files["/m.onnx"] = Served(PAYLOAD)
    manifest = make_manifest(real_manifest, swapper_entry((server.url("/m.onnx"),)))
    results: list[bytes] = []
    errors: list[BaseException] = []

    def fetch() -> None:
        try:
            results.append(make_store(manifest, tmp_path).fetch("m").read_bytes())
        except BaseException as exc:  # noqa: BLE001 (reported by the assertion below)
            errors.append(exc)

    threads = [threading.Thread(target=fetch) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=20)
    assert errors == [] and results == [PAYLOAD] * 4
    assert len(server.requests) == 1 and leftovers(tmp_path) == []


def test_stale_lock_is_broken(server: ServerState, tmp_path: Path,
                              real_manifest: Manifest) -> None:
    server.files["/m.onnx"] = Served(PAYLOAD)
    lock = tmp_path / "m.onnx.lock"
    lock.write_text("12345\n")
    old = time.time() - 600
    os.utime(lock, (old, old))
    store = make_store(make_manifest(real_manifest, swapper_entry((server.url("/m.onnx"),))),
                       tmp_path, lock_stale_s=60.0)
    assert store.fetch("m").read_bytes() == PAYLOAD
    assert not lock.exists()
