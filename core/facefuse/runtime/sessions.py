"""ONNX Runtime providers and sessions: chosen once, created once per (model, providers).

A model may get several sessions (replicas, SessionReplicas): a batch-1 model (YuNet, SCRFD
det_10g; pass 2's published inswapper, HyperSwap and GFPGAN exports) cannot take the frames of
a window in one run, so each frame runs on a free replica from a thread of its own; every
replica is the same model with the same options, so a frame's outputs are the bits one session
gives. On a GPU each session runs on a compute stream of its own, so the replicas' runs overlap
there too.

The threads ONNX Runtime starts for a session (its intra-op pool) are named
timing.ORT_THREAD_PREFIX + the model's name while the session is created (they inherit the
creating thread's kernel name, which is set for that moment), so whoever measures can tell
their CPU from the rest of the process (timing.ThreadCpu).
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, Protocol

import onnxruntime as ort

from ..errors import ModelError
from ..stages import tensors
from ..timing import ORT_THREAD_PREFIX, threads_named
from .binding import BoundSession
from .providers import parse_providers
from .tensorrt import TENSORRT, EngineBuild, ProviderEntry, render_providers
from .threads import ThreadGate, replica_threads

log = logging.getLogger(__name__)

EngineSource = Callable[[Path], EngineBuild | None]

# Order in which "auto" prefers the providers onnxruntime offers.
AUTO_PREFERENCE = (
    "TensorrtExecutionProvider",
    "CUDAExecutionProvider",
    "CoreMLExecutionProvider",
    "CPUExecutionProvider",
)
CPU = "CPUExecutionProvider"
ORT_LOG_ERROR = 3  # onnxruntime severities: 0 verbose, 1 info, 2 warning, 3 error, 4 fatal


def resolve_providers(requested: str | Sequence[str]) -> tuple[str, ...]:
    """The provider list to create sessions with, CPU always last as the fallback.

    "auto" keeps the providers of AUTO_PREFERENCE that this onnxruntime build offers. An explicit
    provider the build does not offer is dropped with a warning naming what is available.
    """
    available = ort.get_available_providers()
    if isinstance(requested, str):
        requested = AUTO_PREFERENCE if requested == "auto" else parse_providers(requested)
        chosen = [p for p in requested if p in available]
    else:
        chosen = []
        for name in requested:
            if name in available:
                chosen.append(name)
            else:
                log.warning("provider %s is not offered by this onnxruntime build (offers: %s); "
                            "skipping it", name, ", ".join(available))
    if CPU not in chosen:
        chosen.append(CPU)
    if set(chosen) & {"CUDAExecutionProvider", TENSORRT}:
        _load_cuda_libraries()
    log.info("execution providers: %s", ", ".join(chosen))
    return tuple(chosen)


def _load_cuda_libraries() -> None:
    """Load the CUDA and cuDNN libraries of the nvidia-* pip packages where they are installed
    (onnxruntime.preload_dlls), so onnxruntime-gpu finds them without LD_LIBRARY_PATH; with
    system-wide CUDA libraries this changes nothing."""
    preload = getattr(ort, "preload_dlls", None)
    if preload is None:
        return
    try:
        preload()
    except Exception as exc:  # noqa: BLE001 - the session then says what it cannot load
        log.debug("onnxruntime.preload_dlls failed: %s", _first_line(exc))


def provider_options(provider: str) -> dict[str, str]:
    """Per-provider options. TensorRT's come from the model's EngineBuild (runtime.tensorrt):
    a render passes them only where the engine is built."""
    if provider == "CUDAExecutionProvider":
        return {"cudnn_conv_algo_search": "EXHAUSTIVE"}
    return {}


def provider_entries(providers: Sequence[str]) -> list[ProviderEntry]:
    """(provider, options) for each provider, as InferenceSession takes them."""
    return [(p, provider_options(p)) for p in providers]


def allows_spinning(provider: str) -> bool:
    """Whether idle intra-op workers of a session whose first provider is `provider` may spin.
    No provider's do: on the CPU, spinning workers burn the cores a render's decode, paste and
    encode threads need between runs (docs/performance.md has the figures); on a GPU the CPU
    workers only run the few nodes the GPU provider leaves to the CPU."""
    return False


def create_session(model_path: Path, providers: Sequence[str],
                   cache_dir: Path | None = None, threads: int = 0,
                   entries: Sequence[ProviderEntry] | None = None,
                   spinning: bool | None = None) -> ort.InferenceSession:
    """One InferenceSession for model_path. A provider that fails to load is a warning, then CPU.

    threads: intra-op worker threads (0: ONNX Runtime's default, one per physical core).
    entries: the (provider, options) list to use (default: provider_entries(providers)).
    spinning: whether idle intra-op and inter-op workers busy-wait for work (default:
    allows_spinning of the first provider)."""
    provider_list = list(entries) if entries is not None else provider_entries(providers)
    providers = [name for name, _ in provider_list]
    spin = allows_spinning(providers[0]) if spinning is None else spinning
    options = ort.SessionOptions()
    if threads > 0:
        options.intra_op_num_threads = threads
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    # Errors only: ONNX Runtime otherwise warns on every run about harmless graph details, e.g.
    # "Removing initializer 'emap'" of inswapper (an input the model carries but never uses).
    options.log_severity_level = ORT_LOG_ERROR
    options.add_session_config_entry("session.intra_op.allow_spinning", "1" if spin else "0")
    options.add_session_config_entry("session.inter_op.allow_spinning", "1" if spin else "0")
    try:
        with threads_named(ORT_THREAD_PREFIX + model_path.stem):
            session = ort.InferenceSession(str(model_path), sess_options=options,
                                           providers=provider_list)
    except Exception as exc:  # onnxruntime raises plain RuntimeError/Fail subclasses
        if list(providers) == [CPU]:
            raise ModelError(f"{model_path.name} cannot be loaded by ONNX Runtime: "
                             f"{_first_line(exc)}") from exc
        log.warning("could not create a session for %s with %s (%s); falling back to CPU",
                    model_path.name, ", ".join(providers), _first_line(exc))
        return create_session(model_path, [CPU], cache_dir, threads, spinning=spinning)
    _warn_dropped(model_path, providers, session.get_providers())
    return session


def _warn_dropped(model_path: Path, requested: Sequence[str], active: Sequence[str]) -> None:
    dropped = [p for p in requested if p not in active]
    if dropped:
        log.warning("%s: %s failed to load and %s runs the model instead (see `facefuse doctor`)",
                    model_path.name, ", ".join(dropped), active[0])


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__


def batch_is_free(session: Any) -> bool:
    """Whether one run of the session takes any number of crops: every input of two or more
    dimensions leaves its batch free (stages.tensors.batch_is_free; a scalar or 1-d input,
    CodeFormer's weight, is no batch)."""
    return tensors.batch_is_free([node for node in session.get_inputs()
                                  if len(node.shape or ()) >= 2])


class SessionTimer(Protocol):
    """Where session costs go when someone measures them (e.g. timing.RenderTimings)."""

    def session_created(self, ms: float) -> None: ...

    def inference(self, start: float, end: float, cpu_s: float = 0.0) -> None:
        """One run from `start` to `end` (perf_counter s); the calling thread's CPU in it."""
        ...

    def sample_threads(self) -> None:
        """Read the threads' CPU now: sessions are about to be freed (timing.ThreadCpu)."""
        ...


class TimedSession:
    """An InferenceSession whose run() calls are timed into a SessionTimer (when given): wall
    time and the calling thread's CPU time; with a gate, each run holds `threads` of it (the
    session's intra-op threads). Everything else is the session's own (get_inputs,
    get_providers, io_binding, ...)."""

    def __init__(self, session: ort.InferenceSession, timer: SessionTimer | None,
                 gate: ThreadGate | None = None, threads: int = 1) -> None:
        self._session, self._timer, self._gate = session, timer, gate
        self._threads = threads

    def run(self, *args: Any, **kwargs: Any) -> Any:
        return self._timed(self._session.run, *args, **kwargs)

    def run_with_iobinding(self, *args: Any, **kwargs: Any) -> Any:
        return self._timed(self._session.run_with_iobinding, *args, **kwargs)

    def _timed(self, call: Any, *args: Any, **kwargs: Any) -> Any:
        gate = self._gate.hold(self._threads) if self._gate is not None else None
        with gate if gate is not None else contextlib.nullcontext():
            start, cpu = time.perf_counter(), time.thread_time()
            try:
                return call(*args, **kwargs)
            finally:
                if self._timer is not None:
                    self._timer.inference(start, time.perf_counter(), time.thread_time() - cpu)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._session, name)


class SessionReplicas:
    """Several sessions of one model (replicas) run as one: run() takes a free replica (the
    one this thread ran last where it is free), so up to len(replicas) threads run the model
    at once; a thread that finds none free waits. Each replica's outputs are those one
    session gives (same model, same options). Everything else is the first replica's."""

    def __init__(self, replicas: Sequence[Any]) -> None:
        if not replicas:
            raise ValueError("a session needs at least one replica")
        self.replicas = tuple(replicas)
        self._free = list(range(len(self.replicas)))
        self._changed = threading.Condition()
        self._local = threading.local()

    def run(self, *args: Any, **kwargs: Any) -> Any:
        with self._replica() as replica:
            return replica.run(*args, **kwargs)

    def run_with_iobinding(self, *args: Any, **kwargs: Any) -> Any:
        with self._replica() as replica:
            return replica.run_with_iobinding(*args, **kwargs)

    @contextlib.contextmanager
    def _replica(self) -> Iterator[Any]:
        last = getattr(self._local, "index", None)
        with self._changed:
            self._changed.wait_for(lambda: bool(self._free))
            index = last if last in self._free else self._free[-1]
            self._free.remove(index)
        self._local.index = index
        try:
            yield self.replicas[index]
        finally:
            with self._changed:
                self._free.append(index)
                self._changed.notify()

    def __len__(self) -> int:
        return len(self.replicas)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.replicas[0], name)


