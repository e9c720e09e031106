"""One rule for what a command reads (issue 34, class 1): the --overrides file and the review
report of --frames flagged:REPORT are inputs like the sources (shot.output.output_checks.
request_inputs), so no output of a render, a farm bundle, a preview, a review or a timeline
swap may replace them: by the same path, a symlink, a hard link or a path through `..`.
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

import pytest

from facefuse.cli import render as cli_render
from facefuse.errors import ExitCode, InputError
from facefuse.review.folder import check_report_folder
from facefuse.shot.contract import commandline
from facefuse.shot.contract.request import InputSpec, OutputSpec, PlanChoices, RenderRequest
from facefuse.shot.output.output_checks import (
    check_not_input,
    check_request_outputs,
    request_inputs,
)
from tests.review_reports import review_report

KINDS = ("same", "symlink", "hardlink", "dotdot")


def _overrides(path: Path) -> Path:
    path.write_text(json.dumps({"schema": "facefuse.overrides/1", "overrides": []}))
    return path


def _named(folder: Path, name: str, kind: str) -> tuple[Path, Path]:
    """(the file a command reads, as given; the name the output will write) with folder/name
    being that file by `kind`."""
    target = folder / name
    if kind == "same":
        return _overrides(target), target
    if kind == "dotdot":
        (folder / "sub").mkdir()
        return _overrides(target), folder / "sub" / ".." / name
    real = _overrides(folder / "real.json")
    target.symlink_to(real) if kind == "symlink" else os.link(real, target)
    return real, target


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("option", ["-o", "--matte", "--patch", "video"])
def test_no_output_may_replace_the_overrides_file(tmp_path: Path, option: str,
                                                   kind: str) -> None:
    name = "ov.mp4" if option == "video" else "ov.0001.png"
    given, _ = _named(tmp_path, name, kind)
    (tmp_path / "shot.mp4").write_bytes(b"clip")
    outputs = {"output": str(tmp_path / "o.####.exr")}
    if option == "video":
        outputs["output"] = str(tmp_path / "ov.mp4")
    elif option == "-o":
        outputs["output"] = str(tmp_path / "ov.####.png")
    else:
        outputs[option.removeprefix("--")] = str(tmp_path / "ov.####.png")
    path = str(outputs.pop("output"))
    request = RenderRequest(sources=(), input=InputSpec(str(tmp_path / "shot.mp4")),
                            plan=PlanChoices(overrides=given),
                            output=OutputSpec(path, **outputs))  # type: ignore[arg-type]
    with pytest.raises(InputError, match="would overwrite the input file") as caught:
        check_request_outputs(request, range(1, 4))
    assert caught.value.exit_code == ExitCode.USAGE and "\n" not in str(caught.value)


@pytest.mark.parametrize("kind", KINDS)
def test_check_not_input_is_the_one_rule_by_path_link_and_inode(tmp_path: Path,
                                                                kind: str) -> None:
    given, target = _named(tmp_path, "ov.png", kind)
    with pytest.raises(InputError, match="which this command reads"):
        check_not_input("-o", target, [given])
    check_not_input("-o", tmp_path / "other.png", [given])  # another file passes


def _flagged_request(tmp_path: Path, report: Path) -> RenderRequest:
    parser = argparse.ArgumentParser()
    commandline.add_render_options(parser)
    parsed = parser.parse_args(["-i", str(tmp_path / "shot.mp4"), "-o",
                                str(tmp_path / "o.####.png"), "--frames", f"flagged:{report}"])
    return commandline.request_from_namespace(parsed, cli_render.flagged_choice)


@pytest.mark.parametrize("given", ["file", "folder"])
def test_the_report_of_frames_flagged_is_an_input_too(tmp_path: Path, given: str) -> None:
    report = tmp_path / "review" / "report.json"
    report.parent.mkdir()
    report.write_text(json.dumps(review_report([("faces", 1003, 1004, "p1", "a flag")], 1001,
                                                   1010)))
    request = _flagged_request(tmp_path, report if given == "file" else report.parent)
    assert report in request_inputs(request)
    with pytest.raises(InputError, match="which this command reads"):  # render --report
        check_report_folder(report.parent, (Path(request.input.path), *request_inputs(request)))
    assert json.loads(report.read_text())["flagged_frames"] == [[1003, 1004]]


def test_render_report_may_not_replace_the_overrides_file(tmp_path: Path) -> None:
    folder = tmp_path / "review"
    folder.mkdir()
    overrides = _overrides(folder / "report.json")
    request = RenderRequest(sources=(), input=InputSpec(str(tmp_path / "shot.mp4")),
                            plan=PlanChoices(overrides=overrides),
                            output=OutputSpec(str(tmp_path / "o.####.png")))
    with pytest.raises(InputError, match="which this command reads"):
        check_report_folder(folder, (Path(request.input.path), *request_inputs(request)))
