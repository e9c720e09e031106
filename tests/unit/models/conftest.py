"""Fixtures of the model store tests (tests/unit/models/test_store_*.py): a local HTTP server
standing in for the model hosts, and the manifest the project ships."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from http.server import ThreadingHTTPServer

import pytest

from facefuse.models.manifest import Manifest, load_manifest
from tests.unit.models.store_helpers import Handler, ServerState


@pytest.fixture
def server() -> Iterator[ServerState]:
    """A threaded HTTP server on 127.0.0.1 (a free port) serving ServerState.files."""
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
    """The shipped models/manifest.toml (loaded once per module)."""
    return load_manifest()
