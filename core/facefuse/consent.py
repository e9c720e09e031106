"""Performer consent records: who agreed to a digital replica, for what, until when.

A consent record is a small JSON file a studio keeps beside its casting (docs/consent.md):

    {"schema": "facefuse.consent/1",
     "performer": "Jane Doe",
     "document": {"name": "jane-doe-replica-rider.pdf", "sha256": "<64 hex digits>"},
     "scope": {"project": "NIGHTFALL", "shots": ["sh010", "sh020"],
               "from": "2026-11-01", "until": "2027-03-31"},
     "expires": "2027-06-30",
     "recorded_by": "A. Producer", "recorded_on": "2026-10-30"}

`document` names the signed consent (a rider, a release) by its content; when a file of that
name lies beside the record, its sha256 must match. In `scope` every key is optional: an absent
one limits nothing. A render is in scope when its project and shot are the ones named and its
day lies within from..until; the record holds until `expires` (inclusive). `check` says what is
wrong with a record for one render, in words a user acts on; nothing here decides who must have
one (shot.plan.consent does).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .cache.hashes import sha256_bytes, sha256_file
from .errors import InputError
from .io import small_files

SCHEMA = "facefuse.consent/1"
_HEX = frozenset("0123456789abcdef")


@dataclass(frozen=True, slots=True)
class ConsentScope:
    """What a record covers: a project, some shots, a span of days (None / (): no limit)."""

    project: str | None = None
    shots: tuple[str, ...] = ()
    first_day: dt.date | None = None
    last_day: dt.date | None = None


@dataclass(frozen=True, slots=True)
class ConsentRecord:
    """One performer's consent as read from `path`; `sha256` is the record file's own."""

    path: Path
    sha256: str
    performer: str
    document_name: str
    document_sha256: str
    scope: ConsentScope
    expires: dt.date | None
    recorded_by: str
    recorded_on: dt.date | None


@dataclass(frozen=True, slots=True)
class RenderScope:
    """What a render is, for a consent record: its project (None: not said), its shot name and
    the day it runs."""

    project: str | None
    shot: str
    day: dt.date


def load_consent(path: Path) -> ConsentRecord:
    """The consent record at `path` (InputError, one sentence, for a file that is not one)."""
    raw = small_files.read_bytes(path, f"the consent record {path}")
    data = small_files.json_value(raw, f"the consent record {path}")
    fields = _Fields(data, path)
    if data.get("schema") != SCHEMA:
        raise fields.wrong("schema", f'"{SCHEMA}"')
    document = data.get("document")
    if not isinstance(document, dict):
        raise fields.wrong("document", 'an object {"name": ..., "sha256": ...}')
    scope = data.get("scope", {})
    if not isinstance(scope, dict):
        raise fields.wrong("scope", "an object")
    inner = _Fields(scope, path, "scope.")
    return ConsentRecord(
        path=path, sha256=sha256_bytes(raw),
        performer=fields.text("performer"),
        document_name=_Fields(document, path, "document.").text("name"),
        document_sha256=_Fields(document, path, "document.").sha256("sha256"),
        scope=ConsentScope(project=inner.optional_text("project"),
                           shots=inner.texts("shots"), first_day=inner.day("from"),
                           last_day=inner.day("until")),
        expires=fields.day("expires"), recorded_by=fields.text("recorded_by"),
        recorded_on=fields.day("recorded_on"))


def check(record: ConsentRecord, render: RenderScope,
          hash_file: Callable[[Path], str] = sha256_file) -> str | None:
    """What keeps `record` from covering `render` ("expired on 2026-06-30", "is for project X,
    and this render is for Y", ...), or None when it covers it. hash_file: how the document
    beside the record is hashed (a render passes its hash memo: hashed once, not per frame)."""
    scope = record.scope
    if record.expires is not None and render.day > record.expires:
        return f"expired on {record.expires.isoformat()}"
    if scope.first_day is not None and render.day < scope.first_day:
        return f"covers renders from {scope.first_day.isoformat()} on"
    if scope.last_day is not None and render.day > scope.last_day:
        return f"covered renders until {scope.last_day.isoformat()}"
    if scope.project is not None and render.project != scope.project:
        given = (f"this render is for {render.project}" if render.project is not None
                 else "this render names no project (--project)")
        return f"is for project {scope.project}, and {given}"
    if scope.shots and render.shot not in scope.shots:
        return f"covers shots {', '.join(scope.shots)}, not {render.shot} (--shot names it)"
    return _document_problem(record, hash_file)


def _document_problem(record: ConsentRecord, hash_file: Callable[[Path], str]) -> str | None:
    """Where the consent document lies beside the record: whether it is still the one agreed."""
    beside = record.path.parent / record.document_name
    if not beside.is_file():
        return None
    if hash_file(beside) != record.document_sha256:
        return f"names {record.document_name} by a sha256 the file beside it no longer has"
    return None


class _Fields:
    """Typed reads of one object of a consent record; InputError naming the field."""

    def __init__(self, data: Any, path: Path, prefix: str = "") -> None:
        if not isinstance(data, dict):
            raise InputError(f"the consent record {path} must hold a JSON object "
                             "(see docs/consent.md)")
        self.data, self.path, self.prefix = data, path, prefix

    def wrong(self, key: str, what: str) -> InputError:
        return InputError(f"the consent record {self.path}: {self.prefix}{key} must be {what} "
                          "(see docs/consent.md)")

    def text(self, key: str) -> str:
        value = self.data.get(key)
        if not isinstance(value, str) or not value.strip():
            raise self.wrong(key, "a non-empty string")
        return value

    def optional_text(self, key: str) -> str | None:
        return self.text(key) if key in self.data else None

    def texts(self, key: str) -> tuple[str, ...]:
        value = self.data.get(key, [])
        if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
            raise self.wrong(key, "a list of names")
        return tuple(value)

    def sha256(self, key: str) -> str:
        value = self.data.get(key)
        if not isinstance(value, str) or len(value) != 64 or not set(value) <= _HEX:
            raise self.wrong(key, "64 lowercase hex digits (sha256sum of the document)")
        return value

    def day(self, key: str) -> dt.date | None:
        if key not in self.data:
            return None
        value = self.data[key]
        try:
            return dt.date.fromisoformat(value) if isinstance(value, str) else _not_a_day()
        except ValueError:
            raise self.wrong(key, "a day written YYYY-MM-DD") from None


def _not_a_day() -> dt.date:
    raise ValueError("not text")
