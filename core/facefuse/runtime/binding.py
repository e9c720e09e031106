"""Session runs through ONNX Runtime's IOBinding, with output buffers reused between runs.

A BoundSession answers `run(output_names, feeds)` as an InferenceSession does, so the stages
need not know it is there, but binds the feeds and the outputs itself:

- on the CPU provider the inputs are the caller's numpy arrays (no copy) and every output is
  written into a numpy buffer kept from the previous run of the same shape, so a frame's runs
  allocate no output arrays; the bits are those of `session.run` (same kernels, same inputs);
- on a GPU provider (CUDA, TensorRT) the inputs are copied into device buffers kept per shape
  and the outputs land in device buffers kept per shape, then are copied to the host once.

The arrays run() returns on the CPU are views of those kept buffers: they hold their values
until the same thread's next run of the same session, which is how every stage uses them (each
turns its outputs into new arrays at once). Bindings and buffers are per thread, so one
session may be run from several threads (pass 1 beside pass 2). The first run of a given set
of input shapes lets ONNX Runtime allocate the outputs and notes their shapes (a declared
shape can be wrong: SCRFD files declare their 640 px outputs at any input size); the runs
after it write into kept buffers of those shapes. Where that fails (an output whose size
depends on the pixels), that set of shapes stays with ONNX Runtime's allocation.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import onnxruntime as ort

from .dtypes import ORT_TYPES

log = logging.getLogger(__name__)

ORT_LOG_FATAL = 4
GRAPH_ID_ENTRY = "gpu_graph_id"
GPU_PROVIDERS = ("CUDAExecutionProvider", "TensorrtExecutionProvider")


def device_of(providers: Sequence[str]) -> str:
    """"cuda" when the session's first provider runs on an NVIDIA GPU, else "cpu"."""
    return "cuda" if providers and providers[0] in GPU_PROVIDERS else "cpu"


@dataclass
class _ThreadState:
    """One thread's binding, its kept buffers (name -> (shape, buffer)), the output shapes
    seen per run key (None: not to be kept), and the last run's key."""

    binding: Any
    inputs: dict[str, tuple[tuple[int, ...], Any]] = field(default_factory=dict)
    outputs: dict[str, tuple[tuple[int, ...], Any]] = field(default_factory=dict)
    shapes: dict[Any, tuple[tuple[int, ...], ...] | None] = field(default_factory=dict)
    key: Any = None


