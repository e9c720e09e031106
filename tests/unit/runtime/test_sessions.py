import logging

import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper

from facefuse.errors import InputError
from facefuse.runtime import sessions
from facefuse.runtime.binding import BoundSession
from tests.contract_models import matmul_chain


@pytest.fixture()
def tiny_model(tmp_path):
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 2])
    graph = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "g", [x], [y])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    path = tmp_path / "tiny.onnx"
    onnx.save(model, str(path))
    return path


def test_parse_providers_accepts_short_and_full_names():
    assert sessions.parse_providers("auto") == "auto"
    assert sessions.parse_providers("cuda, cpu") == ("CUDAExecutionProvider",
                                                     "CPUExecutionProvider")
    assert sessions.parse_providers("TensorrtExecutionProvider") == ("TensorrtExecutionProvider",)
    with pytest.raises(InputError):
        sessions.parse_providers("cuda,,cpu")


def test_auto_prefers_gpu_providers_in_order(monkeypatch, caplog):
    offered = ["CPUExecutionProvider", "CUDAExecutionProvider", "TensorrtExecutionProvider",
               "AzureExecutionProvider"]
    preloads = []
    monkeypatch.setattr(ort, "get_available_providers", lambda: offered)
    monkeypatch.setattr(ort, "preload_dlls", lambda: preloads.append(1), raising=False)
    with caplog.at_level(logging.INFO, logger="facefuse"):
        chosen = sessions.resolve_providers("auto")
    assert chosen == ("TensorrtExecutionProvider", "CUDAExecutionProvider", "CPUExecutionProvider")
    assert "TensorrtExecutionProvider" in caplog.text  # the choice is logged
    assert preloads == [1]  # the nvidia-* pip packages' CUDA libraries, loaded once
    monkeypatch.setattr(ort, "get_available_providers", lambda: ["CPUExecutionProvider"])
    sessions.resolve_providers("auto")
    assert preloads == [1]  # not for the CPU


def test_auto_on_a_cpu_build_is_cpu_only():
    assert sessions.resolve_providers("auto")[-1] == "CPUExecutionProvider"


def test_an_explicit_provider_that_is_not_offered_warns_then_cpu(monkeypatch, caplog):
    monkeypatch.setattr(ort, "get_available_providers", lambda: ["CPUExecutionProvider"])
    with caplog.at_level(logging.WARNING, logger="facefuse"):
        chosen = sessions.resolve_providers(("CUDAExecutionProvider",))
    assert chosen == ("CPUExecutionProvider",)
    assert "CUDAExecutionProvider is not offered" in caplog.text


def test_a_provider_that_fails_to_load_falls_back_to_cpu(monkeypatch, caplog, tiny_model):
    real = ort.InferenceSession

    def picky(path, sess_options=None, providers=None):
        names = [p[0] if isinstance(p, tuple) else p for p in providers]
        if "CUDAExecutionProvider" in names:
            raise RuntimeError("libcublasLt.so.12: cannot open shared object file")
        return real(path, sess_options=sess_options, providers=providers)

    monkeypatch.setattr(ort, "InferenceSession", picky)
    with caplog.at_level(logging.WARNING, logger="facefuse"):
        session = sessions.create_session(tiny_model, ["CUDAExecutionProvider",
                                                       "CPUExecutionProvider"])
    assert session.get_providers() == ["CPUExecutionProvider"]
    assert "libcublasLt" in caplog.text and "falling back to CPU" in caplog.text


def test_pool_creates_each_session_once(tiny_model):
    pool = sessions.SessionPool(("CPUExecutionProvider",))
    first = pool.get(tiny_model)
    assert pool.get(tiny_model) is first and len(pool) == 1
    pool.close()
    assert len(pool) == 0 and pool.get(tiny_model) is not first


def test_a_timed_pool_times_creation_and_every_run_and_answers_like_the_session(tiny_model):
    import numpy as np

    from facefuse.timing import INFERENCE, SESSIONS, RenderTimings

    timings = RenderTimings()
    pool = sessions.SessionPool(["CPUExecutionProvider"], timer=timings)
    session = pool.get(tiny_model)
    assert pool.get(tiny_model) is session
    assert [i.name for i in session.get_inputs()] == ["x"]  # the session's own methods
    for _ in range(3):
        (y,) = session.run(None, {"x": np.array([[-1.0, 2.0]], np.float32)})
    assert y.tolist() == [[0.0, 2.0]]
    totals = timings.report().totals_ms
    assert totals[SESSIONS] > 0 and totals[INFERENCE] > 0
    untimed = sessions.SessionPool(["CPUExecutionProvider"]).get(tiny_model)
    assert isinstance(untimed, BoundSession)
    plain = sessions.SessionPool(["CPUExecutionProvider"], bind=False).get(tiny_model)
    assert isinstance(plain, ort.InferenceSession)


class _Intervals:
    def __init__(self):
        self.runs = []

    def session_created(self, ms):
        pass

    def inference(self, start, end, cpu_s=0.0):
        self.runs.append((start, end))

    def sample_threads(self):
        pass


def test_a_thread_budget_takes_cpu_runs_one_at_a_time_across_threads(tmp_path):
    """Pass 1 and pass 2 of a `many` render call sessions of one pool from two threads: under
    --threads N their runs must not overlap, or inference keeps 2N threads busy."""
    import itertools
    import threading

    import numpy as np

    timer = _Intervals()
    pool = sessions.SessionPool(["CPUExecutionProvider"], timer=timer, threads=1)
    first, second = (pool.get(matmul_chain(tmp_path / f"{name}.onnx")) for name in ("a", "b"))
    x = np.random.default_rng(0).random((256, 256), np.float32)

    def runs(session):
        for _ in range(12):
            session.run(None, {"x": x})

    workers = [threading.Thread(target=runs, args=(s,)) for s in (first, second)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    ordered = sorted(timer.runs)
    assert len(ordered) == 24
    assert all(end <= next_start for (_, end), (next_start, _) in itertools.pairwise(ordered))


def test_without_a_budget_sessions_are_not_gated(tiny_model):
    pool = sessions.SessionPool(["CPUExecutionProvider"], threads=0)
    assert isinstance(pool.get(tiny_model), BoundSession)
    gated = sessions.SessionPool(["CPUExecutionProvider"], threads=2).get(tiny_model)
    assert isinstance(gated, sessions.TimedSession)
