"""TensorRT planning on the CPU, with a fake provider list: engine folders keyed by model hash,
shapes, GPU and TensorRT version and precision; a render never builds an engine (TensorRT is
left out for a model without one, in one log line naming `models prepare`); fp16 only where
its outputs matched fp32; `models prepare` builds, compares and keeps the decision."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import numpy as np
import onnxruntime as ort
import pytest

from facefuse.cache.hashes import HashMemo
from facefuse.cli.main import main
from facefuse.config import Settings
from facefuse.errors import ExitCode, ModelError
from facefuse.runtime import precision
from facefuse.runtime.loading import ModelLoader
from facefuse.runtime.precision import PrecisionCheck, PrecisionStore, compare
from facefuse.runtime.prepare import prepare_model, probe_feeds
from facefuse.runtime.sessions import SessionPool
from facefuse.runtime.tensorrt import (
    CUDA,
    TENSORRT,
    EngineKey,
    GpuFacts,
    engine_build,
    model_shapes,
    render_providers,
)
from tests import contract_models as cm

CPU = "CPUExecutionProvider"
H200 = GpuFacts("NVIDIA H200", "10.13.0")
SHA = "ab" * 32
SWAPPER_INPUTS = {"target": [1, 3, 128, 128], "source": [1, 512]}


def _key(**changes: Any) -> EngineKey:
    fields = {"model_sha256": SHA, "shapes": "source:1x512;target:1x3x128x128",
              "gpu": "NVIDIA H200", "tensorrt": "10.13.0", "fp16": False, **changes}
    return EngineKey(**fields)


def test_each_part_of_the_key_gives_its_own_engine_folder() -> None:
    base = _key()
    assert base.folder_name() == _key().folder_name()
    others = [_key(model_sha256="cd" * 32), _key(shapes="source:1x512;target:1x3x256x256"),
              _key(gpu="NVIDIA RTX 4090"), _key(tensorrt="10.14.1"), _key(fp16=True)]
    names = {base.folder_name(), *(key.folder_name() for key in others)}
    assert len(names) == 6
    assert base.folder_name().startswith(SHA[:12] + "-fp32-")


def test_the_options_put_engine_and_timing_caches_in_the_model_folder(tmp_path: Path) -> None:
    build = engine_build(tmp_path, SHA, SWAPPER_INPUTS, H200, fp16=True)
    assert build.folder.parent == tmp_path / "trt"
    assert build.options == {
        "trt_engine_cache_enable": "True", "trt_engine_cache_path": str(build.folder),
        "trt_engine_cache_prefix": "facefuse", "trt_timing_cache_enable": "True",
        "trt_timing_cache_path": str(build.folder), "trt_fp16_enable": "True"}
    assert build.key.shapes == "source:1x512;target:1x3x128x128"
    assert not build.built
    build.folder.mkdir(parents=True)
    (build.folder / "facefuse_model.engine").write_bytes(b"engine")
    assert build.built


def test_a_free_batch_builds_a_profile_and_a_free_canvas_takes_the_detector_size() -> None:
    shapes, profile = model_shapes({"input": ["batch", 3, 112, 112]})
    assert shapes == {"input": [32, 3, 112, 112]}
    assert profile == {"input": ([1, 3, 112, 112], [32, 3, 112, 112])}
    shapes, profile = model_shapes({"input.1": [1, 3, "?", None]}, detector_px=1024)
    assert shapes == {"input.1": [1, 3, 1024, 1024]} and profile == {}
    options = engine_build(Path("/m"), SHA, {"input": ["n", 3, 512, 512]}, H200, False).options
    assert options["trt_profile_min_shapes"] == "input:1x3x512x512"
    assert options["trt_profile_max_shapes"] == "input:32x3x512x512"
    assert engine_build(Path("/m"), SHA, {"input": ["n", 3, 512, 512]}, H200, False,
                       ).key.shapes == "input:32x3x512x512"


ENTRIES = [(TENSORRT, {}), (CUDA, {"cudnn_conv_algo_search": "EXHAUSTIVE"}), (CPU, {})]


def test_a_render_leaves_tensorrt_out_for_a_model_without_an_engine(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    build = engine_build(tmp_path, SHA, SWAPPER_INPUTS, H200, fp16=False)
    with caplog.at_level(logging.WARNING, logger="facefuse"):
        unprepared = render_providers("inswapper_128", ENTRIES, None)
        unbuilt = render_providers("inswapper_128", ENTRIES, build)
    assert unprepared == unbuilt == ENTRIES[1:]
    lines = [r.getMessage() for r in caplog.records]
    assert len(lines) == 2 and all("models prepare --providers tensorrt" in line and
                                   "CUDAExecutionProvider runs it" in line for line in lines)
    build.folder.mkdir(parents=True)
    (build.folder / "facefuse_x.engine").write_bytes(b"engine")
    assert render_providers("inswapper_128", ENTRIES, build) == [(TENSORRT, build.options),
                                                                *ENTRIES[1:]]
    assert render_providers("m", ENTRIES[1:], None) == ENTRIES[1:]


class _Recorder:
    """Stands in for ort.InferenceSession: records the provider list, runs on the CPU."""

    def __init__(self, real: Any) -> None:
        self.real, self.calls = real, []

    def __call__(self, path: str, sess_options: Any = None, providers: Any = None) -> Any:
        self.calls.append(list(providers))
        return self.real(path, sess_options=sess_options, providers=[CPU])


@pytest.fixture()
def recorder(monkeypatch: pytest.MonkeyPatch) -> _Recorder:
    recorder = _Recorder(ort.InferenceSession)
    monkeypatch.setattr(ort, "InferenceSession", recorder)
    monkeypatch.setattr(ort, "get_available_providers", lambda: [TENSORRT, CUDA, CPU])
    monkeypatch.setattr(GpuFacts, "of_machine", classmethod(lambda cls: H200))
    return recorder


def test_the_loader_passes_tensorrt_only_the_models_prepared_on_this_gpu(
        tmp_path: Path, recorder: _Recorder, caplog: pytest.LogCaptureFixture) -> None:
    prepared = cm.identity_swapper(tmp_path / "prepared.onnx")
    unprepared = cm.identity_restorer(tmp_path / "unprepared.onnx")
    settings = Settings(providers=(TENSORRT, CUDA, CPU), models_dir=tmp_path / "models",
                        cache_dir=tmp_path / "cache", offline=True)
    loader = ModelLoader(settings, HashMemo(tmp_path / "hashes.json"))
    digest = HashMemo(tmp_path / "hashes.json").sha256(prepared)
    check = PrecisionCheck(True, 0.001, "fp16 matches")
    PrecisionStore(settings.models_dir / "trt").put(digest, H200.gpu, H200.tensorrt, check,
                                                    SWAPPER_INPUTS)
    build = loader.engine_build(prepared)
    assert build is not None and build.key.fp16 and build.options["trt_fp16_enable"] == "True"
    build.folder.mkdir(parents=True)
    (build.folder / "facefuse_swapper.engine").write_bytes(b"engine")
    with caplog.at_level(logging.WARNING, logger="facefuse"):
        loader.sessions.get(prepared)
        loader.sessions.get(unprepared)
    with_trt, without = recorder.calls
    assert with_trt[0] == (TENSORRT, build.options)
    assert [name for name, _ in without] == [CUDA, CPU]
    warned = [r.getMessage() for r in caplog.records if "models prepare" in r.getMessage()]
    assert len(warned) == 1 and "unprepared.onnx" in warned[0]
    other_gpu = GpuFacts("NVIDIA RTX 4090", H200.tensorrt)
    loader._gpu = other_gpu  # another GPU: prepared there, not here
    assert loader.engine_build(prepared) is None


def test_a_pool_without_tensorrt_never_asks_for_a_plan(tmp_path: Path) -> None:
    asked: list[Path] = []
    pool = SessionPool([CPU], engines=lambda p: asked.append(p))  # type: ignore[func-returns-value]
    pool.get(cm.identity_restorer(tmp_path / "r.onnx"))
    assert asked == []


# --- precision ---------------------------------------------------------------------------------

def test_fp16_within_the_tolerance_is_kept() -> None:
    rng = np.random.default_rng(0)
    image = rng.uniform(0.0, 1.0, (1, 3, 64, 64)).astype(np.float32)
    close = image + rng.uniform(-0.004, 0.004, image.shape).astype(np.float32)
    check = compare([image], [close.astype(np.float16)], ["output"])
    assert check.fp16 is True and check.error is not None and check.error < 0.01


def test_a_solid_colour_fp16_image_is_refused() -> None:
    image = np.random.default_rng(1).uniform(-1.0, 1.0, (1, 3, 64, 64)).astype(np.float32)
    solid = np.full_like(image, float(image.mean()))
    check = compare([image], [solid], ["output"])
    assert check.fp16 is False


def test_landmarks_69_px_off_are_refused_and_nan_too() -> None:
    landmarks = np.random.default_rng(2).uniform(0.0, 640.0, (1, 68, 2)).astype(np.float32)
    off = landmarks.copy()
    off[0, 30] += 69.0
    check = compare([landmarks], [off], ["landmarks"])
    assert check.fp16 is False and "landmarks is off by" in check.reason
    broken = landmarks.copy()
    broken[0, 0, 0] = np.nan
    assert compare([landmarks], [broken]).fp16 is False
    assert compare([landmarks], [landmarks[:, :10]]).fp16 is False


def test_decisions_are_kept_per_model_gpu_and_tensorrt(tmp_path: Path,
                                                       caplog: pytest.LogCaptureFixture) -> None:
    store = PrecisionStore(tmp_path / "trt")
    assert store.get(SHA, "H200", "10") == precision.UNVERIFIED
    store.put(SHA, "H200", "10", PrecisionCheck(False, 0.2, "flat"), SWAPPER_INPUTS)
    assert store.get(SHA, "H200", "10") == PrecisionCheck(False, 0.2, "flat")
    assert store.declared(SHA, "H200", "10") == SWAPPER_INPUTS
    assert store.get(SHA, "H200", "11") == precision.UNVERIFIED
    store.path.write_text("{not json")
    with caplog.at_level(logging.WARNING, logger="facefuse"):
        assert store.get(SHA, "H200", "10") == precision.UNVERIFIED
    assert "runs in fp32" in caplog.text


# --- models prepare ----------------------------------------------------------------------------

class _FakeTensorrt:
    """make_session for prepare_model: a CPU session that says it runs on TensorRT; the fp16
    engine's outputs are changed by `spoil` (None: left as they are)."""

    def __init__(self, spoil: Any = None, provider: str = TENSORRT) -> None:
        self.spoil, self.provider, self.entries = spoil, provider, []

    def __call__(self, path: Path, entries: Any) -> Any:
        self.entries.append(list(entries))
        session = cm.cpu_session(path)
        fp16 = entries[0][0] == TENSORRT and entries[0][1]["trt_fp16_enable"] == "True"
        provider, spoil = self.provider, self.spoil if fp16 else None

        class Session:
            def get_inputs(self) -> Any:
                return session.get_inputs()

            def get_outputs(self) -> Any:
                return session.get_outputs()

            def get_providers(self) -> list[str]:
                return [entries[0][0] if entries[0][0] == CPU else provider, CPU]

            def run(self, names: Any, feeds: Any) -> Any:
                outputs = session.run(names, feeds)
                return [spoil(o) for o in outputs] if spoil is not None else outputs

        return Session()