class BoundSession:
    """An InferenceSession run through IOBinding (module docstring); everything else
    (get_inputs, get_providers, ...) is the session's own."""

    def __init__(self, session: ort.InferenceSession, device: str | None = None,
                 device_id: int = 0, numpy_io: bool | None = None) -> None:
        """device: "cpu" or "cuda" (default: the session's first provider's). numpy_io: bind
        numpy arrays and keep numpy outputs (default: on the CPU); False keeps OrtValues on
        `device` as a GPU does (on the CPU too: the tests run the GPU code path there)."""
        self._session = session
        self.device = device if device is not None else device_of(session.get_providers())
        self._numpy_io = self.device == "cpu" if numpy_io is None else numpy_io
        self._device_id = device_id
        self._outputs = tuple(node.name for node in session.get_outputs())
        self._types = {node.name: ORT_TYPES.get(node.type) for node in session.get_outputs()}
        self._quiet = ort.RunOptions()
        self._quiet.log_severity_level = ORT_LOG_FATAL  # a kept buffer refused: not an error
        # No CUDA graph (the default), said explicitly: onnxruntime's Python wrapper otherwise
        # looks the entry up and fails over an exception on every run (40 us on the CPU).
        self._quiet.add_run_config_entry(GRAPH_ID_ENTRY, "-1")
        self._local = threading.local()

    def run(self, output_names: Sequence[str] | None, input_feed: Mapping[str, Any],
            run_options: Any = None) -> list[np.ndarray]:
        """The outputs `output_names` (None: all) for `input_feed`, as session.run gives them;
        on the CPU, views of kept buffers (see the module docstring)."""
        names = tuple(output_names) if output_names else self._outputs
        state = self._state()
        feeds = {name: np.asarray(value) for name, value in input_feed.items()}
        key = (tuple((n, a.shape, a.dtype.str) for n, a in feeds.items()), names)
        same = key == state.key  # as the last run: the outputs stay bound to their buffers
        state.key = None
        self._bind_inputs(state, feeds, clear=not same)
        shapes = state.shapes.get(key)
        if shapes is not None:
            if not same:
                self._bind_kept(state, names, shapes)
            try:
                self._session.run_with_iobinding(state.binding, run_options or self._quiet)
            except Exception:  # noqa: BLE001 - onnxruntime's own error types; run again below
                log.debug("%s: outputs of this size cannot be kept; ONNX Runtime allocates "
                          "them", ", ".join(names))
                state.shapes[key] = None
            else:
                state.key = key
                return self._kept_results(state, names)
        return self._allocated_run(state, key, names, run_options)

    def _allocated_run(self, state: _ThreadState, key: Any, names: Sequence[str],
                       run_options: Any) -> list[np.ndarray]:
        """A run whose outputs ONNX Runtime allocates; notes their shapes for the next run."""
        binding = state.binding
        binding.clear_binding_outputs()
        for name in names:
            binding.bind_output(name, self.device, self._device_id)
        self._session.run_with_iobinding(binding, run_options)
        values = binding.get_outputs()
        if key not in state.shapes and all(self._types[n] is not None for n in names):
            state.shapes[key] = tuple(tuple(int(d) for d in v.shape()) for v in values)
        return [value.numpy() for value in values]

    def _state(self) -> _ThreadState:
        state: _ThreadState | None = getattr(self._local, "state", None)
        if state is None:
            state = _ThreadState(self._session.io_binding())
            self._local.state = state
        return state

    def _bind_inputs(self, state: _ThreadState, feeds: Mapping[str, np.ndarray],
                     clear: bool = True) -> None:
        binding = state.binding
        if clear:
            binding.clear_binding_inputs()
        for name, array in feeds.items():
            if self._numpy_io:
                binding.bind_cpu_input(name, np.ascontiguousarray(array))
                continue
            value = _kept(state.inputs, name, array.shape, lambda a=array: (
                ort.OrtValue.ortvalue_from_shape_and_type(a.shape, a.dtype, self.device,
                                                          self._device_id)))
            value.update_inplace(np.ascontiguousarray(array))
            if clear:
                binding.bind_ortvalue_input(name, value)

    def _bind_kept(self, state: _ThreadState, names: Sequence[str],
                   shapes: Sequence[tuple[int, ...]]) -> None:
        binding = state.binding
        binding.clear_binding_outputs()
        for name, shape in zip(names, shapes):
            dtype = self._types[name]
            buffer = _kept(state.outputs, name, shape, lambda s=shape, d=dtype: self._new(s, d))
            binding.bind_ortvalue_output(name, buffer[1] if self._numpy_io else buffer)

    def _new(self, shape: tuple[int, ...], dtype: Any) -> Any:
        """A kept output buffer: on the CPU (numpy array, OrtValue over it), else an OrtValue."""
        if self._numpy_io:
            array = np.empty(shape, dtype)
            return array, ort.OrtValue.ortvalue_from_numpy(array)
        return ort.OrtValue.ortvalue_from_shape_and_type(shape, dtype, self.device,
                                                         self._device_id)

    def _kept_results(self, state: _ThreadState, names: Sequence[str]) -> list[np.ndarray]:
        """The kept numpy buffers on the CPU; host copies of the device buffers elsewhere."""
        if self._numpy_io:
            return [state.outputs[name][1][0] for name in names]
        return [state.outputs[name][1].numpy() for name in names]

    def __getattr__(self, name: str) -> Any:
        return getattr(self._session, name)


def _kept(store: dict[str, tuple[tuple[int, ...], Any]], name: str, shape: tuple[int, ...],
          make: Any) -> Any:
    """The buffer kept under `name` when it has `shape`, else a new one from make() (kept in
    its place: one buffer per name, the last shape run)."""
    shape = tuple(int(s) for s in shape)
    held = store.get(name)
    if held is None or held[0] != shape:
        held = (shape, make())
        store[name] = held
    return held[1]
