"""The model manifest: model files and model families, read from a TOML data file.

Schema (version 1):
    schema_version = 1
    [families.<name>]   role, class, input_size = [w, h], template, colour ("rgb"|"bgr"),
                        mean, std, inputs = [{names = [...], shape = [...]}], outputs = [...]
                        (a shape entry is an int, or a string naming a free dimension);
                        optional: channel_mean / channel_std = [a, b, c] (per channel, in the
                        family's colour order, on the 0..255 scale; they replace mean / std for
                        crop stages), dims = {name = [allowed sizes]} (the values a named
                        dimension may take), classes = {name = index} (a parser's class map)
    [[models]]          name, family, file, urls = [...], sha256, bytes, licence, precision,
                        optional use ("commercial"|"research": the widest use the licence
                        allows; absent: "research"),
                        optional archive = {url, sha256, bytes, member} for files inside a zip,
                        optional unconfirmed = "why" for a record only one public source gives
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path, PurePosixPath, PureWindowsPath
from types import MappingProxyType
from typing import Any
from urllib.parse import urlsplit

from ..errors import InputError, ModelError
from ..io import small_files

SCHEMA_VERSION = 1
ROLES = ("detector", "recogniser", "swapper", "enhancer", "occluder", "parser")
# Roles a Settings object may leave unset (None: that stage does not run).
OPTIONAL_ROLES = ("enhancer", "occluder", "parser")


@dataclass(frozen=True, slots=True)
class TensorSpec:
    """Expected tensor: acceptable names (empty: any) and shape (int, or str for a free dim)."""

    names: tuple[str, ...]
    shape: tuple[int | str, ...]


@dataclass(frozen=True, slots=True)
class Family:
    """A model family: what its inputs and outputs look like and how to feed it.

    channel_mean / channel_std: per-channel normalisation in the family's colour order (0..255
    scale), empty when the scalar mean / std apply to every channel. dims: the values a named
    dimension of the contract may take (e.g. a swapper's crop "size"). classes: a parser's class
    indices by region name."""

    name: str
    role: str
    class_name: str
    input_size: tuple[int, int] | None
    template: str | None
    colour: str
    mean: float
    std: float
    inputs: tuple[TensorSpec, ...]
    outputs: tuple[TensorSpec, ...]
    channel_mean: tuple[float, ...] = ()
    channel_std: tuple[float, ...] = ()
    dims: Mapping[str, tuple[int, ...]] = field(default_factory=lambda: MappingProxyType({}))
    classes: Mapping[str, int] = field(default_factory=lambda: MappingProxyType({}))

    def normalisation(self) -> tuple[tuple[float, ...], tuple[float, ...]]:
        """(mean, std) per channel, in the family's colour order, on the 0..255 scale."""
        mean = self.channel_mean or (self.mean,) * 3
        std = self.channel_std or (self.std,) * 3
        return mean, std

    def crop_spec(self) -> tuple[str, int]:
        """(template, crop size in px) for families that work on aligned crops."""
        if self.template is None or self.input_size is None:
            raise ModelError(f"family {self.name} has no template or input size in the manifest")
        return self.template, self.input_size[0]


@dataclass(frozen=True, slots=True)
class ArchiveMember:
    """A model shipped inside a zip: the zip's url, size and sha256, and the member's path."""

    url: str
    sha256: str
    size_bytes: int
    member: str


@dataclass(frozen=True, slots=True)
class ModelEntry:
    """One downloadable model file, identified by its sha256 (never by its name)."""

    name: str
    family: str
    file: str
    urls: tuple[str, ...]
    sha256: str
    size_bytes: int
    licence: str
    precision: str
    archive: ArchiveMember | None = None
    unconfirmed: str = ""
    use: str = "research"


@dataclass(frozen=True, slots=True)
class Manifest:
    schema_version: int
    families: Mapping[str, Family]
    models: Mapping[str, ModelEntry]
    source: Path | None = None

    def families_for_role(self, role: str) -> tuple[Family, ...]:
        return tuple(f for f in self.families.values() if f.role == role)

    def models_for_role(self, role: str) -> tuple[ModelEntry, ...]:
        return tuple(m for m in self.models.values() if self.families[m.family].role == role)


def default_manifest_path() -> Path:
    """$FACEFUSE_MANIFEST (a studio's own manifest, e.g. pointing at an internal mirror), else
    the packaged manifest (wheel), else the repository's models/manifest.toml (editable)."""
    override = os.environ.get("FACEFUSE_MANIFEST")
    if override:
        return Path(override)
    packaged = resources.files("facefuse").joinpath("data/manifest.toml")
    if packaged.is_file():
        return Path(str(packaged))
    return Path(__file__).resolve().parents[3] / "models" / "manifest.toml"


def load_manifest(path: Path | None = None) -> Manifest:
    """Read and validate a manifest file; raises ModelError naming the first problem."""
    path = Path(path) if path is not None else default_manifest_path()
    try:
        data = small_files.load_toml(path, f"the model manifest {path}")
    except InputError as exc:  # a manifest that cannot be read is a model fault (exit 4)
        raise ModelError(f"facefuse cannot read its models: {exc}") from None
    version = data.get("schema_version")
    if version != SCHEMA_VERSION:
        raise ModelError(f"model manifest {path} has schema_version {version!r}; "
                         f"this facefuse reads version {SCHEMA_VERSION}")
    families = {name: _family(name, raw, path) for name, raw in data.get("families", {}).items()}
    models: dict[str, ModelEntry] = {}
    places: dict[str, int] = {}  # name -> its entry's place among [[models]] (1 = first)
    for place, raw in enumerate(data.get("models", []), 1):
        entry = _model(raw, path)
        if entry.family not in families:
            raise ModelError(f"{path}: model {entry.name} names unknown family {entry.family!r}")
        if entry.name in models:  # one name, one file: never a silent replacement
            raise ModelError(f"{path}: model {entry.name!r} is listed twice ([[models]] entries "
                             f"{places[entry.name]} and {place}); give each model its own name")
        models[entry.name], places[entry.name] = entry, place
    return Manifest(version, MappingProxyType(families), MappingProxyType(models), path)


def _specs(raw: object, key: str, where: str) -> tuple[TensorSpec, ...]:
    if not isinstance(raw, list) or not all(
            isinstance(r, dict) and isinstance(r.get("shape"), list)
            and isinstance(r.get("names", []), list) for r in raw):
        raise ModelError(f"{where} field {key!r} must be a list of tables with a shape list, "
                         f"not {_shown(raw)}")
    return tuple(TensorSpec(tuple(r.get("names", ())), tuple(r["shape"])) for r in raw)


def _family(name: str, raw: dict[str, Any], path: Path) -> Family:
    where = f"{path}: family {name}"
    if not isinstance(raw, dict):
        raise ModelError(f"{where} must be a table, not {_shown(raw)}")
    try:
        role = raw["role"]
        if role not in ROLES:
            raise ModelError(f"{path}: family {name} has unknown role {role!r}")
        fields = _Fields(raw, where)
        size = _numbers(raw, "input_size", where, int, 2)
        return Family(
            name=name, role=role, class_name=fields.text("class"),
            input_size=(size[0], size[1]) if size else None,
            template=fields.text("template") if "template" in raw else None,
            colour=fields.text("colour", "rgb"),
            mean=_number(raw, "mean", where, 0.0), std=_number(raw, "std", where, 1.0),
            inputs=_specs(raw["inputs"], "inputs", where),
            outputs=_specs(raw.get("outputs", []), "outputs", where),
            channel_mean=_channels(raw, "channel_mean", name, path),
            channel_std=_channels(raw, "channel_std", name, path),
            dims=MappingProxyType({str(k): _numbers(raw["dims"], k, where, int)
                                   for k in _table(raw, "dims", where)}),
            classes=MappingProxyType({str(k): _whole(v, f"classes.{k}", where)
                                      for k, v in _table(raw, "classes", where).items()}),
        )
    except KeyError as exc:
        raise ModelError(f"{path}: family {name} lacks the field {exc.args[0]!r}") from exc


def _table(raw: dict[str, Any], key: str, where: str) -> dict[str, Any]:
    value = raw.get(key, {})
    if not isinstance(value, dict):
        raise ModelError(f"{where} field {key!r} must be a table, not {_shown(value)}")
    return value


def _whole(value: object, key: str, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ModelError(f"{where} field {key!r} must be a whole number, not {_shown(value)}")
    return value


def _number(raw: dict[str, Any], key: str, where: str, default: float) -> float:
    value = raw.get(key, default)
    if isinstance(value, bool) or not isinstance(value, (int, float)) \
            or not math.isfinite(value):
        raise ModelError(f"{where} field {key!r} must be a number, not {_shown(value)}")
    return float(value)


def _numbers(raw: dict[str, Any], key: str, where: str, kind: type = float,
             count: int | None = None) -> tuple[Any, ...]:
    """The list of numbers raw[key] (empty when absent); ModelError naming the field."""
    value = raw.get(key, [])
    whole = kind is int
    good = isinstance(value, list) and (count is None or not value or len(value) == count) \
        and all(not isinstance(v, bool) and isinstance(v, int if whole else (int, float))
                for v in value)
    if not good:
        many = f"{count} " if count else ""
        noun = "whole numbers" if whole else "numbers"
        raise ModelError(f"{where} field {key!r} must be a list of {many}{noun}, not "
                         f"{_shown(value)}")
    return tuple(kind(v) for v in value)


def _channels(raw: dict[str, Any], key: str, name: str, path: Path) -> tuple[float, ...]:
    values = _numbers(raw, key, f"{path}: family {name}")
    if values and len(values) != 3:
        raise ModelError(f"{path}: family {name} gives {len(values)} values for {key}; "
                         "it takes one per colour channel (3)")
    return values


def _model_fields(raw: dict[str, Any], path: Path) -> ModelEntry:
    if not isinstance(raw, dict):
        raise ModelError(f"{path}: a [[models]] entry must be a table, not {_shown(raw)}")
    name = raw.get("name", "?")
    where = f"{path}: model {name if isinstance(name, str) else _shown(name)}"
    fields = _Fields(raw, where)
    archive = raw.get("archive")
    if archive is not None and not isinstance(archive, dict):
        raise ModelError(f"{where} field 'archive' must be a table of url, sha256, bytes and "
                         f"member, not {_shown(archive)}")
    member = None
    if archive:
        inner = _Fields(archive, f"{where} archive")
        member = ArchiveMember(inner.url("url"), inner.sha256("sha256"), inner.size("bytes"),
                               inner.text("member"))
    return ModelEntry(
        name=fields.text("name"), family=fields.text("family"), file=fields.text("file"),
        urls=fields.urls("urls"), sha256=fields.sha256("sha256"), size_bytes=fields.size("bytes"),
        licence=fields.text("licence"), precision=fields.text("precision", "fp32"),
        archive=member, unconfirmed=fields.text("unconfirmed", ""),
        use=fields.choice("use", USES, "research"))


# the uses a model's licence may allow, narrowest first (models.licences reads them)
USES = ("research", "commercial")
_SHA256_DIGITS = frozenset("0123456789abcdef")
URL_SCHEMES = ("http", "https", "file")
# What the models folder holds besides model files (models.store's bookkeeping): a manifest
# file may not name them.
BOOKKEEPING_FILES = ("verified.json",)
BOOKKEEPING_SUFFIXES = (".part", ".lock", ".break", ".tmp")


def _shown(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


@dataclass(frozen=True, slots=True)
class _Fields:
    """Typed reads of one manifest table; ModelError naming the field for a wrong type."""

    raw: dict[str, Any]
    where: str

    def _get(self, key: str, default: object) -> object:
        if key in self.raw:
            return self.raw[key]
        if default is None:
            raise ModelError(f"{self.where} lacks the field {key!r}")
        return default

    def _wrong(self, key: str, what: str, value: object) -> ModelError:
        return ModelError(f"{self.where} field {key!r} must be {what}, not {_shown(value)}")

    def text(self, key: str, default: str | None = None) -> str:
        value = self._get(key, default)
        if not isinstance(value, str):
            raise self._wrong(key, "a string", value)
        return value

    def choice(self, key: str, choices: tuple[str, ...], default: str) -> str:
        value = self.text(key, default)
        if value not in choices:
            raise self._wrong(key, " or ".join(repr(c) for c in choices), value)
        return value

    def size(self, key: str) -> int:
        value = self._get(key, None)
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise self._wrong(key, "a whole number of bytes (1 or more)", value)
        return value

    def sha256(self, key: str) -> str:
        value = self._get(key, None)
        if not isinstance(value, str) or len(value) != 64 \
                or not set(value.lower()) <= _SHA256_DIGITS:
            raise self._wrong(key, "64 hexadecimal digits (a sha256)", value)
        return value.lower()

    def url(self, key: str) -> str:
        value = self._get(key, None)
        if not isinstance(value, str) or url_problem(value) is not None:
            raise self._wrong(key, f"a URL ({', '.join(URL_SCHEMES)})", value)
        return value

    def urls(self, key: str) -> tuple[str, ...]:
        value = self._get(key, [])
        if not isinstance(value, list) or not all(
                isinstance(item, str) and url_problem(item) is None for item in value):
            raise self._wrong(key, f"a list of URLs ({', '.join(URL_SCHEMES)})", value)
        return tuple(value)


def url_problem(url: str) -> str | None:
    """Why `url` is not a download address facefuse can use (http, https or file), or None."""
    parts = urlsplit(url)
    if parts.scheme.lower() not in URL_SCHEMES:
        return f"has no {', '.join(URL_SCHEMES)} scheme"
    if parts.scheme.lower() != "file" and not parts.hostname:
        return "names no host"
    if parts.scheme.lower() == "file" and not parts.path:
        return "names no file"
    if any(ord(c) < 33 for c in url):
        return "holds spaces or control characters"
    return None


def _model(raw: dict[str, Any], path: Path) -> ModelEntry:
    entry = _model_fields(raw, path)
    problem = file_name_problem(entry.file) or bookkeeping_problem(entry.file)
    if problem is not None:
        raise ModelError(f"{path}: model {entry.name} has the file name {entry.file!r}, which "
                         f"{problem}; a model file must be a plain name inside the models folder")
    if entry.archive is not None:
        problem = member_name_problem(entry.archive.member)
        if problem is not None:
            raise ModelError(f"{path}: model {entry.name} names the archive member "
                             f"{entry.archive.member!r}, which {problem}")
    return entry


def file_name_problem(name: object) -> str | None:
    """Why `name` is not a plain file name (no folder part) that stays inside its folder, or None.

    Refused: anything but a non-empty string, absolute paths (POSIX or Windows, drives, UNC),
    '..' or '.', folder separators (also backslashes), NUL and other control characters."""
    problem = member_name_problem(name)
    if problem is None and "/" in str(name):
        return "holds a folder separator"
    return problem


def bookkeeping_problem(name: str) -> str | None:
    """Why `name` would be one of the models folder's own bookkeeping files (verified.json,
    downloads' .part, locks, hidden temporaries), or None."""
    if name.lower() in BOOKKEEPING_FILES:
        return "is the models folder's record of verified files"
    if name.startswith("."):
        return "is hidden (facefuse's temporaries are)"
    if name.lower().endswith(BOOKKEEPING_SUFFIXES):
        return f"ends like facefuse's own files ({', '.join(BOOKKEEPING_SUFFIXES)})"
    return None


def member_name_problem(name: object) -> str | None:
    """Why a zip member path is not a relative path without '..' or '.' parts, or None."""
    if not isinstance(name, str) or not name.strip():
        return "is empty"
    if any(ord(c) < 32 for c in name):
        return "holds control characters"
    if "\\" in name:
        return "holds a backslash"
    if PurePosixPath(name).is_absolute() or PureWindowsPath(name).anchor:
        return "is an absolute path or names a drive"
    if any(part in ("..", ".", "") for part in name.split("/")):
        return "has an empty, '.' or '..' part"
    return None
