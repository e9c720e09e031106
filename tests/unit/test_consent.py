"""Consent records: read, checked against one render's project, shot and day."""

from __future__ import annotations

import datetime as dt
import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

from facefuse.consent import SCHEMA, RenderScope, check, load_consent
from facefuse.errors import InputError

DOCUMENT = b"%PDF-1.7 the signed replica rider"
TODAY = dt.date(2026, 12, 7)


def write_record(folder: Path, name: str = "jane.consent.json", **changes: Any) -> Path:
    """A consent record for Jane Doe (document beside it), with `changes` to its fields (None
    removes one)."""
    (folder / "rider.pdf").write_bytes(DOCUMENT)
    data: dict[str, Any] = {
        "schema": SCHEMA, "performer": "Jane Doe",
        "document": {"name": "rider.pdf", "sha256": hashlib.sha256(DOCUMENT).hexdigest()},
        "scope": {"project": "NIGHTFALL", "shots": ["sh010", "sh020"],
                  "from": "2026-11-01", "until": "2027-03-31"},
        "expires": "2027-06-30", "recorded_by": "A. Producer", "recorded_on": "2026-10-30"}
    for key, value in changes.items():
        if value is None:
            data.pop(key)
        else:
            data[key] = value
    path = folder / name
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def scope(project: str | None = "NIGHTFALL", shot: str = "sh010",
          day: dt.date = TODAY) -> RenderScope:
    return RenderScope(project, shot, day)


def test_a_record_reads_back_with_its_own_hash(tmp_path: Path) -> None:
    path = write_record(tmp_path)
    record = load_consent(path)
    assert record.performer == "Jane Doe" and record.recorded_by == "A. Producer"
    assert record.sha256 == hashlib.sha256(path.read_bytes()).hexdigest()
    assert record.document_sha256 == hashlib.sha256(DOCUMENT).hexdigest()
    assert record.scope.shots == ("sh010", "sh020")
    assert record.expires == dt.date(2027, 6, 30)
    assert check(record, scope()) is None


@pytest.mark.parametrize(("render", "problem"), [
    (scope(day=dt.date(2027, 7, 1)), "expired on 2027-06-30"),
    (scope(day=dt.date(2026, 10, 31)), "covers renders from 2026-11-01 on"),
    (scope(day=dt.date(2027, 4, 1)), "covered renders until 2027-03-31"),
    (scope(project="DAYBREAK"), "is for project NIGHTFALL, and this render is for DAYBREAK"),
    (scope(project=None), "is for project NIGHTFALL, and this render names no project"),
    (scope(shot="sh030"), "covers shots sh010, sh020, not sh030"),
])
def test_a_record_out_of_scope_says_why(tmp_path: Path, render: RenderScope,
                                       problem: str) -> None:
    found = check(load_consent(write_record(tmp_path)), render)
    assert found is not None and found.startswith(problem)


def test_the_last_day_of_a_record_still_holds(tmp_path: Path) -> None:
    record = load_consent(write_record(tmp_path, scope={}, expires="2026-12-07"))
    assert check(record, scope(project=None, shot="anything")) is None
    assert check(record, scope(day=dt.date(2026, 12, 8))) == "expired on 2026-12-07"


def test_a_changed_document_beside_the_record_voids_it(tmp_path: Path) -> None:
    record = load_consent(write_record(tmp_path))
    (tmp_path / "rider.pdf").write_bytes(DOCUMENT + b" amended")
    assert check(record, scope()) == ("names rider.pdf by a sha256 the file beside it no "
                                      "longer has")
    (tmp_path / "rider.pdf").unlink()  # kept elsewhere: the record stands on its hash
    assert check(record, scope()) is None


@pytest.mark.parametrize(("changes", "words"), [
    ({"schema": "other/1"}, "schema must be"),
    ({"performer": ""}, "performer must be a non-empty string"),
    ({"document": "rider.pdf"}, "document must be an object"),
    ({"document": {"name": "rider.pdf", "sha256": "abc"}}, "document.sha256 must be 64"),
    ({"expires": "30/06/2027"}, "expires must be a day written YYYY-MM-DD"),
    ({"scope": {"shots": "sh010"}}, "scope.shots must be a list of names"),
    ({"recorded_by": None}, "recorded_by must be a non-empty string"),
])
def test_a_malformed_record_is_one_sentence_naming_the_field(
        tmp_path: Path, changes: dict[str, Any], words: str) -> None:
    path = write_record(tmp_path, **changes)
    with pytest.raises(InputError) as caught:
        load_consent(path)
    assert str(caught.value).startswith(f"the consent record {path}: ")
    assert words in str(caught.value) and "\n" not in str(caught.value)


def test_a_record_that_is_not_json_is_one_sentence(tmp_path: Path) -> None:
    path = tmp_path / "x.json"
    path.write_text("{not json", encoding="utf-8")
    with pytest.raises(InputError, match="consent record"):
        load_consent(path)
    with pytest.raises(InputError, match="consent record"):
        load_consent(tmp_path / "missing.json")
