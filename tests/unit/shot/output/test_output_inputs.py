"""No output may be a file the render reads (issue 24, item 1), and no output name may be longer
than the file system takes (item 11).

The inputs come from the request (shot.output.output_checks.request_inputs): source and reference
images, model files named by path, the model manifest; so every caller of the check (open_writer
for a render or a bench, check_request_outputs for a farm bundle) gets them. Each is matched by
path, symlink and (device, inode), also when given relative to another folder.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

import pytest

from facefuse.config import Settings
from facefuse.errors import ExitCode, InputError
from facefuse.shot.contract.request import InputSpec, OutputSpec, RenderRequest
from facefuse.shot.output.output_checks import (
    check_output_names,
    check_outputs,
    check_request_outputs,
)
from facefuse.shot.output.writers import SequenceOutput

KINDS = ("same", "symlink", "hardlink", "relative")
OPTIONS = ("-o", "--matte", "--patch", "video")


def _aliased(folder: Path, kind: str, name: str, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A file the output `folder`/name will be (by `kind`); returns the path to give as input."""
    target = folder / name
    if kind in ("same", "relative"):
        target.write_bytes(b"photo")
        if kind == "same":
            return target
        elsewhere = folder / "elsewhere"
        elsewhere.mkdir()
        monkeypatch.chdir(elsewhere)
        return Path("..") / name
    real = folder / "photo.jpg"
    real.write_bytes(b"photo")
    if kind == "symlink":
        target.symlink_to(real)
    else:
        os.link(real, target)
    return real


def _request(folder: Path, option: str, **fields: object) -> RenderRequest:
    """A render of the clip folder/shot.mp4 whose `option` names x.####.png (x.mp4 for video)."""
    (folder / "shot.mp4").write_bytes(b"clip")
    outputs: dict[str, object] = {"output": str(folder / "o.####.exr")}
    if option == "video":
        outputs["output"] = str(folder / "x.mp4")
    elif option == "-o":
        outputs["output"] = str(folder / "x.####.png")
    else:
        outputs[option.removeprefix("--")] = str(folder / "x.####.png")
    path = str(outputs.pop("output"))
    return RenderRequest(input=InputSpec(str(folder / "shot.mp4")),
                         output=OutputSpec(path, **outputs),  # type: ignore[arg-type]
                         **{"sources": (), **fields})  # type: ignore[arg-type]


def _name(option: str) -> str:
    return "x.mp4" if option == "video" else "x.0001.png"


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("option", OPTIONS)
@pytest.mark.parametrize("role", ["source", "reference"])
def test_an_output_over_a_source_or_reference_image_is_refused(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, role: str, option: str,
        kind: str) -> None:
    given = _aliased(tmp_path, kind, _name(option), monkeypatch)
    fields: dict[str, object] = ({"sources": (given,)} if role == "source" else
                                 {"settings": Settings(selector="reference",
                                                       reference_images=(given,))})
    request = _request(tmp_path, option, **fields)
    with pytest.raises(InputError, match="(would overwrite the input file|is an input)") as info:
        check_request_outputs(request, range(1, 4))
    assert info.value.exit_code == ExitCode.USAGE
    assert "\n" not in str(info.value)


