"""Which models a host's settings need that are not on this computer, and how to get them.

missing_models and absent_models only check files: nothing is loaded, hashed or downloaded, so
a host may call them while drawing its UI. fetch_models downloads (on a host's worker thread).
Manifest names are looked up in facefuse's shipped model manifest.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from functools import lru_cache
from pathlib import Path

from ..config import Settings
from ..models.locations import default_models_dir
from ..models.manifest import ROLES, Manifest, load_manifest
from ..models.store import ModelStore

MODEL_ROLES = ROLES  # every role a Settings names a model for
LOOK_ROLES = ("detector",)  # what the looks (previews, face checks) need first


@lru_cache(maxsize=1)
def _manifest() -> Manifest:
    """The shipped manifest, parsed once (it does not change while a host runs)."""
    return load_manifest()


def absent_models(settings: Settings, roles: tuple[str, ...] = ROLES) -> list[tuple[str, str]]:
    """(role, model name) of the manifest models chosen for `roles` that are not on disk."""
    store = ModelStore(_manifest(), default_models_dir(settings.models_dir), offline=True)
    chosen = {role: getattr(settings, role) for role in roles}
    missing = {entry.name for entry in store.missing(n for n in chosen.values() if n)}
    return [(role, name) for role, name in chosen.items() if name in missing]


def missing_models(settings: Settings, roles: tuple[str, ...] = ROLES) -> list[str]:
    """One line per model of `roles` that is not on disk and cannot be downloaded now, saying
    how to get it (names the manifest does not know, files that do not exist)."""
    lines = []
    for role in roles:
        name = getattr(settings, role)
        if not name:
            continue
        if _is_path(name):
            if not Path(name).is_file():
                lines.append(f"The {role} model file {name} does not exist")
        elif name not in _manifest().models:
            known = ", ".join(m.name for m in _manifest().models_for_role(role))
            lines.append(f"The {role} model '{name}' is unknown; known: {known}")
    if settings.offline:
        lines += [f"The {role} model {name} is missing: run `facefuse models fetch {name}`, or "
                  "allow Online Access (Preferences > System) to download it"
                  for role, name in absent_models(settings, roles)]
    return lines


def _is_path(name: str) -> bool:
    return name.endswith(".onnx") or "/" in name or os.sep in name


def fetch_models(settings: Settings, names: list[str] | tuple[str, ...],
                 on_progress: Callable[[str, int, int | None], None] | None = None) -> list[Path]:
    """Download the manifest models `names` into the settings' models folder (online, whatever
    settings.offline says: the user asked for it); their paths. on_progress(name, done, total)
    as the store reports bytes. A failed download is one DownloadError naming every model of
    `names` still missing."""
    store = ModelStore(_manifest(), default_models_dir(settings.models_dir), offline=False,
                       on_progress=on_progress)
    return [path for _, path in store.fetch_each(list(names))]
