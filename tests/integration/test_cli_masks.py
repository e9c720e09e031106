"""`facefuse swap` with the issue 12 options: a 256 px swapper by path with pixel boost, the
occlusion and region masks, the mouth mask and the swapper weight, all from the command line."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from facefuse.cli.main import main
from facefuse.io.images import read_image
from tests import contract_models as cm


@pytest.fixture(scope="module")
def mask_models(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("cli-mask-models")
    cm.hyperswap_identity(root / "hyperswap.onnx")
    cm.xseg_rectangle(root / "xseg.onnx", (96, 96, 160, 160))
    labels = np.ones((64, 64), int)
    labels[44:54, 22:42] = 11
    cm.bisenet_labels(root / "bisenet.onnx", labels)
    return root


def _args(contract_dir: Path, mask_models: Path, testdata: Path, tmp_path: Path) -> list[str]:
    return ["-s", str(testdata / "media" / "obama.jpg"),
            "-t", str(testdata / "media" / "astronaut.png"),
            "--detector", str(testdata / "models" / "face_detection_yunet_2023mar.onnx"),
            "--recogniser", str(contract_dir / "recogniser_512.onnx"),
            "--swapper", str(mask_models / "hyperswap.onnx"), "--providers", "cpu",
            "--models-dir", str(tmp_path / "models"), "--offline"]


def test_every_mask_and_swapper_option_reaches_the_swap(contract_dir, mask_models, testdata,
                                                        tmp_path, capsys):
    base = _args(contract_dir, mask_models, testdata, tmp_path)
    plain, masked = tmp_path / "plain.png", tmp_path / "masked.png"
    assert main(["swap", *base, "-o", str(plain)]) == 0
    capsys.readouterr()
    code = main(["swap", *base, "-o", str(masked), "--json", "--pixel-boost", "512",
                 "--occluder", str(mask_models / "xseg.onnx"),
                 "--parser", str(mask_models / "bisenet.onnx"),
                 "--mask-regions", "skin, mouth, nose", "--mouth-mask",
                 "--swapper-weight", "0.7"])
    out, err = capsys.readouterr()
    assert code == 0, err
    summary = json.loads(out.strip().splitlines()[-1])
    assert summary["faces_swapped"] == 1
    assert {"occluder", "parser"} <= set(summary["models"]), summary["models"]
    assert "mask" in summary["timings_ms"]
    target = read_image(testdata / "media" / "astronaut.png")
    changed_plain = np.any(read_image(plain) != target, axis=2).sum()
    changed_masked = np.any(read_image(masked) != target, axis=2).sum()
    assert 0 < changed_masked < changed_plain  # the occluded square and the mouth kept


@pytest.mark.parametrize(("extra", "needle"), [
    (["--pixel-boost", "384"], "pixel boost 384 does not fit hyperswap.onnx"),
    (["--mouth-mask"], "mouth mask finds the mouth with the face parser"),
    (["--mask-regions", "skin,ears"], "mask regions must be some of"),
    (["--swapper-weight", "2"], "identity strength must be within 0..1"),
])
def test_a_bad_mask_or_boost_option_is_one_line_and_exit_2(extra, needle, contract_dir,
                                                           mask_models, testdata, tmp_path,
                                                           capsys):
    output = tmp_path / "never.png"
    code = main(["swap", *_args(contract_dir, mask_models, testdata, tmp_path), "-o",
                 str(output), *extra])
    err = capsys.readouterr().err
    assert code == 2, err
    assert needle in err and len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert not output.exists()
