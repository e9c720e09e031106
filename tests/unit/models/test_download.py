"""file:// sources in a manifest (a studio's mirror on a share): copied with the same checks as a
download (size and sha256 before the final rename, progress, resume, a lock), a damaged or
missing mirror falls through to the next URL, offline mode copies from file:// sources and never
opens a connection, and a URL of another kind is one sentence, not an internal error.

`server` (a local HTTP server, 127.0.0.1 only) and `real_manifest` come from
tests/unit/conftest.py; the store builders from tests/unit/store_helpers.py.
"""

from __future__ import annotations

import hashlib
import io
import json
import zipfile
from pathlib import Path
from typing import Any

import pytest

from facefuse.cli.main import main
from facefuse.errors import ChecksumError, DownloadError, ExitCode, ModelMissingError
from facefuse.models.manifest import ArchiveMember, Manifest
from tests.unit.models.store_helpers import (
    PAYLOAD,
    PAYLOAD_SHA,
    Served,
    ServerState,
    forbid_network,
    leftovers,
    make_manifest,
    make_store,
    swapper_entry,
)


def _mirror(folder: Path, body: bytes = PAYLOAD, name: str = "m.onnx") -> str:
    """A file:// URL of `body` stored in `folder` (a share, as far as the store can tell)."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_bytes(body)
    return (folder / name).as_uri()


def _damaged(body: bytes = PAYLOAD) -> bytes:
    return body[:1000] + bytes([body[1000] ^ 0xFF]) + body[1001:]


def test_a_file_url_is_copied_verified_with_progress(tmp_path: Path,
                                                     real_manifest: Manifest) -> None:
    url = _mirror(tmp_path / "share dir")  # a space: the URL is percent-escaped
    assert "%20" in url
    models = tmp_path / "models"
    progress: list[tuple[str, int, int | None]] = []
    seen_final: list[bool] = []

    def on_progress(name: str, done: int, total: int | None) -> None:
        progress.append((name, done, total))
        seen_final.append((models / "m.onnx").exists())

    store = make_store(make_manifest(real_manifest, swapper_entry((url,))), models,
                       on_progress=on_progress)
    located = store.locate("m", "swapper")
    assert located.path.read_bytes() == PAYLOAD
    assert progress[-1] == ("m", len(PAYLOAD), len(PAYLOAD)) and not any(seen_final)
    assert json.loads((models / "verified.json").read_text())["m.onnx"]["sha256"] == PAYLOAD_SHA
    assert leftovers(models) == []
    assert (tmp_path / "share dir" / "m.onnx").read_bytes() == PAYLOAD  # the source is kept


def test_a_damaged_file_mirror_falls_through_to_the_next_url(
        server: ServerState, tmp_path: Path, real_manifest: Manifest) -> None:
    damaged = _mirror(tmp_path / "share-a", _damaged())
    good = _mirror(tmp_path / "share-b")
    store = make_store(make_manifest(real_manifest, swapper_entry((damaged, good))),
                       tmp_path / "models")
    assert store.fetch("m").read_bytes() == PAYLOAD
    # and a damaged share before an HTTP mirror
    server.files["/m.onnx"] = Served(PAYLOAD)
    store = make_store(make_manifest(real_manifest,
                                     swapper_entry((damaged, server.url("/m.onnx")))),
                       tmp_path / "models-2")
    assert store.fetch("m").read_bytes() == PAYLOAD and len(server.requests) == 1
    assert leftovers(tmp_path / "models-2") == []


def test_only_damaged_mirrors_keep_nothing_and_name_the_hashes(tmp_path: Path,
                                                               real_manifest: Manifest) -> None:
    damaged = _mirror(tmp_path / "share", _damaged())
    store = make_store(make_manifest(real_manifest, swapper_entry((damaged,))),
                       tmp_path / "models", retries=3)
    with pytest.raises(ChecksumError) as info:
        store.fetch("m")
    message = str(info.value)
    assert damaged in message and PAYLOAD_SHA in message
    assert hashlib.sha256(_damaged()).hexdigest() in message
    assert not (tmp_path / "models" / "m.onnx").exists() and leftovers(tmp_path / "models") == []


@pytest.mark.parametrize("kind", ["missing", "folder", "host", "plain path", "ftp"])
def test_an_unusable_source_is_dropped_for_the_next_one(tmp_path: Path, real_manifest: Manifest,
                                                        kind: str) -> None:
    bad = {"missing": (tmp_path / "nowhere" / "m.onnx").as_uri(),
           "folder": tmp_path.as_uri(),
           "host": "file://fileserver/models/m.onnx",
           "plain path": str(tmp_path / "share" / "m.onnx"),
           "ftp": "ftp://127.0.0.1:9/m.onnx"}[kind]
    good = _mirror(tmp_path / "share")
    store = make_store(make_manifest(real_manifest, swapper_entry((bad, good))),
                       tmp_path / "models", retries=3)
    assert store.fetch("m").read_bytes() == PAYLOAD
    alone = make_store(make_manifest(real_manifest, swapper_entry((bad,))),
                       tmp_path / "models-2", retries=3)
    with pytest.raises(DownloadError) as info:
        alone.fetch("m")
    assert "after 1 attempts" in str(info.value) and bad in str(info.value)


def test_an_interrupted_copy_resumes_from_its_part(tmp_path: Path,
                                                   real_manifest: Manifest) -> None:
    url = _mirror(tmp_path / "share")
    models = tmp_path / "models"
    models.mkdir()
    (models / "m.onnx.part").write_bytes(PAYLOAD[:123_456])
    progress: list[int] = []
    store = make_store(make_manifest(real_manifest, swapper_entry((url,))), models,
                       on_progress=lambda name, done, total: progress.append(done))
    assert store.fetch("m").read_bytes() == PAYLOAD
    assert progress[0] > 123_456 and leftovers(models) == []


def test_offline_copies_from_file_urls_and_never_opens_a_connection(
        tmp_path: Path, real_manifest: Manifest, monkeypatch: pytest.MonkeyPatch) -> None:
    forbid_network(monkeypatch)
    url = _mirror(tmp_path / "share")
    manifest = make_manifest(real_manifest,
                             swapper_entry(("https://models.invalid/m.onnx", url)))
    store = make_store(manifest, tmp_path / "models", offline=True)
    store.require_present(["m"])  # a file:// source fills it: not missing
    with pytest.raises(ModelMissingError):
        store.require_present(["m"], copies=False)
    assert store.locate("m", "swapper").path.read_bytes() == PAYLOAD
    # without a file:// source offline mode still refuses, naming the model
    http_only = make_store(make_manifest(real_manifest,
                                         swapper_entry(("https://models.invalid/m.onnx",))),
                           tmp_path / "models-2", offline=True)
    with pytest.raises(ModelMissingError, match="offline mode is on"):
        http_only.locate("m", "swapper")


def test_a_zipped_model_from_a_file_url(tmp_path: Path, real_manifest: Manifest) -> None:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("pack/m.onnx", PAYLOAD)
    data = buffer.getvalue()
    url = _mirror(tmp_path / "share", data, "pack.zip")
    entry = swapper_entry((), archive=ArchiveMember(url, hashlib.sha256(data).hexdigest(),
                                                    len(data), "pack/m.onnx"))
    store = make_store(make_manifest(real_manifest, entry), tmp_path / "models", offline=True)
    assert store.fetch("m").read_bytes() == PAYLOAD
    assert leftovers(tmp_path / "models") == []
    assert (tmp_path / "share" / "pack.zip").read_bytes() == data


def test_models_check_never_copies(tmp_path: Path, real_manifest: Manifest,
                                   monkeypatch: pytest.MonkeyPatch,
                                   capsys: pytest.CaptureFixture[str], testdata: Path) -> None:
    """A studio manifest ($FACEFUSE_MANIFEST) mirroring YuNet on a share: `models fetch
    --offline` copies it, `models check` before that names it missing and copies nothing."""
    real = real_manifest.models["yunet_2023mar"]
    share = tmp_path / "share"
    share.mkdir()
    source = testdata / "models" / real.file
    (share / real.file).write_bytes(source.read_bytes())
    text = Path(real_manifest.source or "").read_text(encoding="utf-8")
    assert text.count(f'"{real.urls[0]}"') == 1
    studio = tmp_path / "studio.toml"
    studio.write_text(text.replace(f'"{real.urls[0]}"', f'"{(share / real.file).as_uri()}"'))
    monkeypatch.setenv("FACEFUSE_MANIFEST", str(studio))
    forbid_network(monkeypatch)
    models = tmp_path / "models"
    options = ("yunet_2023mar", "--models-dir", str(models))

    assert main(["models", "check", *options]) == ExitCode.MODEL
    assert "yunet_2023mar" in capsys.readouterr().err and not (models / real.file).exists()
    assert main(["models", "fetch", *options, "--offline"]) == ExitCode.OK
    assert (models / real.file).read_bytes() == source.read_bytes()
    capsys.readouterr()
    assert main(["models", "check", *options]) == ExitCode.OK


UNRESOLVABLE = "http://facefuse-no-such-host.invalid/m.onnx"  # .invalid never resolves


def _count_connections(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Record the URL of every connection the transfer opens (it still opens them)."""
    import urllib.request

    opened: list[str] = []
    real = urllib.request.urlopen

    def counting(request: Any, *args: Any, **kwargs: Any) -> Any:
        opened.append(request.full_url)
        return real(request, *args, **kwargs)

    monkeypatch.setattr(urllib.request, "urlopen", counting)
    return opened


