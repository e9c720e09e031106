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
                        optional archive = {url, sha256, bytes, member} for files inside a zip,
                        optional unconfirmed = "why" for a record only one public source gives
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path, PurePosixPath, PureWindowsPath
from types import MappingProxyType
from typing import Any

from ..errors import ModelError

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
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise ModelError(f"cannot read the model manifest {path}: {exc}") from exc
    version = data.get("schema_version")
    if version != SCHEMA_VERSION:
        raise ModelError(f"model manifest {path} has schema_version {version!r}; "
                         f"this facefuse reads version {SCHEMA_VERSION}")
    families = {name: _family(name, raw, path) for name, raw in data.get("families", {}).items()}
    models = {}
    for raw in data.get("models", []):
        entry = _model(raw, path)
        if entry.family not in families:
            raise ModelError(f"{path}: model {entry.name} names unknown family {entry.family!r}")
        models[entry.name] = entry
    return Manifest(version, MappingProxyType(families), MappingProxyType(models), path)


def _specs(raw: list[dict[str, Any]]) -> tuple[TensorSpec, ...]:
    return tuple(TensorSpec(tuple(r.get("names", ())), tuple(r["shape"])) for r in raw)


def _family(name: str, raw: dict[str, Any], path: Path) -> Family:
    try:
        role = raw["role"]
        if role not in ROLES:
            raise ModelError(f"{path}: family {name} has unknown role {role!r}")
        size = raw.get("input_size")
        return Family(
            name=name, role=role, class_name=raw["class"],
            input_size=(int(size[0]), int(size[1])) if size else None,
            template=raw.get("template"), colour=raw.get("colour", "rgb"),
            mean=float(raw.get("mean", 0.0)), std=float(raw.get("std", 1.0)),
            inputs=_specs(raw["inputs"]), outputs=_specs(raw.get("outputs", [])),
            channel_mean=_channels(raw, "channel_mean", name, path),
            channel_std=_channels(raw, "channel_std", name, path),
            dims=MappingProxyType({str(k): tuple(int(v) for v in values)
                                   for k, values in raw.get("dims", {}).items()}),
            classes=MappingProxyType({str(k): int(v) for k, v in raw.get("classes", {}).items()}),
        )
    except KeyError as exc:
        raise ModelError(f"{path}: family {name} lacks the field {exc.args[0]!r}") from exc


def _channels(raw: dict[str, Any], key: str, name: str, path: Path) -> tuple[float, ...]:
    values = tuple(float(v) for v in raw.get(key, ()))
    if values and len(values) != 3:
        raise ModelError(f"{path}: family {name} gives {len(values)} values for {key}; "
                         "it takes one per colour channel (3)")
    return values


def _model_fields(raw: dict[str, Any], path: Path) -> ModelEntry:
    try:
        archive = raw.get("archive")
        return ModelEntry(
            name=raw["name"], family=raw["family"], file=raw["file"],
            urls=tuple(raw.get("urls", ())), sha256=raw["sha256"].lower(),
            size_bytes=int(raw["bytes"]), licence=raw["licence"],
            precision=raw.get("precision", "fp32"),
            archive=ArchiveMember(archive["url"], archive["sha256"].lower(),
                                  int(archive["bytes"]), archive["member"]) if archive else None,
            unconfirmed=str(raw.get("unconfirmed", "")),
        )
    except KeyError as exc:
        raise ModelError(f"{path}: a model entry lacks the field {exc.args[0]!r}") from exc


def _model(raw: dict[str, Any], path: Path) -> ModelEntry:
    entry = _model_fields(raw, path)
    problem = file_name_problem(entry.file)
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
