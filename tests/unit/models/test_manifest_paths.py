"""A model manifest cannot make facefuse write outside the models folder (issue 8, item 7): file
names must be plain names inside it (no absolute path, no '..', no drive, no backslash), archive
members relative paths without '..'; the store's path_for refuses anything else too."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from facefuse.errors import ModelError
from facefuse.models.manifest import (
    ArchiveMember,
    Manifest,
    default_manifest_path,
    load_manifest,
)
from facefuse.models.store import ModelStore
from tests.unit.models.store_helpers import (
    PAYLOAD,
    Served,
    ServerState,
    make_manifest,
    swapper_entry,
)

BAD_FILE_NAMES = ["../evil.onnx", "../../etc/evil.onnx", "/tmp/evil.onnx", "sub/../../evil.onnx",
                  "C:\\evil.onnx", "C:evil.onnx", "..\\evil.onnx", "\\\\server\\share\\e.onnx",
                  "sub/evil.onnx", "..", ".", "", "evil\x00.onnx"]


def _manifest_with(tmp_path: Path, old: str, new: str) -> Path:
    text = default_manifest_path().read_text(encoding="utf-8")
    assert old in text
    path = tmp_path / "manifest.toml"
    path.write_text(text.replace(old, new, 1), encoding="utf-8")
    return path


def _toml_string(value: str) -> str:
    return '"' + value.replace("\\", "\\\\").replace("\x00", "\\u0000") + '"'


@pytest.mark.parametrize("name", BAD_FILE_NAMES)
def test_a_manifest_file_name_leaving_the_folder_is_refused(tmp_path: Path, name: str) -> None:
    path = _manifest_with(tmp_path, 'file = "inswapper_128.onnx"', f"file = {_toml_string(name)}")
    with pytest.raises(ModelError, match="model inswapper_128 has the file name"):
        load_manifest(path)


@pytest.mark.parametrize("member", ["../evil.onnx", "/abs/evil.onnx", "a/../../evil.onnx",
                                    "C:\\evil.onnx", "a\\..\\evil.onnx"])
def test_a_manifest_archive_member_leaving_the_zip_is_refused(tmp_path: Path,
                                                              member: str) -> None:
    text = default_manifest_path().read_text(encoding="utf-8")
    entry = ('\n[[models]]\nname = "zipped"\nfamily = "inswapper"\nfile = "zipped.onnx"\n'
             f'sha256 = "{"0" * 64}"\nbytes = 1\nlicence = "test"\n'
             f'archive = {{ url = "http://x/a.zip", sha256 = "{"0" * 64}", bytes = 1, '
             f'member = {_toml_string(member)} }}\n')
    path = tmp_path / "manifest.toml"
    path.write_text(text + entry, encoding="utf-8")
    with pytest.raises(ModelError, match="model zipped names the archive member"):
        load_manifest(path)


def test_the_shipped_manifest_and_plain_names_are_accepted(tmp_path: Path) -> None:
    path = _manifest_with(tmp_path, 'file = "inswapper_128.onnx"', 'file = "inswapper 128.onnx"')
    assert load_manifest(path).models["inswapper_128"].file == "inswapper 128.onnx"
    assert load_manifest().models  # the shipped one stays valid


@pytest.mark.parametrize("name", BAD_FILE_NAMES)
def test_path_for_never_leaves_the_models_folder(tmp_path: Path, real_manifest: Manifest,
                                                 name: str) -> None:
    """Manifests built in code (not read by load_manifest) are refused by the store itself."""
    manifest = make_manifest(real_manifest, swapper_entry((), file=name))
    store = ModelStore(manifest, tmp_path / "models")
    with pytest.raises(ModelError, match="refusing to write outside"):
        store.path_for("m")
    with pytest.raises(ModelError):
        store.verify("m")


def test_a_download_named_outside_the_folder_writes_nothing(
        server: ServerState, tmp_path: Path, real_manifest: Manifest) -> None:
    server.files["/m.onnx"] = Served(PAYLOAD)
    models = tmp_path / "deep" / "models"
    manifest = make_manifest(real_manifest,
                             swapper_entry((server.url("/m.onnx"),), file="../escaped.onnx"))
    store = ModelStore(manifest, models, retry_wait_s=0.0, timeout_s=5.0)
    with pytest.raises(ModelError, match="refusing to write outside"):
        store.fetch("m")
    with pytest.raises(ModelError):
        store.locate("m", "swapper")
    assert not (tmp_path / "deep" / "escaped.onnx").exists() and server.requests == []


def test_an_archive_url_naming_dot_dot_is_refused(server: ServerState, tmp_path: Path,
                                                 real_manifest: Manifest) -> None:
    archive = ArchiveMember(server.url("/x/.."), "0" * 64, 1, "m.onnx")
    entry = dataclasses.replace(swapper_entry(()), archive=archive)
    store = ModelStore(make_manifest(real_manifest, entry), tmp_path / "models",
                       retry_wait_s=0.0)
    with pytest.raises(ModelError, match="refusing to write outside"):
        store.fetch("m")
    assert server.requests == []