def test_a_host_that_does_not_resolve_is_not_retried(
        tmp_path: Path, real_manifest: Manifest, monkeypatch: pytest.MonkeyPatch) -> None:
    opened = _count_connections(monkeypatch)
    other = "http://facefuse-other-missing-host.invalid/m.onnx"
    store = make_store(make_manifest(real_manifest, swapper_entry((UNRESOLVABLE, other))),
                       tmp_path / "models", retries=3)
    with pytest.raises(DownloadError) as info:
        store.fetch("m")
    assert opened == [UNRESOLVABLE, other], "each URL once, not once a round"
    message = str(info.value)
    assert "facefuse-no-such-host.invalid" in message and "cannot be resolved" in message
    assert "facefuse models fetch m" in message and "\n" not in message


def test_other_connection_failures_keep_their_retries(
        tmp_path: Path, real_manifest: Manifest, monkeypatch: pytest.MonkeyPatch) -> None:
    opened = _count_connections(monkeypatch)
    refused = "http://127.0.0.1:9/m.onnx"  # the discard port: the connection is refused
    store = make_store(make_manifest(real_manifest, swapper_entry((refused,))),
                       tmp_path / "models", retries=2)
    with pytest.raises(DownloadError) as info:
        store.fetch("m")
    assert opened == [refused] * 3 and "after 3 attempts" in str(info.value)


def test_a_failed_first_download_names_every_missing_model(
        tmp_path: Path, real_manifest: Manifest, monkeypatch: pytest.MonkeyPatch) -> None:
    opened = _count_connections(monkeypatch)
    entries = [swapper_entry((UNRESOLVABLE.replace("m.onnx", f"{n}.onnx"),), name=n,
                             file=f"{n}.onnx", size_bytes=size)
               for n, size in (("a", 2_000_000), ("b", 3_000_000), ("c", 5_000_000))]
    models = tmp_path / "models"
    store = make_store(make_manifest(real_manifest, *entries), models, retries=3)
    with pytest.raises(DownloadError) as info:
        store.require_present(["a", "b", "c"])
    assert len(opened) == 1, "the first unresolvable host stops the run"
    message = str(info.value)
    assert "3 models (10.0 MB in all) are missing" in message
    assert "a (2.0 MB), b (3.0 MB), c (5.0 MB)" in message and str(models) in message
    assert "`facefuse models fetch a b c --models-dir" in message and "\n" not in message
