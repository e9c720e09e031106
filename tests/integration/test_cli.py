"""`facefuse` as a user runs it: exit codes, one-line errors, untouched inputs, JSON summary."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path

import cv2
import numpy as np
import pytest

from facefuse.cli.main import main


def _model_args(contract_dir: Path, testdata: Path, tmp_path: Path) -> list[str]:
    return ["--detector", str(testdata / "models" / "face_detection_yunet_2023mar.onnx"),
            "--recogniser", str(contract_dir / "recogniser_512.onnx"),
            "--swapper", str(contract_dir / "identity_swapper.onnx"),
            "--providers", "cpu", "--models-dir", str(tmp_path / "models"), "--offline"]


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _swap(args: list[str], capsys) -> tuple[int, str, str]:
    code = main(["swap", *args])
    out, err = capsys.readouterr()
    return code, out, err


def test_swap_writes_the_output_and_a_json_summary(contract_dir, testdata, tmp_path, capsys):
    source, target = testdata / "media" / "obama.jpg", testdata / "media" / "astronaut.png"
    before = _digest(source), _digest(target)
    output = tmp_path / "out.png"
    code, out, err = _swap(["-s", str(source), "-t", str(target), "-o", str(output), "--json",
                            *_model_args(contract_dir, testdata, tmp_path)], capsys)
    assert code == 0, err
    summary = json.loads(out.strip().splitlines()[-1])
    assert summary["faces_found"] == 1 and summary["faces_swapped"] == 1
    assert {"identity", "detect", "swap", "paste", "write", "total"} <= set(summary["timings_ms"])
    assert summary["providers"] == ["CPUExecutionProvider"]
    assert cv2.imread(str(output)).shape == (512, 512, 3)
    assert (_digest(source), _digest(target)) == before
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".out")] == []


@pytest.mark.parametrize("case,code,needle", [
    ("missing_source", 2, "does not exist"),
    ("empty_target", 2, "empty"),
    ("junk_target", 2, "not an image"),
    ("output_is_input", 2, "also an input"),
    ("faceless_source", 3, "no face found"),
    ("reference_without_image", 2, "--reference"),
])
def test_bad_inputs_get_one_line_and_the_documented_code(case, code, needle, contract_dir,
                                                         testdata, tmp_path, capsys):
    media = testdata / "media"
    source, target, output = media / "obama.jpg", tmp_path / "target.png", tmp_path / "o.png"
    target.write_bytes((media / "astronaut.png").read_bytes())
    extra: list[str] = []
    if case == "missing_source":
        source = tmp_path / "nobody.jpg"
    elif case == "empty_target":
        target.write_bytes(b"")
    elif case == "junk_target":
        target.write_bytes(b"\x00junk" * 10)
    elif case == "output_is_input":
        output = target
    elif case == "faceless_source":
        source = tmp_path / "wall.png"
        cv2.imwrite(str(source), np.full((200, 200, 3), 200, np.uint8))
    elif case == "reference_without_image":
        extra = ["--selector", "reference"]
    before = target.read_bytes()
    got, _out, err = _swap(["-s", str(source), "-t", str(target), "-o", str(output), *extra,
                           *_model_args(contract_dir, testdata, tmp_path)], capsys)
    assert got == code, err
    lines = [line for line in err.strip().splitlines() if line]
    assert len(lines) == 1 and needle in lines[0] and "Traceback" not in err
    assert target.read_bytes() == before
    if case != "output_is_input":
        assert not output.exists()


def test_a_swap_output_over_a_model_file_is_refused(contract_dir, testdata, tmp_path, capsys):
    """The model files a swap reads are inputs too: -o over the swapper model is refused and
    the model is left as it was."""
    media = testdata / "media"
    swapper = tmp_path / "swapper.png.onnx"
    swapper.write_bytes((contract_dir / "identity_swapper.onnx").read_bytes())
    before = _digest(swapper)
    output = tmp_path / "o.png"
    output.symlink_to(swapper)
    args = _model_args(contract_dir, testdata, tmp_path)
    args[args.index("--swapper") + 1] = str(swapper)
    code, _, err = _swap(["-s", str(media / "obama.jpg"), "-t", str(media / "astronaut.png"),
                          "-o", str(output), *args], capsys)
    assert code == 2 and "also an input" in err and str(swapper) in err, err
    assert _digest(swapper) == before


def test_offline_missing_model_says_how_to_fetch_it(testdata, tmp_path, capsys):
    media = testdata / "media"
    code, _, err = _swap(["-s", str(media / "obama.jpg"), "-t", str(media / "astronaut.png"),
                          "-o", str(tmp_path / "o.png"), "--models-dir", str(tmp_path / "empty"),
                          "--offline"], capsys)
    assert code == 4
    assert "facefuse models fetch" in err and str(tmp_path / "empty") in err
    assert len(err.strip().splitlines()) == 1


def test_a_model_that_breaks_its_contract_is_refused_by_name(contract_dir, testdata, tmp_path,
                                                             capsys):
    media = testdata / "media"
    args = _model_args(contract_dir, testdata, tmp_path)
    args[args.index("--swapper") + 1] = str(contract_dir / "identity_restorer.onnx")
    code, _, err = _swap(["-s", str(media / "obama.jpg"), "-t", str(media / "astronaut.png"),
                          "-o", str(tmp_path / "o.png"), *args], capsys)
    assert code == 4 and "swapper" in err and "identity_restorer.onnx" in err
    assert "Traceback" not in err


def test_models_cache_and_doctor_commands(tmp_path, capsys):
    assert main(["models", "path", "--models-dir", str(tmp_path)]) == 0
    assert capsys.readouterr().out.strip() == str(tmp_path)
    assert main(["models", "list", "--models-dir", str(tmp_path)]) == 0
    listing = capsys.readouterr().out
    assert "inswapper_128" in listing and "non-commercial" in listing and "missing" in listing
    cache = tmp_path / "c"
    (cache / "embeddings").mkdir(parents=True)
    (cache / "embeddings" / f"{'a' * 64}.npy").write_bytes(b"x" * 10)  # facefuse's names
    (cache / "analysis").mkdir()
    (cache / "analysis" / f"{'b' * 64}.npz").write_bytes(b"y" * 20)
    assert main(["cache", "info", "--cache-dir", str(cache)]) == 0
    info = capsys.readouterr().out.splitlines()
    assert info[0] == f"{cache}:"
    assert [line.split()[:2] for line in info[1:]] == [
        ["embeddings", "1"], ["analysis", "1"], ["previews", "0"], ["hashes", "0"]]
    assert main(["cache", "clear", "--cache-dir", str(cache)]) == 0
    assert capsys.readouterr().out.startswith("removed 2 cached files")
    assert not [p for p in cache.rglob("*") if p.is_file()]
    assert main(["doctor", "--models-dir", str(tmp_path), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert "CPUExecutionProvider" in report["onnxruntime"]["providers"]
    cuda = next(p for p in report["probes"] if p["provider"] == "CUDAExecutionProvider")
    assert cuda["works"] is False and cuda["why"]
    assert main(["doctor", "--models-dir", str(tmp_path)]) == 0
    assert "CUDAExecutionProvider" in capsys.readouterr().out


def test_usage_errors_exit_2_and_the_console_script_runs():
    done = subprocess.run([sys.executable, "-m", "facefuse", "swap", "-s", "x.jpg"],
                          capture_output=True, text=True, check=False)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    done = subprocess.run([sys.executable, "-m", "facefuse", "--version"], capture_output=True,
                          text=True, check=False)
    assert done.returncode == 0 and done.stdout.startswith("facefuse ")
