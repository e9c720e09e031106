"""Where the host packages that the command line starts (the Qt panel, the Resolve bridge) are.

They live in the source tree as addon/panel and addon/resolve and are installed from the wheel
as the top-level packages facefuse_panel and facefuse_resolve (pyproject.toml). The source
tree's package is tried first: an editable install puts the repository root on the path (so the
live code runs) and also leaves a copy under the installed name. The engine never imports them
at module level: a command imports one when it runs, so the engine, farms and Blender never load
Qt or Resolve's module.
"""

from __future__ import annotations

import importlib
from types import MappingProxyType, ModuleType

from ..errors import InputError

PACKAGES = MappingProxyType({"panel": ("addon.panel", "facefuse_panel"),
                             "resolve": ("addon.resolve", "facefuse_resolve")})
EXTRAS = MappingProxyType({"panel": "panel", "resolve": "resolve"})


def host_module(host: str, module: str) -> ModuleType:
    """Import `module` of host `host` ("panel" or "resolve"): the source tree's package, else
    the installed one. InputError naming the extra to install when the host or a library it needs
    (PySide6) is missing."""
    for package in PACKAGES[host]:
        try:
            return importlib.import_module(f"{package}.{module}")
        except ModuleNotFoundError as exc:
            if exc.name is not None and not (package.startswith(exc.name)
                                             or exc.name.startswith(package)):
                raise InputError(f"the facefuse {host} host needs {exc.name.split('.')[0]}: "
                                 f"pip install 'facefuse[{EXTRAS[host]}]'") from None
    raise InputError(f"the facefuse {host} host is not installed: pip install "
                     f"'facefuse[{EXTRAS[host]}]'")
