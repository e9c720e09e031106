"""What a render hands in to be signed, and the C2PA manifest definition made of it (pure).

A `Credential` says what made an output: the facefuse version, the render's fingerprint, the
licence policy it ran under, the plate and source photos (by sha256), the models (by sha256,
with their licences) and the consent records of the people whose faces were used.

The manifest definition (the SDK's JSON manifest) holds:
- ``claim_generator_info``: facefuse and its version;
- a ``c2pa.actions`` assertion: ``c2pa.created`` when the render had no plate, else
  ``c2pa.opened`` (the plate) then ``c2pa.edited`` (the SDK requires a manifest's first action
  to be created or opened), with the IPTC digital source type
  compositeWithTrainedAlgorithmicMedia and facefuse as the software agent;
- the ingredients by hash: each with its title, media type, relationship and, as its instance
  id, ``sha256:HEX`` (no ingredient file is read, so a 4K plate is never read again);
- one ``com.facefuse.render`` assertion (FACEFUSE_LABEL) that lists every ingredient, model and
  consent reference, the fingerprint and the use, so a reader gets the whole record back
  (`credential_from_assertion`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, fields
from datetime import UTC, datetime
from typing import Any

from ..models.manifest import USES
from ..version import __version__
from .formats import media_type

FACEFUSE_LABEL = "com.facefuse.render"
ASSERTION_SCHEMA = 1  # the version of the com.facefuse.render assertion's layout
DIGITAL_SOURCE_TYPE = ("http://cv.iptc.org/newscodes/digitalsourcetype/"
                       "compositeWithTrainedAlgorithmicMedia")
SOFTWARE = "facefuse"
PARENT, INPUT = "parentOf", "inputTo"
RELATIONSHIPS = (PARENT, INPUT)
_SHA256 = re.compile(r"[0-9a-f]{64}")


def _check_sha256(value: str, what: str) -> None:
    if not _SHA256.fullmatch(value):
        raise ValueError(f"{what} {value!r} is not a sha256 (64 lower-case hex digits)")


@dataclass(frozen=True, slots=True)
class Ingredient:
    """A file the output was made from: the plate or input ("parentOf"), or a source photo of
    an identity ("inputTo"); `sha256` of its content (hex)."""

    title: str
    sha256: str
    relationship: str

    def __post_init__(self) -> None:
        if self.relationship not in RELATIONSHIPS:
            raise ValueError(f"relationship {self.relationship!r} is not one of {RELATIONSHIPS}")
        _check_sha256(self.sha256, f"ingredient {self.title!r}:")


@dataclass(frozen=True, slots=True)
class ModelRecord:
    """A model the render ran: its role (detector, swapper, ...), manifest name, file sha256
    (hex) and licence."""

    role: str
    name: str
    sha256: str
    licence: str

    def __post_init__(self) -> None:
        _check_sha256(self.sha256, f"model {self.name!r}:")


@dataclass(frozen=True, slots=True)
class ConsentReference:
    """The consent of one person whose face was used: the person's id in the shot, the
    performer's name, and the sha256 (hex) of the consent record and of its signed document."""

    person: str
    performer: str
    record_sha256: str
    document_sha256: str

    def __post_init__(self) -> None:
        _check_sha256(self.record_sha256, f"consent of {self.performer!r}: record")
        _check_sha256(self.document_sha256, f"consent of {self.performer!r}: document")


@dataclass(frozen=True, slots=True)
class Credential:
    """What made an output (see the module docstring). `use`: "commercial" or "research", the
    licence policy the render ran under; `fingerprint`: facefuse's render fingerprint; at most
    one ingredient is the parent ("parentOf")."""

    title: str
    version: str
    ingredients: tuple[Ingredient, ...]
    models: tuple[ModelRecord, ...]
    consent: tuple[ConsentReference, ...]
    fingerprint: str
    use: str

    def __post_init__(self) -> None:
        if self.use not in USES:
            raise ValueError(f"use {self.use!r} is not one of {USES}")
        if sum(i.relationship == PARENT for i in self.ingredients) > 1:
            raise ValueError("a credential has at most one parentOf ingredient")

    @property
    def parent(self) -> Ingredient | None:
        """The plate or input the output was edited from, or None (the output was created)."""
        return next((i for i in self.ingredients if i.relationship == PARENT), None)


