"""Hosts as plugins: the command line finds the packages of the hosts it starts (the Qt panel,
the Resolve bridge) through the entry-point group HOST_GROUP, and never by a name of its own.

A host registers in its distribution's metadata, naming its package:

    [project.entry-points."facefuse.hosts"]          # pyproject.toml
    panel = "facefuse_panel"

`host_module("panel", "app")` imports that package and then its module `app`. The engine never
imports a host at module level: a command imports one when it runs, so the engine, farms and
Blender never load Qt or Resolve's module. A host that is not installed, or one whose library
(PySide6) is missing, is one sentence naming the extra to install.

facefuse's own hosts live in the source tree as addon/panel and addon/resolve and are installed
from the wheel as the packages facefuse_panel and facefuse_resolve (pyproject.toml). An
editable install copies them under those names; each calls `prefer_source_tree` as it is
imported, so the checkout's live package runs instead of the copy.
"""

from __future__ import annotations

import importlib
import sys
from importlib.metadata import EntryPoint, entry_points
from pathlib import Path
from types import ModuleType

from ..errors import InputError

HOST_GROUP = "facefuse.hosts"
# core/facefuse/hosting/plugins.py -> the checkout, when facefuse runs from a source tree
_CHECKOUT = Path(__file__).resolve().parents[3]


def installed_hosts() -> dict[str, EntryPoint]:
    """The hosts registered in HOST_GROUP, by name (the first on sys.path wins a name)."""
    found: dict[str, EntryPoint] = {}
    for point in entry_points(group=HOST_GROUP):
        found.setdefault(point.name, point)
    return found


def host_package(host: str) -> ModuleType:
    """The package host `host` registered; InputError naming the extra when there is none."""
    point = installed_hosts().get(host)
    if point is None:
        raise InputError(_not_installed(host))
    return _imported(host, point.module)


def host_module(host: str, module: str) -> ModuleType:
    """Import `module` of host `host` ("panel", "resolve", or any registered name). InputError
    naming the extra to install when the host or a library it needs (PySide6) is missing."""
    package = host_package(host)
    return _imported(host, f"{package.__name__}.{module}")


def _imported(host: str, name: str) -> ModuleType:
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as exc:
        missing = exc.name or ""
        if missing and not (name.startswith(missing) or missing.startswith(name.split(".")[0])):
            raise InputError(f"the facefuse {host} host needs {missing.split('.')[0]}: pip "
                             f"install 'facefuse[{host}]'") from None
        raise InputError(_not_installed(host)) from None


def _not_installed(host: str) -> str:
    return f"the facefuse {host} host is not installed: pip install 'facefuse[{host}]'"


def prefer_source_tree(name: str, tree_name: str) -> None:
    """Called by a host package's __init__ with its own __name__ and its name in the source
    tree (e.g. "addon.panel"): imported under its installed name from an editable install of
    a checkout that has it, the checkout's package takes its place in sys.modules, so edits run
    without reinstalling and are the same modules the tests import. Otherwise nothing."""
    tree = _CHECKOUT.joinpath(*tree_name.split("."), "__init__.py")
    if name == tree_name or _CHECKOUT.joinpath("core", "facefuse") != Path(
            __file__).resolve().parents[1] or not tree.is_file():
        return
    try:
        package = importlib.import_module(tree_name)
    except ImportError:
        return
    if Path(package.__file__ or "").resolve() == tree:
        sys.modules[name] = package
