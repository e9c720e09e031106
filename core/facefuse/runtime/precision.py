"""fp16 or fp32, per model: fp16 only where its output was checked against fp32 and matched.

fp16 engines can be silently wrong: GFPGAN in fp16 has returned a solid-colour image, and one
landmark model's fp16 TensorRT engine was 69 px off. So no model runs in fp16 on trust.
`facefuse models prepare --providers tensorrt` runs each model on the same probe inputs in
fp32 and in fp16 and keeps fp16 only when, for every output:

- max |fp16 - fp32| <= FP16_TOLERANCE x the fp32 output's range (max - min), and
- the fp16 output is not flat where fp32 is not: its standard deviation is at least
  MIN_SPREAD_RATIO of fp32's (a solid-colour image fails this), and it is finite.

The decision is kept in `<models>/trt/precision.json` by model sha256, GPU and TensorRT version
(a new driver-side TensorRT decides again). A model without a decision runs in fp32. On the CPU
nothing is decided: ONNX Runtime's CPU provider runs the model in the precision of its file, and
a CPU fp16 conversion would not say whether TensorRT's fp16 engine is right, so the state shown
there is "unverified -> fp32".
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from ..io.files import atomic_write_bytes

log = logging.getLogger(__name__)

FP16_TOLERANCE = 0.01  # of the fp32 output's range: 2.55 levels of an 8-bit image
MIN_SPREAD_RATIO = 0.5
DECISIONS_FILE = "precision.json"


@dataclass(frozen=True, slots=True)
class PrecisionCheck:
    """The outcome of comparing a model's fp16 outputs with its fp32 outputs.

    fp16: True (matched), False (refused) or None (not checked: runs in fp32).
    error: the largest |fp16 - fp32| over the fp32 range, any output (None: not checked).
    reason: one line saying why."""

    fp16: bool | None
    error: float | None
    reason: str


UNVERIFIED = PrecisionCheck(None, None, "unverified -> fp32")


def compare(reference: Sequence[np.ndarray], candidate: Sequence[np.ndarray],
            names: Sequence[str] | None = None) -> PrecisionCheck:
    """fp16 outputs `candidate` against fp32 outputs `reference` (same order, same shapes)."""
    labels = list(names) if names is not None else [str(i) for i in range(len(reference))]
    worst = 0.0
    for label, want, got in zip(labels, reference, candidate):
        want64 = np.asarray(want, np.float64)
        got64 = np.asarray(got, np.float64)
        if want64.shape != got64.shape:
            return PrecisionCheck(False, None, f"output {label} is {got64.shape} in fp16, "
                                  f"{want64.shape} in fp32")
        if not np.all(np.isfinite(got64)):
            return PrecisionCheck(False, None, f"output {label} holds NaN or inf in fp16")
        span = float(want64.max() - want64.min()) if want64.size else 0.0
        error = float(np.abs(got64 - want64).max() / span) if span > 0 else 0.0
        worst = max(worst, error)
        if error > FP16_TOLERANCE:
            return PrecisionCheck(False, error, f"output {label} is off by {error:.1%} of its "
                                  f"range in fp16 (at most {FP16_TOLERANCE:.0%})")
        spread, want_spread = float(got64.std()), float(want64.std())
        if want_spread > 0 and spread < MIN_SPREAD_RATIO * want_spread:
            return PrecisionCheck(False, error, f"output {label} is flat in fp16 (spread "
                                  f"{spread:.3g} against {want_spread:.3g} in fp32)")
    return PrecisionCheck(True, worst, f"fp16 matches fp32 within {worst:.2%} of the range")


class PrecisionStore:
    """The fp16 decisions of one models folder (`<models>/trt/precision.json`), keyed by
    model sha256, GPU name and TensorRT version."""

    def __init__(self, engines_dir: Path) -> None:
        self.path = engines_dir / DECISIONS_FILE

    @staticmethod
    def key(sha256: str, gpu: str, tensorrt: str) -> str:
        return f"{sha256}|{gpu}|{tensorrt}"

    def get(self, sha256: str, gpu: str, tensorrt: str) -> PrecisionCheck:
        """The decision kept for the model on this GPU and TensorRT, else UNVERIFIED."""
        entry = self._read().get(self.key(sha256, gpu, tensorrt))
        if not isinstance(entry, dict):
            return UNVERIFIED
        fp16 = entry.get("fp16")
        error = entry.get("error")
        return PrecisionCheck(fp16 if isinstance(fp16, bool) else None,
                              float(error) if isinstance(error, int | float) else None,
                              str(entry.get("reason", "")))

    def declared(self, sha256: str, gpu: str, tensorrt: str
                 ) -> dict[str, list[int | str | None]] | None:
        """The model's declared input shapes noted when it was prepared (None: never)."""
        entry = self._read().get(self.key(sha256, gpu, tensorrt))
        shapes = entry.get("declared") if isinstance(entry, dict) else None
        return shapes if isinstance(shapes, dict) else None

    def put(self, sha256: str, gpu: str, tensorrt: str, check: PrecisionCheck,
            declared: Mapping[str, Sequence[int | str | None]]) -> None:
        """Keep a decision and the model's declared input shapes (replaced atomically)."""
        data = self._read()
        data[self.key(sha256, gpu, tensorrt)] = {
            **asdict(check), "declared": {name: list(dims) for name, dims in declared.items()}}
        self.path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_bytes(self.path, json.dumps(data, indent=1, sort_keys=True).encode())

    def _read(self) -> dict[str, object]:
        try:
            data = json.loads(self.path.read_text())
        except FileNotFoundError:
            return {}
        except (OSError, ValueError) as exc:
            log.warning("ignoring %s (%s): every model runs in fp32 until `facefuse models "
                        "prepare` decides again", self.path, exc)
            return {}
        return data if isinstance(data, dict) else {}
