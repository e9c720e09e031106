"""The layout holds: no import circles, every import points down the layers, the engine never
imports a host, host adapters never import cv2 or onnxruntime, no module-level mutable state.

The graph is read from the source (every import statement, at module level or inside a
function), so a circle cannot hide behind a function-level import.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "core" / "facefuse"
HOSTS = {"bpy", "PySide6", "DaVinciResolveScript", "fusionscript", "opentimelineio"}
ENGINE_ONLY = {"cv2", "onnxruntime", "onnx"}

# Bottom to top: a module may import its own layer or those below, never one above.
# "facefuse" is the package itself, the public API (facefuse/__init__.py): it names what the
# layers below offer hosts and sits above them; its submodules are in their own rows.
PUBLIC_API = "facefuse"
LAYERS = (
    ("facefuse.version", "facefuse.types", "facefuse.errors", "facefuse.vectors",
     "facefuse.timing", "facefuse.config", "facefuse.periodic", "facefuse.stopping",
     "facefuse.timebase",
     # the command line's report streams, public for hosts that print (Blender headless)
     "facefuse.cli.streams", "facefuse.cli.printable"),
    ("facefuse.geometry", "facefuse.masks", "facefuse.paste", "facefuse.selection",
     "facefuse.color", "facefuse.io"),
    ("facefuse.cache",),
    ("facefuse.models",),
    # what a render answers for: consent records, and the signed content credentials
    ("facefuse.consent", "facefuse.credentials"),
    ("facefuse.stages",),
    ("facefuse.runtime",),
    ("facefuse.swapping",),
    ("facefuse.pipeline",),
    # shot/ in wings, bottom to top: the request contract, the shot plan, what an output
    # carries, the run of a render, the quick looks for hosts
    ("facefuse.shot",),
    ("facefuse.shot.contract",),
    ("facefuse.shot.plan",),
    ("facefuse.shot.output",),
    ("facefuse.shot.run",),
    ("facefuse.shot.looks",),
    ("facefuse.review",),
    ("facefuse.hosting",),
    (PUBLIC_API,),
    ("facefuse.farm",),
    ("facefuse.cli", "facefuse.__main__"),
)
# Modules that import an optional extra (dask) when loaded: the command needing them imports
# them in a function. The graph above still reads those imports, so no circle can hide there.
LAZY_MODULES = {"facefuse.farm.dask_jobs"}
# Engine modules that load ONNX Runtime, FFmpeg, OpenCV or OpenColorIO: the cli modules import
# them where their command runs, so the command line starts without them (test_cli_startup.py).
LAZY_MODULES |= {"facefuse.shot.run.render", "facefuse.shot.looks.stills",
                 "facefuse.shot.contract.inputs", "facefuse.pipeline", "facefuse.color",
                 "facefuse.io.images", "facefuse.runtime.sessions", "facefuse.runtime.doctor",
                 "facefuse.review.writing", "facefuse.shot.run.plan_only",
                 "facefuse.shot.run.replacement", "facefuse.shot.output.signing"}


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _resolve(node: ast.ImportFrom, module: str, is_package: bool) -> str:
    if node.level == 0:
        return node.module or ""
    base = module.split(".")
    base = base if is_package else base[:-1]
    base = base[:len(base) - (node.level - 1)]
    return ".".join([*base, node.module] if node.module else base)


def _engine_imports(path: Path, modules: set[str]) -> Iterator[tuple[str, int]]:
    """(imported facefuse module, line) for every import in the file, resolved to a module of
    the package (a name imported from a package counts as its submodule when it is one)."""
    module, is_package = _module_name(path), path.name == "__init__.py"
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = _resolve(node, module, is_package)
            targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base
                       for a in node.names]
        else:
            continue
        for target in targets:
            while target and target not in modules:
                target = target.rpartition(".")[0]
            if target.startswith("facefuse"):
                yield target, node.lineno


def _graph() -> dict[str, set[str]]:
    files = {_module_name(p): p for p in PACKAGE.rglob("*.py")}
    modules = set(files)
    return {name: {t for t, _ in _engine_imports(path, modules) if t != name}
            for name, path in files.items()}


def _layer(module: str) -> int:
    best, found = -1, -1
    for index, members in enumerate(LAYERS):
        for member in members:
            below = member != PUBLIC_API and module.startswith(member + ".")
            if (module == member or below) and len(member) > best:
                best, found = len(member), index
    assert found >= 0, f"{module} belongs to no layer: add it to LAYERS"
    return found


def _find_circle(graph: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return [*stack[stack.index(nxt):], nxt]
            if nxt not in state and (circle := visit(nxt)) is not None:
                return circle
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state and (circle := visit(node)) is not None:
            return circle
    return None


def test_the_engine_has_no_import_circles():
    graph = _graph()
    assert len(graph) > 40
    circle = _find_circle(graph)
    assert circle is None, "import circle: " + " -> ".join(circle or [])


def _host_graph(folder: Path) -> dict[str, set[str]]:
    """The imports among one host package's own modules (addon/NAME), at any level (under
    TYPE_CHECKING too: a circle of types is a circle a reader walks)."""
    files = {p.relative_to(folder).with_suffix("").as_posix().replace("/", "."): p
             for p in folder.rglob("*.py")}
    names = {name.removesuffix(".__init__") if name != "__init__" else "" for name in files}
    graph: dict[str, set[str]] = {}
    for name, path in files.items():
        module = name.removesuffix(".__init__") if name != "__init__" else ""
        is_package = path.name == "__init__.py"
        base = module.split(".") if module else []
        base = base if is_package else base[:-1]
        targets = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.ImportFrom) or node.level == 0:
                continue
            parent = base[:len(base) - (node.level - 1)]
            start = ".".join([*parent, node.module] if node.module else parent)
            for alias in node.names:
                joined = ".".join(filter(None, (start, alias.name)))
                targets.add(joined if joined in names else start)
        graph[module or "__init__"] = {t for t in targets if t in names and t != module}
    return graph


@pytest.mark.parametrize("host", sorted(p.name for p in (ROOT / "addon").iterdir()
                                        if p.is_dir() and (p / "__init__.py").is_file()))
def test_no_host_has_import_circles(host: str):
    graph = _host_graph(ROOT / "addon" / host)
    assert len(graph) > 5
    circle = _find_circle(graph)
    assert circle is None, f"import circle in addon/{host}: " + " -> ".join(circle or [])


def test_the_host_circle_check_reads_type_checking_imports(tmp_path: Path):
    (tmp_path / "__init__.py").write_text("")
    (tmp_path / "a.py").write_text("from .b import B\n")
    (tmp_path / "b.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
                                   "    from .a import A\n")
    (tmp_path / "c.py").write_text("from . import a\n")
    graph = _host_graph(tmp_path)
    assert graph["c"] == {"a"} and _find_circle(graph) == ["a", "b", "a"]


def test_the_circle_finder_finds_a_circle():
    assert _find_circle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert _find_circle({"a": {"b"}, "b": set()}) is None


def test_every_import_points_down_the_layers():
    wrong = [f"{module} (layer {_layer(module)}) imports {target} (layer {_layer(target)})"
             for module, targets in _graph().items() for target in targets
             if _layer(target) > _layer(module)]
    assert not wrong, "\n".join(wrong)


def test_the_engine_imports_its_own_modules_at_module_level_only():
    """A function-level import of an engine module would only be there to hide a circle."""
    modules = set(_graph())
    hidden = []
    for path in PACKAGE.rglob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        top_level = {id(node) for node in tree.body}
        top_level |= {id(inner) for node in tree.body if _is_type_checking_block(node)
                      for inner in node.body}
        for node in ast.walk(tree):
            if isinstance(node, (ast.Import, ast.ImportFrom)) and id(node) not in top_level:
                resolved = (_resolve(node, _module_name(path), path.name == "__init__.py")
                            if isinstance(node, ast.ImportFrom) else node.names[0].name)
                lazy = resolved in LAZY_MODULES or any(
                    f"{resolved}.{alias.name}" in LAZY_MODULES for alias in node.names)
                if not lazy and (resolved.startswith("facefuse") or (
                        isinstance(node, ast.ImportFrom) and node.level > 0)):
                    hidden.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert modules and not hidden, hidden


def _is_type_checking_block(node: ast.stmt) -> bool:
    return isinstance(node, ast.If) and isinstance(node.test, ast.Name) and \
        node.test.id == "TYPE_CHECKING"


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


HOST_FOLDERS = sorted(p.name for p in (ROOT / "addon").iterdir() if p.is_dir())


@pytest.mark.parametrize("host", HOST_FOLDERS)
def test_hosts_never_import_engine_internals(host: str):
    files = list((ROOT / "addon" / host).rglob("*.py"))
    assert "blender" in HOST_FOLDERS and files
    for path in files:
        assert not _imports(path) & ENGINE_ONLY, f"{path} does pixel or model work"


def _engine_names(path: Path) -> Iterator[tuple[str, int]]:
    """(what a file imports of facefuse, line): "facefuse.x" for a submodule, "facefuse:NAME"
    for a name taken from the package itself."""
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            yield from ((a.name, node.lineno) for a in node.names
                        if a.name.split(".")[0] == "facefuse")
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            if node.module == "facefuse":
                yield from ((f"facefuse:{a.name}", node.lineno) for a in node.names)
            elif node.module.split(".")[0] == "facefuse":
                yield node.module, node.lineno


def test_hosts_import_only_the_public_api():
    """addon/ imports `facefuse` and the names of its __all__, never an engine module."""
    import facefuse

    public = {f"facefuse:{name}" for name in facefuse.__all__} | {"facefuse"}
    files = list((ROOT / "addon").rglob("*.py"))
    assert len(files) > 20
    wrong = [f"{path.relative_to(ROOT)}:{line} imports {what}" for path in files
             for what, line in _engine_names(path) if what not in public]
    assert not wrong, "\n".join(wrong)


def test_the_public_api_check_sees_engine_imports(tmp_path: Path):
    host = tmp_path / "host.py"
    host.write_text("import facefuse.pipeline\nfrom facefuse.shot import render\n"
                    "from facefuse import config, Settings\n")
    assert [what for what, _ in _engine_names(host)] == [
        "facefuse.pipeline", "facefuse.shot", "facefuse:config", "facefuse:Settings"]


def test_no_module_level_mutable_state_in_core():
    files = list((ROOT / "core").rglob("*.py"))
    assert len(files) > 40
    for path in files:
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in tree.body:
            targets = (node.targets if isinstance(node, ast.Assign)
                       else [getattr(node, "target", None)])
            if any(isinstance(t, ast.Name) and t.id == "__all__" for t in targets):
                continue
            if isinstance(node, (ast.Assign, ast.AnnAssign)):
                value = node.value
                assert not isinstance(value, (ast.List, ast.Dict, ast.Set, ast.ListComp,
                                              ast.DictComp, ast.SetComp)), (
                    f"{path}:{node.lineno} module-level mutable container")


def test_the_panel_and_resolve_hosts_are_checked_like_blender():
    """addon/panel and addon/resolve are hosts: the checks above cover them (no cv2, no
    onnxruntime), and only the Resolve bridge names Resolve's scripting module."""
    assert {"blender", "panel", "resolve"} <= set(HOST_FOLDERS)
    naming = sorted(str(p.relative_to(ROOT)) for folder in ("core", "addon")
                    for p in (ROOT / folder).rglob("*.py")
                    if ".scriptapp(" in p.read_text(encoding="utf-8"))
    assert naming == ["addon/resolve/bridge.py"]
