"""The engine never imports a host; host adapters never import cv2 or onnxruntime."""

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
HOSTS = {"bpy", "PySide6", "DaVinciResolveScript", "fusionscript"}
ENGINE_ONLY = {"cv2", "onnxruntime", "onnx"}


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module.split(".")[0])
    return names


def test_core_never_imports_a_host():
    files = list((ROOT / "core").rglob("*.py"))
    assert files
    for path in files:
        assert not _imports(path) & HOSTS, f"{path} imports a host module"


def test_addons_never_import_engine_internals():
    for path in (ROOT / "addon").rglob("*.py") if (ROOT / "addon").is_dir() else []:
        assert not _imports(path) & ENGINE_ONLY, f"{path} does pixel or model work"


def test_no_module_level_mutable_state_in_core():
    for path in (ROOT / "core").rglob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in tree.body:
            targets = node.targets if isinstance(node, ast.Assign) else [getattr(node, "target", None)]
            if any(isinstance(t, ast.Name) and t.id == "__all__" for t in targets):
                continue
            if isinstance(node, (ast.Assign, ast.AnnAssign)):
                value = node.value
                assert not isinstance(value, (ast.List, ast.Dict, ast.Set, ast.ListComp,
                                              ast.DictComp, ast.SetComp)), (
                    f"{path}:{node.lineno} module-level mutable container")
