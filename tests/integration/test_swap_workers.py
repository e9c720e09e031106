"""Pass 2 with several swap workers (Settings.swap_workers): a render's frames are those one
worker gives, bit for bit, whatever the workers (1, 2, 4), on the contract models and on the
real YuNet and MobileFaceNet, with one face and two, to rawvideo, ffv1 and a PNG sequence; the
frames reach the writer in order; a model error on one frame stops the render with that error
after every frame before it was written; cancel and --fail-fast still stop it; every worker
thread has ended when the render returns.

The shots: two real faces (one mirrored) drifting a few pixels a frame, so a frame swapped with
another frame's crops would show; the "one" shot has the first face only. Every render here
uses the real pass-2 code (shot.run.render, no stand-in for any part of it)."""

from __future__ import annotations

import threading
from dataclasses import replace
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from facefuse.pipeline import Pipeline
from facefuse.runtime.sessions import SessionReplicas
from facefuse.shot.contract.request import OutputSpec
from facefuse.shot.run.render import render
from tests import contract_models
from tests.media_factory import write_h264_clip
from tests.render_media import (
    decode_video,
    face_photo,
    read_plate_oiio,
    render_request,
    run_render,
    write_plate_oiio,
)

FRAMES = 8
SIZE = (400, 240)  # width, height
RATE = Fraction(12)
WORKERS = (1, 2, 4)
OUTPUTS = {"rawvideo": ("out.mov", {"codec": "rawvideo"}), "ffv1": ("out.mkv", {"codec": "ffv1"}),
           "png": ("out.####.png", {})}
LONG = 48  # frames of the "long" shot (cancelled early)
MARKED = 4  # 0-based frame of the "marked" shot whose first face carries a pure blue square


def _picture(index: int, face: np.ndarray, faces: int, marked: bool = False) -> np.ndarray:
    frame = np.empty((SIZE[1], SIZE[0], 3), np.uint8)
    frame[:] = (150, 110, 60)
    frame[:, :, 1] = np.linspace(60, 200, SIZE[0], dtype=np.uint8)[None, :]  # a gradient
    h, w = face.shape[:2]
    places = [(30 + 3 * index, 50 + index % 3), (260 - 2 * index, 70)][:faces]
    for (x, y), picture in zip(places, (face, face[:, ::-1])):
        frame[y:y + h, x:x + w] = picture
    if marked:
        x, y = places[0]
        frame[y + 70:y + 84, x + 20:x + 34] = (255, 0, 0)  # on the cheek: blue in BGR
    return frame


@pytest.fixture(scope="module")
def shots(tmp_path_factory: pytest.TempPathFactory, testdata: Path) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("workers-shots")
    face = face_photo(testdata)
    made = {}
    for name, faces in (("one", 1), ("two", 2)):
        made[name] = write_h264_clip(root / f"{name}.mp4",
                                     [_picture(i, face, faces) for i in range(FRAMES)], RATE)
    made["long"] = write_h264_clip(root / "long.mp4",
                                   [_picture(i % FRAMES, face, 1) for i in range(LONG)], RATE)
    plates = root / "marked"
    plates.mkdir()
    for i in range(FRAMES):
        rgb = _picture(i, face, 1, marked=i == MARKED)[..., ::-1].copy()
        write_plate_oiio(plates / f"p.{i + 1}.png", rgb, "uint8")
    made["marked"] = plates / "p.#.png"
    return made


def padded_recogniser(source: Path, target: Path, width: int = 512) -> Path:
    """A recogniser (MobileFaceNet, 128-d) whose embedding is zero-padded to `width` values,
    the swappers' latent width."""
    model = onnx.load(str(source))
    (output,) = model.graph.output
    dim = output.type.tensor_type.shape.dim[1].dim_value
    model.graph.node.append(helper.make_node("Pad", [output.name], ["embedding_padded"],
                                             mode="constant", pads=[0, 0, 0, width - dim]))
    model.graph.output.pop()
    model.graph.output.append(helper.make_tensor_value_info("embedding_padded",
                                                            TensorProto.FLOAT, [1, width]))
    onnx.save(model, str(target))
    return target


