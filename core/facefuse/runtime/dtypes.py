"""ONNX Runtime's tensor type strings ("tensor(float16)", ...) as numpy dtypes, without loading
ONNX Runtime (the command line prepares TensorRT engines before any session exists)."""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

import numpy as np

ORT_TYPES: Mapping[str, type[np.generic]] = MappingProxyType({
    "tensor(float)": np.float32, "tensor(float16)": np.float16, "tensor(double)": np.float64,
    "tensor(int64)": np.int64, "tensor(int32)": np.int32, "tensor(uint8)": np.uint8,
    "tensor(int8)": np.int8, "tensor(bool)": np.bool_,
})
