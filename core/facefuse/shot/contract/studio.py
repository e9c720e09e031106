"""The studio settings file: a policy every render on a machine honours, and the key its outputs
are signed with, configured once instead of on every command line.

The file is TOML, found at $FACEFUSE_STUDIO, else `studio.toml` in the user config folder
(`facefuse doctor` names it); absent, nothing changes:

    [policy]
    use = "commercial"          # every render is commercial work: research-only models refused
    require_consent = true      # nobody is swapped without a valid consent record
    project = "NIGHTFALL"       # what consent records' scope names

    [signing]
    cert = "/studio/c2pa/chain.pem"
    key = "/studio/c2pa/signer.key"
    timestamp_url = "http://timestamp.example.com"

    [model_licences]            # the studio's own model files, by path: the use each allows
    "/studio/models/jane-doe.onnx" = "commercial"

The policy is a floor: a command line may ask for more (--require-consent, --use commercial)
but never less. `model_licences` states the use of the studio's own model files, so a panel or
Blender render of them can be commercial work too (a command line's --model-licence wins). The
signing key is used when the request names none; FACEFUSE_SIGN_CERT and FACEFUSE_SIGN_KEY come
between the two. A farm submission writes the outcome into each task's command line, so
workers honour it whatever their own files say.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import platformdirs

from ...errors import InputError
from ...io import small_files
from ...models.locations import looks_like_model_path
from ...models.manifest import ROLES
from .request import USES, PolicyChoices, RenderRequest, SigningChoices

STUDIO_ENV = "FACEFUSE_STUDIO"
SIGN_CERT_ENV, SIGN_KEY_ENV = "FACEFUSE_SIGN_CERT", "FACEFUSE_SIGN_KEY"


@dataclass(frozen=True, slots=True)
class Studio:
    """What the studio settings file says: `policy` (its floor) and `signing` (its key)."""

    policy: PolicyChoices = field(default_factory=PolicyChoices)
    signing: SigningChoices = field(default_factory=SigningChoices)
    path: Path | None = None
    model_licences: Mapping[Path, str] = field(default_factory=dict)  # own file -> its use


def studio_path() -> Path:
    """Where the studio settings file is looked for ($FACEFUSE_STUDIO, else the user config
    folder's studio.toml)."""
    named = os.environ.get(STUDIO_ENV)
    if named:
        return Path(named)
    return Path(platformdirs.user_config_dir("facefuse")) / "studio.toml"


def load_studio(path: Path | None = None) -> Studio:
    """The studio settings at `path` (default: studio_path()); an absent default file is an
    empty Studio, a named one that is missing or wrong an InputError."""
    named = path is not None or bool(os.environ.get(STUDIO_ENV))
    path = path if path is not None else studio_path()
    if not named and not path.exists():
        return Studio()
    data = small_files.load_toml(path, f"the studio settings file {path}")
    policy, signing = _table(data, "policy", path), _table(data, "signing", path)
    licences = _model_licences(_table(data, "model_licences", path), path)
    use = policy.get("use", "research")
    if use not in USES:
        raise _wrong(path, "policy.use", f"one of {', '.join(USES)}")
    require = policy.get("require_consent", False)
    if not isinstance(require, bool):
        raise _wrong(path, "policy.require_consent", "true or false")
    return Studio(PolicyChoices(use=use, require_consent=require,
                                project=_text(policy, "project", path)),
                  SigningChoices(_path(signing, "cert", path), _path(signing, "key", path),
                                 _text(signing, "timestamp_url", path)), path, licences)


def _model_licences(table: dict[str, Any], path: Path) -> dict[Path, str]:
    """[model_licences]: a model file's path (relative ones to the settings file's folder) ->
    the widest use its licence allows."""
    licences = {}
    for name, use in table.items():
        if use not in USES:
            raise _wrong(path, f"model_licences.{name!r}", f"one of {', '.join(USES)}")
        named = _path({"file": name}, "file", path)
        assert named is not None
        licences[named.resolve()] = use
    return licences


def under_studio(request: RenderRequest, studio: Studio) -> RenderRequest:
    """`request` with the studio's floor and, where it names none, the signing key of the
    environment (FACEFUSE_SIGN_CERT / _KEY) or of the studio file."""
    floor, policy = studio.policy, request.policy
    policy = replace(policy, use=max(policy.use, floor.use, key=USES.index),
                     require_consent=policy.require_consent or floor.require_consent,
                     project=policy.project if policy.project is not None else floor.project,
                     model_licences=_stated(request, studio))
    signing = request.signing
    if not signing.signs:
        signing = _environment_signing() or studio.signing
    return replace(request, policy=policy, signing=signing)


def _stated(request: RenderRequest, studio: Studio) -> tuple[tuple[str, str], ...]:
    """The request's stated model uses, with the studio's for its own model files the
    request states nothing of."""
    stated = dict(request.policy.model_licences)
    for role in ROLES:
        option = getattr(request.settings, role)
        if role in stated or not option or not looks_like_model_path(option):
            continue
        use = studio.model_licences.get(Path(option).expanduser().resolve())
        if use is not None:
            stated[role] = use
    return tuple(stated.items())


def _environment_signing() -> SigningChoices | None:
    cert, key = os.environ.get(SIGN_CERT_ENV), os.environ.get(SIGN_KEY_ENV)
    if not cert and not key:
        return None
    if not cert or not key:
        raise InputError(f"content credentials need both {SIGN_CERT_ENV} and {SIGN_KEY_ENV}")
    return SigningChoices(Path(cert), Path(key))


def _table(data: dict[str, Any], name: str, path: Path) -> dict[str, Any]:
    table = data.get(name, {})
    if not isinstance(table, dict):
        raise _wrong(path, name, "a table")
    return table


def _text(table: dict[str, Any], key: str, path: Path) -> str | None:
    value = table.get(key)
    if value is not None and (not isinstance(value, str) or not value):
        raise _wrong(path, key, "a non-empty string")
    return value


def _path(table: dict[str, Any], key: str, path: Path) -> Path | None:
    text = _text(table, key, path)
    if text is None:
        return None
    named = Path(text).expanduser()
    return named if named.is_absolute() else path.parent / named


def _wrong(path: Path, key: str, what: str) -> InputError:
    return InputError(f"the studio settings file {path}: {key} must be {what} "
                      "(see docs/consent.md)")
