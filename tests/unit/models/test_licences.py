"""The licence gate: a commercial render refuses research-only models, naming each."""

from __future__ import annotations

import pytest

from facefuse.errors import InputError
from facefuse.models.licences import (
    STATED,
    ModelLicence,
    check_licences,
    licence_line,
    refused,
    stated_uses,
)
from facefuse.models.manifest import ROLES, load_manifest

HYPERSWAP = ModelLicence("swapper", "hyperswap_1a_256", "ab" * 32,
                         "ResearchRAIL-MS: research only", "research")
YUNET = ModelLicence("detector", "yunet_2023mar", "cd" * 32, "MIT (OpenCV Zoo)", "commercial")
OWN = ModelLicence("recogniser", "studio_arcface.onnx", "ef" * 32, STATED, None)


def test_commercial_use_refuses_research_models_and_unstated_own_files() -> None:
    licences = (YUNET, HYPERSWAP, OWN)
    assert refused(licences, "research") == ()  # every licence allows research
    assert refused(licences, "commercial") == (HYPERSWAP, OWN)
    with pytest.raises(InputError) as caught:
        check_licences(licences, "commercial")
    message = str(caught.value)
    assert message.startswith("--use commercial refuses swapper hyperswap_1a_256 "
                              "(ResearchRAIL-MS: research only); recogniser "
                              "studio_arcface.onnx (licence not stated)")
    assert "--model-licence recogniser=commercial" in message
    assert "`facefuse models list --use commercial`" in message
    check_licences((YUNET,), "commercial")


def test_a_stated_use_lets_an_own_model_through() -> None:
    stated = stated_uses([("recogniser", "commercial")], ROLES)
    own = ModelLicence("recogniser", "studio_arcface.onnx", "ef" * 32, STATED,
                       stated.get("recogniser"))
    check_licences((YUNET, own), "commercial")
    assert licence_line((YUNET, own)) == (
        "licences: detector yunet_2023mar (MIT (OpenCV Zoo)); recogniser studio_arcface.onnx "
        "(stated by the user)")


def test_a_stated_use_for_an_unknown_role_or_use_is_one_sentence() -> None:
    with pytest.raises(InputError, match="faceswapper is not a model role"):
        stated_uses([("faceswapper", "commercial")], ROLES)
    with pytest.raises(InputError, match="use 'studio' is not one of research, commercial"):
        stated_uses([("swapper", "studio")], ROLES)


def test_every_manifest_model_says_its_use_and_the_defaults_are_research_only() -> None:
    manifest = load_manifest()
    uses = {name: entry.use for name, entry in manifest.models.items()}
    assert set(uses.values()) == {"research", "commercial"}
    for name, entry in manifest.models.items():
        research_words = ("non-commercial" in entry.licence.lower()
                          or "research" in entry.licence.lower())
        assert (entry.use == "research") == research_words, name
    # no swapper or recogniser in the manifest may be used for commercial work today
    for name in ("arcface_w600k_r50", "hyperswap_1a_256", "inswapper_128", "retinaface_10g"):
        assert uses[name] == "research"
    assert uses["yunet_2023mar"] == uses["gfpgan_1.4"] == "commercial"
