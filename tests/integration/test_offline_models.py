"""A first run without the models says at once what is missing and how to get it (issue 8,
item 19): offline, one error names every missing model with its size, the folder and the one
`facefuse models fetch ...` command; a download that fails after its retries says how to fetch
it later or where to put the file by hand. Without network (a host name that does not resolve)
the first run fails at once, naming every missing model in one message."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from facefuse.cli.main import main
from facefuse.errors import DownloadError, ExitCode, ModelMissingError
from facefuse.models.manifest import Manifest, load_manifest
from facefuse.models.store import ModelStore
from tests.unit.models.store_helpers import make_manifest, swapper_entry

DEFAULT_MODELS = ("retinaface_10g", "arcface_w600k_r50", "hyperswap_1a_256")  # Settings()


@pytest.fixture(scope="module")
def manifest() -> Manifest:
    return load_manifest()


def _assert_names_everything(message: str, manifest: Manifest, models_dir: Path) -> None:
    for name in DEFAULT_MODELS:
        entry = manifest.models[name]
        assert f"{name} ({entry.size_bytes / 1e6:.1f} MB)" in message
        assert entry.file in message
    assert str(models_dir) in message
    assert "facefuse models fetch " + " ".join(DEFAULT_MODELS) in message
    assert "\n" not in message


def test_the_store_names_every_missing_model_at_once(tmp_path: Path, manifest: Manifest) -> None:
    models_dir = tmp_path / "empty-models"
    store = ModelStore(manifest, models_dir, offline=True)
    assert [e.name for e in store.missing(DEFAULT_MODELS)] \
        == list(DEFAULT_MODELS)
    with pytest.raises(ModelMissingError) as info:
        store.require_present(DEFAULT_MODELS)
    message = str(info.value)
    _assert_names_everything(message, manifest, models_dir)
    assert "3 models (" in message and "offline mode is on" in message
    # present models and paths are not named; online, nothing missing is nothing to fetch
    models_dir.mkdir()
    (models_dir / manifest.models[DEFAULT_MODELS[2]].file).write_bytes(b"x")
    assert [e.name for e in store.missing([*DEFAULT_MODELS, "/my/own.onnx"])] \
        == list(DEFAULT_MODELS[:2])
    ModelStore(manifest, tmp_path / "other", offline=False).require_present([])


def test_a_failed_download_says_how_to_get_the_model(tmp_path: Path, manifest: Manifest) -> None:
    url = "http://127.0.0.1:9/m.onnx"  # the discard port: nothing listens, the connection fails
    store = ModelStore(make_manifest(manifest, swapper_entry((url,))), tmp_path / "models",
                       retries=0, retry_wait_s=0.0, timeout_s=2.0)
    with pytest.raises(DownloadError) as info:
        store.fetch("m")
    message = str(info.value)
    assert "facefuse models fetch m" in message and str(tmp_path / "models") in message
    assert url in message and "m.onnx" in message and "\n" not in message


def test_swap_offline_with_no_models_names_all_three(
        tmp_path: Path, testdata: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch, manifest: Manifest) -> None:
    monkeypatch.delenv("FACEFUSE_MODELS", raising=False)
    monkeypatch.delenv("FACEFUSE_MANIFEST", raising=False)
    models_dir = tmp_path / "models"
    models_dir.mkdir()
    code = main(["swap", "-s", str(testdata / "media" / "obama.jpg"),
                 "-t", str(testdata / "media" / "biden.jpg"), "-o", str(tmp_path / "out.png"),
                 "--offline", "--models-dir", str(models_dir),
                 "--cache-dir", str(tmp_path / "cache")])
    errors = [line for line in capsys.readouterr().err.splitlines() if "error" in line]
    assert code == ExitCode.MODEL == 4
    assert len(errors) == 1, errors
    _assert_names_everything(errors[0], manifest, models_dir)
    assert not (tmp_path / "out.png").exists()


def _unresolvable_manifest(folder: Path) -> Path:
    """The packaged manifest with every URL on a host name that never resolves."""
    text = (Path(__file__).resolve().parents[2] / "models" / "manifest.toml").read_text()
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "manifest.toml"
    path.write_text(re.sub(r"https?://[^/\"]+/", "http://facefuse-no-such-host.invalid/", text))
    return path


@pytest.mark.parametrize("command", ["fetch", "swap"])
def test_no_network_fails_at_once_naming_every_model(
        command: str, tmp_path: Path, testdata: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch, manifest: Manifest) -> None:
    monkeypatch.delenv("FACEFUSE_OFFLINE", raising=False)
    monkeypatch.setenv("FACEFUSE_MANIFEST", str(_unresolvable_manifest(tmp_path / "m")))
    models_dir = tmp_path / "models"
    args = ["--models-dir", str(models_dir)]
    if command == "swap":
        args += ["-s", str(testdata / "media" / "obama.jpg"), "-t",
                 str(testdata / "media" / "biden.jpg"), "-o", str(tmp_path / "out.png"),
                 "--cache-dir", str(tmp_path / "cache")]
    code = main(["models", "fetch", *args] if command == "fetch" else ["swap", *args])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == ExitCode.MODEL
    assert len(err) == 1, err
    assert "facefuse-no-such-host.invalid cannot be resolved" in err[0]
    _assert_names_everything(err[0], manifest, models_dir)
