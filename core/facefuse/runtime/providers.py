"""Provider names as users write them ("auto", "cuda,cpu", full ONNX Runtime names), parsed
without loading ONNX Runtime, so the command line can check them at start-up (runtime.sessions
chooses among the providers the installed build offers)."""

from __future__ import annotations

from types import MappingProxyType

from ..errors import InputError

SHORT_NAMES = MappingProxyType({
    "tensorrt": "TensorrtExecutionProvider",
    "trt": "TensorrtExecutionProvider",
    "cuda": "CUDAExecutionProvider",
    "coreml": "CoreMLExecutionProvider",
    "directml": "DmlExecutionProvider",
    "dml": "DmlExecutionProvider",
    "rocm": "ROCMExecutionProvider",
    "openvino": "OpenVINOExecutionProvider",
    "cpu": "CPUExecutionProvider",
})


def parse_providers(text: str) -> str | tuple[str, ...]:
    """"auto" or a comma list of provider names ("cuda,cpu" or full ONNX Runtime names)."""
    text = text.strip()
    if text.lower() == "auto":
        return "auto"
    names = tuple(SHORT_NAMES.get(part.strip().lower(), part.strip()) for part in text.split(","))
    if not all(names):
        raise InputError(f"--providers {text!r} has an empty entry; use e.g. 'cuda,cpu' or 'auto'")
    return names
