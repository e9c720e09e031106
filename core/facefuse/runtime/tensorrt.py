"""TensorRT engines: where each model's engine lives, with which options, and when to use it.

An engine is specific to the model's bytes, its input shapes, the GPU and the TensorRT version,
and fp16 or fp32; building one takes seconds to minutes. So each model's engine and timing
caches live in a folder of their own under `<models>/trt/`, named by an EngineKey made of all
five, and engines are built only by `facefuse models prepare --providers tensorrt`, which
shows its progress and decides each model's precision (runtime.precision). A render never
builds one: for a model whose engine is not there it leaves TensorRT out (CUDA runs that
model) and says in one line that `models prepare` builds it.

Nothing here imports onnxruntime or TensorRT: the GPU facts come from nvidia-smi and the
installed package metadata, and can be given explicitly (tests, other machines).
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import logging
import shutil
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

log = logging.getLogger(__name__)

TENSORRT = "TensorrtExecutionProvider"
CUDA = "CUDAExecutionProvider"
ENGINE_PREFIX = "facefuse"
ENGINES_FOLDER = "trt"
MAX_BATCH = 32  # the largest batch an engine's profile takes (stages.swap.MAX_BATCH)
# The pip distributions that carry TensorRT's libraries, newest naming first.
TENSORRT_DISTRIBUTIONS = ("tensorrt", "tensorrt-cu13", "tensorrt-cu13-libs", "tensorrt-cu12",
                          "tensorrt-cu12-libs", "tensorrt-libs")

ProviderEntry = tuple[str, dict[str, str]]


@dataclass(frozen=True, slots=True)
class GpuFacts:
    """The GPU and TensorRT an engine is built for ("unknown" where they cannot be told)."""

    gpu: str
    tensorrt: str

    @classmethod
    def of_machine(cls) -> GpuFacts:
        return cls(gpu_name(), tensorrt_version())


@dataclass(frozen=True, slots=True)
class EngineKey:
    """What a TensorRT engine depends on. shapes: "name:1x3x128x128;..." (the input shapes
    the engine is built for, with the profile's largest batch where the batch is free)."""

    model_sha256: str
    shapes: str
    gpu: str
    tensorrt: str
    fp16: bool

    def folder_name(self) -> str:
        """A folder name for this key: the model hash's start, the precision, and a digest
        of the whole key (so a new GPU, driver-side TensorRT or shape gets its own)."""
        text = "|".join((self.model_sha256, self.shapes, self.gpu, self.tensorrt,
                         "fp16" if self.fp16 else "fp32"))
        digest = hashlib.sha256(text.encode()).hexdigest()[:16]
        return f"{self.model_sha256[:12]}-{'fp16' if self.fp16 else 'fp32'}-{digest}"


def gpu_name() -> str:
    """The first GPU's name from nvidia-smi, or "unknown"."""
    exe = shutil.which("nvidia-smi")
    if exe is None:
        return "unknown"
    try:
        done = subprocess.run([exe, "--query-gpu=name", "--format=csv,noheader"],
                              capture_output=True, text=True, timeout=10, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return "unknown"
    lines = done.stdout.strip().splitlines()
    return lines[0].strip() if done.returncode == 0 and lines else "unknown"


def tensorrt_version() -> str:
    """The installed TensorRT version (pip metadata), or "unknown"."""
    for name in TENSORRT_DISTRIBUTIONS:
        try:
            return importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            continue
    return "unknown"


def shapes_text(shapes: Mapping[str, Sequence[int]]) -> str:
    """"name:1x3x128x128;name2:1x512", inputs in name order."""
    return ";".join(f"{name}:{'x'.join(str(int(d)) for d in shape)}"
                    for name, shape in sorted(shapes.items()))


def engine_folder(models_dir: Path, key: EngineKey) -> Path:
    """Where the engine and timing caches of `key` live."""
    return models_dir / ENGINES_FOLDER / key.folder_name()


def engine_built(folder: Path) -> bool:
    """Whether TensorRT left an engine in `folder` (`*.engine`, as ONNX Runtime names them)."""
    return folder.is_dir() and any(folder.glob("*.engine"))


def tensorrt_options(folder: Path, key: EngineKey,
                     profile: Mapping[str, tuple[Sequence[int], Sequence[int]]] | None = None
                     ) -> dict[str, str]:
    """The TensorRT provider options for the engine of `key` in `folder`: engine and timing
    caches there, fp16 as the key says. profile: input name -> (smallest, largest) shape for
    inputs with a free dimension (the engine then takes any shape between)."""
    options = {
        "trt_engine_cache_enable": "True",
        "trt_engine_cache_path": str(folder),
        "trt_engine_cache_prefix": ENGINE_PREFIX,
        "trt_timing_cache_enable": "True",
        "trt_timing_cache_path": str(folder),
        "trt_fp16_enable": "True" if key.fp16 else "False",
    }
    if profile:
        def text(index: int) -> str:
            return ",".join(f"{name}:{'x'.join(str(int(d)) for d in shapes[index])}"
                            for name, shapes in sorted(profile.items()))
        options.update(trt_profile_min_shapes=text(0), trt_profile_opt_shapes=text(0),
                       trt_profile_max_shapes=text(1))
    return options


def model_shapes(declared: Mapping[str, Sequence[int | str | None]], detector_px: int = 640
                 ) -> tuple[dict[str, list[int]], dict[str, tuple[list[int], list[int]]]]:
    """The shapes an engine is built for, from a model's declared input shapes: (shapes,
    profile). A free first dimension (the batch) goes from 1 to MAX_BATCH (shapes: the
    largest); any other free dimension is `detector_px` (a detector's canvas)."""
    shapes: dict[str, list[int]] = {}
    profile: dict[str, tuple[list[int], list[int]]] = {}
    for name, dims in declared.items():
        smallest, largest = [], []
        for axis, dim in enumerate(dims):
            if isinstance(dim, int) and dim > 0:
                smallest.append(dim)
                largest.append(dim)
            elif axis == 0:
                smallest.append(1)
                largest.append(MAX_BATCH)
            else:
                smallest.append(detector_px)
                largest.append(detector_px)
        shapes[name] = largest
        if smallest != largest:
            profile[name] = (smallest, largest)
    return shapes, profile


@dataclass(frozen=True, slots=True)
class EngineBuild:
    """How one model is to run on TensorRT: its key, cache folder and provider options."""

    key: EngineKey
    folder: Path
    options: dict[str, str]

    @property
    def built(self) -> bool:
        return engine_built(self.folder)


def engine_build(models_dir: Path, sha256: str,
                 declared: Mapping[str, Sequence[int | str | None]], facts: GpuFacts, fp16: bool,
                 detector_px: int = 640) -> EngineBuild:
    """The EngineBuild of a model (sha256, declared input shapes) on the GPU of `facts`."""
    shapes, profile = model_shapes(declared, detector_px)
    key = EngineKey(sha256, shapes_text(shapes), facts.gpu, facts.tensorrt, fp16)
    folder = engine_folder(models_dir, key)
    return EngineBuild(key, folder, tensorrt_options(folder, key, profile))


def render_providers(model_name: str, providers: Sequence[ProviderEntry],
                     build: EngineBuild | None) -> list[ProviderEntry]:
    """The provider list a render creates a model's session with: TensorRT only where its
    engine is built (with the build's options); otherwise TensorRT is left out, with one line
    saying that `facefuse models prepare` builds the engine. Never builds one."""
    names = [name for name, _ in providers]
    if TENSORRT not in names:
        return list(providers)
    if build is not None and build.built:
        return [(name, build.options if name == TENSORRT else options)
                for name, options in providers]
    rest = [(name, options) for name, options in providers if name != TENSORRT]
    log.warning("%s: no TensorRT engine for this GPU yet, so %s runs it; `facefuse models "
                "prepare --providers tensorrt` builds the engine (minutes, once)", model_name,
                rest[0][0] if rest else "CPU")
    return rest
