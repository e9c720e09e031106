"""`facefuse models verify` hashes every file whatever verified.json says, so bytes changed in
place with the size and mtime kept are found; `check` stays quick, and both say which check
each line ran. The real YuNet file from the test data stands in for a model, checked against
the shipped manifest's hash."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from facefuse.cli.main import main
from facefuse.errors import ExitCode
from facefuse.models.manifest import Manifest
from facefuse.models.store import ModelStore
from tests.unit.models.store_helpers import count_hashers

YUNET = "yunet_2023mar"


@pytest.fixture
def models_dir(tmp_path: Path, testdata: Path, real_manifest: Manifest) -> Path:
    """A models folder holding the real YuNet file, hashed once (so verified.json vouches)."""
    folder = tmp_path / "models"
    folder.mkdir()
    shutil.copy2(testdata / "models" / real_manifest.models[YUNET].file, folder)
    assert ModelStore(real_manifest, folder, offline=True).verify(YUNET).ok
    return folder


def _damage_in_place(path: Path, where: float = 0.5) -> None:
    """Flip one byte of `path` (at `where` of its length: 0 the first, 1 the last), keeping its
    size and restoring its mtime."""
    stat = path.stat()
    offset = min(int(stat.st_size * where), stat.st_size - 1)
    with open(path, "r+b") as handle:
        handle.seek(offset)
        byte = handle.read(1)
        handle.seek(offset)
        handle.write(bytes([byte[0] ^ 0x01]))
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert path.stat().st_mtime_ns == stat.st_mtime_ns


def _run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, list[str], str]:
    rc = main(["models", *args])
    captured = capsys.readouterr()
    return rc, captured.out.splitlines(), captured.err


@pytest.mark.parametrize("where", [0.0, 0.5, 1.0])
def test_verify_finds_a_byte_damaged_with_size_and_mtime_kept(
        models_dir: Path, real_manifest: Manifest, capsys: pytest.CaptureFixture[str],
        where: float) -> None:
    path = models_dir / real_manifest.models[YUNET].file
    _damage_in_place(path, where)

    rc, lines, err = _run(capsys, "verify", YUNET, "--models-dir", str(models_dir), "--offline")
    assert rc == ExitCode.MODEL == 4
    [line] = lines
    assert line.split()[:3] == [YUNET, "BAD", "sha256"]
    assert real_manifest.models[YUNET].sha256 in line
    assert YUNET in err and "facefuse models fetch" in err and len(err.splitlines()) == 1
    assert real_manifest.models[YUNET].file not in json.loads(
        (models_dir / "verified.json").read_text())  # the record no longer vouches for it


def test_check_is_quick_and_says_so_until_verify_drops_the_record(
        models_dir: Path, real_manifest: Manifest, capsys: pytest.CaptureFixture[str]) -> None:
    _damage_in_place(models_dir / real_manifest.models[YUNET].file)
    options = ("--models-dir", str(models_dir))

    rc, [line], _ = _run(capsys, "check", YUNET, *options)
    assert rc == ExitCode.OK and line.split()[:3] == [YUNET, "ok", "quick"]
    assert _run(capsys, "verify", YUNET, *options, "--offline")[0] == ExitCode.MODEL
    rc, lines, err = _run(capsys, "check", YUNET, *options)
    assert rc == ExitCode.MODEL and lines == [] and YUNET in err


def test_verify_hashes_a_good_file_every_time_and_refreshes_its_record(
        models_dir: Path, real_manifest: Manifest, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    (models_dir / "verified.json").unlink()
    hashers = count_hashers(monkeypatch)
    for round in (1, 2):
        rc, [line], err = _run(capsys, "verify", YUNET, "--models-dir", str(models_dir),
                               "--offline")
        assert rc == ExitCode.OK and err == ""
        assert line.split()[:4] == [YUNET, "ok", "sha256", "sha256"]
        assert len(hashers) == round
    assert real_manifest.models[YUNET].file in json.loads(
        (models_dir / "verified.json").read_text())
    rc, [line], _ = _run(capsys, "check", YUNET, "--models-dir", str(models_dir))
    assert line.split()[2] == "quick" and len(hashers) == 2


def test_store_verify_full_ignores_the_record(models_dir: Path, real_manifest: Manifest,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    store = ModelStore(real_manifest, models_dir, offline=True)
    hashers = count_hashers(monkeypatch)
    quick = store.verify(YUNET)
    assert quick.ok and not quick.hashed and hashers == []
    _damage_in_place(store.path_for(YUNET))
    assert store.verify(YUNET).ok  # the quick check cannot see it: that is what full is for
    full = store.verify(YUNET, full=True)
    assert full.present and not full.ok and full.hashed and len(hashers) == 1
