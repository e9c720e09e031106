"""facefuse.hosting.addons: the command line finds the panel and Resolve host packages (source
tree first, then the installed names) and says which extra to install when it cannot."""

from __future__ import annotations

import importlib

import pytest

from facefuse.errors import InputError
from facefuse.hosting import addons


def test_the_source_tree_package_is_found():
    assert addons.host_module("resolve", "install").__name__ == "addon.resolve.install"


def test_the_installed_name_is_the_fallback(monkeypatch: pytest.MonkeyPatch):
    real = importlib.import_module
    tried = []

    def only_installed(name: str):
        tried.append(name)
        if name.startswith("addon."):
            raise ModuleNotFoundError(f"No module named {name!r}", name="addon")
        if name == "facefuse_resolve.install":
            return real("addon.resolve.install")
        return real(name)

    monkeypatch.setattr(addons.importlib, "import_module", only_installed)
    assert addons.host_module("resolve", "install").__name__ == "addon.resolve.install"
    assert tried == ["addon.resolve.install", "facefuse_resolve.install"]


def test_a_missing_host_or_library_names_the_extra(monkeypatch: pytest.MonkeyPatch):
    def absent(name: str):
        raise ModuleNotFoundError(f"No module named {name!r}", name=name.split(".")[0])

    monkeypatch.setattr(addons.importlib, "import_module", absent)
    message = r"panel host is not installed: pip install 'facefuse\[panel\]'"
    with pytest.raises(InputError, match=message):
        addons.host_module("panel", "app")

    def no_qt(name: str):
        raise ModuleNotFoundError("No module named 'PySide6'", name="PySide6")

    monkeypatch.setattr(addons.importlib, "import_module", no_qt)
    with pytest.raises(InputError, match=r"needs PySide6: pip install 'facefuse\[resolve\]'"):
        addons.host_module("resolve", "bridge")
