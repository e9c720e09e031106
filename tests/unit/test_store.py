"""The model store against a local HTTP server (127.0.0.1 only): downloads, resume, checksums."""

from __future__ import annotations

import dataclasses
import hashlib
import io
import json
import os
import random
import threading
import time
import urllib.request
import zipfile
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import MappingProxyType, SimpleNamespace
from typing import Any

import pytest

from facefuse.errors import (
    ChecksumError,
    DownloadError,
    ModelContractError,
    ModelMissingError,
)
from facefuse.cache import hashes as file_hashes_module
from facefuse.models import download as download_module
from facefuse.models.manifest import ArchiveMember, Manifest, ModelEntry, load_manifest
from facefuse.models.store import ModelStore, default_models_dir, offline_from_env

PAYLOAD = random.Random(7).randbytes(300_000)
PAYLOAD_SHA = hashlib.sha256(PAYLOAD).hexdigest()


@dataclasses.dataclass
class Served:
    """What the server answers for one path."""

    body: bytes
    ranges: bool = True          # honour Range headers (else always 200 with the whole body)
    drop_after: int = 0          # bytes sent before closing, while drops_left > 0
    drops_left: int = 0


@dataclasses.dataclass
class ServerState:
    files: dict[str, Served] = dataclasses.field(default_factory=dict)
    requests: list[tuple[str, str | None]] = dataclasses.field(default_factory=list)
    lock: threading.Lock = dataclasses.field(default_factory=threading.Lock)
    base: str = ""

    def url(self, path: str) -> str:
        return self.base + path

    def paths(self) -> list[str]:
        return [path for path, _ in self.requests]


