"""facefuse.hosting.plugins: hosts register through the `facefuse.hosts` entry-point group and
the command line finds them there (a fake host, installed as a temporary dist-info on sys.path,
is started by `facefuse panel` as the real one is); a missing host or library is one sentence
naming the extra; an installed copy of a host hands over to the source tree's package."""

from __future__ import annotations

import ast
import importlib
import sys
import textwrap
from importlib.metadata import EntryPoint
from pathlib import Path

import pytest

from facefuse.cli.main import main
from facefuse.errors import InputError
from facefuse.hosting import plugins

ROOT = Path(__file__).resolve().parents[2]


def _install_fake_host(folder: Path, host: str, package: str) -> None:
    """A distribution `fakehost` with a module `app` whose run_standalone records its clip and
    a module `command` adding `facefuse fake CLIP`, which starts it; registered as host `host`
    the way pip installs entry points (dist-info/entry_points.txt)."""
    (folder / package).mkdir(parents=True)
    (folder / package / "__init__.py").write_text("")
    (folder / package / "app.py").write_text(textwrap.dedent("""\
        STARTED = []

        def run_standalone(clip, base=None, sources=(), given=None):
            STARTED.append(clip)
            return 0
        """))
    (folder / package / "command.py").write_text(textwrap.dedent(f"""\
        from pathlib import Path

        from facefuse import host_module

        class FakeCommand:
            place = 99

            def add_parser(self, commands, cli):
                p = commands.add_parser("fake", help="a fake host's command")
                p.add_argument("clip", type=Path)
                cli.engine_options(p, sources_required=False)
                p.set_defaults(handler=lambda args: host_module({host!r}, "app")
                               .run_standalone(args.clip, cli.settings(args)))

        COMMANDS = (FakeCommand(),)
        """))
    info = folder / "fakehost-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: fakehost\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(f"[{plugins.HOST_GROUP}]\n{host} = {package}\n")


@pytest.fixture
def fake_host(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    _install_fake_host(tmp_path, "fake", "fake_host_pkg")
    monkeypatch.syspath_prepend(str(tmp_path))
    importlib.invalidate_caches()
    yield "fake"
    for name in [m for m in sys.modules if m.startswith("fake_host_pkg")]:
        del sys.modules[name]


def test_a_registered_host_is_found_by_its_entry_point(fake_host: str) -> None:
    assert plugins.installed_hosts()[fake_host].value == "fake_host_pkg"
    assert plugins.host_module(fake_host, "app").__name__ == "fake_host_pkg.app"


def test_facefuse_runs_the_commands_a_registered_host_adds(
        fake_host: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    clip = tmp_path / "clip.mp4"
    clip.write_bytes(b"")
    assert main(["fake", str(clip)]) == 0
    assert importlib.import_module("fake_host_pkg.app").STARTED == [clip]
    from facefuse.cli.main import build_parser

    listed = build_parser().format_help()
    assert "a fake host's command" in listed
    assert listed.index("resolve ") < listed.index("panel ") < listed.index("timeline ") \
        < listed.index("fake ") < listed.index("bench ")


def test_the_command_line_names_no_host_command(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without hosts, `facefuse` has no host command: every one comes from an entry point."""
    from facefuse.cli.main import build_parser

    monkeypatch.setattr(plugins, "entry_points", lambda group: [])
    listed = build_parser().format_help()
    assert "render" in listed and not any(f"    {name} " in listed
                                          for name in ("panel", "resolve", "timeline"))


def test_a_host_command_must_be_a_host_command(tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "odd_host_pkg").mkdir()
    (tmp_path / "odd_host_pkg" / "__init__.py").write_text("")
    (tmp_path / "odd_host_pkg" / "command.py").write_text("COMMANDS = (object(),)\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    point = EntryPoint(name="odd", value="odd_host_pkg", group=plugins.HOST_GROUP)
    monkeypatch.setattr(plugins, "entry_points", lambda group: [point])
    monkeypatch.delitem(sys.modules, "odd_host_pkg", raising=False)
    monkeypatch.delitem(sys.modules, "odd_host_pkg.command", raising=False)
    with pytest.raises(TypeError, match="odd_host_pkg.command.COMMANDS holds"):
        plugins.host_commands()
    for name in ("odd_host_pkg", "odd_host_pkg.command"):
        sys.modules.pop(name, None)


def test_facefuse_registers_its_own_hosts() -> None:
    hosts = plugins.installed_hosts()
    assert {"panel", "resolve", "otio"} <= set(hosts), "reinstall: pip install -e '.[test]'"
    # an editable install's copy hands over to the source tree: the modules tests import
    assert plugins.host_module("resolve", "install").__name__ == "addon.resolve.install"


def test_a_missing_host_or_library_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(plugins, "entry_points", lambda group: [])
    with pytest.raises(InputError, match=r"panel host is not installed: pip install "
                                         r"'facefuse\[panel\]'"):
        plugins.host_module("panel", "app")
    point = EntryPoint(name="resolve", value="no_such_host_package", group=plugins.HOST_GROUP)
    monkeypatch.setattr(plugins, "entry_points", lambda group: [point])
    with pytest.raises(InputError, match=r"resolve host is not installed"):
        plugins.host_module("resolve", "bridge")

    def no_qt(name: str):
        raise ModuleNotFoundError("No module named 'PySide6'", name="PySide6")

    point = EntryPoint(name="resolve", value="addon.resolve", group=plugins.HOST_GROUP)
    monkeypatch.setattr(plugins, "entry_points", lambda group: [point])
    monkeypatch.setattr(plugins.importlib, "import_module", no_qt)
    with pytest.raises(InputError, match=r"needs PySide6: pip install 'facefuse\[resolve\]'"):
        plugins.host_module("resolve", "bridge")


def test_an_installed_copy_hands_over_to_the_source_tree(monkeypatch: pytest.MonkeyPatch
                                                          ) -> None:
    monkeypatch.delitem(sys.modules, "copied_resolve", raising=False)
    plugins.prefer_source_tree("copied_resolve", "addon.resolve")
    assert sys.modules.pop("copied_resolve") is importlib.import_module("addon.resolve")
    plugins.prefer_source_tree("addon.resolve", "addon.resolve")  # the tree's own: nothing
    plugins.prefer_source_tree("copied_nothing", "addon.no_such_host")
    assert "copied_nothing" not in sys.modules


def _strings(path: Path) -> list[str]:
    """The string constants of a module's code (docstrings left out)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    docs = {id(node.body[0].value) for node in ast.walk(tree)
            if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef))
            and node.body and isinstance(node.body[0], ast.Expr)}
    return [node.value for node in ast.walk(tree) if isinstance(node, ast.Constant)
            and isinstance(node.value, str) and id(node) not in docs]


def test_the_engine_names_no_host_package() -> None:
    named = [f"{p.relative_to(ROOT)}: {text}" for p in (ROOT / "core").rglob("*.py")
             for text in _strings(p)
             if text.startswith(("addon.", "facefuse_panel", "facefuse_resolve"))]
    assert named == []
