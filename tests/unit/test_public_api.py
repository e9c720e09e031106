"""The public API (facefuse/__init__.py): every name in __all__ resolves, `import facefuse`
loads no heavy library, and the names mypy sees (the TYPE_CHECKING imports, where each name is
written once) are the names served at run time, from the same modules."""

from __future__ import annotations

import ast
import importlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import facefuse

INIT = Path(facefuse.__file__)
HEAVY = ("onnxruntime", "onnx", "cv2", "av", "OpenImageIO", "PyOpenColorIO")


def test_import_facefuse_loads_no_engine_library() -> None:
    code = ("import json, sys, facefuse; print(json.dumps(sorted(m for m in sys.modules "
            f"if m.split('.')[0] in {{'facefuse', *{HEAVY!r}}})))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
                          timeout=60, check=True)
    assert json.loads(done.stdout) == ["facefuse", "facefuse.version"]


@pytest.mark.parametrize("name", facefuse.__all__)
def test_every_public_name_resolves(name: str) -> None:
    assert getattr(facefuse, name) is not None
    assert name in dir(facefuse)


def test_an_unknown_name_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="no_such_name"):
        facefuse.no_such_name  # noqa: B018
    with pytest.raises(ImportError):
        from facefuse import no_such_name  # noqa: F401


def _type_checking_imports() -> dict[str, str]:
    tree = ast.parse(INIT.read_text(encoding="utf-8"))
    block = next(node for node in tree.body if isinstance(node, ast.If)
                 and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING")
    return {alias.name: "." * node.level + (node.module or "") for node in block.body
            if isinstance(node, ast.ImportFrom) for alias in node.names}


def test_the_names_mypy_sees_are_the_names_served() -> None:
    assert _type_checking_imports() == dict(facefuse._WHERE)
    assert sorted(facefuse.__all__) == sorted({"__version__", *facefuse._WHERE})
    assert len(facefuse.__all__) == len(set(facefuse.__all__)), "a public name imported twice"


@pytest.mark.parametrize("name", sorted(facefuse._WHERE))
def test_each_name_is_served_from_the_module_mypy_sees(name: str) -> None:
    module = importlib.import_module(facefuse._WHERE[name], "facefuse")
    assert getattr(facefuse, name) is getattr(module, name)
