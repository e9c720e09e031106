"""Contract models (built once per run) and settings that point the pipeline at them."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from facefuse.config import Settings
from tests import contract_models


@pytest.fixture(scope="session")
def contract_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("contract-models")
    contract_models.identity_swapper(root / "identity_swapper.onnx")
    contract_models.colour_swapper(root / "colour_swapper.onnx")
    contract_models.identity_restorer(root / "identity_restorer.onnx")
    contract_models.codeformer_contract(root / "codeformer_contract.onnx")
    contract_models.contract_recogniser(root / "recogniser_512.onnx", dim=512)
    return root


@pytest.fixture()
def settings(contract_dir: Path, testdata: Path, tmp_path: Path) -> Settings:
    """Real YuNet detector, contract recogniser and identity swapper; offline; CPU."""
    return Settings(
        detector=str(testdata / "models" / "face_detection_yunet_2023mar.onnx"),
        recogniser=str(contract_dir / "recogniser_512.onnx"),
        swapper=str(contract_dir / "identity_swapper.onnx"),
        providers=("CPUExecutionProvider",), models_dir=tmp_path / "models",
        cache_dir=tmp_path / "cache", offline=True,
    )


def with_swapper(settings: Settings, contract_dir: Path, name: str) -> Settings:
    return replace(settings, swapper=str(contract_dir / f"{name}.onnx"))