def manifest_definition(credential: Credential, title: str,
                        when: datetime | None = None) -> dict[str, Any]:
    """The SDK's manifest definition (a JSON-ready dict) for an output named `title` (its file
    name); `when`: the signing time, written on the facefuse action (UTC, to the second)."""
    return {
        "claim_generator_info": [{"name": SOFTWARE, "version": __version__}],
        "title": title,
        "ingredients": _sdk_ingredients(credential.ingredients),
        "assertions": [
            {"label": "c2pa.actions", "data": {"actions": _actions(credential, when)}},
            {"label": FACEFUSE_LABEL, "data": render_assertion(credential)},
        ],
    }


def ingredient_id(ingredient: Ingredient) -> str:
    """The instance id an ingredient is written and referred to by: ``sha256:HEX``."""
    return f"sha256:{ingredient.sha256}"


def _sdk_ingredients(ingredients: Iterable[Ingredient]) -> list[dict[str, str]]:
    """One SDK ingredient per content hash (the parent first): an id names one ingredient."""
    written: dict[str, dict[str, str]] = {}
    for item in sorted(ingredients, key=lambda i: i.relationship != PARENT):
        written.setdefault(item.sha256, {
            "title": item.title, "format": media_type(item.title),
            "relationship": item.relationship, "instance_id": ingredient_id(item)})
    return list(written.values())


def _actions(credential: Credential, when: datetime | None) -> list[dict[str, Any]]:
    parent = credential.parent
    made: dict[str, Any] = {
        "action": "c2pa.edited" if parent else "c2pa.created",
        "digitalSourceType": DIGITAL_SOURCE_TYPE,
        "softwareAgent": {"name": SOFTWARE, "version": credential.version},
        "description": "faces replaced with trained models",
    }
    if when is not None:
        made["when"] = when.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    inputs = sorted({ingredient_id(i) for i in credential.ingredients
                     if i.relationship == INPUT and (parent is None or i.sha256 != parent.sha256)})
    if inputs:
        made["parameters"] = {"ingredientIds": inputs}
    if parent is None:
        return [made]
    return [{"action": "c2pa.opened", "parameters": {"ingredientIds": [ingredient_id(parent)]}},
            made]


def render_assertion(credential: Credential) -> dict[str, Any]:
    """The data of the com.facefuse.render assertion (JSON-ready): the whole credential, with
    its schema."""
    data = asdict(credential)
    lists = {name: list(data[name]) for name in ("ingredients", "models", "consent")}
    return {"schema": ASSERTION_SCHEMA, **data, **lists}


def credential_from_assertion(data: Mapping[str, Any]) -> Credential:
    """The Credential a com.facefuse.render assertion holds; ValueError when it is of another
    schema or a value is wrong, TypeError when a field is missing or of the wrong kind."""
    if not isinstance(data, Mapping) or data.get("schema") != ASSERTION_SCHEMA:
        raise ValueError(f"not a {FACEFUSE_LABEL} assertion of schema {ASSERTION_SCHEMA}")
    return Credential(
        title=_text(data, "title"), version=_text(data, "version"),
        ingredients=_records(Ingredient, data.get("ingredients")),
        models=_records(ModelRecord, data.get("models")),
        consent=_records(ConsentReference, data.get("consent")),
        fingerprint=_text(data, "fingerprint"), use=_text(data, "use"))


def _text(data: Mapping[str, Any], name: str) -> str:
    value = data.get(name)
    if not isinstance(value, str):
        raise TypeError(f"{name} is not text")
    return value


def _records(cls: Any, items: Any) -> tuple[Any, ...]:
    """`items` (a list of dicts) as records of `cls`, each field read as text."""
    if not isinstance(items, (list, tuple)):
        raise TypeError(f"the {cls.__name__} list is missing")
    names = [f.name for f in fields(cls)]
    records = []
    for item in items:
        if not isinstance(item, Mapping):
            raise TypeError(f"a {cls.__name__} is not a record")
        records.append(cls(**{name: _text(item, name) for name in names}))
    return tuple(records)
