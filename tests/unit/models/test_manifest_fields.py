"""Malformed manifest fields are refused at load with the field named: a
string where a list is due, a size that is not a whole number of bytes, a sha256 that is not 64
hex digits, a URL that is not http, https or file; and a model `file` may not name the models
folder's own bookkeeping (verified.json, .part downloads, locks, hidden temporaries)."""

from __future__ import annotations

from pathlib import Path

import pytest

from facefuse.errors import ExitCode, ModelError
from facefuse.models.manifest import load_manifest
from tests.unit.models.test_manifest import GOOD_FAMILY as FAMILY
from tests.unit.models.test_manifest import GOOD_MODEL as MODEL

MODEL_FIELDS = {
    "urls a string": ('urls = ["https://example.invalid/tiny.onnx"]',
                      'urls = "https://example.invalid/tiny.onnx"', "'urls'"),
    "urls a garbage url": ('urls = ["https://example.invalid/tiny.onnx"]',
                           'urls = ["not a url"]', "'urls'"),
    "urls no host": ('urls = ["https://example.invalid/tiny.onnx"]', 'urls = ["https:///x"]',
                     "'urls'"),
    "urls ftp": ('urls = ["https://example.invalid/tiny.onnx"]', 'urls = ["ftp://h/x.onnx"]',
                 "'urls'"),
    "urls a number": ('urls = ["https://example.invalid/tiny.onnx"]', "urls = [1]", "'urls'"),
    "bytes a string": ("bytes = 10", 'bytes = "big"', "'bytes'"),
    "bytes a float": ("bytes = 10", "bytes = 1.5", "'bytes'"),
    "bytes negative": ("bytes = 10", "bytes = -3", "'bytes'"),
    "bytes a boolean": ("bytes = 10", "bytes = true", "'bytes'"),
    "sha256 a number": ('sha256 = "' + "0" * 64 + '"', "sha256 = 1234", "'sha256'"),
    "sha256 not hex": ('sha256 = "' + "0" * 64 + '"', 'sha256 = "' + "z" * 64 + '"', "'sha256'"),
    "sha256 short": ('sha256 = "' + "0" * 64 + '"', 'sha256 = "abc"', "'sha256'"),
    "name a number": ('name = "tiny"', "name = 7", "'name'"),
    "licence a list": ('licence = "MIT"', 'licence = ["MIT"]', "'licence'"),
    "use another word": ('licence = "MIT"', 'licence = "MIT"\nuse = "studio"', "'use'"),
    "use a boolean": ('licence = "MIT"', 'licence = "MIT"\nuse = true', "'use'"),
    "file verified.json": ('file = "tiny.onnx"', 'file = "verified.json"', "verified.json"),
    "file a download part": ('file = "tiny.onnx"', 'file = "tiny.onnx.part"', "tiny.onnx.part"),
    "file a lock": ('file = "tiny.onnx"', 'file = "tiny.onnx.lock"', "tiny.onnx.lock"),
    "file hidden": ('file = "tiny.onnx"', 'file = ".tiny.onnx"', ".tiny.onnx"),
    "archive url garbage": ("licence = \"MIT\"", 'licence = "MIT"\narchive = { url = "zip", '
                            'sha256 = "' + "0" * 64 + '", bytes = 1, member = "a.onnx" }',
                            "'url'"),
    "archive a string": ('licence = "MIT"', 'licence = "MIT"\narchive = "a.zip"', "'archive'"),
}
FAMILY_FIELDS = {
    "inputs a string": ('inputs = [{ shape = [1, 3, "h", "w"] }]', 'inputs = "x"', "'inputs'"),
    "shape a string": ('inputs = [{ shape = [1, 3, "h", "w"] }]', 'inputs = [{ shape = "x" }]',
                       "'inputs'"),
    "input_size a string": ("input_size = [640, 640]", 'input_size = "640"', "'input_size'"),
    "input_size three": ("input_size = [640, 640]", "input_size = [1, 2, 3]", "'input_size'"),
    "class a number": ('class = "TinyDetector"', "class = 3", "'class'"),
    "mean a string": ('class = "TinyDetector"', 'class = "TinyDetector"\nmean = "x"', "'mean'"),
    "classes not a table": ('class = "TinyDetector"', 'class = "TinyDetector"\nclasses = 3',
                            "'classes'"),
}


def _load(tmp_path: Path, family: str, model: str) -> None:
    path = tmp_path / "manifest.toml"
    path.write_text("schema_version = 1\n" + family + model, encoding="utf-8")
    load_manifest(path)


@pytest.mark.parametrize(("old", "new", "named"), MODEL_FIELDS.values(), ids=list(MODEL_FIELDS))
def test_a_malformed_model_field_is_refused_naming_it(tmp_path: Path, old: str, new: str,
                                                      named: str) -> None:
    assert old in MODEL
    with pytest.raises(ModelError, match=named) as info:
        _load(tmp_path, FAMILY, MODEL.replace(old, new, 1))
    assert info.value.exit_code == ExitCode.MODEL and "\n" not in str(info.value)
    assert "model tiny" in str(info.value) or "name" in named


@pytest.mark.parametrize(("old", "new", "named"), FAMILY_FIELDS.values(),
                         ids=list(FAMILY_FIELDS))
def test_a_malformed_family_field_is_refused_naming_it(tmp_path: Path, old: str, new: str,
                                                       named: str) -> None:
    assert old in FAMILY
    with pytest.raises(ModelError, match=named) as info:
        _load(tmp_path, FAMILY.replace(old, new, 1), MODEL)
    assert "family tiny" in str(info.value)


@pytest.mark.parametrize("url", ["https://example.invalid/tiny.onnx", "http://10.0.0.1:8080/t",
                                 "file:///mnt/models/tiny.onnx", "file://server/share/t.onnx"])
def test_urls_of_every_usable_scheme_load(tmp_path: Path, url: str) -> None:
    _load(tmp_path, FAMILY, MODEL.replace("https://example.invalid/tiny.onnx", url))
