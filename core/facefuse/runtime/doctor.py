"""What a user needs to know when "the GPU is not used": gathered as data, printed by the CLI."""

from __future__ import annotations

import ctypes
import dataclasses
import importlib.metadata
import os
import platform
import shutil
import subprocess
import sys
from pathlib import Path
from types import MappingProxyType
from typing import Any

import onnxruntime as ort

from ..cache.layout import CacheLayout
from ..models.locations import default_models_dir, offline_from_env
from ..models.manifest import load_manifest
from ..models.store import ModelStore
from ..version import __version__

ORT_DISTRIBUTIONS = ("onnxruntime", "onnxruntime-gpu", "onnxruntime-directml",
                     "onnxruntime-openvino", "onnxruntime-silicon", "onnxruntime-qnn")
PROVIDER_LIBRARIES = MappingProxyType({
    "CUDAExecutionProvider": "onnxruntime_providers_cuda",
    "TensorrtExecutionProvider": "onnxruntime_providers_tensorrt",
})


def installed_runtimes() -> dict[str, str]:
    """Installed onnxruntime distributions -> version (more than one is a broken install)."""
    found = {}
    for name in ORT_DISTRIBUTIONS:
        try:
            found[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            continue
    return found


def _provider_library(provider: str) -> Path | None:
    capi = Path(ort.__file__).parent / "capi"
    stem = PROVIDER_LIBRARIES[provider]
    for candidate in (f"lib{stem}.so", f"{stem}.dll", f"lib{stem}.dylib"):
        if (capi / candidate).is_file():
            return capi / candidate
    return None


def _probe_model_bytes() -> bytes:
    import onnx
    from onnx import TensorProto, helper

    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])
    graph = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "probe", [x], [y])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model.SerializeToString()


def probe_provider(provider: str) -> dict[str, Any]:
    """Whether `provider` really creates a session here, and if not, why (missing libraries)."""
    result: dict[str, Any] = {"provider": provider, "offered": provider in
                              ort.get_available_providers()}
    if not result["offered"]:
        result["works"] = False
        result["why"] = "this onnxruntime build does not include it"
        return result
    library = _provider_library(provider) if provider in PROVIDER_LIBRARIES else None
    if library is not None:
        try:
            ctypes.CDLL(str(library))
        except OSError as exc:
            result.update(works=False, why=f"{library.name} cannot load: {exc}")
            return result
    try:
        session = ort.InferenceSession(_probe_model_bytes(), providers=[provider,
                                                                        "CPUExecutionProvider"])
        result["works"] = session.get_providers()[0] == provider
        result["why"] = "" if result["works"] else "onnxruntime fell back to CPU (see log above)"
    except Exception as exc:  # noqa: BLE001 - any ORT failure is the answer to report
        result.update(works=False, why=str(exc).strip().splitlines()[0])
    return result


def nvidia_smi() -> str:
    """One line per GPU from nvidia-smi, or why it could not be asked."""
    exe = shutil.which("nvidia-smi")
    if exe is None:
        return "nvidia-smi not found (no NVIDIA driver on PATH)"
    try:
        done = subprocess.run([exe, "--query-gpu=name,driver_version,memory.total",
                               "--format=csv,noheader"], capture_output=True, text=True,
                              timeout=10, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"nvidia-smi failed: {exc}"
    return (done.stdout or done.stderr).strip()


def report(models_dir: Path | None = None, cache_dir: Path | None = None) -> dict[str, Any]:
    """Everything `facefuse doctor` prints, as plain data."""
    runtimes = installed_runtimes()
    directory = default_models_dir(models_dir)
    store = ModelStore(load_manifest(), directory, offline=True)
    probes = [probe_provider(p) for p in ("TensorrtExecutionProvider", "CUDAExecutionProvider",
                                          "CoreMLExecutionProvider", "DmlExecutionProvider")]
    return {
        "facefuse": __version__,
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "onnxruntime": {"version": ort.__version__, "device": ort.get_device(),
                        "distributions": runtimes,
                        "providers": ort.get_available_providers()},
        "conflict": len(runtimes) > 1,
        "probes": probes,
        "gpu": nvidia_smi(),
        "cuda_visible_devices": os.environ.get("CUDA_VISIBLE_DEVICES"),
        "models_dir": str(directory),
        "cache_dir": str(CacheLayout.at(cache_dir).root),
        "offline": offline_from_env(),
        "models": [dataclasses.asdict(status) for status in store.status()],
    }
