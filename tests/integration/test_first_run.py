"""The README's first run, end to end: a fresh machine downloads the default models once,
verifies them, swaps, renders, and works offline afterwards; the README's first-run and farm
command lines run as written, with its placeholder names given to test files. The "internet"
is a local HTTP server, and FACEFUSE_MANIFEST points the default model names at contract
models served from it."""

from __future__ import annotations

import functools
import hashlib
import json
import os
import shlex
import shutil
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from facefuse.models.manifest import default_manifest_path, load_manifest
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


README = Path(__file__).resolve().parents[2] / "README.md"
PLACEHOLDERS = {"actor.jpg": "obama.jpg", "plate.png": "astronaut.png",
                "shot.mov": "head-pose-face-detection-female.mp4"}  # a 24-frame clip


def _run(args: list[str], env: dict[str, str],
         cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "facefuse", *args], capture_output=True,
                          text=True, env=env, timeout=120, check=False, cwd=cwd)


def _readme_commands(section: str) -> list[list[str]]:
    """The `facefuse ...` lines of the README section's code blocks, split as a shell would."""
    text = README.read_text(encoding="utf-8")
    body = text[text.index(f"\n## {section}\n"):]
    body = body[:body.index("\n## ", 4)]
    return [shlex.split(line)[1:] for line in body.splitlines()
            if line.startswith("    facefuse ")]


def _newcomer(served: tuple[str, Path], testdata: Path, tmp_path: Path) -> dict[str, str]:
    """A working folder holding the README's placeholder files, and the environment of a
    machine whose model host is the local server."""
    base_url, root = served
    work = tmp_path / "work"
    work.mkdir()
    for name, file in PLACEHOLDERS.items():
        shutil.copy(testdata / "media" / file, work / name)
    env = {key: value for key, value in os.environ.items() if key != "FACEFUSE_OFFLINE"}
    return {**env, "FACEFUSE_MANIFEST": str(_manifest(base_url, root, tmp_path / "m.toml")),
            "FACEFUSE_MODELS": str(tmp_path / "models"),
            "FACEFUSE_CACHE": str(tmp_path / "cache")}


def test_the_readme_first_run_works_as_written(served, testdata, tmp_path):
    env, work = _newcomer(served, testdata, tmp_path), tmp_path / "work"
    manifest = load_manifest(README.parent / "models" / "manifest.toml")
    sizes = [manifest.models[name].size_bytes for name in DEFAULTS]
    said = " ".join(README.read_text(encoding="utf-8").split())
    assert f"{sum(sizes) / 1e6:.0f} MB in all" in said
    assert all(f"`{name}` {size / 1e6:.1f} MB" in said for name, size in zip(DEFAULTS, sizes))
    commands = _readme_commands("First run")
    assert [c[:2] for c in commands] == [["models", "fetch"], ["swap", "-s"], ["render", "-s"]]
    for command in commands:
        done = _run(command, env, cwd=work)
        assert done.returncode == 0, (command, done.stderr)
    assert sorted(p.name for p in (tmp_path / "models").glob("*.onnx")) == sorted(
        file for _, file in DEFAULTS.values())
    assert (work / "out.png").is_file()
    assert "24 frames: 24 swapped" in done.stdout


@pytest.mark.farm
def test_the_readme_farm_lines_run_as_written(served, testdata, tmp_path):
    pytest.importorskip("openjd.model", reason="the farm extra (openjd) is not installed")
    env, work = _newcomer(served, testdata, tmp_path), tmp_path / "work"
    assert _run(["models", "fetch"], env).returncode == 0
    openjd, dask, blend = _readme_commands("Render farms")
    done = _run(openjd, env, cwd=work)
    assert done.returncode == 0, done.stderr
    assert (f"frames 1001-1240 reach past {work / 'shot.mov'}, which has frames 1001-1024: "
            "rendering frames 1001-1024 (24)") in done.stderr
    parameters = json.loads((work / "job" / "job_parameters.json").read_text())
    assert parameters["Frames"] == "1001-1024" and parameters["ChunkSize"] == 20
    from facefuse.cli.main import build_parser

    assert build_parser().parse_args(dask).local == 2  # it runs: test_farm_*.py
    assert str(build_parser().parse_args(blend).blend) == "edit.blend"


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
