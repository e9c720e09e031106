"""The README's first command, end to end: a fresh machine downloads the default models once,
verifies them, swaps, and works offline afterwards. The "internet" is a local HTTP server, and
FACEFUSE_MANIFEST points the default model names at contract models served from it."""

from __future__ import annotations

import functools
import hashlib
import json
import os
import shutil
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from facefuse.models.manifest import default_manifest_path
from tests import contract_models

DEFAULTS = {  # default model name -> (family, file served)
    "retinaface_10g": ("yunet", "detector.onnx"),
    "arcface_w600k_r50": ("arcface", "recogniser.onnx"),
    "hyperswap_1a_256": ("hyperswap", "swapper.onnx"),
}


class QuietHandler(SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        return


@pytest.fixture()
def served(tmp_path: Path, testdata: Path) -> Iterator[tuple[str, Path]]:
    root = tmp_path / "www"
    root.mkdir()
    shutil.copy(testdata / "models" / "face_detection_yunet_2023mar.onnx", root / "detector.onnx")
    contract_models.contract_recogniser(root / "recogniser.onnx")
    contract_models.hyperswap_identity(root / "swapper.onnx")
    httpd = ThreadingHTTPServer(("127.0.0.1", 0),
                                functools.partial(QuietHandler, directory=str(root)))
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}", root
    finally:
        httpd.shutdown()
        httpd.server_close()


def _manifest(base_url: str, root: Path, target: Path) -> Path:
    real = default_manifest_path().read_text(encoding="utf-8")
    lines = [real[: real.index("[[models]]")]]
    for name, (family, file) in DEFAULTS.items():
        data = (root / file).read_bytes()
        lines.append(f'[[models]]\nname = "{name}"\nfamily = "{family}"\nfile = "{file}"\n'
                     f'urls = ["{base_url}/{file}"]\n'
                     f'sha256 = "{hashlib.sha256(data).hexdigest()}"\nbytes = {len(data)}\n'
                     'licence = "test"\n')
    target.write_text("\n".join(lines), encoding="utf-8")
    return target


def _run(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "facefuse", *args], capture_output=True,
                          text=True, env=env, timeout=120, check=False)


def test_first_run_fetches_then_later_runs_work_offline(served, testdata, tmp_path):
    base_url, root = served
    models_dir = tmp_path / "models"
    env = {**os.environ, "FACEFUSE_MANIFEST": str(_manifest(base_url, root, tmp_path / "m.toml")),
           "FACEFUSE_MODELS": str(models_dir), "FACEFUSE_CACHE": str(tmp_path / "cache")}
    media = testdata / "media"
    swap = ["swap", "-s", str(media / "obama.jpg"), "-t", str(media / "astronaut.png"),
            "--providers", "cpu", "--json"]
    first = _run([*swap, "-o", str(tmp_path / "first.png")], env)
    assert first.returncode == 0, first.stderr
    assert "fetching hyperswap_1a_256: 100%" in first.stderr
    assert json.loads(first.stdout)["faces_swapped"] == 1
    assert sorted(p.name for p in models_dir.glob("*.onnx")) == sorted(
        file for _, file in DEFAULTS.values())
    assert not list(models_dir.glob("*.part")) and not list(models_dir.glob("*.lock"))

    offline = {**env, "FACEFUSE_OFFLINE": "1"}
    second = _run([*swap, "-o", str(tmp_path / "second.png")], offline)
    assert second.returncode == 0, second.stderr
    assert "fetching" not in second.stderr
    assert (tmp_path / "first.png").read_bytes() == (tmp_path / "second.png").read_bytes()
    verify = _run(["models", "verify", *DEFAULTS], offline)
    assert verify.returncode == 0 and verify.stdout.count(" ok ") == 3, verify.stdout


def test_a_tampered_model_is_refused_with_both_hashes(served, testdata, tmp_path):
    base_url, root = served
    models_dir = tmp_path / "models"
    env = {**os.environ, "FACEFUSE_MANIFEST": str(_manifest(base_url, root, tmp_path / "m.toml")),
           "FACEFUSE_MODELS": str(models_dir)}
    assert _run(["models", "fetch"], env).returncode == 0
    swapper = models_dir / "swapper.onnx"
    data = bytearray(swapper.read_bytes())
    data[-1] ^= 0xFF
    swapper.write_bytes(bytes(data))
    media = testdata / "media"
    done = _run(["swap", "-s", str(media / "obama.jpg"), "-t", str(media / "astronaut.png"),
                 "-o", str(tmp_path / "o.png"), "--offline"], env)
    assert done.returncode == 4
    expected = hashlib.sha256((root / "swapper.onnx").read_bytes()).hexdigest()
    assert expected in done.stderr and hashlib.sha256(data).hexdigest() in done.stderr
    assert "Traceback" not in done.stderr and not (tmp_path / "o.png").exists()
