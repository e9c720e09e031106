"""BoundSession: runs through IOBinding give the bits of session.run on the CPU for every
contract model, the light stand-ins and the real test models; output buffers are reused (no
output arrays allocated per run); threads keep their own; odd shapes are left to ONNX
Runtime."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import onnxruntime as ort
import pytest

from facefuse.runtime.binding import BoundSession, device_of
from facefuse.runtime.dtypes import ORT_TYPES
from facefuse.runtime.sessions import SessionPool, SessionReplicas
from tests import contract_models as cm

BUILDERS: dict[str, Callable[[Path], Path]] = {
    "identity_swapper": cm.identity_swapper,
    "identity_swapper_fp16": lambda p: cm.identity_swapper(p, dtype="float16"),
    "identity_swapper_batch": lambda p: cm.identity_swapper(p, batch="n"),
    "colour_swapper": cm.colour_swapper,
    "hyperswap_identity": cm.hyperswap_identity,
    "hyperswap_colour": cm.hyperswap_colour,
    "xseg_rectangle": lambda p: cm.xseg_rectangle(p, (10, 20, 100, 120)),
    "xseg_channel": cm.xseg_channel,
    "bisenet_labels": lambda p: cm.bisenet_labels(p, np.arange(64 * 64).reshape(64, 64) % 19),
    "bisenet_threshold": cm.bisenet_threshold,
    "identity_restorer": cm.identity_restorer,
    "codeformer_contract": cm.codeformer_contract,
    "contract_recogniser": cm.contract_recogniser,
}
REAL = ("face_detection_yunet_2023mar.onnx", "det_500m.onnx", "mobilefacenet_128d.onnx",
        "facemesh_468.onnx")


@pytest.fixture(scope="module")
def models(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("binding")


def feeds_for(session: Any, seed: int = 0, batch: int = 2) -> dict[str, np.ndarray]:
    """Random feeds in the declared shapes and types (named dimensions: `batch`)."""
    rng = np.random.default_rng(seed)
    feeds = {}
    for node in session.get_inputs():
        shape = [d if isinstance(d, int) else batch for d in node.shape]
        dtype = ORT_TYPES.get(node.type, np.float32)
        feeds[node.name] = np.asarray(rng.standard_normal(shape) * 50.0, dtype=dtype)
    return feeds


def assert_same(bound: BoundSession, session: ort.InferenceSession,
                feeds: dict[str, np.ndarray]) -> None:
    want = session.run(None, feeds)
    got = bound.run(None, feeds)
    assert len(got) == len(want)
    for a, b in zip(got, want):
        assert a.dtype == b.dtype and a.shape == b.shape
        assert np.array_equal(a, b, equal_nan=True)


@pytest.mark.parametrize("name", sorted(BUILDERS))
def test_every_contract_model_gives_the_bits_of_session_run(models: Path, name: str) -> None:
    session = cm.cpu_session(BUILDERS[name](models / f"{name}.onnx"))
    bound = BoundSession(session)
    assert bound.device == "cpu"
    for seed in range(3):  # the kept buffers are written again, never stale
        assert_same(bound, session, feeds_for(session, seed))


@pytest.mark.parametrize("name", ["identity_swapper_batch", "identity_swapper_fp16",
                                  "codeformer_contract", "bisenet_threshold"])
def test_the_device_buffer_path_gives_the_bits_of_session_run(models: Path, name: str) -> None:
    """The GPU code path (OrtValue inputs updated in place, OrtValue outputs copied to the
    host), run on the CPU device."""
    session = cm.cpu_session(BUILDERS[name](models / f"{name}_device.onnx"))
    bound = BoundSession(session, numpy_io=False)
    for seed, batch in ((0, 2), (1, 2), (2, 2), (3, 1)):
        assert_same(bound, session, feeds_for(session, seed, batch))


@pytest.mark.parametrize("file", REAL)
def test_the_real_test_models_give_the_bits_of_session_run(testdata: Path, file: str) -> None:
    session = cm.cpu_session(testdata / "models" / file)
    bound = BoundSession(session)
    for seed in range(2):
        assert_same(bound, session, feeds_for(session, seed))


def test_the_light_stand_ins_give_the_bits_of_session_run(tmp_path: Path) -> None:
    from bench import standins

    built = standins.build_all(tmp_path, light=True)
    for entry in built.values():
        session = cm.cpu_session(str(entry["path"]))
        assert_same(BoundSession(session), session, feeds_for(session))


def test_a_named_batch_resizes_the_kept_buffers_and_a_subset_of_outputs_is_run(
        models: Path) -> None:
    session = cm.cpu_session(cm.hyperswap_identity(models / "hs_n.onnx", batch="n"))
    bound = BoundSession(session)
    for batch in (1, 3, 3, 2):
        feeds = feeds_for(session, batch, batch)
        (output,) = bound.run(["output"], feeds)
        assert output.shape == (batch, 3, 256, 256)
        assert np.array_equal(output, session.run(["output"], feeds)[0])


def test_outputs_are_written_into_the_same_buffers_run_after_run(models: Path) -> None:
    session = cm.cpu_session(cm.identity_restorer(models / "restorer.onnx"))
    bound = BoundSession(session)
    first = bound.run(None, feeds_for(session, 1))[0]  # ONNX Runtime's, shapes noted
    second = bound.run(None, feeds_for(session, 2))[0]
    third = bound.run(None, feeds_for(session, 3))[0]
    assert second is third and first is not second  # kept: valid until the next run


def test_200_bound_runs_write_one_buffer_while_session_run_makes_new_arrays(
        models: Path) -> None:
    session = cm.cpu_session(cm.identity_restorer(models / "churn.onnx"))
    bound = BoundSession(session)
    feeds = feeds_for(session)
    bound.run(None, feeds)  # the first run notes the output shapes
    outputs = [bound.run(None, feeds)[0] for _ in range(200)]
    assert len({id(out) for out in outputs}) == 1
    assert len({out.ctypes.data for out in outputs}) == 1
    fresh = [session.run(None, feeds)[0] for _ in range(3)]
    assert len({id(out) for out in fresh}) == 3  # a new array (and ONNX Runtime buffer) each


def test_each_thread_runs_with_its_own_binding_and_buffers(models: Path) -> None:
    session = cm.cpu_session(cm.identity_swapper(models / "threads.onnx", batch="n"))
    bound = BoundSession(session)
    problems: list[str] = []

    def work(seed: int) -> None:
        for step in range(20):
            feeds = feeds_for(session, seed * 100 + step, batch=1 + seed)
            got = bound.run(None, feeds)[0]
            if not np.array_equal(got, feeds["target"]):
                problems.append(f"thread {seed} step {step}")

    threads = [threading.Thread(target=work, args=(seed,)) for seed in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert problems == []


@pytest.mark.parametrize("numpy_io", [True, False])  # the CPU's path, and a GPU's
def test_swap_workers_runs_of_one_shape_at_once_each_keep_their_own_outputs(
        models: Path, numpy_io: bool) -> None:
    """Pass 2's swap workers: several threads run crops of one shape at once, on one shared
    session (a free batch) and on replicas; each thread's outputs stay its own until its next
    run, while the others run."""
    path = cm.identity_swapper(models / "workers.onnx", batch="n")
    shared = BoundSession(cm.cpu_session(path), numpy_io=numpy_io)
    replicas = SessionReplicas([BoundSession(cm.cpu_session(path), numpy_io=numpy_io)
                                for _ in range(2)])
    problems: list[str] = []
    start = threading.Barrier(4)

    def work(seed: int, session: object) -> None:
        start.wait()
        for step in range(30):
            feeds = feeds_for(shared, seed * 100 + step, batch=1)
            got = session.run(None, feeds)[0]  # type: ignore[attr-defined]
            held = np.array(got)
            time.sleep(0.0005)  # the other threads run meanwhile
            if not (np.array_equal(got, held) and np.array_equal(got, feeds["target"])):
                problems.append(f"thread {seed} step {step}")

    for session in (shared, replicas):
        threads = [threading.Thread(target=work, args=(seed, session)) for seed in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    assert problems == []


def test_outputs_of_other_shapes_than_declared_are_kept_at_the_shapes_run(
        testdata: Path) -> None:
    session = cm.cpu_session(testdata / "models" / "det_500m.onnx")  # declares 640 px outputs
    bound = BoundSession(session)
    for size in (320, 320, 320, 256, 256):
        feeds = {"input.1": np.random.default_rng(size).random((1, 3, size, size), np.float32)}
        got, want = bound.run(None, feeds), session.run(None, feeds)
        assert all(np.array_equal(a, b) for a, b in zip(got, want))
        assert got[0].shape == ((size // 8) ** 2 * 2, 1)


def test_an_output_whose_size_depends_on_the_pixels_is_left_to_onnxruntime(
        tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    import onnx
    from onnx import TensorProto, helper

    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 6])
    y = helper.make_tensor_value_info("y", TensorProto.INT64, [2, "count"])
    graph = helper.make_graph([helper.make_node("NonZero", ["x"], ["y"])], "g", [x], [y])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.save(model, str(tmp_path / "nonzero.onnx"))
    session = ort.InferenceSession(str(tmp_path / "nonzero.onnx"),
                                   providers=["CPUExecutionProvider"])
    bound = BoundSession(session)
    for values in ([0, 1, 0, 1, 1, 0], [1, 1, 1, 0, 0, 0], [0, 0, 0, 0, 0, 1]):
        feeds = {"x": np.array([values], np.float32)}
        assert np.array_equal(bound.run(None, feeds)[0], session.run(None, feeds)[0])
    assert "ONNXRuntimeError" not in capfd.readouterr().err  # a refused buffer is no error


def test_the_device_follows_the_first_provider() -> None:
    assert device_of(["CUDAExecutionProvider", "CPUExecutionProvider"]) == "cuda"
    assert device_of(["TensorrtExecutionProvider", "CUDAExecutionProvider"]) == "cuda"
    assert device_of(["CPUExecutionProvider"]) == "cpu"
    assert device_of(["CoreMLExecutionProvider", "CPUExecutionProvider"]) == "cpu"


def test_the_pool_binds_unless_told_not_to(models: Path) -> None:
    path = cm.identity_restorer(models / "pool.onnx")
    assert isinstance(SessionPool(["CPUExecutionProvider"]).get(path), BoundSession)
    plain = SessionPool(["CPUExecutionProvider"], bind=False).get(path)
    assert isinstance(plain, ort.InferenceSession)