class Handler(BaseHTTPRequestHandler):
    """Serves ServerState.files with Range support, dropping connections on request."""

    server: Any

    def do_GET(self) -> None:
        state: ServerState = self.server.state
        with state.lock:
            state.requests.append((self.path, self.headers.get("Range")))
            served = state.files.get(self.path)
            drop = served is not None and served.drops_left > 0
            if served is not None and drop:
                served.drops_left -= 1
        if served is None:
            self.send_error(404)
            return
        start = self._start(served)
        if start is None:
            return
        payload = served.body[start:]
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload[:served.drop_after] if drop else payload)

    def _start(self, served: Served) -> int | None:
        header = self.headers.get("Range")
        if not header or not served.ranges:
            self.send_response(200)
            return 0
        start = int(header.removeprefix("bytes=").split("-")[0])
        if start >= len(served.body):
            self.send_error(416)
            return None
        self.send_response(206)
        self.send_header("Content-Range", f"bytes {start}-{len(served.body) - 1}/{len(served.body)}")
        return start

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture
def server() -> Iterator[ServerState]:
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    httpd.daemon_threads = True
    state = ServerState(base=f"http://127.0.0.1:{httpd.server_address[1]}")
    httpd.state = state  # type: ignore[attr-defined]
    thread = threading.Thread(target=httpd.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    yield state
    httpd.shutdown()
    httpd.server_close()


@pytest.fixture(scope="module")
def real_manifest() -> Manifest:
    return load_manifest()


def make_manifest(real: Manifest, *entries: ModelEntry) -> Manifest:
    families = {name: real.families[name] for name in ("inswapper", "yunet")}
    return Manifest(1, MappingProxyType(families),
                    MappingProxyType({entry.name: entry for entry in entries}))


def swapper_entry(urls: tuple[str, ...], body: bytes = PAYLOAD, **changes: Any) -> ModelEntry:
    entry = ModelEntry(name="m", family="inswapper", file="m.onnx", urls=urls,
                       sha256=hashlib.sha256(body).hexdigest(), size_bytes=len(body),
                       licence="test", precision="fp32")
    return dataclasses.replace(entry, **changes)


def make_store(manifest: Manifest, models_dir: Path, **options: Any) -> ModelStore:
    options = {"retry_wait_s": 0.0, "timeout_s": 5.0, **options}
    return ModelStore(manifest, models_dir, **options)


def leftovers(models_dir: Path) -> list[str]:
    """Files other than verified.json and finished models: parts, locks, zips, temp files."""
    return sorted(p.name for p in models_dir.iterdir()
                  if p.name != "verified.json" and not p.name.endswith(".onnx"))


def count_hashers(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Replace the hashlib of the modules where the store's hashing lives (downloads and
    cache.hashes) with one that counts sha256 objects created."""
    calls: list[int] = []

    def sha256(*args: Any) -> Any:
        calls.append(1)
        return hashlib.sha256(*args)

    counting = SimpleNamespace(sha256=sha256)
    monkeypatch.setattr(download_module, "hashlib", counting)
    monkeypatch.setattr(file_hashes_module, "hashlib", counting)
    return calls


def forbid_network(monkeypatch: pytest.MonkeyPatch) -> None:
    def fail(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("the store opened a connection")

    monkeypatch.setattr(urllib.request, "urlopen", fail)


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


# ---- offline ------------------------------------------------------------------------------

def test_offline_missing_model_names_file_dir_and_command(server: ServerState, tmp_path: Path,
                                                          real_manifest: Manifest,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    server.files["/m.onnx"] = Served(PAYLOAD)
    entry = swapper_entry((server.url("/m.onnx"),), file="model_file.onnx")
    forbid_network(monkeypatch)
    store = make_store(make_manifest(real_manifest, entry), tmp_path / "models", offline=True)
    with pytest.raises(ModelMissingError) as located:
        store.locate("m", "swapper")
    with pytest.raises(ModelMissingError) as fetched:
        store.fetch("m")
    for message in (str(located.value), str(fetched.value)):
        assert "model_file.onnx" in message and str(tmp_path / "models") in message
        assert "facefuse models fetch m" in message
    assert server.requests == []


def test_offline_with_present_model_works(server: ServerState, tmp_path: Path,
                                          real_manifest: Manifest,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "m.onnx").write_bytes(PAYLOAD)
    forbid_network(monkeypatch)
    store = make_store(make_manifest(real_manifest, swapper_entry(("https://x.invalid/m",))),
                       tmp_path, offline=True)
    assert store.locate("m", "swapper").path == tmp_path / "m.onnx"


# ---- verification -------------------------------------------------------------------------

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


# ---- names, paths, roles ------------------------------------------------------------------

def test_user_file_is_used_as_is(tmp_path: Path, real_manifest: Manifest,
                                 monkeypatch: pytest.MonkeyPatch) -> None:
    own = tmp_path / "own_swapper.bin"
    own.write_bytes(b"not hashed")
    store = make_store(make_manifest(real_manifest, swapper_entry(("https://x.invalid/m",))),
                       tmp_path / "models")
    hashers = count_hashers(monkeypatch)
    located = store.locate(str(own), "swapper")
    assert located.path == own and located.entry is None and located.label == "own_swapper.bin"
    assert hashers == []
    with pytest.raises(ModelMissingError, match="absent.onnx does not exist"):
        store.locate(str(tmp_path / "absent.onnx"), "swapper")


def test_unknown_name_lists_models_of_the_role(tmp_path: Path, real_manifest: Manifest) -> None:
    store = make_store(real_manifest, tmp_path, offline=True)
    with pytest.raises(ModelMissingError) as info:
        store.locate("inswapper_512", "swapper")
    assert "inswapper_128, inswapper_128_fp16" in str(info.value)
    assert "retinaface_10g" not in str(info.value)


def test_model_of_another_role_is_refused(tmp_path: Path, real_manifest: Manifest) -> None:
    store = make_store(real_manifest, tmp_path, offline=True)
    with pytest.raises(ModelContractError, match="inswapper_128 is a swapper model, not a detector"):
        store.locate("inswapper_128", "detector")


def test_status_lists_every_model_without_hashing(tmp_path: Path, real_manifest: Manifest,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "codeformer.onnx").write_bytes(b"x")
    hashers = count_hashers(monkeypatch)
    rows = {row.name: row for row in make_store(real_manifest, tmp_path).status()}
    assert set(rows) == set(real_manifest.models) and hashers == []
    assert rows["codeformer"].present and not rows["codeformer"].verified
    assert rows["gfpgan_1.4"].licence == "Apache-2.0" and not rows["gfpgan_1.4"].present
    assert rows["det_10g"].role == "detector"
    assert make_store(real_manifest, tmp_path).path_for("codeformer") == tmp_path / "codeformer.onnx"


def test_default_models_dir_and_offline_env(tmp_path: Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    assert default_models_dir(tmp_path / "x") == tmp_path / "x"
    monkeypatch.setenv("FACEFUSE_MODELS", str(tmp_path / "env"))
    assert default_models_dir(None) == tmp_path / "env"
    monkeypatch.delenv("FACEFUSE_MODELS")
    assert default_models_dir(None).name == "models"
    assert "facefuse" in str(default_models_dir(None)).lower()
    for value, expected in (("1", True), ("TRUE", True), ("yes", True), ("0", False), ("", False)):
        monkeypatch.setenv("FACEFUSE_OFFLINE", value)
        assert offline_from_env() is expected


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
