"""What every output file says about how it was made, and the fingerprint used to resume.

The fingerprint covers everything that changes the pixels (settings, model identities, source
identity, colour space); a re-run skips a finished frame only when its stored fingerprint matches.
A frame of an image sequence carries its own (`frame_fingerprint`): the render's, less what the
shot plan decides (assignments, skips, overrides), with what the plan decides for that frame
(plan.ShotPlan.frame_digest) and the identities it swaps to. So a render whose plan changes in
a few frames (an override, an assignment) re-renders only those.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ...config import Settings
from ...types import SourceIdentity
from ...version import __version__

PREFIX = "facefuse:"
FINGERPRINT = f"{PREFIX}fingerprint"
# Settings fields that do not change pixels and stay out of the fingerprint.
NOT_PIXEL_SETTINGS = frozenset({"providers", "models_dir", "cache_dir", "offline",
                                "use_embedding_cache", "threads", "detector_sessions",
                                "swap_workers", "frame_memory_mib"})
# Settings named by path: the fingerprint takes their contents' sha256 instead, so farm
# machines that mount the same files at other paths still recognise finished frames.
BY_CONTENT_SETTINGS = frozenset({"detector", "recogniser", "swapper", "enhancer",
                                 "reference_images", "occluder", "parser"})


def settings_record(settings: Settings, portable: bool = False,
                    paths: bool = True) -> dict[str, Any]:
    """The pixel-relevant settings as JSON-ready data (portable: without the settings named by
    path; paths=False: those settings by file name only, no local folders)."""
    record = {}
    for field in dataclasses.fields(settings):
        if field.name in NOT_PIXEL_SETTINGS or (portable and field.name in BY_CONTENT_SETTINGS):
            continue
        value = getattr(settings, field.name)
        if not paths and field.name in BY_CONTENT_SETTINGS:
            value = _file_names(value)
        record[field.name] = _jsonable(value)
    return record


def file_name(text: str) -> str:
    """The last part of a path (either separator); a manifest name comes back unchanged."""
    return text.replace("\\", "/").rstrip("/").rsplit("/", 1)[-1]


def _file_names(value: Any) -> Any:
    if isinstance(value, (str, Path)):
        return file_name(str(value))
    if isinstance(value, tuple):
        return tuple(_file_names(v) for v in value)
    return value


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


def _model_record(used: Mapping[str, str], full: bool) -> dict[str, str]:
    record = {"model": used["model"] if full else file_name(used["model"]),
              "sha256": used["sha256"]}
    if full and "path" in used:
        record["path"] = used["path"]
    return record


def provenance(settings: Settings, models_used: Mapping[str, Mapping[str, str]],
               identity: SourceIdentity, render_fingerprint: str,
               input_label: str, full: bool = False) -> dict[str, str]:
    """String metadata for every output file (EXR/PNG/TIFF attributes or container tags).

    By default files are named by file name and sha256 only, so outputs handed on do not carry
    the local folders they were made from; full=True (--provenance full) adds the paths of the
    input, the models and the settings' files."""
    models = {role: _model_record(m, full) for role, m in models_used.items()}
    return {
        f"{PREFIX}version": __version__,
        f"{PREFIX}models": json.dumps(models, sort_keys=True),
        f"{PREFIX}source_identity": identity.digest,
        f"{PREFIX}sources_sha256": ",".join(identity.source_sha256),
        f"{PREFIX}settings": json.dumps(settings_record(settings, paths=full), sort_keys=True),
        f"{PREFIX}input": input_label if full else file_name(input_label),
        FINGERPRINT: render_fingerprint,
    }


def frame_fingerprint(render_fingerprint: str, frame_digest: str,
                      identity_digests: Sequence[str]) -> str:
    """The fingerprint of one frame: the render's, the frame's plan digest and the digests of
    the identities its faces are swapped to, in paste order."""
    text = "|".join((render_fingerprint, frame_digest, *identity_digests))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()
