"""What every output file says about how it was made, and the fingerprint used to resume.

The fingerprint covers everything that changes the pixels (settings, model identities, source
identity, colour space); a re-run skips a finished frame only when its stored fingerprint matches.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from .. import __version__
from ..config import Settings
from ..types import SourceIdentity

PREFIX = "facefuse:"
# Settings fields that do not change pixels and stay out of the fingerprint.
NOT_PIXEL_SETTINGS = frozenset({"providers", "models_dir", "cache_dir", "offline",
                                "use_embedding_cache"})
# Settings named by path: the fingerprint takes their contents' sha256 instead, so farm
# machines that mount the same files at other paths still recognise finished frames.
BY_CONTENT_SETTINGS = frozenset({"detector", "recogniser", "swapper", "enhancer",
                                 "reference_images"})


def settings_record(settings: Settings, portable: bool = False) -> dict[str, Any]:
    """The pixel-relevant settings as JSON-ready data (portable: without file paths)."""
    record = {}
    for field in dataclasses.fields(settings):
        if field.name in NOT_PIXEL_SETTINGS or (portable and field.name in BY_CONTENT_SETTINGS):
            continue
        value = getattr(settings, field.name)
        record[field.name] = _jsonable(value)
    return record


def _jsonable(value: Any) -> Any:
    if isinstance(value, Path):
        return str(value)
    if isinstance(value, tuple):
        return [_jsonable(v) for v in value]
    return value


def fingerprint(settings: Settings, model_ids: Mapping[str, str], identity: SourceIdentity,
                colorspace: str | None, extra: Mapping[str, Any] | None = None) -> str:
    """sha256 over everything that decides an output frame's pixels.

    model_ids: role -> the model file's sha256; extra: anything else that matters, by content
    (e.g. the input's and the reference images' sha256)."""
    payload = {"settings": settings_record(settings, portable=True),
               "models": dict(sorted(model_ids.items())),
               "identity": identity.digest, "colorspace": colorspace, "extra": dict(extra or {})}
    text = json.dumps(payload, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def provenance(settings: Settings, models_used: Mapping[str, Mapping[str, str]],
               identity: SourceIdentity, render_fingerprint: str,
               input_label: str) -> dict[str, str]:
    """String metadata for every output file (EXR/PNG/TIFF attributes or container tags)."""
    models = {role: {"model": m["model"], "sha256": m["sha256"]} for role, m in
              models_used.items()}
    return {
        f"{PREFIX}version": __version__,
        f"{PREFIX}models": json.dumps(models, sort_keys=True),
        f"{PREFIX}source_identity": identity.digest,
        f"{PREFIX}sources_sha256": ",".join(identity.source_sha256),
        f"{PREFIX}settings": json.dumps(settings_record(settings), sort_keys=True),
        f"{PREFIX}input": input_label,
        f"{PREFIX}fingerprint": render_fingerprint,
    }
