"""Locating models without downloading: offline mode (a missing model names its file, folder
and the fetch command; a present one works), user files used as they are, unknown names and
other roles refused with the alternatives, status without hashing, the models folder and
$FACEFUSE_OFFLINE.

`server` (a local HTTP server, 127.0.0.1 only) and `real_manifest` (the shipped manifest) come
from tests/unit/models/conftest.py; what the server answers and the store builders from
tests/unit/models/store_helpers.py.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from facefuse.errors import ModelContractError, ModelMissingError
from facefuse.models.locations import default_models_dir, offline_from_env
from facefuse.models.manifest import Manifest
from tests.unit.models.store_helpers import (
    PAYLOAD,
    Served,
    ServerState,
    count_hashers,
    forbid_network,
    make_manifest,
    make_store,
    swapper_entry,
)

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
    with pytest.raises(ModelContractError,
                       match="inswapper_128 is a swapper model, not a detector"):
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
    path = make_store(real_manifest, tmp_path).path_for("codeformer")
    assert path == tmp_path / "codeformer.onnx"


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
