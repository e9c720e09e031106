"""Build production-compute stand-ins: ONNX models with the production models' I/O and roughly
their compute, so benchmarks mean something without the real (non-redistributable) weights.

    python bench/standins.py OUT_DIR [--light]

Each stand-in has the input and output names and shapes of the production model (see
models/manifest.toml: inswapper_128, GFPGAN 1.4, det_10g / retinaface_10g at 640, ArcFace R50
at 112) and a stack of 3x3 convolutions (ReLU) with about the production model's FLOPs. The
convolutions feed the outputs through a term of 1e-6 * tanh(mean), so nothing is optimised away
while the outputs stay well defined:

- swapper: output = target (an identity swap; pictures stay sane); the emap is the last
  initializer, as inswapper has it; the source is mixed into the first features.
- enhancer: output = input (an identity restorer).
- detector: SCRFD's 9 outputs (score, bbox, kps for strides 8, 16, 32; 2 anchors per cell),
  constant faces at fixed places of the 640 x 640 canvas (one, or three side by side), where
  the letterbox puts the top half of a 16:9 or 4:3 picture.
- recogniser: a 512-d embedding of block means of the crop (so different faces differ), plus
  the convolution term; dynamic batch like ArcFace.

--light builds the same I/O with no convolution stack (cheap: what the side-by-side runs with
FaceFusion used for "the same work"). The FLOPs built are printed (multiply-adds x 2).
No weights of any real model are used: every weight is seeded random numbers.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OPSET = 17
IR_VERSION = 8
EPSILON = 1e-6
CANVAS_PX = 640
STRIDES = (8, 16, 32)
ANCHORS = 2
FACE_SCORE = 0.9
# Production compute per call (GFLOP), from the reference figures the stand-ins aim at.
PRODUCTION_GFLOP = {"swapper": 349.0, "enhancer": 396.0, "detector": 27.0, "recogniser": 12.6}
# Convolution stacks: (in channels, out channels, stride, repeats), 3x3 kernels.
STACKS = {
    "swapper": ((3, 256, 1, 1), (256, 256, 1, 17)),  # all at 128 x 128
    "enhancer": ((3, 32, 1, 1), (32, 64, 2, 1), (64, 128, 1, 1), (128, 128, 1, 19)),
    "detector": ((3, 32, 2, 1), (32, 64, 2, 1), (64, 64, 1, 13), (64, 128, 2, 1)),
    "recogniser": ((3, 64, 1, 1), (64, 128, 2, 1), (128, 128, 1, 13)),
}
ARCFACE_128 = np.array([[0.36167656, 0.40387734], [0.63696719, 0.40235469],
                        [0.50019687, 0.56044219], [0.38710391, 0.72160547],
                        [0.61507734, 0.72034453]], np.float32)
ONE_FACE = ((320.0, 170.0, 100.0),)  # (centre x, centre y, size) on the detector canvas
THREE_FACES = ((140.0, 170.0, 90.0), (320.0, 170.0, 90.0), (500.0, 170.0, 90.0))


@dataclass
class Graph:
    """Nodes and initializers of a model under construction, and the FLOPs counted so far."""

    rng: np.random.Generator
    dtype: str = "float32"  # the type of the weights and float constants (float16: a twin)
    nodes: list[onnx.NodeProto] = field(default_factory=list)
    weights: list[onnx.TensorProto] = field(default_factory=list)
    flops: float = 0.0
    count: int = 0

    def name(self, stem: str) -> str:
        self.count += 1
        return f"{stem}_{self.count}"

    def const(self, stem: str, value: np.ndarray) -> str:
        name = self.name(stem)
        array = np.asarray(value)
        if np.issubdtype(array.dtype, np.floating):
            array = array.astype(self.dtype)
        self.weights.append(numpy_helper.from_array(array, name))
        return name

    def op(self, kind: str, inputs: Sequence[str], **attrs: object) -> str:
        out = self.name(kind.lower())
        self.nodes.append(helper.make_node(kind, list(inputs), [out], **attrs))
        return out

    def conv_stack(self, x: str, size_px: int, stacks: Sequence[tuple[int, int, int, int]],
                   batch: int = 1) -> tuple[str, int]:
        """3x3 convolutions + ReLU; counts 2 * multiply-adds per call of batch 1."""
        for cin, cout, stride, repeats in stacks:
            for i in range(repeats):
                c_in = cin if i == 0 else cout
                size_px = size_px // stride if i == 0 else size_px
                weight = self.rng.standard_normal((cout, c_in, 3, 3)).astype(np.float32)
                weight *= np.float32(np.sqrt(2.0 / (c_in * 9)))
                x = self.op("Conv", [x, self.const("w", weight),
                                     self.const("b", np.zeros(cout, np.float32))],
                            kernel_shape=[3, 3], pads=[1, 1, 1, 1],
                            strides=[stride if i == 0 else 1] * 2)
                x = self.op("Relu", [x])
                self.flops += 2.0 * cout * size_px * size_px * c_in * 9 * batch
        return x, size_px

    def tiny_term(self, features: str, axes: Sequence[int]) -> str:
        """EPSILON * tanh(mean of the features over `axes`), keeping dims for broadcasting."""
        mean = self.op("ReduceMean", [features], axes=list(axes), keepdims=1)
        return self.op("Mul", [self.op("Tanh", [mean]),
                               self.const("eps", np.array(EPSILON, np.float32))])


ELEMENT = {"float32": TensorProto.FLOAT, "float16": TensorProto.FLOAT16}


def _tensor(name: str, shape: Sequence[int | str], dtype: str = "float32"
            ) -> onnx.ValueInfoProto:
    return helper.make_tensor_value_info(name, ELEMENT[dtype], list(shape))


def _batch_axes(batch: int | str) -> tuple[int, ...]:
    """The axes the tiny term averages: all with batch 1; per image with a free batch (so a
    batched run gives each image what a run of its own gives it)."""
    return (0, 1, 2, 3) if batch == 1 else (1, 2, 3)


def _save(graph: Graph, name: str, inputs: list[onnx.ValueInfoProto],
          outputs: list[onnx.ValueInfoProto], out_names: Sequence[str], path: Path) -> Path:
    renames = [helper.make_node("Identity", [src], [dst.name])
               for src, dst in zip(out_names, outputs)]
    model = helper.make_model(
        helper.make_graph([*graph.nodes, *renames], name, inputs, outputs, graph.weights),
        opset_imports=[helper.make_opsetid("", OPSET)], producer_name="facefuse-bench")
    model.ir_version = IR_VERSION
    onnx.checker.check_model(model)
    path.parent.mkdir(parents=True, exist_ok=True)
    onnx.save(model, str(path))
    return path


def build_swapper(path: Path, light: bool = False, seed: int = 1, batch: int | str = 1,
                  dtype: str = "float32") -> float:
    """inswapper_128 I/O: target (B,3,128,128) + source (B,512) -> output = target.
    batch: 1 (as inswapper) or a name (a free batch); dtype "float16": the fp16 twin."""
    g = Graph(np.random.default_rng(seed), dtype)
    out = "target"
    if not light:
        first, _ = g.conv_stack("target", 128, STACKS["swapper"][:1])
        style = g.op("Gemm", ["source", g.const("style", g.rng.standard_normal(
            (512, 256)).astype(np.float32) * np.float32(0.01))])
        mixed = g.op("Add", [first, g.op("Reshape", [style, g.const(
            "shape", np.array([0 if batch != 1 else 1, 256, 1, 1], np.int64))])])
        features, _ = g.conv_stack(mixed, 128, STACKS["swapper"][1:])
        g.flops += 2.0 * 512 * 256
        out = g.op("Add", ["target", g.tiny_term(features, _batch_axes(batch))])
    else:
        out = g.op("Add", ["target", g.op("Mul", [g.op("ReduceMean", ["source"], keepdims=1),
                                                  g.const("zero", np.array(0, np.float32))])])
    q, r = np.linalg.qr(g.rng.standard_normal((512, 512)))
    g.weights.append(numpy_helper.from_array((q * np.sign(np.diag(r))).astype(dtype),
                                             "emap"))  # the LAST initializer, as inswapper's
    _save(g, "inswapper_128_standin", [_tensor("target", [batch, 3, 128, 128], dtype),
                                       _tensor("source", [batch, 512], dtype)],
          [_tensor("output", [batch, 3, 128, 128], dtype)], [out], path)
    return g.flops


def build_enhancer(path: Path, light: bool = False, seed: int = 2, batch: int | str = 1,
                   dtype: str = "float32") -> float:
    """GFPGAN 1.4 I/O: input (B,3,512,512) in [-1,1] -> output = input."""
    g = Graph(np.random.default_rng(seed), dtype)
    out = g.op("Identity", ["input"])
    if not light:
        features, _ = g.conv_stack("input", 512, STACKS["enhancer"])
        out = g.op("Add", ["input", g.tiny_term(features, _batch_axes(batch))])
    _save(g, "gfpgan_1.4_standin", [_tensor("input", [batch, 3, 512, 512], dtype)],
          [_tensor("output", [batch, 3, 512, 512], dtype)], [out], path)
    return g.flops


def scrfd_outputs(faces: Sequence[tuple[float, float, float]]) -> list[np.ndarray]:
    """SCRFD's 9 raw outputs (score, bbox, kps x strides 8, 16, 32; 2 anchors per cell) that
    decode to `faces` on the 640 canvas: each face on the first anchor of its stride-16 cell."""
    scores, boxes, kps = [], [], []
    for stride in STRIDES:
        cells = (CANVAS_PX // stride) ** 2 * ANCHORS
        scores.append(np.zeros((cells, 1), np.float32))
        boxes.append(np.ones((cells, 4), np.float32))
        kps.append(np.zeros((cells, 10), np.float32))
    grid = CANVAS_PX // 16
    for cx, cy, size in faces:
        col, row = round(cx / 16), round(cy / 16)
        anchor = (row * grid + col) * ANCHORS
        centre = np.array([col * 16, row * 16], np.float32)
        half = size / 2.0
        box = np.array([cx - half, cy - half, cx + half, cy + half], np.float32)
        scores[1][anchor, 0] = FACE_SCORE
        boxes[1][anchor] = np.concatenate([centre - box[:2], box[2:] - centre]) / 16.0
        points = box[:2] + ARCFACE_128 * np.float32(size)
        kps[1][anchor] = ((points - centre) / 16.0).reshape(-1)
    return [*scores, *boxes, *kps]


def build_detector(path: Path, faces: Sequence[tuple[float, float, float]] = ONE_FACE,
                   light: bool = False, seed: int = 3, dtype: str = "float32") -> float:
    """det_10g I/O: input.1 (1,3,640,640) -> 9 SCRFD outputs with constant faces."""
    g = Graph(np.random.default_rng(seed), dtype)
    term = None
    if not light:
        features, _ = g.conv_stack("input.1", CANVAS_PX, STACKS["detector"])
        term = g.op("Reshape", [g.tiny_term(features, (0, 1, 2, 3)),
                                g.const("shape", np.array([1, 1], np.int64))])
    else:
        term = g.op("Reshape", [g.op("Mul", [g.op("ReduceMean", ["input.1"], keepdims=1),
                                             g.const("zero", np.array(0, np.float32))]),
                                g.const("shape", np.array([1, 1], np.int64))])
    values = scrfd_outputs(faces)
    names = [f"{kind}_{stride}" for kind in ("score", "bbox", "kps") for stride in STRIDES]
    outs = [g.op("Add", [g.const(name, value), term]) for name, value in zip(names, values)]
    _save(g, "det_10g_standin", [_tensor("input.1", [1, 3, CANVAS_PX, CANVAS_PX], dtype)],
          [_tensor(n, list(v.shape), dtype) for n, v in zip(names, values)], outs, path)
    return g.flops


def build_recogniser(path: Path, light: bool = False, seed: int = 4,
                     dtype: str = "float32") -> float:
    """ArcFace R50 I/O: (batch,3,112,112) -> (batch,512), block means projected (+ term)."""
    g = Graph(np.random.default_rng(seed), dtype)
    pooled = g.op("Flatten", [g.op("AveragePool", ["input.1"], kernel_shape=[28, 28],
                                   strides=[28, 28])], axis=1)
    out = g.op("Gemm", [pooled, g.const("proj", g.rng.standard_normal((48, 512)).astype(
        np.float32))])
    if not light:
        features, _ = g.conv_stack("input.1", 112, STACKS["recogniser"])
        out = g.op("Add", [out, g.op("Flatten", [g.tiny_term(features, (1, 2, 3))], axis=1)])
    _save(g, "arcface_r50_standin", [_tensor("input.1", ["batch", 3, 112, 112], dtype)],
          [_tensor("embedding", ["batch", 512], dtype)], [out], path)
    return g.flops


def build_all(out_dir: Path, light: bool = False) -> dict[str, dict[str, float | str]]:
    """Every stand-in into out_dir; name -> {path, gflop, production_gflop}."""
    suffix = "_light" if light else ""
    built = {
        "swapper": (f"inswapper_128_standin{suffix}.onnx", build_swapper),
        "enhancer": (f"gfpgan_1.4_standin{suffix}.onnx", build_enhancer),
        "detector": (f"det_10g_standin{suffix}.onnx", build_detector),
        "detector_3faces": (f"det_10g_standin_3faces{suffix}.onnx",
                            lambda p, light: build_detector(p, THREE_FACES, light)),
        "recogniser": (f"arcface_r50_standin{suffix}.onnx", build_recogniser),
    }
    result: dict[str, dict[str, float | str]] = {}
    for role, (file, build) in built.items():
        flops = build(out_dir / file, light=light)
        production = PRODUCTION_GFLOP[role.split("_")[0]]
        result[role] = {"path": str(out_dir / file), "gflop": round(flops / 1e9, 2),
                        "production_gflop": production}
    return result


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out_dir", type=Path)
    parser.add_argument("--light", action="store_true", help="same I/O, no convolutions")
    args = parser.parse_args(argv)
    print(json.dumps(build_all(args.out_dir, args.light), indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
