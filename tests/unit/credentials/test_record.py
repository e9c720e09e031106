"""The record a render hands in and the manifest definition made of it (pure: no SDK, no file
is read)."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta, timezone

import pytest

from facefuse.credentials import (
    ConsentReference,
    Credential,
    Ingredient,
    ModelRecord,
    credential_from_assertion,
    manifest_definition,
)
from facefuse.credentials.record import DIGITAL_SOURCE_TYPE, FACEFUSE_LABEL, render_assertion
from facefuse.version import __version__

PLATE = Ingredient("plate.####.exr", "a" * 64, "parentOf")
PHOTO = Ingredient("jane.jpg", "b" * 64, "inputTo")
MODELS = (ModelRecord("detector", "yunet_2023mar", "c" * 64, "MIT"),
          ModelRecord("swapper", "inswapper_128", "d" * 64, "non-commercial research"))
CONSENT = (ConsentReference("p1", "Jane Doe", "e" * 64, "f" * 64),)


def _credential(*ingredients: Ingredient) -> Credential:
    return Credential("shot 010", "0.1.0", ingredients, MODELS, CONSENT, "9" * 16, "research")


def _assertion(definition: dict, label: str) -> dict:
    found = [a["data"] for a in definition["assertions"] if a["label"] == label]
    assert len(found) == 1, label
    return found[0]


def test_an_edited_output_opens_the_plate_then_edits_it() -> None:
    definition = manifest_definition(_credential(PLATE, PHOTO), "out.####.exr")
    actions = _assertion(definition, "c2pa.actions")["actions"]
    assert [a["action"] for a in actions] == ["c2pa.opened", "c2pa.edited"]
    assert actions[0]["parameters"] == {"ingredientIds": [f"sha256:{'a' * 64}"]}
    edited = actions[1]
    assert edited["digitalSourceType"] == DIGITAL_SOURCE_TYPE
    assert DIGITAL_SOURCE_TYPE.endswith("/digitalsourcetype/compositeWithTrainedAlgorithmicMedia")
    assert edited["softwareAgent"] == {"name": "facefuse", "version": "0.1.0"}
    assert edited["parameters"] == {"ingredientIds": [f"sha256:{'b' * 64}"]}
    assert definition["claim_generator_info"] == [{"name": "facefuse", "version": __version__}]
    assert definition["title"] == "out.####.exr"


def test_an_output_without_a_plate_is_created() -> None:
    actions = _assertion(manifest_definition(_credential(PHOTO), "still.png"),
                         "c2pa.actions")["actions"]
    assert [a["action"] for a in actions] == ["c2pa.created"]
    assert actions[0]["digitalSourceType"] == DIGITAL_SOURCE_TYPE
    no_ingredients = manifest_definition(_credential(), "still.png")
    assert no_ingredients["ingredients"] == []
    assert "parameters" not in _assertion(no_ingredients, "c2pa.actions")["actions"][0]


def test_ingredients_are_named_by_their_hash_not_read() -> None:
    """The titles name no file on disk: nothing is opened, a 4K plate is not read again."""
    definition = manifest_definition(_credential(PHOTO, PLATE, PHOTO), "out.mov")
    assert definition["ingredients"] == [
        {"title": "plate.####.exr", "format": "image/x-exr", "relationship": "parentOf",
         "instance_id": f"sha256:{'a' * 64}"},
        {"title": "jane.jpg", "format": "image/jpeg", "relationship": "inputTo",
         "instance_id": f"sha256:{'b' * 64}"},
    ]


def test_the_facefuse_assertion_holds_the_whole_record() -> None:
    credential = _credential(PLATE, PHOTO)
    data = _assertion(manifest_definition(credential, "out.mov"), FACEFUSE_LABEL)
    assert data["schema"] == 1 and data["fingerprint"] == "9" * 16 and data["use"] == "research"
    assert data["models"][1] == {"role": "swapper", "name": "inswapper_128",
                                 "sha256": "d" * 64, "licence": "non-commercial research"}
    assert data["consent"] == [{"person": "p1", "performer": "Jane Doe",
                                "record_sha256": "e" * 64, "document_sha256": "f" * 64}]
    assert [i["title"] for i in data["ingredients"]] == ["plate.####.exr", "jane.jpg"]
    assert credential_from_assertion(data) == credential


def test_the_signing_time_is_written_in_utc_to_the_second() -> None:
    when = datetime(2026, 12, 7, 15, 3, 9, 500, tzinfo=timezone(timedelta(hours=1)))
    actions = _assertion(manifest_definition(_credential(PLATE), "o.png", when=when),
                         "c2pa.actions")["actions"]
    assert actions[-1]["when"] == "2026-12-07T14:03:09Z"
    assert "when" not in actions[0]  # the opened plate carries no time of ours
    assert "when" not in _assertion(manifest_definition(_credential(), "o.png"),
                                    "c2pa.actions")["actions"][0]
    assert datetime.now(UTC).tzinfo is UTC


@pytest.mark.parametrize("make", [
    lambda: Ingredient("p.mov", "a" * 64, "childOf"),
    lambda: Ingredient("p.mov", "A" * 64, "parentOf"),
    lambda: Ingredient("p.mov", "a" * 63, "parentOf"),
    lambda: ModelRecord("swapper", "m", "not-a-hash", "MIT"),
    lambda: ConsentReference("p1", "Jane", "e" * 64, ""),
    lambda: replace(_credential(), use="personal"),
    lambda: _credential(PLATE, replace(PLATE, title="other.mov")),
])
def test_a_wrong_record_is_a_bug_caught_when_made(make) -> None:
    with pytest.raises(ValueError):
        make()


@pytest.mark.parametrize("damage", [
    lambda data: {**data, "schema": 2},
    lambda data: {k: v for k, v in data.items() if k != "models"},
    lambda data: {**data, "fingerprint": 7},
    lambda data: {**data, "consent": ["p1"]},
    lambda data: {**data, "ingredients": [{"title": "p.mov", "sha256": "a" * 64}]},
    lambda data: "not a mapping",
])
def test_an_assertion_that_is_not_a_record_is_refused(damage) -> None:
    data = render_assertion(_credential(PLATE, PHOTO))
    with pytest.raises((ValueError, TypeError)):
        credential_from_assertion(damage(data))