@pytest.mark.parametrize(("spoil", "fp16"), [
    (None, True), (lambda out: np.full_like(out, out.mean()), False)], ids=["kept", "solid"])
def test_prepare_builds_both_engines_compares_and_keeps_the_decision(
        tmp_path: Path, spoil: Any, fp16: bool) -> None:
    model = cm.hyperswap_identity(tmp_path / "hs.onnx", batch="n")
    lines: list[str] = []
    fake = _FakeTensorrt(spoil)
    done = prepare_model("hyperswap", model, SHA, tmp_path / "models", H200, fake, lines.append)
    assert done.check.fp16 is fp16
    assert [e[0][0] for e in fake.entries] == [CPU, TENSORRT, TENSORRT]
    assert [e[0][1]["trt_fp16_enable"] for e in fake.entries[1:]] == ["False", "True"]
    assert fake.entries[1][0][1]["trt_profile_max_shapes"].startswith("source:32x512,")
    assert lines[0] == "hyperswap: building the fp32 TensorRT engine (minutes the first time) ..."
    assert lines[-1].startswith(f"hyperswap: {'fp16' if fp16 else 'fp32'} (")
    store = PrecisionStore(tmp_path / "models" / "trt")
    assert store.get(SHA, H200.gpu, H200.tensorrt).fp16 is fp16
    assert store.declared(SHA, H200.gpu, H200.tensorrt) == {"target": ["n", 3, 256, 256],
                                                           "source": ["n", 512]}
    fp16_plan = engine_build(tmp_path / "models", SHA, {"target": ["n", 3, 256, 256],
                                                       "source": ["n", 512]}, H200, True)
    assert fp16_plan.folder.is_dir() is fp16  # a refused fp16 engine is deleted


