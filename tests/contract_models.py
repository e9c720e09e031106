"""Tiny ONNX models with the production I/O contracts and analytic behaviour (onnx.helper).

Each builder writes one model into the given path and returns that path. The models have the exact
input/output names and shapes of the production files (see models/manifest.toml), so the stages and
the signature checks treat them as the real thing, while the pixels they produce can be asserted
exactly:

    identity_swapper(path, emap)        inswapper I/O; output = target; last initializer = emap
                                        (size: 128, 256 or 512 px; batch: 1 or a free name)
    colour_swapper(path, emap, gain)    inswapper I/O; output = flat expected_colour_rgb(source)
    hyperswap_identity(path)            HyperSwap I/O ("output", "mask"); output = target
    hyperswap_colour(path, gain)        HyperSwap I/O; output = flat expected_hyperswap_rgb(source)
    xseg_rectangle(path, rect)          XSeg I/O; mask 1 except 0 inside a rectangle
    xseg_channel(path, channel)         XSeg I/O; mask = the fed NHWC input's channel
    bisenet_labels(path, labels)        BiSeNet I/O; class scores peak on a given 64x64 label map
    bisenet_threshold(path)             BiSeNet I/O; class 1 where the fed channel 0 is > 0
    identity_restorer(path)             GFPGAN/GPEN I/O; output = input
    codeformer_contract(path)           CodeFormer I/O; output = input * weight
    contract_recogniser(path, dim)      ArcFace I/O; output = projection of 4x4 block means

Helpers: expected_colour_rgb / expected_recogniser_output (the models' maths in numpy),
random_orthogonal (a seeded emap), cpu_session (an onnxruntime CPU session for a built file).
All are opset 17, IR version 8 (loadable by onnxruntime >= 1.14) and pass onnx.checker.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

OPSET = 17
IR_VERSION = 8
SWAP_SIZE_PX = 128
RESTORE_SIZE_PX = 512
RECOGNISE_SIZE_PX = 112
LATENT_WIDTH = 512
POOL_PX = 28  # recogniser: mean over 28x28 blocks -> a 4x4 grid per channel (48 features)
COLOUR_GAIN = 16.0

_ELEM = {"float32": TensorProto.FLOAT, "float16": TensorProto.FLOAT16}


def random_orthogonal(n: int = LATENT_WIDTH, seed: int = 0) -> np.ndarray:
    """A seeded random orthogonal float32 (n, n) matrix (QR of a Gaussian matrix)."""
    q, r = np.linalg.qr(np.random.default_rng(seed).standard_normal((n, n)))
    return (q * np.sign(np.diag(r))).astype(np.float32)


def recogniser_projection(dim: int = 512, seed: int = 0) -> np.ndarray:
    """The contract recogniser's fixed float32 (48, dim) projection of its 4x4x3 block means."""
    features = 3 * (RECOGNISE_SIZE_PX // POOL_PX) ** 2
    return np.random.default_rng(seed).standard_normal((features, dim)).astype(np.float32)


def expected_recogniser_output(tensor: np.ndarray, dim: int = 512, seed: int = 0) -> np.ndarray:
    """What contract_recogniser computes for an NCHW float32 (N, 3, 112, 112) input: (N, dim)."""
    n = tensor.shape[0]
    grid = RECOGNISE_SIZE_PX // POOL_PX
    blocks = tensor.reshape(n, 3, grid, POOL_PX, grid, POOL_PX).mean(axis=(3, 5))
    return blocks.reshape(n, -1) @ recogniser_projection(dim, seed)


def expected_colour_rgb(latent: np.ndarray, gain: float = COLOUR_GAIN) -> np.ndarray:
    """The flat colour colour_swapper paints for a (1, 512) source latent: float64 (3,) RGB in
    [0, 1], channel c = sigmoid(gain * latent[c])."""
    first = np.asarray(latent, dtype=np.float64).reshape(-1)[:3]
    return 1.0 / (1.0 + np.exp(-gain * first))


def _save(model: onnx.ModelProto, path: Path | str) -> Path:
    model.ir_version = IR_VERSION
    onnx.checker.check_model(model, full_check=True)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    onnx.save(model, str(path))
    return path


def _model(nodes: list[onnx.NodeProto], inputs: list[onnx.ValueInfoProto],
           outputs: list[onnx.ValueInfoProto], initializers: list[onnx.TensorProto],
           name: str) -> onnx.ModelProto:
    graph = helper.make_graph(nodes, name, inputs, outputs, initializer=initializers)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)],
                             producer_name="facefuse-tests")


