"""Models with a free batch dimension for the batching tests: any ONNX file re-declared with a
named batch (free_batch), and a small convolution swapper whose output depends on both inputs
through real arithmetic (conv_swapper)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

BATCH = "batch"


def free_batch(source: Path, target: Path) -> Path:
    """`source` with the first dimension of every graph input and output of rank 4 or more
    (the images) or 2 (embeddings) named BATCH, and
    every int64 shape constant starting with 1 made to start with 0 (Reshape's "keep this
    dimension"), so the graph runs at any batch. Returns `target`."""
    model = onnx.load(str(source))
    for value in [*model.graph.input, *model.graph.output]:
        if len(value.type.tensor_type.shape.dim) < 2:  # a scalar, e.g. CodeFormer's weight
            continue
        dim = value.type.tensor_type.shape.dim[0]
        dim.ClearField("dim_value")
        dim.dim_param = BATCH
    del model.graph.value_info[:]
    for node in model.graph.node:
        if node.op_type == "Constant":
            tensor = node.attribute[0].t
            tensor.CopyFrom(_batch_kept(tensor))
    for index, tensor in enumerate(model.graph.initializer):
        model.graph.initializer[index].CopyFrom(_batch_kept(tensor))
    onnx.checker.check_model(model)
    onnx.save(model, str(target))
    return target


def _batch_kept(tensor: onnx.TensorProto) -> onnx.TensorProto:
    values = numpy_helper.to_array(tensor)
    if values.dtype != np.int64 or values.ndim != 1 or len(values) < 2 or values[0] != 1:
        return tensor
    kept = values.copy()
    kept[0] = 0
    return numpy_helper.from_array(kept, tensor.name)


def conv_swapper(path: Path, batch: int | str = BATCH, size: int = 128, seed: int = 7) -> Path:
    """inswapper I/O (target Nx3xSxS, source Nx512 -> output) with output = Conv3x3(target)
    + (source @ W) per channel, seeded random weights; the emap is the last initializer."""
    rng = np.random.default_rng(seed)
    inits = [
        numpy_helper.from_array((rng.standard_normal((3, 3, 3, 3)) * 0.2).astype(np.float32),
                                "conv_w"),
        numpy_helper.from_array(np.zeros(3, np.float32), "conv_b"),
        numpy_helper.from_array((rng.standard_normal((512, 3)) * 0.05).astype(np.float32),
                                "style"),
        numpy_helper.from_array(np.array([0, 3, 1, 1], np.int64), "colour_shape"),
        numpy_helper.from_array(np.eye(512, dtype=np.float32), "emap"),
    ]
    nodes = [
        helper.make_node("Conv", ["target", "conv_w", "conv_b"], ["features"],
                         kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
        helper.make_node("MatMul", ["source", "style"], ["shift"]),
        helper.make_node("Reshape", ["shift", "colour_shape"], ["shift4"]),
        helper.make_node("Add", ["features", "shift4"], ["output"]),
    ]
    inputs = [helper.make_tensor_value_info("target", TensorProto.FLOAT, [batch, 3, size, size]),
              helper.make_tensor_value_info("source", TensorProto.FLOAT, [batch, 512])]
    outputs = [helper.make_tensor_value_info("output", TensorProto.FLOAT,
                                             [batch, 3, size, size])]
    graph = helper.make_graph(nodes, "conv_swapper", inputs, outputs, initializer=inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)],
                              producer_name="facefuse-tests")
    model.ir_version = 8
    onnx.checker.check_model(model, full_check=True)
    onnx.save(model, str(path))
    return path