def failing_swapper(path: Path, threshold: float = 0.7) -> Path:
    """inswapper I/O (batch 1) returning the target crop, except that the run fails (a
    Reshape to one value more than the crop holds) where some pixel of the crop is far bluer
    than red and green: B - R - G > threshold (the crop is RGB in 0..1)."""
    def const(name: str, values: Any) -> onnx.TensorProto:
        return numpy_helper.from_array(np.asarray(values), name)

    nodes = [
        helper.make_node("Slice", ["target", "c0", "c1", "axis1"], ["red"]),
        helper.make_node("Slice", ["target", "c1", "c2", "axis1"], ["green"]),
        helper.make_node("Slice", ["target", "c2", "c3", "axis1"], ["blue"]),
        helper.make_node("Sub", ["blue", "red"], ["b_r"]),
        helper.make_node("Sub", ["b_r", "green"], ["blueness"]),
        helper.make_node("ReduceMax", ["blueness"], ["most"], keepdims=0),
        helper.make_node("Greater", ["most", "threshold"], ["blue_found"]),
        helper.make_node("Cast", ["blue_found"], ["extra"], to=TensorProto.INT64),
        helper.make_node("Reshape", ["target", "flat"], ["values"]),
        helper.make_node("Shape", ["values"], ["count"]),
        helper.make_node("Add", ["count", "extra"], ["wanted"]),
        helper.make_node("Reshape", ["values", "wanted"], ["checked"]),
        helper.make_node("ReduceSum", ["checked"], ["total"], keepdims=0),
        helper.make_node("ReduceSum", ["source"], ["source_sum"], keepdims=0),
        helper.make_node("Add", ["total", "source_sum"], ["both"]),
        helper.make_node("Mul", ["both", "zero"], ["nothing"]),
        helper.make_node("Add", ["target", "nothing"], ["output"]),
    ]
    consts = [const("c0", [0]), const("c1", [1]), const("c2", [2]), const("c3", [3]),
              const("axis1", [1]), const("threshold", np.float32(threshold)),
              const("flat", [-1]), const("zero", np.float32(0.0)),
              numpy_helper.from_array(contract_models.random_orthogonal().astype(np.float32),
                                      "emap")]
    size = contract_models.SWAP_SIZE_PX
    inputs = [helper.make_tensor_value_info("target", TensorProto.FLOAT, [1, 3, size, size]),
              helper.make_tensor_value_info("source", TensorProto.FLOAT, [1, 512])]
    outputs = [helper.make_tensor_value_info("output", TensorProto.FLOAT, [1, 3, size, size])]
    graph = helper.make_graph(nodes, "failing_swapper", inputs, outputs, consts)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.save(model, str(path))
    return path


@pytest.fixture(scope="module")
def models(render_models: Path, testdata: Path, tmp_path_factory: pytest.TempPathFactory
           ) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("workers-models")
    return {"mobilefacenet": padded_recogniser(testdata / "models" / "mobilefacenet_128d.onnx",
                                               root / "mobilefacenet_512.onnx"),
            "restorer": contract_models.identity_restorer(root / "restorer.onnx"),
            "occluder": contract_models.xseg_rectangle(root / "xseg.onnx", (20, 10, 236, 240)),
            "failing": failing_swapper(root / "failing_swapper.onnx")}


def _settings(kind: str, models: dict[str, Path], workers: int, faces: str) -> dict[str, Any]:
    """The models of a scenario: "contract" (the render models: identity swapper, contract
    recogniser) or "real" (MobileFaceNet, GFPGAN-shaped restorer, occluder, pixel boost)."""
    settings: dict[str, Any] = {"swap_workers": workers,
                                "selector": "many" if faces == "two" else "one"}
    if kind == "real":
        settings.update(recogniser=str(models["mobilefacenet"]),
                        enhancer=str(models["restorer"]), occluder=str(models["occluder"]),
                        pixel_boost=256, swapper_weight=0.7)
    return settings


def _render(render_models: Path, render_cache: Path, testdata: Path, shot: Path | str,
            out: Path, settings: dict[str, Any], **fields: Any) -> tuple[Any, list[Any]]:
    request = render_request(render_models, render_cache, testdata / "media" / "obama.jpg",
                             shot, out, settings=settings, overwrite=True, **fields)
    return run_render(request)


def _frames(out: Path) -> list[np.ndarray]:
    if "#" in out.name:
        files = sorted(out.parent.glob(out.name.replace("####", "*")),
                       key=lambda p: int(p.name.split(".")[1]))
        return [read_plate_oiio(f)[0] for f in files]
    return decode_video(out)


def _bytes(out: Path) -> list[bytes]:
    if "#" in out.name:
        files = sorted(out.parent.glob(out.name.replace("####", "*")))
        return [f.read_bytes() for f in files]
    return [out.read_bytes()]


@pytest.mark.parametrize("kind, faces, output", [
    ("contract", "one", "rawvideo"), ("contract", "two", "ffv1"), ("contract", "two", "png"),
    ("real", "one", "png"), ("real", "two", "rawvideo")])