def test_prepare_refuses_a_model_tensorrt_does_not_take(tmp_path: Path) -> None:
    model = cm.identity_restorer(tmp_path / "r.onnx")
    with pytest.raises(ModelError, match="TensorRT did not take r"):
        prepare_model("r", model, SHA, tmp_path, H200, _FakeTensorrt(provider=CUDA),
                      lambda line: None)


def test_probe_feeds_are_seeded_and_in_the_declared_types() -> None:
    declared = {"input": ["n", 3, 8, 8], "weight": []}
    types = {"input": "tensor(float)", "weight": "tensor(double)"}
    feeds = probe_feeds(declared, types)
    assert feeds["input"].shape == (1, 3, 8, 8) and feeds["weight"].dtype == np.float64
    assert np.array_equal(feeds["input"], probe_feeds(declared, types)["input"])


def test_the_command_says_what_it_cannot_prepare_here(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    options = ["--models-dir", str(tmp_path), "--offline"]
    assert main(["models", "prepare", "yunet_2023mar", "--providers", "cpu", *options]) == 0
    assert "yunet_2023mar" in capsys.readouterr().out
    code = main(["models", "prepare", "yunet_2023mar", "--providers", "tensorrt", *options])
    assert code == ExitCode.USAGE
    err = capsys.readouterr().err
    assert "TensorRT is not offered by this onnxruntime build" in err
