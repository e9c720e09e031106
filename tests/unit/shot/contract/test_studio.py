"""The studio settings file: a floor under every render's policy, and the signing key."""

from __future__ import annotations

from pathlib import Path

import pytest

from facefuse.errors import InputError
from facefuse.shot.contract.request import (
    InputSpec,
    OutputSpec,
    PolicyChoices,
    RenderRequest,
    SigningChoices,
)
from facefuse.shot.contract.studio import Studio, load_studio, studio_path, under_studio

REQUEST = RenderRequest(sources=(Path("a.jpg"),), input=InputSpec("shot.mov"),
                        output=OutputSpec("out.mov"))
STUDIO_FILE = """
[policy]
use = "commercial"
require_consent = true
project = "NIGHTFALL"

[signing]
cert = "keys/chain.pem"
key = "/studio/signer.key"
"""


def test_without_a_file_nothing_changes(tmp_path: Path) -> None:
    assert studio_path().name == "studio.toml"  # in the user config folder (isolated here)
    studio = load_studio()
    assert studio == Studio()
    assert under_studio(REQUEST, studio) == REQUEST


def test_the_file_is_a_floor_a_command_line_cannot_lower(tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "studio.toml"
    path.write_text(STUDIO_FILE, encoding="utf-8")
    monkeypatch.setenv("FACEFUSE_STUDIO", str(path))
    studio = load_studio()
    assert studio.signing == SigningChoices(tmp_path / "keys" / "chain.pem",
                                            Path("/studio/signer.key"))
    made = under_studio(REQUEST, studio)
    assert made.policy == PolicyChoices(use="commercial", require_consent=True,
                                        project="NIGHTFALL")
    assert made.signing == studio.signing
    own = RenderRequest(sources=(), input=InputSpec("x"), output=OutputSpec("y"),
                        policy=PolicyChoices(project="DAYBREAK"),
                        signing=SigningChoices(Path("mine.pem"), Path("mine.key")))
    kept = under_studio(own, studio)
    assert kept.policy.project == "DAYBREAK" and kept.policy.use == "commercial"
    assert kept.signing.cert == Path("mine.pem")


def test_the_environment_key_comes_before_the_files(tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FACEFUSE_SIGN_CERT", "/env/chain.pem")
    monkeypatch.setenv("FACEFUSE_SIGN_KEY", "/env/signer.key")
    studio = Studio(signing=SigningChoices(Path("/file.pem"), Path("/file.key")))
    assert under_studio(REQUEST, studio).signing == SigningChoices(Path("/env/chain.pem"),
                                                                   Path("/env/signer.key"))
    monkeypatch.delenv("FACEFUSE_SIGN_KEY")
    with pytest.raises(InputError, match="need both FACEFUSE_SIGN_CERT and FACEFUSE_SIGN_KEY"):
        under_studio(REQUEST, studio)


@pytest.mark.parametrize(("text", "words"), [
    ('[policy]\nuse = "studio"', "policy.use must be one of research, commercial"),
    ("[policy]\nrequire_consent = 1", "policy.require_consent must be true or false"),
    ('policy = "strict"', "policy must be a table"),
    ("[signing]\ncert = 3", "cert must be a non-empty string"),
    ("[policy\n", "studio settings file"),
])
def test_a_wrong_file_is_one_sentence(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                      text: str, words: str) -> None:
    path = tmp_path / "studio.toml"
    path.write_text(text, encoding="utf-8")
    monkeypatch.setenv("FACEFUSE_STUDIO", str(path))
    with pytest.raises(InputError, match=words):
        load_studio()


def test_a_named_file_that_is_missing_is_refused(tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FACEFUSE_STUDIO", str(tmp_path / "nowhere.toml"))
    with pytest.raises(InputError, match="nowhere.toml"):
        load_studio()


def test_one_record_per_holder_and_both_halves_of_a_key() -> None:
    from facefuse.shot.contract.request import PersonId, SourcePhotos
    with pytest.raises(InputError, match="p1 is given two consent records"):
        PolicyChoices(consent=((PersonId("p1"), Path("a.json")), (PersonId("p1"), Path("b"))))
    PolicyChoices(consent=((PersonId("p1"), Path("a.json")), (SourcePhotos(), Path("b"))))
    with pytest.raises(InputError, match="need both --sign-cert and --sign-key"):
        SigningChoices(cert=Path("c.pem"))


def test_the_studio_states_its_own_model_files_use(tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    from dataclasses import replace

    from facefuse.config import Settings

    own = tmp_path / "models" / "jane-doe.onnx"
    own.parent.mkdir()
    own.write_bytes(b"onnx")
    path = tmp_path / "studio.toml"
    path.write_text('[policy]\nuse = "commercial"\n[model_licences]\n'
                    '"models/jane-doe.onnx" = "commercial"\n', encoding="utf-8")
    monkeypatch.setenv("FACEFUSE_STUDIO", str(path))
    studio = load_studio()
    assert studio.model_licences == {own.resolve(): "commercial"}
    request = replace(REQUEST, settings=Settings(swapper=str(own)))
    assert under_studio(request, studio).policy.model_licences == (("swapper", "commercial"),)
    stated = replace(request, policy=PolicyChoices(model_licences=(("swapper", "research"),)))
    assert under_studio(stated, studio).policy.model_licences == (("swapper", "research"),)
    assert under_studio(REQUEST, studio).policy.model_licences == ()  # a manifest swapper
    path.write_text('[model_licences]\n"models/jane-doe.onnx" = "studio"\n', encoding="utf-8")
    with pytest.raises(InputError, match="model_licences.'models/jane-doe.onnx' must be one of"):
        load_studio()