def _swapper_io(dtype: str, size: int = SWAP_SIZE_PX, batch: int | str = 1
                ) -> tuple[list[onnx.ValueInfoProto], list[onnx.ValueInfoProto]]:
    elem = _ELEM[dtype]
    inputs = [helper.make_tensor_value_info("target", elem, [batch, 3, size, size]),
              helper.make_tensor_value_info("source", elem, [batch, LATENT_WIDTH])]
    return inputs, [helper.make_tensor_value_info("output", elem, [batch, 3, size, size])]


def _float_inputs() -> list[onnx.NodeProto]:
    """Nodes giving float32 'target_f' and 'source_f' from the (maybe float16) inputs."""
    to = TensorProto.FLOAT
    return [helper.make_node("Cast", ["target"], ["target_f"], to=to),
            helper.make_node("Cast", ["source"], ["source_f"], to=to)]


def _zero_from_source() -> list[onnx.NodeProto]:
    """Nodes giving 'zero' = 0 * (ReduceSum(source_f) + ReduceSum(emap)): a float32 scalar 0 that
    depends on the fed source and on the emap (so neither is unused), whatever the emap's shape."""
    return [helper.make_node("Cast", ["emap"], ["emap_f"], to=TensorProto.FLOAT),
            helper.make_node("ReduceSum", ["emap_f"], ["emap_total"], keepdims=0),
            helper.make_node("ReduceSum", ["source_f"], ["source_total"], keepdims=0),
            helper.make_node("Add", ["emap_total", "source_total"], ["total"]),
            helper.make_node("Mul", ["total", "zero_const"], ["zero"])]


def _output_cast(name: str) -> onnx.NodeProto:
    return helper.make_node("Cast", [name], ["output"], to=TensorProto.FLOAT)


def _swapper_initializers(emap: np.ndarray | None, dtype: str,
                          extra: list[onnx.TensorProto]) -> list[onnx.TensorProto]:
    """Helper constants first, the emap (stored in `dtype`) LAST, as inswapper has it."""
    matrix = random_orthogonal() if emap is None else np.asarray(emap)
    zero = numpy_helper.from_array(np.array(0.0, dtype=np.float32), "zero_const")
    return [zero, *extra, numpy_helper.from_array(matrix.astype(dtype), "emap")]


def identity_swapper(path: Path | str, emap: np.ndarray | None = None,
                     dtype: str = "float32", size: int = SWAP_SIZE_PX,
                     batch: int | str = 1) -> Path:
    """inswapper I/O (target 1x3x128x128, source 1x512 -> output 1x3x128x128) with
    output = target + 0 * (ReduceSum(source) + ReduceSum(emap)).

    emap (default random_orthogonal(512, seed=0)) is the LAST initializer and may have any shape
    (to test the emap check). dtype "float16" builds the fp16 twin: float16 inputs, output, emap.
    size: the crop size (inswapper-style builds of 256 or 512 px); batch: 1, or a name for a
    free batch dimension.
    """
    inputs, outputs = _swapper_io(dtype, size, batch)
    body = [*_float_inputs(), *_zero_from_source(),
            helper.make_node("Add", ["target_f", "zero"], ["result"]),
            helper.make_node("Cast", ["result"], ["output"], to=_ELEM[dtype])]
    inits = _swapper_initializers(emap, dtype, [])
    return _save(_model(body, inputs, outputs, inits, "identity_swapper"), path)


