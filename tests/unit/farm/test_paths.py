"""farm.paths: no job parameter makes a task write outside the declared output folder ('..',
absolute paths, symbolic links), each refusal one sentence; and the job bundle's parameters
(farm.openjd without openjd-model: the template as data)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from facefuse.config import Settings
from facefuse.errors import InputError
from facefuse.farm import openjd
from facefuse.farm.paths import check_inside, check_pattern, relative_to_root
from facefuse.shot.contract.request import (
    FrameSpec,
    InputSpec,
    OutputSpec,
    PlanChoices,
    RenderRequest,
)


@pytest.mark.parametrize("pattern", ["shot.####.exr", "sub/dir/shot.####.exr", "a/../b.#.png"])
def test_relative_patterns_without_dotdot_escapes_are_accepted(pattern: str,
                                                               tmp_path: Path) -> None:
    check_inside(tmp_path, [str(tmp_path / pattern)])


@pytest.mark.parametrize("pattern, why", [
    ("../shot.####.exr", "'..'"), ("a/../../shot.####.exr", "'..'"),
    ("/elsewhere/shot.####.exr", "absolute path"), ])
def test_outputs_leaving_the_folder_are_refused(pattern: str, why: str, tmp_path: Path) -> None:
    output = pattern if pattern.startswith("/") else str(tmp_path / "out" / pattern)
    with pytest.raises(InputError, match="outside the job's output folder") as refused:
        check_inside(tmp_path / "out", [output])
    assert why in str(refused.value) and "\n" not in str(refused.value)


def test_a_symbolic_link_out_of_the_folder_is_refused(tmp_path: Path) -> None:
    (tmp_path / "out").mkdir()
    (tmp_path / "elsewhere").mkdir()
    os.symlink(tmp_path / "elsewhere", tmp_path / "out" / "link")
    with pytest.raises(InputError, match="symbolic link"):
        check_inside(tmp_path / "out", [str(tmp_path / "out" / "link" / "x.####.png")])
    os.symlink(tmp_path / "out", tmp_path / "alias")  # a link to the folder itself is fine
    check_inside(tmp_path / "out", [str(tmp_path / "alias" / "x.####.png")])


@pytest.mark.parametrize("pattern", ["../x.####.exr", "a/../../x.#.exr", "/abs/x.#.exr",
                                     "C:\\x.#.exr", "\\\\share\\x.#.exr", "a\\..\\..\\x.#.exr",
                                     ""])
def test_job_parameter_patterns_must_be_plain_relative_paths(pattern: str) -> None:
    with pytest.raises(InputError):
        check_pattern(pattern)


def test_relative_to_root(tmp_path: Path) -> None:
    assert relative_to_root(tmp_path, str(tmp_path / "m" / "x.####.png")) == "m/x.####.png"
    with pytest.raises(InputError):
        relative_to_root(tmp_path / "out", str(tmp_path / "x.####.png"))


def test_every_file_of_a_shot_job_is_a_path_parameter(tmp_path: Path) -> None:
    for name in ("a.jpg", "shot.mov", "det.onnx", "ref.png"):
        (tmp_path / name).write_bytes(b"x")
    settings = Settings(detector=str(tmp_path / "det.onnx"), reference_images=(
        tmp_path / "ref.png",), selector="reference", models_dir=tmp_path / "models",
        cache_dir=tmp_path / "cache")
    request = RenderRequest(sources=(tmp_path / "a.jpg",), settings=settings,
                            input=InputSpec(str(tmp_path / "shot.mov")),
                            output=OutputSpec(str(tmp_path / "out" / "x.####.png"),
                                              matte=str(tmp_path / "out" / "m" / "m.####.png")))
    bundle = openjd.shot_bundle(request, (1, 48), 12)
    definitions = {d["name"]: d for d in bundle.template["parameterDefinitions"]}
    assert {n for n, d in definitions.items() if d["type"] == "PATH"} == {
        "OutputDir", "Source1", "Input", "ModelsDir", "CacheDir", "DetectorModel", "Reference1"}
    assert definitions["OutputDir"]["dataFlow"] == "OUT"
    assert definitions["MattePattern"]["default"] == "m/m.####.png"
    step = bundle.template["steps"][0]
    args = step["script"]["actions"]["onRun"]["args"]
    assert not [a for a in args if str(tmp_path) in a], "no literal path in the task command"
    assert args[args.index("--chunk-frames") + 1] == "{{Task.Param.Frame}}"
    assert args[args.index("--output-root") + 1] == "{{Param.OutputDir}}"
    environment = step["stepEnvironments"][0]
    assert environment["variables"]["FACEFUSE_OFFLINE"] == "1"
    check = environment["script"]["actions"]["onEnter"]["args"]
    assert check[:3] == ["models", "check", "{{Param.DetectorModel}}"]
    with pytest.raises(InputError, match="outside"):
        openjd.shot_bundle(request, (1, 48), 12, output_dir=tmp_path / "out" / "m")


def test_a_list_render_job_chunks_its_frames_and_carries_the_overrides(tmp_path: Path) -> None:
    for name in ("a.jpg", "shot.mov", "fix.json"):
        (tmp_path / name).write_bytes(b"x")
    request = RenderRequest(sources=(tmp_path / "a.jpg",),
                            settings=Settings(models_dir=tmp_path / "m", cache_dir=tmp_path),
                            input=InputSpec(str(tmp_path / "shot.mov")),
                            frames=FrameSpec(only=((5, 9), (30, 30))),
                            plan=PlanChoices(overrides=tmp_path / "fix.json"),
                            output=OutputSpec(str(tmp_path / "out" / "x.####.png")))
    bundle = openjd.shot_bundle(request, (1, 48), 4)
    definitions = {d["name"]: d for d in bundle.template["parameterDefinitions"]}
    assert definitions["Overrides"]["type"] == "PATH"
    assert definitions["Overrides"]["dataFlow"] == "IN"
    assert definitions["Frames"]["default"] == "5-9,30"
    args = bundle.template["steps"][0]["script"]["actions"]["onRun"]["args"]
    assert args[args.index("--frames") + 1] == "1-48"  # every task analyses the whole range
    assert args[args.index("--only-frames") + 1] == "5-9,30"
    assert args[args.index("--overrides") + 1] == "{{Param.Overrides}}"
    listed = openjd.shot_bundle(request, (1, 48), 4, task_chunking=False)
    space = listed.template["steps"][0]["parameterSpace"]["taskParameterDefinitions"]
    assert [d["range"] for d in space] == [[5, 9], [8, 30]]  # 5-8, 9-30: listed frames only
