"""Where the host packages that the command line starts (the Qt panel, the Resolve bridge) are.

They live in the source tree as addon/panel and addon/resolve and are installed from the wheel
as the top-level packages facefuse_panel and facefuse_resolve (pyproject.toml). The engine never
imports them at module level: a command imports one when it runs, so the engine, farms and
Blender never load Qt or Resolve's module.
"""

from __future__ import annotations

import importlib
from types import MappingProxyType, ModuleType

from ..errors import InputError

PACKAGES = MappingProxyType({"panel": ("facefuse_panel", "addon.panel"),
                             "resolve": ("facefuse_resolve", "addon.resolve")})
EXTRAS = MappingProxyType({"panel": "panel", "resolve": "resolve"})


def host_module(host: str, module: str) -> ModuleType:
    """Import `module` of host `host` ("panel" or "resolve"): the installed package, else the
    source tree's. InputError naming the extra to install when the host or a library it needs
    (PySide6) is missing."""
    installed, source = PACKAGES[host]
    for package in (installed, source):
        try:
            return importlib.import_module(f"{package}.{module}")
        except ModuleNotFoundError as exc:
            if exc.name is not None and not (package.startswith(exc.name)
                                             or exc.name.startswith(package)):
                raise InputError(f"the facefuse {host} needs {exc.name.split('.')[0]}: "
                                 f"pip install 'facefuse[{EXTRAS[host]}]'") from None
    raise InputError(f"the facefuse {host} is not installed: pip install "
                     f"'facefuse[{EXTRAS[host]}]'")
