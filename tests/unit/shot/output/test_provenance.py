"""Resume fingerprints and provenance metadata (shot.output.provenance): what changes a fingerprint,
what must not, and what every output file says about how it was made."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from facefuse import __version__
from facefuse.config import Settings
from facefuse.errors import InputError
from facefuse.shot.contract.request import InputSpec, OutputSpec, RenderRequest
from facefuse.shot.output.provenance import fingerprint, provenance, settings_record
from facefuse.types import SourceIdentity

MODELS = {"detector": "d" * 64, "recogniser": "r" * 64, "swapper": "s" * 64}


def _identity(value: float = 1.0) -> SourceIdentity:
    vector = np.zeros(8, np.float32)
    vector[0] = value
    return SourceIdentity(vector, ("a" * 64,))


def test_the_same_work_gives_the_same_fingerprint():
    one = fingerprint(Settings(), MODELS, _identity(), "ACEScg", {"input": "x"})
    two = fingerprint(Settings(), dict(reversed(list(MODELS.items()))), _identity(), "ACEScg",
                      {"input": "x"})
    assert one == two and len(one) == 64


def test_everything_that_changes_pixels_changes_it():
    base = fingerprint(Settings(), MODELS, _identity(), None, {"input": "x"})
    changed = [
        fingerprint(replace(Settings(), mask_blur=0.5), MODELS, _identity(), None,
                    {"input": "x"}),
        fingerprint(Settings(), {**MODELS, "swapper": "t" * 64}, _identity(), None,
                    {"input": "x"}),
        fingerprint(Settings(), MODELS, _identity(-1.0), None, {"input": "x"}),
        fingerprint(Settings(), MODELS, _identity(), "ACEScg", {"input": "x"}),
        fingerprint(Settings(), MODELS, _identity(), None, {"input": "y"}),
    ]
    assert len({base, *changed}) == 6


def test_machines_and_paths_do_not_change_it(tmp_path: Path):
    """A farm node mounting the models elsewhere, with other providers and caches, resumes."""
    here = Settings(swapper="/mnt/a/inswapper.onnx", models_dir=tmp_path / "a",
                    cache_dir=tmp_path / "c1", providers=("CPUExecutionProvider",))
    there = replace(here, swapper="/farm/models/inswapper.onnx", models_dir=tmp_path / "b",
                    cache_dir=tmp_path / "c2", providers="auto", offline=True)
    assert fingerprint(here, MODELS, _identity(), None) == fingerprint(there, MODELS,
                                                                       _identity(), None)


def test_settings_record_keeps_paths_only_when_not_portable():
    settings = Settings(swapper="/models/inswapper.onnx", reference_images=(Path("/r.png"),))
    full, portable = settings_record(settings), settings_record(settings, portable=True)
    assert full["swapper"] == "/models/inswapper.onnx" and full["reference_images"] == ["/r.png"]
    assert "swapper" not in portable and "reference_images" not in portable
    assert "providers" not in full and "cache_dir" not in full
    json.dumps(full)  # JSON-ready


def test_provenance_names_models_identity_settings_input_and_fingerprint():
    used = {"swapper": {"model": "inswapper_128", "path": "/m/i.onnx", "sha256": "s" * 64}}
    meta = provenance(Settings(), used, _identity(), "f" * 64, "shot.mov")
    assert meta["facefuse:version"] == __version__
    assert json.loads(meta["facefuse:models"]) == {"swapper": {"model": "inswapper_128",
                                                               "sha256": "s" * 64}}
    assert meta["facefuse:source_identity"] == _identity().digest
    assert meta["facefuse:sources_sha256"] == "a" * 64
    assert meta["facefuse:input"] == "shot.mov" and meta["facefuse:fingerprint"] == "f" * 64
    assert json.loads(meta["facefuse:settings"])["selector"] == "one"
    assert all(isinstance(value, str) for value in meta.values())


def test_a_request_refuses_an_unknown_provenance_mode():
    assert RenderRequest(sources=(), input=InputSpec("a.mov"),
                         output=OutputSpec("b.mov", provenance="full"))
    with pytest.raises(InputError, match="provenance 'paths' is not one of names, full"):
        RenderRequest(sources=(), input=InputSpec("a.mov"),
                      output=OutputSpec("b.mov", provenance="paths"))