def colour_swapper(path: Path | str, emap: np.ndarray | None = None,
                   gain: float = COLOUR_GAIN) -> Path:
    """inswapper I/O whose output is one flat RGB colour over the whole crop, a function of the fed
    source latent only: channel c = sigmoid(gain * source[0, c]) (see expected_colour_rgb).
    The target is used as 0 * target. emap is the LAST initializer, as in identity_swapper."""
    inputs, outputs = _swapper_io("float32")
    consts = [numpy_helper.from_array(np.array([0], np.int64), "starts"),
              numpy_helper.from_array(np.array([3], np.int64), "ends"),
              numpy_helper.from_array(np.array([1], np.int64), "axes"),
              numpy_helper.from_array(np.array(gain, np.float32), "gain"),
              numpy_helper.from_array(np.array([1, 3, 1, 1], np.int64), "colour_shape")]
    body = [*_float_inputs(), *_zero_from_source(),
            helper.make_node("Slice", ["source_f", "starts", "ends", "axes"], ["first3"]),
            helper.make_node("Mul", ["first3", "gain"], ["scaled"]),
            helper.make_node("Sigmoid", ["scaled"], ["rgb"]),
            helper.make_node("Reshape", ["rgb", "colour_shape"], ["rgb4"]),
            helper.make_node("Mul", ["target_f", "zero"], ["blank"]),
            helper.make_node("Add", ["blank", "rgb4"], ["result"]),
            _output_cast("result")]
    inits = _swapper_initializers(emap, "float32", consts)
    return _save(_model(body, inputs, outputs, inits, "colour_swapper"), path)


def expected_hyperswap_rgb(latent: np.ndarray, gain: float = COLOUR_GAIN) -> np.ndarray:
    """The flat colour hyperswap_colour paints for a (1, 512) source: float64 (3,) RGB on the
    0..255 scale, channel c = (tanh(gain * source[c]) + 1) * 127.5 (its [-1, 1] output
    de-normalised with mean and std 0.5)."""
    first = np.asarray(latent, dtype=np.float64).reshape(-1)[:3]
    return (np.tanh(gain * first) + 1.0) * 127.5


def _hyperswap_io(size: int, batch: int | str
                  ) -> tuple[list[onnx.ValueInfoProto], list[onnx.ValueInfoProto]]:
    inputs, (output,) = _swapper_io("float32", size, batch)
    mask = helper.make_tensor_value_info("mask", TensorProto.FLOAT, [batch, 1, size, size])
    return inputs, [output, mask]


def _hyperswap_mask() -> list[onnx.NodeProto]:
    """'mask' = 1 everywhere, (batch, 1, S, S), computed from the target (so its shape follows)."""
    return [helper.make_node("ReduceMean", ["target_f"], ["plane"], axes=[1], keepdims=1),
            helper.make_node("Mul", ["plane", "zero_const"], ["plane0"]),
            helper.make_node("Add", ["plane0", "one_const"], ["mask"])]


def _hyperswap_consts(extra: list[onnx.TensorProto]) -> list[onnx.TensorProto]:
    return [numpy_helper.from_array(np.array(0.0, np.float32), "zero_const"),
            numpy_helper.from_array(np.array(1.0, np.float32), "one_const"), *extra]


def _source_zero() -> list[onnx.NodeProto]:
    """'zero' = 0 * ReduceSum(source_f): a scalar 0 that depends on the fed source."""
    return [helper.make_node("ReduceSum", ["source_f"], ["source_total"], keepdims=0),
            helper.make_node("Mul", ["source_total", "zero_const"], ["zero"])]


