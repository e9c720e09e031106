"""`facefuse models prepare --providers tensorrt`: build each model's TensorRT engines and
decide its precision, with progress, before any render needs them.

For each model: the fp32 engine is built and run on probe inputs, then the fp16 engine, and
runtime.precision.compare decides whether fp16 matches; the decision and the model's declared
input shapes go to `<models>/trt/precision.json`, a refused fp16 engine is deleted. A render
then runs the model on TensorRT in the decided precision (runtime.tensorrt.render_providers).
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import ModelError
from .dtypes import ORT_TYPES
from .precision import PrecisionCheck, PrecisionStore, compare
from .tensorrt import (
    CUDA,
    ENGINES_FOLDER,
    TENSORRT,
    EngineBuild,
    GpuFacts,
    ProviderEntry,
    engine_build,
    model_shapes,
)

Progress = Callable[[str], None]
SessionMaker = Callable[[Path, Sequence[ProviderEntry]], Any]
PROBE_SEED = 20261202
CPU = "CPUExecutionProvider"


@dataclass(frozen=True, slots=True)
class Prepared:
    """What preparing one model gave: the precision decision and the engine used."""

    name: str
    check: PrecisionCheck
    build: EngineBuild
    seconds: float


def probe_feeds(declared: Mapping[str, Sequence[int | str | None]], types: Mapping[str, str],
                detector_px: int = 640) -> dict[str, np.ndarray]:
    """Seeded inputs in the shapes an engine is built for (batch 1): floats uniform in
    [-1, 1] (every family's normalised range holds part of it), integers 0."""
    shapes, profile = model_shapes(declared, detector_px)
    rng = np.random.default_rng(PROBE_SEED)
    feeds = {}
    for name, shape in shapes.items():
        if name in profile:
            shape = profile[name][0]
        dtype = ORT_TYPES.get(types.get(name, "tensor(float)"), np.float32)
        if np.issubdtype(dtype, np.floating):
            feeds[name] = rng.uniform(-1.0, 1.0, shape).astype(dtype)
        else:
            feeds[name] = np.zeros(shape, dtype)
    return feeds


def prepare_model(name: str, path: Path, sha256: str, models_dir: Path, facts: GpuFacts,
                  make_session: SessionMaker, progress: Progress,
                  detector_px: int = 640) -> Prepared:
    """Build the fp32 and fp16 engines of one model, compare them and keep the decision.

    make_session(path, provider entries) creates a session (runtime.sessions.create_session
    in use; tests give a fake). ModelError when TensorRT does not take the model."""
    start = time.perf_counter()
    reader = make_session(path, [(CPU, {})])  # the declared inputs, without building anything
    declared = {node.name: list(node.shape) for node in reader.get_inputs()}
    types = {node.name: node.type for node in reader.get_inputs()}
    names = [node.name for node in reader.get_outputs()]
    del reader
    builds = {fp16: engine_build(models_dir, sha256, declared, facts, fp16, detector_px)
             for fp16 in (False, True)}
    feeds = probe_feeds(declared, types, detector_px)
    outputs: dict[bool, list[np.ndarray]] = {}
    for fp16 in (False, True):
        label = "fp16" if fp16 else "fp32"
        progress(f"{name}: building the {label} TensorRT engine (minutes the first time) ...")
        built = time.perf_counter()
        session = _engine_session(name, path, builds[fp16], make_session)
        outputs[fp16] = [np.array(out) for out in session.run(names, feeds)]
        del session
        progress(f"{name}: {label} engine ready in {time.perf_counter() - built:.1f} s")
    check = compare(outputs[False], outputs[True], names)
    PrecisionStore(models_dir / ENGINES_FOLDER).put(sha256, facts.gpu, facts.tensorrt, check,
                                                    declared)
    if not check.fp16:
        shutil.rmtree(builds[True].folder, ignore_errors=True)
    progress(f"{name}: {'fp16' if check.fp16 else 'fp32'} ({check.reason})")
    return Prepared(name, check, builds[bool(check.fp16)], time.perf_counter() - start)


def _engine_session(name: str, path: Path, build: EngineBuild,
                    make_session: SessionMaker) -> Any:
    """A session on TensorRT with the build's options (building its engine when missing)."""
    build.folder.mkdir(parents=True, exist_ok=True)
    entries: list[ProviderEntry] = [(TENSORRT, build.options),
                                    (CUDA, {"cudnn_conv_algo_search": "EXHAUSTIVE"})]
    session = make_session(path, entries)
    active = session.get_providers()
    if not active or active[0] != TENSORRT:
        raise ModelError(f"TensorRT did not take {name} (it runs on {', '.join(active)}); "
                         "see `facefuse doctor` for the TensorRT libraries")
    return session
