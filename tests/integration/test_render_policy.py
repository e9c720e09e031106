"""What a render answers for, through the command line: the licence gate (--use,
--model-licence), consent records (--consent, --require-consent) and the studio settings file.
Refusals come before anything is written, as one sentence with exit 2."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from facefuse.cli import main as cli  # imported here, while sys.stderr is pytest's own stream
from facefuse.errors import ExitCode
from facefuse.io import plates
from tests.integration.render_helpers import Media, one_line_error
from tests.render_media import cli_args
from tests.unit.test_consent import write_record

FRAMES = ("--frames", "5-7")  # three frames with the face: p1 is swapped in each


@pytest.fixture()
def out(tmp_path: Path) -> Path:
    return tmp_path / "out"


def render(media: Media, models: Path, out: Path, *extra: str) -> list[str]:
    return cli_args(models, media.source, media.clip, out / "o.####.png", *FRAMES, *extra)


def refused(capsys: pytest.CaptureFixture[str], args: list[str], out: Path) -> str:
    rc = cli.main(args)
    captured = capsys.readouterr()
    assert rc == ExitCode.USAGE, captured.err
    assert not out.exists() or not any(out.iterdir()), "nothing may be written"
    return one_line_error(captured.err)


def test_a_commercial_render_refuses_models_whose_licence_is_not_stated(
        media: Media, render_models: Path, cli_cache: Path, out: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    line = refused(capsys, render(media, render_models, out, "--use", "commercial"), out)
    assert line.startswith("facefuse: error: --use commercial refuses recogniser "
                           "recogniser_512.onnx (licence not stated); swapper "
                           "identity_swapper.onnx (licence not stated): state a model file's "
                           "licence with --model-licence recogniser=commercial")
    assert "yunet" not in line  # MIT: allowed


def test_stated_licences_let_a_commercial_render_through_and_are_listed(
        media: Media, render_models: Path, cli_cache: Path, out: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    rc = cli.main(render(media, render_models, out, "--use", "commercial",
                         "--model-licence", "recogniser=commercial",
                         "--model-licence", "swapper=commercial"))
    err = capsys.readouterr().err
    assert rc == ExitCode.OK, err
    assert ("facefuse: licences: detector yunet_2023mar (MIT (OpenCV Zoo)); recogniser "
            "recogniser_512.onnx (stated by the user); swapper identity_swapper.onnx (stated by "
            "the user)") in err.splitlines()
    assert len(list(out.glob("o.*.png"))) == 3


def test_required_consent_without_a_record_is_refused_naming_the_person(
        media: Media, render_models: Path, cli_cache: Path, out: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    line = refused(capsys, render(media, render_models, out, "--require-consent"), out)
    assert line == ("facefuse: error: p1 is swapped to obama.jpg without valid consent (no "
                    "consent record), and this render requires consent: give --consent "
                    "p1=RECORD.json (see docs/consent.md) or --skip p1")


def test_an_expired_or_out_of_scope_record_is_refused_with_what_is_wrong(
        media: Media, render_models: Path, cli_cache: Path, out: Path, tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    expired = write_record(tmp_path, "old.json", scope={}, expires="2020-01-31")
    line = refused(capsys, render(media, render_models, out, "--require-consent",
                                  "--consent", f"source={expired}"), out)
    assert "(old.json expired on 2020-01-31)" in line
    other_shot = write_record(tmp_path, "sh.json", scope={"shots": ["sh010"]}, expires=None)
    line = refused(capsys, render(media, render_models, out, "--require-consent",
                                  "--consent", f"p1={other_shot}"), out)
    assert "(sh.json covers shots sh010, not shot (--shot names it))" in line


def test_a_valid_record_is_in_every_output_and_said_once(
        media: Media, render_models: Path, cli_cache: Path, out: Path, tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    record = write_record(tmp_path, scope={"project": "NIGHTFALL", "shots": ["sh010"]},
                          expires=None)
    rc = cli.main(render(media, render_models, out, "--require-consent", "--consent",
                         f"p1={record}", "--project", "NIGHTFALL", "--shot", "sh010"))
    err = capsys.readouterr().err
    assert rc == ExitCode.OK, err
    assert "facefuse: consent: p1 (Jane Doe, jane.consent.json)" in err.splitlines()
    sha256 = hashlib.sha256(record.read_bytes()).hexdigest()
    for frame in sorted(out.glob("o.*.png")):
        consent = json.loads(plates.read_metadata(frame)["consent"])
        assert consent == [{"person": "p1", "source": "default", "performer": "Jane Doe",
                            "record_sha256": sha256}]


def test_the_studio_policy_is_a_floor_the_command_line_cannot_lower(
        media: Media, render_models: Path, cli_cache: Path, out: Path, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    studio = tmp_path / "studio.toml"
    studio.write_text('[policy]\nrequire_consent = true\nuse = "commercial"\n',
                      encoding="utf-8")
    monkeypatch.setenv("FACEFUSE_STUDIO", str(studio))
    line = refused(capsys, render(media, render_models, out, "--use", "research"), out)
    assert "--use commercial refuses recogniser recogniser_512.onnx" in line
    studio.write_text('[policy]\nrequire_consent = true\nuse = "commercial"\n'
                      '[model_licences]\n'
                      f'"{render_models / "recogniser_512.onnx"}" = "commercial"\n'
                      f'"{render_models / "identity_swapper.onnx"}" = "commercial"\n',
                      encoding="utf-8")
    line = refused(capsys, render(media, render_models, out), out)  # the models: the file's
    assert "p1 is swapped to obama.jpg without valid consent" in line


def test_a_farm_job_writes_the_studio_policy_and_key_into_every_task(
        media: Media, render_models: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """Workers enforce the submitting studio's policy even without a studio file of their own."""
    pytest.importorskip("openjd.model")
    studio = tmp_path / "studio.toml"
    studio.write_text('[policy]\nrequire_consent = true\nuse = "commercial"\n'
                      '[signing]\ncert = "keys/chain.pem"\nkey = "keys/signer.key"\n',
                      encoding="utf-8")
    monkeypatch.setenv("FACEFUSE_STUDIO", str(studio))
    bundle = tmp_path / "bundle"
    rc = cli.main(["farm", "openjd", "-s", str(media.source), "-i", str(media.clip), "-o",
                   str(tmp_path / "out" / "o.####.exr"), "--frames", "1-4", "--bundle",
                   str(bundle), "--models-dir", str(render_models)])
    assert rc == ExitCode.OK, capsys.readouterr().err
    template = next(bundle.glob("template.*")).read_text(encoding="utf-8")
    for words in ("--use", "commercial", "--require-consent", "--sign-cert",
                  str(tmp_path / "keys" / "chain.pem"), str(tmp_path / "keys" / "signer.key")):
        assert words in template, words