def hyperswap_identity(path: Path | str, size: int = 256, batch: int | str = 1) -> Path:
    """HyperSwap I/O (target 1x3xSxS, source 1x512 -> "output" 1x3xSxS, "mask" 1x1xSxS), no
    emap, with output = target + 0 * ReduceSum(source): with the family's [-1, 1] normalisation
    in and out, the swapped crop is the target crop. size: 256 or 512; batch: 1 or a name."""
    inputs, outputs = _hyperswap_io(size, batch)
    body = [*_float_inputs(), *_source_zero(),
            helper.make_node("Add", ["target_f", "zero"], ["output"]), *_hyperswap_mask()]
    return _save(_model(body, inputs, outputs, _hyperswap_consts([]), "hyperswap_identity"),
                 path)


def hyperswap_colour(path: Path | str, gain: float = COLOUR_GAIN) -> Path:
    """HyperSwap I/O at 256 px whose output is one flat colour, a function of the fed source
    only: channel c = tanh(gain * source[0, c]) in the normalised space (see
    expected_hyperswap_rgb). The target is used as 0 * target."""
    inputs, outputs = _hyperswap_io(256, 1)
    consts = [numpy_helper.from_array(np.array([0], np.int64), "starts"),
              numpy_helper.from_array(np.array([3], np.int64), "ends"),
              numpy_helper.from_array(np.array([1], np.int64), "axes"),
              numpy_helper.from_array(np.array(gain, np.float32), "gain"),
              numpy_helper.from_array(np.array([1, 3, 1, 1], np.int64), "colour_shape")]
    body = [*_float_inputs(), *_source_zero(),
            helper.make_node("Slice", ["source_f", "starts", "ends", "axes"], ["first3"]),
            helper.make_node("Mul", ["first3", "gain"], ["scaled"]),
            helper.make_node("Tanh", ["scaled"], ["rgb"]),
            helper.make_node("Reshape", ["rgb", "colour_shape"], ["rgb4"]),
            helper.make_node("Mul", ["target_f", "zero"], ["blank"]),
            helper.make_node("Add", ["blank", "rgb4"], ["output"]), *_hyperswap_mask()]
    return _save(_model(body, inputs, outputs, _hyperswap_consts(consts), "hyperswap_colour"),
                 path)


OCCLUDE_SIZE_PX = 256
PARSE_SIZE_PX = 512
PARSE_CLASSES = 19
LABEL_GRID = 64  # bisenet_labels: one label per 8x8 block of the 512 px input


def xseg_rectangle(path: Path | str, rect: tuple[int, int, int, int]) -> Path:
    """XSeg I/O ("input" 1x256x256x3 NHWC -> "output" 1x256x256x1): 1 everywhere except 0 in
    rect = (x0, y0, x1, y1) (exclusive ends, in the model's 256 px space), plus 0 * the input."""
    size = OCCLUDE_SIZE_PX
    x0, y0, x1, y1 = rect
    mask = np.ones((1, size, size, 1), np.float32)
    mask[0, y0:y1, x0:x1, 0] = 0.0
    inputs = [helper.make_tensor_value_info("input", TensorProto.FLOAT, [1, size, size, 3])]
    outputs = [helper.make_tensor_value_info("output", TensorProto.FLOAT, [1, size, size, 1])]
    inits = [numpy_helper.from_array(mask, "mask"),
             numpy_helper.from_array(np.array(0.0, np.float32), "zero_const")]
    body = [helper.make_node("ReduceSum", ["input"], ["total"], keepdims=0),
            helper.make_node("Mul", ["total", "zero_const"], ["zero"]),
            helper.make_node("Add", ["mask", "zero"], ["output"])]
    return _save(_model(body, inputs, outputs, inits, "xseg_rectangle"), path)


