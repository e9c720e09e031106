"""Helpers for the model store tests (tests/unit/models/test_store_*.py): what the local HTTP
server answers (Served, ServerState, Handler: the `server` fixture in
tests/unit/models/conftest.py runs it), manifests and stores built around one test model, and
probes for hashing and network use."""

from __future__ import annotations

import dataclasses
import hashlib
import random
import threading
import urllib.request
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from types import MappingProxyType, SimpleNamespace
from typing import Any

import pytest

from facefuse.cache import hashes as file_hashes_module
from facefuse.models import download as download_module
from facefuse.models.manifest import Manifest, ModelEntry
from facefuse.models.store import ModelStore

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
        size = len(served.body)
        self.send_header("Content-Range", f"bytes {start}-{size - 1}/{size}")
        return start

    def log_message(self, format: str, *args: Any) -> None:
        pass


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