def test_a_review_lists_who_is_swapped_under_which_record(
        media: Media, render_models: Path, cli_cache: Path, tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    record = write_record(tmp_path, scope={"shots": ["sh010"]}, expires=None)
    args = cli_args(render_models, media.source, media.clip, tmp_path / "review", *FRAMES,
                    "--consent", f"p1={record}")
    args[0] = "review"
    rc = cli.main(args)
    assert rc == ExitCode.OK, capsys.readouterr().err
    report = json.loads((tmp_path / "review" / "report.json").read_text(encoding="utf-8"))
    assert report["consent"] == [{
        "person": "p1", "source": "obama.jpg", "performer": None, "record": None,
        "record_sha256": None,
        "problem": "jane.consent.json covers shots sh010, not shot (--shot names it)"}]
    page = (tmp_path / "review" / "index.html").read_text(encoding="utf-8")
    assert "<h3>Consent</h3>" in page and "covers shots sh010, not shot" in page


def test_a_commercial_render_refuses_research_models_before_fetching_any(
        media: Media, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The default models are research-only: refused by name, nothing fetched (offline, an
    empty models folder: the refusal comes before the missing models' exit 4)."""
    out = tmp_path / "out"
    rc = cli.main(["render", "-s", str(media.source), "-i", str(media.clip), "-o",
                   str(out / "o.####.png"), "--models-dir", str(tmp_path / "models"),
                   "--offline", "--use", "commercial"])
    line = one_line_error(capsys.readouterr().err)
    assert rc == ExitCode.USAGE
    assert line.startswith("facefuse: error: --use commercial refuses detector retinaface_10g "
                           "(InsightFace: non-commercial research only); recogniser "
                           "arcface_w600k_r50 (InsightFace: non-commercial research only); "
                           "swapper hyperswap_1a_256 (ResearchRAIL-MS: research only): choose "
                           "models whose licence allows commercial use"), line
    assert not out.exists() and not (tmp_path / "models").exists()