def xseg_channel(path: Path | str, channel: int = 0) -> Path:
    """XSeg I/O whose mask is channel `channel` of the fed NHWC input (so a test sees what the
    stage feeds: the colour order and the x / 255 scaling)."""
    size = OCCLUDE_SIZE_PX
    inputs = [helper.make_tensor_value_info("input", TensorProto.FLOAT, [1, size, size, 3])]
    outputs = [helper.make_tensor_value_info("output", TensorProto.FLOAT, [1, size, size, 1])]
    inits = [numpy_helper.from_array(np.array([channel], np.int64), "starts"),
             numpy_helper.from_array(np.array([channel + 1], np.int64), "ends"),
             numpy_helper.from_array(np.array([3], np.int64), "axes")]
    body = [helper.make_node("Slice", ["input", "starts", "ends", "axes"], ["output"])]
    return _save(_model(body, inputs, outputs, inits, "xseg_channel"), path)


def _parser_io() -> tuple[list[onnx.ValueInfoProto], list[onnx.ValueInfoProto]]:
    size = PARSE_SIZE_PX
    inputs = [helper.make_tensor_value_info("input", TensorProto.FLOAT, [1, 3, size, size])]
    outputs = [helper.make_tensor_value_info("output", TensorProto.FLOAT,
                                             [1, PARSE_CLASSES, size, size])]
    return inputs, outputs