class SessionPool:
    """Sessions keyed by (resolved model path, providers, replicas, fixed_batch_only); each
    created once and then reused.

    timer: when given, session creation and every run() are timed into it. threads: each
    session's intra-op threads (0: ONNX Runtime's default). With a budget (threads > 0) the
    sessions that run on the CPU pass their runs through one ThreadGate of that many threads,
    whichever thread calls them: pass 1 and pass 2 of a `--selector many` render then never
    keep more than the budget's inference threads busy (runtime.threads). A model asked for
    with replicas > 1 gets that many sessions (SessionReplicas) sharing the threads
    (threads.replica_threads), so they run side by side within the budget. bind: run each
    session through IOBinding with output buffers reused (runtime.binding.BoundSession); False
    runs session.run as is. engines: a model's EngineBuild (or None) when TensorRT is among the
    providers; TensorRT then runs only the models whose engine is built
    (runtime.tensorrt.render_providers)."""

    def __init__(self, providers: Sequence[str], cache_dir: Path | None = None,
                 timer: SessionTimer | None = None, threads: int = 0,
                 bind: bool = True, engines: EngineSource | None = None) -> None:
        self.providers = tuple(providers)
        self.threads = threads
        self.bind = bind
        self._engines = engines
        self._cache_dir = cache_dir
        self._timer = timer
        self._sessions: dict[tuple[str, tuple[str, ...], int, bool], Any] = {}
        self._lock = threading.Lock()
        self._cpu_gate = ThreadGate(threads) if threads > 0 else None

    def get(self, model_path: Path, replicas: int = 1, fixed_batch_only: bool = False) -> Any:
        """The session for model_path: a BoundSession (or, with bind=False, the
        InferenceSession), in a TimedSession when timed or gated; with replicas > 1, a
        SessionReplicas of that many such sessions (fewer under a budget of fewer threads).
        fixed_batch_only: replicas only for a model whose batch is fixed (batch_is_free
        False); one with a free batch gets one session, with the threads of one replica."""
        count = max(1, min(replicas, self.threads) if self.threads > 0 else replicas)
        key = (str(Path(model_path).resolve()), self.providers, count, fixed_batch_only)
        with self._lock:
            if key not in self._sessions:
                self._sessions[key] = self._created(Path(model_path), count, fixed_batch_only)
            return self._sessions[key]

    def _created(self, model_path: Path, replicas: int, fixed_batch_only: bool = False) -> Any:
        if replicas == 1:
            return self._create(model_path, self.threads)
        threads = replica_threads(self.threads, replicas)
        first = self._create(model_path, threads)
        if fixed_batch_only and batch_is_free(first):
            return first
        return SessionReplicas([first, *(self._create(model_path, threads)
                                         for _ in range(replicas - 1))])

    def _create(self, model_path: Path, threads: int) -> Any:
        start = time.perf_counter()
        entries = provider_entries(self.providers)
        if TENSORRT in self.providers:
            build = self._engines(model_path) if self._engines is not None else None
            entries = render_providers(model_path.name, entries, build)
        session = create_session(model_path, self.providers, self._cache_dir, threads, entries)
        if self._timer is not None:
            self._timer.session_created((time.perf_counter() - start) * 1000.0)
        gate = self._cpu_gate if session.get_providers()[0] == CPU else None
        runner = BoundSession(session) if self.bind else session
        if self._timer is None and gate is None:
            return runner
        return TimedSession(runner, self._timer, gate, threads)

    def __len__(self) -> int:
        return len(self._sessions)

    def close(self) -> None:
        """Free every session (the timer, when given, reads the threads' CPU first: ONNX
        Runtime's threads end with their sessions)."""
        with self._lock:
            if self._timer is not None and self._sessions:
                self._timer.sample_threads()
            self._sessions.clear()