def test_swap_workers_render_the_frames_one_worker_renders_bit_for_bit(
        kind: str, faces: str, output: str, shots: dict[str, Path], models: dict[str, Path],
        render_models: Path, render_cache: Path, testdata: Path, tmp_path: Path) -> None:
    name, fields = OUTPUTS[output]
    results = {}
    before = threading.active_count()
    for workers in WORKERS:
        out = tmp_path / f"w{workers}" / name
        out.parent.mkdir()
        summary, reports = _render(render_models, render_cache, testdata, shots[faces], out,
                                   _settings(kind, models, workers, faces), **fields)
        assert summary.done == FRAMES and summary.swapped == FRAMES and not summary.failed
        numbers = [r.frame for r in reports]
        assert numbers == sorted(numbers) and len(numbers) == FRAMES  # the writer's order
        assert threading.active_count() == before  # no worker left behind
        results[workers] = (_frames(out), _bytes(out))
    frames, files = results[1]
    assert len(frames) == FRAMES
    for workers in WORKERS[1:]:
        got, got_files = results[workers]
        assert len(got) == FRAMES
        for index, (a, b) in enumerate(zip(frames, got, strict=True)):
            assert np.array_equal(a, b), f"frame {index} differs with {workers} workers"
        assert got_files == files  # lossless outputs: the same bytes


def test_each_worker_has_its_own_session_of_the_batch_one_models(
        shots: dict[str, Path], models: dict[str, Path], render_models: Path,
        render_cache: Path, testdata: Path, tmp_path: Path) -> None:
    request = render_request(render_models, render_cache, testdata / "media" / "obama.jpg",
                             shots["two"], OutputSpec(str(tmp_path / "out.mov"), codec="rawvideo"),
                             settings=_settings("real", models, 3, "two"))
    with Pipeline(request.settings) as pipeline:
        summary = render(request, pipeline=pipeline)
        assert summary.done == FRAMES
        for role in ("swapper", "enhancer", "occluder"):
            session = pipeline.models.load(role).stage.session  # type: ignore[attr-defined]
            assert isinstance(session, SessionReplicas) and len(session) == 3, role
        assert not isinstance(pipeline.models.load("recogniser").stage.session,  # type: ignore
                              SessionReplicas)  # not a swap model: pass 1's one session


@pytest.mark.parametrize("workers", WORKERS)
def test_a_model_error_on_one_frame_stops_the_render_with_that_error(
        workers: int, shots: dict[str, Path], models: dict[str, Path], render_models: Path,
        render_cache: Path, testdata: Path, tmp_path: Path) -> None:
    out = tmp_path / "out" / "o.####.png"
    out.parent.mkdir()
    before = threading.active_count()
    request = render_request(render_models, render_cache, testdata / "media" / "obama.jpg",
                             shots["marked"], out, settings={"swap_workers": workers})
    request = replace(request, settings=replace(request.settings,
                                                swapper=str(models["failing"])))
    with pytest.raises(Exception) as raised:
        run_render(request)
    assert "reshape" in str(raised.value).lower()  # onnxruntime's own error, as it is
    written = sorted(int(p.name.split(".")[1]) for p in out.parent.glob("o.*.png"))
    assert written == list(range(1, MARKED + 1))  # every frame before the failed one
    assert threading.active_count() == before


@pytest.mark.parametrize("workers", [2, 4])
def test_cancel_and_fail_fast_stop_a_render_with_workers(
        workers: int, shots: dict[str, Path], render_models: Path, render_cache: Path,
        testdata: Path, tmp_path: Path) -> None:
    before = threading.active_count()
    request = render_request(render_models, render_cache, testdata / "media" / "obama.jpg",
                             shots["long"], OutputSpec(str(tmp_path / "c.mov"), codec="rawvideo"),
                             settings={"swap_workers": workers})
    seen: list[int] = []
    summary = render(request, lambda report: seen.append(report.frame),
                     cancel=lambda: len(seen) >= 2)
    assert summary.cancelled and not (tmp_path / "c.mov").exists()
    assert seen == sorted(seen) and len(seen) < LONG
    assert threading.active_count() == before
    # a damaged plate (its file cut in half) with --fail-fast: the frames before it are
    # written, none after it, and the failure is reported
    plates = tmp_path / "plates"
    plates.mkdir()
    for n in range(1, FRAMES + 1):
        source = Path(str(shots["marked"]).replace("#", str(n)))
        (plates / source.name).write_bytes(source.read_bytes())
    damaged = plates / "p.3.png"
    damaged.write_bytes(damaged.read_bytes()[:len(damaged.read_bytes()) // 2])
    out = tmp_path / "seq"
    out.mkdir()
    fast, _ = run_render(render_request(
        render_models, render_cache, testdata / "media" / "obama.jpg", plates / "p.#.png",
        out / "o.#.png", fail_fast=True, settings={"swap_workers": workers}))
    assert [n for n, _ in fast.failed] == [3] and not fast.cancelled
    assert sorted(p.name for p in out.iterdir()) == ["o.1.png", "o.2.png"]
    assert threading.active_count() == before