def test_an_output_over_a_model_file_or_the_manifest_is_refused(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    model = tmp_path / "rec.onnx"
    model.write_bytes(b"onnx")
    os.link(model, tmp_path / "x.0001.png")
    request = _request(tmp_path, "--patch", settings=Settings(recogniser=str(model)))
    with pytest.raises(InputError, match="would overwrite the input file"):
        check_request_outputs(request, [1])
    manifest = tmp_path / "m.0001.png"
    manifest.write_text("schema_version = 1\n")
    monkeypatch.setenv("FACEFUSE_MANIFEST", str(manifest))
    request = RenderRequest(sources=(), input=InputSpec(str(tmp_path / "shot.mp4")),
                            output=OutputSpec(str(tmp_path / "m.####.png")))
    with pytest.raises(InputError, match="would overwrite the input file"):
        check_request_outputs(request, [1])


@pytest.mark.parametrize("kind", ["symlink", "hardlink"])
def test_an_output_over_a_model_the_manifest_names_is_refused(tmp_path: Path, kind: str) -> None:
    """--detector yunet_2023mar reads the manifest's file in the models folder: an input too."""
    from facefuse.models.manifest import load_manifest

    models = tmp_path / "models"
    models.mkdir()
    settings = Settings(models_dir=models)
    model = models / load_manifest().models[settings.detector].file
    model.write_bytes(b"onnx")
    at = tmp_path / "x.0001.png"
    at.symlink_to(model) if kind == "symlink" else os.link(model, at)
    request = _request(tmp_path, "-o", settings=settings)
    with pytest.raises(InputError, match="would overwrite the input file"):
        check_request_outputs(request, [1])


def test_the_plate_of_a_later_render_counts_too(tmp_path: Path) -> None:
    (tmp_path / "in.1001.png").write_bytes(b"plate")
    request = RenderRequest(sources=(), input=InputSpec(str(tmp_path / "in.####.png")),
                            output=OutputSpec(str(tmp_path / "o.####.png"),
                                              matte=str(tmp_path / "in.#.png")))
    with pytest.raises(InputError, match="--matte"):  # in.#.png names in.1001.png too
        check_request_outputs(request, [1001])


class _Shot:
    frame_numbers = (1,)

    def __init__(self, path: Path) -> None:
        self.path = path

    def files(self, numbers: Sequence[int]) -> tuple[Path, ...]:
        return (self.path,)


def test_a_renders_own_check_takes_the_sources_from_the_request(tmp_path: Path) -> None:
    """open_writer's check (check_outputs) gets the request, so a render and a bench refuse
    what a farm bundle refuses."""
    photo = tmp_path / "face.jpg"
    photo.write_bytes(b"photo")
    os.link(photo, tmp_path / "o.0001.png")
    request = RenderRequest(sources=(photo,), input=InputSpec(str(tmp_path / "p.png")),
                            output=OutputSpec(str(tmp_path / "o.####.png")))
    named = [("-o o.####.png", SequenceOutput(request.output.path, None))]
    with pytest.raises(InputError, match="would overwrite the input file"):
        check_outputs(named, None, _Shot(tmp_path / "p.png"), [1], request)  # type: ignore[arg-type]


def test_outputs_that_read_nothing_pass(tmp_path: Path) -> None:
    photo = tmp_path / "face.jpg"
    photo.write_bytes(b"photo")
    request = _request(tmp_path, "--matte", sources=(photo,))
    check_request_outputs(request, range(1, 100))


# --- item 11: names and paths too long ---------------------------------------------------------

@pytest.mark.parametrize(("option", "name", "limit"), [
    ("output", "n" * 260 + ".####.png", "255"),
    ("output", "n" * 260 + ".mp4", "255"),
    ("matte", "n" * 247 + ".####.exr", None),  # 247 + ".0001.exr" = 256 bytes: per frame
    ("patch", "n" * 300 + "/o.####.exr", "255"),  # a folder name
    ("output", "/".join(["p" * 200] * 21) + "/o.####.png", "4095"),
    ("matte", "/".join(["p" * 200] * 21) + "/m.####.exr", "4095"),
])
def test_names_and_paths_longer_than_the_file_system_takes_are_refused(
        tmp_path: Path, option: str, name: str, limit: str | None) -> None:
    fields = {"path": str(tmp_path / "o.####.png"),
              option.replace("output", "path"): str(tmp_path / name)}
    request = RenderRequest(sources=(), input=InputSpec(str(tmp_path / "shot.mp4")),
                            output=OutputSpec(**fields))  # type: ignore[arg-type]
    with pytest.raises(InputError, match=f"at most {limit or '255'} bytes") as info:
        check_output_names(request)
        check_request_outputs(request, [1])
    assert info.value.exit_code == ExitCode.USAGE
    flag = "-o" if option == "output" else f"--{option}"
    assert str(info.value).startswith(f"{flag} ")


def test_the_longest_legal_name_passes(tmp_path: Path) -> None:
    request = RenderRequest(sources=(), input=InputSpec(str(tmp_path / "shot.mp4")),
                            output=OutputSpec(str(tmp_path / ("n" * 246 + ".####.png"))))  # 255 B
    check_output_names(request)
    check_request_outputs(request, [1, 9999])