def bisenet_labels(path: Path | str, labels: np.ndarray) -> Path:
    """BiSeNet I/O ("input" 1x3x512x512 -> "output" 1x19x512x512) whose scores make the class
    map `labels` (int (64, 64), one label per 8x8 block of the 512 px input) the argmax, plus
    0 * the input."""
    grid = np.asarray(labels, dtype=np.int64)
    if grid.shape != (LABEL_GRID, LABEL_GRID):
        raise ValueError(f"labels must be {LABEL_GRID}x{LABEL_GRID}")
    scores = np.zeros((1, PARSE_CLASSES, LABEL_GRID, LABEL_GRID), np.float32)
    scores[0, grid, np.arange(LABEL_GRID)[:, None], np.arange(LABEL_GRID)[None, :]] = 10.0
    step = float(PARSE_SIZE_PX // LABEL_GRID)
    inputs, outputs = _parser_io()
    inits = [numpy_helper.from_array(scores, "scores"),
             numpy_helper.from_array(np.array([1, 1, step, step], np.float32), "scales"),
             numpy_helper.from_array(np.array(0.0, np.float32), "zero_const")]
    body = [helper.make_node("Resize", ["scores", "", "scales"], ["big"], mode="nearest"),
            helper.make_node("ReduceSum", ["input"], ["total"], keepdims=0),
            helper.make_node("Mul", ["total", "zero_const"], ["zero"]),
            helper.make_node("Add", ["big", "zero"], ["output"])]
    return _save(_model(body, inputs, outputs, inits, "bisenet_labels"), path)


def bisenet_threshold(path: Path | str) -> Path:
    """BiSeNet I/O whose scores are: class 0 = 0, class 1 = the fed channel 0, classes 2-18 =
    -1; so class 1 ("skin") wins exactly where the normalised channel 0 is above 0."""
    inputs, outputs = _parser_io()
    inits = [numpy_helper.from_array(np.array([0], np.int64), "starts"),
             numpy_helper.from_array(np.array([1], np.int64), "ends"),
             numpy_helper.from_array(np.array([1], np.int64), "axes"),
             numpy_helper.from_array(np.array(0.0, np.float32), "zero_const"),
             numpy_helper.from_array(np.full((1, PARSE_CLASSES - 2, 1, 1), -1.0, np.float32),
                                     "rest_const")]
    body = [helper.make_node("Slice", ["input", "starts", "ends", "axes"], ["first"]),
            helper.make_node("Mul", ["first", "zero_const"], ["zeros"]),
            helper.make_node("Add", ["zeros", "rest_const"], ["rest"]),
            helper.make_node("Concat", ["zeros", "first", "rest"], ["output"], axis=1)]
    return _save(_model(body, inputs, outputs, inits, "bisenet_threshold"), path)


def identity_restorer(path: Path | str, input_name: str = "input") -> Path:
    """GFPGAN / GPEN I/O: input "input" float 1x3x512x512 -> "output" 1x3x512x512 = input.

    input_name: re-exports name it differently ("input.1"); the stage must feed it by its name.
    """
    shape = [1, 3, RESTORE_SIZE_PX, RESTORE_SIZE_PX]
    inputs = [helper.make_tensor_value_info(input_name, TensorProto.FLOAT, shape)]
    outputs = [helper.make_tensor_value_info("output", TensorProto.FLOAT, shape)]
    body = [helper.make_node("Identity", [input_name], ["output"])]
    return _save(_model(body, inputs, outputs, [], "identity_restorer"), path)


def codeformer_contract(path: Path | str, weight_shape: tuple[int, ...] = ()) -> Path:
    """CodeFormer I/O: "input" float 1x3x512x512 and "weight" double of weight_shape (() scalar,
    or (1,)) -> "output" 1x3x512x512 = input * float(weight). With the restorer's [-1, 1]
    normalisation a crop pixel p (0..255) comes back as 127.5 + (p - 127.5) * weight."""
    shape = [1, 3, RESTORE_SIZE_PX, RESTORE_SIZE_PX]
    inputs = [helper.make_tensor_value_info("input", TensorProto.FLOAT, shape),
              helper.make_tensor_value_info("weight", TensorProto.DOUBLE, list(weight_shape))]
    outputs = [helper.make_tensor_value_info("output", TensorProto.FLOAT, shape)]
    body = [helper.make_node("Cast", ["weight"], ["weight_f"], to=TensorProto.FLOAT),
            helper.make_node("Mul", ["input", "weight_f"], ["output"])]
    return _save(_model(body, inputs, outputs, [], "codeformer_contract"), path)


def contract_recogniser(path: Path | str, dim: int = 512, seed: int = 0,
                        batch: int | str = "batch") -> Path:
    """ArcFace I/O: "input" float (batch, 3, 112, 112) -> "embedding" (batch, dim), NOT normalised:
    the means of 28x28 blocks (a 4x4 grid per channel, flattened C-major) times
    recogniser_projection(dim, seed). batch: a name (dynamic) or 1 (fixed, as MobileFaceNet)."""
    size = RECOGNISE_SIZE_PX
    inputs = [helper.make_tensor_value_info("input", TensorProto.FLOAT, [batch, 3, size, size])]
    outputs = [helper.make_tensor_value_info("embedding", TensorProto.FLOAT, [batch, dim])]
    inits = [numpy_helper.from_array(recogniser_projection(dim, seed), "projection")]
    body = [helper.make_node("AveragePool", ["input"], ["blocks"], kernel_shape=[POOL_PX, POOL_PX],
                             strides=[POOL_PX, POOL_PX]),
            helper.make_node("Flatten", ["blocks"], ["features"], axis=1),
            helper.make_node("MatMul", ["features", "projection"], ["embedding"])]
    return _save(_model(body, inputs, outputs, inits, "contract_recogniser"), path)


def cpu_session(path: Path | str) -> ort.InferenceSession:
    """An onnxruntime CPU session for a model file (what the stage tests feed the stages)."""
    return ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])


def matmul_chain(path: Path | str, links: int = 16, side: int = 256,
                 scale: float = 1.0) -> Path:
    """A model that only computes: y = x @ (scale * I), `links` times over, x (side, side)
    float32 (16 links of 256: about 0.5 GFLOP a run, a few ms on the CPU). For timing and
    CPU-accounting tests."""
    weight = numpy_helper.from_array(np.eye(side, dtype=np.float32) * scale, "w")
    nodes, name = [], "x"
    for i in range(links):
        nodes.append(helper.make_node("MatMul", [name, "w"], [f"m{i}"]))
        name = f"m{i}"
    nodes.append(helper.make_node("Identity", [name], ["y"]))
    io = [helper.make_tensor_value_info(n, TensorProto.FLOAT, [side, side]) for n in "xy"]
    return _save(_model(nodes, io[:1], io[1:], [weight], "matmul-chain"), path)
