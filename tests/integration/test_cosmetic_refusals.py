"""Small things a user notices (issue 34, class 6), each refused in one sentence or said once:
a picture of several faces names the face it uses; `cache` refuses a cache folder that is a
file; a video codec is refused for an image sequence; --reference without --selector reference
is refused; control characters from user data are printed as escapes, never obeyed; a model
listed twice in a manifest is refused naming both entries; `bench --cache-dir` benches with that
cache; `farm openjd --blend` refuses what is not a .blend.

Models and the session's analysis cache come from tests/conftest.py, `media` and `cli_cache`
from tests/integration/conftest.py.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path

import cv2
import numpy as np
import pytest

from facefuse.cli.main import main
from facefuse.errors import ExitCode
from facefuse.models.manifest import default_manifest_path
from facefuse.pipeline import Pipeline
from tests.integration.render_helpers import Media
from tests.render_media import cli_args, render_settings


def _error(capsys: pytest.CaptureFixture[str]) -> str:
    """The one error line of the command just run (no traceback)."""
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("facefuse: error: "), err
    return lines[0]


# -- a picture with several faces -----------------------------------------------------------------

@pytest.fixture(scope="module")
def two_faces(testdata: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """obama.jpg and biden.jpg side by side (Obama's face the larger)."""
    left = cv2.imread(str(testdata / "media" / "obama.jpg"))
    right = cv2.imread(str(testdata / "media" / "biden.jpg"))
    right = cv2.resize(right, (right.shape[1] * left.shape[0] // right.shape[0] * 7 // 10,
                               left.shape[0] * 7 // 10))
    canvas = np.full((left.shape[0], left.shape[1] + right.shape[1], 3), 255, np.uint8)
    canvas[:, :left.shape[1]] = left
    canvas[:right.shape[0], left.shape[1]:] = right
    path = tmp_path_factory.mktemp("two") / "two people.jpg"
    cv2.imwrite(str(path), canvas)
    return path


@pytest.mark.parametrize("use", ["source", "reference"])
def test_a_picture_of_several_faces_names_the_one_used_every_time(
        two_faces: Path, render_models: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture,
        use: str) -> None:
    settings = render_settings(render_models, tmp_path / "cache", selector="reference",
                               reference_images=(two_faces,))
    for _ in range(2):  # the second time from the cache, were it cached
        caplog.clear()
        with caplog.at_level(logging.WARNING), Pipeline(settings) as pipeline:
            if use == "source":
                pipeline.source_identity([two_faces])
            else:
                pipeline.reference_embedding()
        said = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
        assert len(said) == 1 and str(two_faces) in said[0], said
        assert "2 faces" in said[0] and "the largest is used" in said[0]


# -- cache, codec, reference ---------------------------------------------------------------------

@pytest.mark.parametrize("action", ["clear", "info"])
def test_a_cache_folder_that_is_a_file_is_refused(tmp_path: Path, action: str,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    file = tmp_path / "notes.txt"
    file.write_text("mine\n")
    assert main(["cache", action, "--cache-dir", str(file)]) == ExitCode.USAGE
    assert "is not a folder" in _error(capsys)
    assert file.read_text() == "mine\n"


@pytest.mark.parametrize("codec, output", [("rawvideo", "o.####.png"), ("ffv1", "o.####.exr"),
                                           ("prores_4444", "o.%04d.tif")])
def test_a_video_codec_for_an_image_sequence_is_refused(
        media: Media, render_models: Path, cli_cache: Path, tmp_path: Path,
        capsys: pytest.CaptureFixture[str], codec: str, output: str) -> None:
    out = tmp_path / "out"
    out.mkdir()
    rc = main(cli_args(render_models, media.source, media.clip, out / output, "--codec", codec,
                       "--frames", "5-6"))
    assert rc == ExitCode.USAGE
    assert f"--codec {codec} applies to video outputs only" in _error(capsys)
    assert list(out.iterdir()) == []


@pytest.mark.parametrize("command, selector", [("render", None), ("render", "many"),
                                               ("review", "one"), ("preview", None)])
def test_reference_without_the_reference_selector_is_refused(
        media: Media, render_models: Path, cli_cache: Path, testdata: Path, tmp_path: Path,
        capsys: pytest.CaptureFixture[str], command: str, selector: str | None) -> None:
    output = {"render": tmp_path / "o.####.png", "review": tmp_path / "review",
              "preview": tmp_path / "p.png"}[command]
    extra = ["--reference", str(testdata / "media" / "biden.jpg")]
    extra += ["--selector", selector] if selector else []
    if command == "preview":
        extra += ["--frame", "6"]
    args = cli_args(render_models, media.source, media.clip, output, *extra)
    assert main([command, *args[1:]]) == ExitCode.USAGE
    assert "--reference is read only by --selector reference" in _error(capsys)
    assert not output.exists()


# -- what is printed from user data --------------------------------------------------------------

def _manifest(tmp_path: Path, edit) -> Path:
    text = default_manifest_path().read_text(encoding="utf-8")
    path = tmp_path / "manifest.toml"
    path.write_text(edit(text), encoding="utf-8")
    return path


def _first_model_name(text: str) -> str:
    start = text.index("[[models]]")
    line = next(li for li in text[start:].splitlines() if li.startswith("name"))
    return line.split("=", 1)[1].strip().strip('"')


def test_control_characters_in_a_manifest_name_are_printed_escaped(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    def rename(text: str) -> str:
        name = _first_model_name(text)
        return text.replace(f'name = "{name}"', 'name = "evil\\u001b[2J\\u001b]0;pwned\\u0007"', 1)

    monkeypatch.setenv("FACEFUSE_MANIFEST", str(_manifest(tmp_path, rename)))
    assert main(["models", "list"]) == ExitCode.OK
    out = capsys.readouterr().out
    assert "\x1b" not in out and "\x07" not in out
    assert "evil\\x1b[2J\\x1b]0;pwned\\x07" in out


@pytest.mark.parametrize("name", ["shot\x1b[31m.mov", "shot\u202egpj.mov", "a\rb\x9b1m.mov"])
def test_control_characters_in_a_file_name_are_printed_escaped(
        media: Media, render_models: Path, cli_cache: Path, tmp_path: Path,
        capsys: pytest.CaptureFixture[str], name: str) -> None:
    rc = main(cli_args(render_models, media.source, tmp_path / name, tmp_path / "o.####.png"))
    assert rc == ExitCode.USAGE
    line = _error(capsys)
    assert not any(c in line for c in "\x1b\u202e\x9b") and "does not exist" in line


def test_a_model_listed_twice_is_refused_naming_both(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    names: list[str] = []

    def duplicate(text: str) -> str:
        names.append(_first_model_name(text))
        start = text.index("[[models]]")
        end = text.index("[[models]]", start + 1)
        return text + "\n" + text[start:end]

    monkeypatch.setenv("FACEFUSE_MANIFEST", str(_manifest(tmp_path, duplicate)))
    assert main(["models", "list"]) == ExitCode.MODEL
    line = _error(capsys)
    assert f"model '{names[0]}' is listed twice ([[models]] entries 1 and " in line


# -- bench, farm ---------------------------------------------------------------------------------

def test_bench_uses_the_cache_folder_it_is_given(render_models: Path, testdata: Path,
                                                 tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    cache = tmp_path / "my cache"
    args = cli_args(render_models, testdata / "media" / "obama.jpg",
                    testdata / "media" / "asl_yes.mp4", tmp_path / "b.mp4", "--cache-dir",
                    str(cache))
    runs = []
    for _ in range(2):
        assert main(["bench", *args[1:], "--frames", "3", "--json"]) == ExitCode.OK
        runs.append(json.loads(capsys.readouterr().out.splitlines()[-1])["bench"])
    assert list((cache / "analysis").glob("*.npz"))
    assert [r["analysis_cached"] for r in runs] == [0, 3]


@pytest.mark.parametrize("blend", ["picture.png", "picture.blend", "folder.blend", "missing"])
def test_openjd_refuses_a_blend_that_is_not_one(testdata: Path, tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str],
                                                blend: str) -> None:
    path = tmp_path / blend
    if blend == "folder.blend":
        path.mkdir()
    elif blend != "missing":
        path.write_bytes((testdata / "media" / "astronaut.png").read_bytes())
    assert main(["farm", "openjd", "--blend", str(path), "--bundle",
                 str(tmp_path / "job")]) == ExitCode.USAGE
    line = _error(capsys)
    assert str(path) in line
    assert not (tmp_path / "job").exists()


@pytest.mark.parametrize("head", [b"BLENDER-v402RENDH", b"\x28\xb5\x2f\xfd\x00\x00"])
def test_openjd_takes_a_blend_plain_or_compressed(tmp_path: Path, head: bytes,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("openjd.model")  # writing the bundle needs the farm extra
    path = tmp_path / "edit.blend"
    path.write_bytes(head + bytes(64))
    assert main(["farm", "openjd", "--blend", str(path), "--bundle",
                 str(tmp_path / "job")]) == ExitCode.OK
    assert (tmp_path / "job" / "template.yaml").is_file()
