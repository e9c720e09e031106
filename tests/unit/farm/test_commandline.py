"""shot.contract.commandline (what farm tasks run): a RenderRequest becomes the `facefuse render`
arguments and the render options' own parser reads them back to the same request, for every
field a user can set; farm.commandline's whole command and absolute paths; the farm's frame
chunks; the openjd progress lines. Nothing here runs a render."""

from __future__ import annotations

import argparse
import io
import os
import subprocess
import sys
from contextlib import redirect_stdout
from dataclasses import fields, replace
from fractions import Fraction
from pathlib import Path

import pytest

from facefuse.cli.main import build_parser as main_parser
from facefuse.cli.main import main
from facefuse.cli.render import Progress
from facefuse.config import Settings
from facefuse.errors import InputError
from facefuse.farm import commandline as farm_commandline
from facefuse.farm.chunks import chunk_ranges
from facefuse.shot.contract import commandline
from facefuse.shot.contract.frames import select_frames
from facefuse.shot.contract.request import (
    FrameSpec,
    InputSpec,
    OutputSpec,
    PersonId,
    PersonInPicture,
    PhaseProgress,
    PlanChoices,
    PolicyChoices,
    RenderRequest,
    SigningChoices,
    SourcePhotos,
)

BASE = RenderRequest(sources=(Path("actor.jpg"),), input=InputSpec("shot.mov"),
                     output=OutputSpec("out/shot.####.exr"))
# A value other than the default for every field the command line can set, by its path in
# the request ("GROUP.NAME" for a field of one of its groups).
REQUEST_CHANGES = {
    "sources": (Path("a.jpg"), Path("b b.jpg")), "fail_fast": True,
    "input.path": "plate.%04d.dpx", "input.colorspace": "ACEScg", "input.start_number": 1001,
    "input.conform_vfr": True,
    "frames.range": (1001, 1240), "frames.chunk": (2, 5),
    "frames.only": ((1001, 1010), (1035, 1035), (1040, 1042)),
    "frames.only_input": "sha256:" + "ab" * 32,
    "plan.smoothing": False, "plan.smoothing_min_cutoff": 0.7, "plan.smoothing_beta": 2.5,
    "plan.assign": ((PersonId("p2"), Path("b b.jpg")),
                    (PersonInPicture("c.png"), Path("d=e.jpg"))),
    "plan.skip": (PersonId("p3"),), "plan.overrides": Path("fix/overrides.json"),
    "output.path": "o/x.####.exr", "output.matte": "o/m.####.exr", "output.patch": "o/p.####.exr",
    "output.codec": "prores_4444", "output.crf": 12, "output.preset": "slow",
    "output.compression": "piz", "output.keep_yuv": True, "output.rate": Fraction(24000, 1001),
    "output.provenance": "full", "output.overwrite": True,
    "policy.use": "commercial",
    "policy.model_licences": (("swapper", "commercial"), ("recogniser", "research")),
    "policy.consent": ((PersonId("p1"), Path("jane.consent.json")),
                       (SourcePhotos(), Path("consent/jo=e.json")),
                       (SourcePhotos("b b.jpg"), Path("k.json")),
                       (PersonInPicture("c.png"), Path("x=y.json"))),
    "policy.require_consent": True, "policy.project": "NIGHTFALL", "policy.shot": "sh010",
    "signing.cert": Path("/studio/chain.pem"), "signing.key": Path("/studio/signer.key"),
    "signing.timestamp_url": "http://tsa.example.com"}
SETTINGS_CHANGES = {
    "detector": "yunet_2023mar", "recogniser": "r.onnx", "swapper": "inswapper_128_fp16",
    "enhancer": "gfpgan_1.4", "selector": "reference", "reference_images": (Path("ref.png"),),
    "similarity": 0.25, "detector_score": 0.3, "detector_size_px": 320, "mask_blur": 0.5,
    "landmark_mask": True, "enhancer_blend": 0.6, "codeformer_fidelity": 0.9,
    "swapper_weight": 0.7, "pixel_boost": 256, "occluder": "xseg_1",
    "parser": "bisenet_resnet_34", "mask_regions": ("skin", "nose"), "mouth_mask": True,
    "threads": 4, "detector_sessions": 2, "swap_workers": 3, "frame_memory_mib": 512,
    "providers": ("CUDAExecutionProvider", "CPUExecutionProvider"),
    "models_dir": Path("/models"), "cache_dir": Path("/cache"), "offline": True,
    "use_embedding_cache": False}


def _changed(request: RenderRequest, changes: dict[str, object]) -> RenderRequest:
    """`request` with `changes` made, by path ("output.matte", "fail_fast"); a group's
    changes at once (a signing key needs its certificate)."""
    by_group: dict[str, dict[str, object]] = {}
    for path, value in changes.items():
        group, _, name = path.rpartition(".")
        by_group.setdefault(group, {})[name] = value
    for group, values in by_group.items():
        request = (replace(request, **{group: replace(getattr(request, group), **values)})
                   if group else replace(request, **values))
    return request


def _paths(kind: type) -> set[str]:
    """The paths of the fields of `kind`, a group's fields by "GROUP.NAME"."""
    groups = {"InputSpec": InputSpec, "FrameSpec": FrameSpec, "PlanChoices": PlanChoices,
              "OutputSpec": OutputSpec, "PolicyChoices": PolicyChoices,
              "SigningChoices": SigningChoices}
    paths: set[str] = set()
    for f in fields(kind):
        group = groups.get(str(f.type))
        paths |= {f"{f.name}.{g.name}" for g in fields(group)} if group else {f.name}
    return paths


def test_the_defaults_round_trip_to_a_short_command() -> None:
    args = commandline.render_args(BASE)
    assert args == ["-s", "actor.jpg", "-i", "shot.mov", "-o", "out/shot.####.exr"]
    assert commandline.request_from_args(args) == BASE


@pytest.mark.parametrize("name", sorted(REQUEST_CHANGES))
def test_every_request_field_round_trips(name: str) -> None:
    pair = {"signing.cert": "signing.key", "signing.key": "signing.cert",
            "signing.timestamp_url": "signing.cert"}.get(name)
    needs = {p: REQUEST_CHANGES[p] for p in (pair, "signing.key" if pair else None) if p}
    request = _changed(BASE, {name: REQUEST_CHANGES[name], **needs})
    assert commandline.request_from_args(commandline.render_args(request)) == request


@pytest.mark.parametrize("name", sorted(SETTINGS_CHANGES))
def test_every_settings_field_round_trips(name: str) -> None:
    needs = {"mouth_mask": {"parser": SETTINGS_CHANGES["parser"]},
             "reference_images": {"selector": "reference"}}.get(name, {})  # else refused
    changes = {name: SETTINGS_CHANGES[name], **needs}
    request = replace(BASE, settings=replace(Settings(), **changes))
    assert commandline.request_from_args(commandline.render_args(request)) == request


def test_everything_changed_at_once_round_trips_and_chunk_frames_too() -> None:
    settings = replace(Settings(), **SETTINGS_CHANGES)
    request = _changed(replace(BASE, settings=settings),
                       {**REQUEST_CHANGES, "frames.chunk": None,
                        "frames.chunk_frames": (1011, 1020)})
    args = commandline.render_args(request)
    assert commandline.request_from_args(args) == request
    command = farm_commandline.render_command(request, "/opt/facefuse", output_root="o")
    assert command[:2] == ["/opt/facefuse", "render"] and command[-2:] == ["--output-root", "o"]
    assert commandline.output_root_of(command[2:]) == Path("o")


def test_the_tables_cover_every_field() -> None:
    """A field added to RenderRequest or Settings must be added here (and to the command line)."""
    assert _paths(RenderRequest) - set(REQUEST_CHANGES) == {
        "settings", "frames.chunk_frames", "frames.only_report"}
    assert {f.name for f in fields(Settings)} - set(SETTINGS_CHANGES) == set(
        commandline.UNSPEAKABLE)


def test_every_option_names_a_real_field_once() -> None:
    """The table shot.contract.commandline describes: each option sets one field, and the command
    line's render parser is built from it (same switches, defaults and help)."""
    owners = {"request": _paths(RenderRequest),
              "settings": {f.name for f in fields(Settings)}, "": {""}}
    named = [option.field for option in commandline.RENDER_OPTIONS]
    assert len(named) == len(set(named))
    assert all(option.name in owners[option.owner] for option in commandline.RENDER_OPTIONS)
    assert commandline.UNSPEAKABLE == ("mask_padding", "normalise_latent")
    render = next(action for action in main_parser()._actions
                  if isinstance(action, argparse._SubParsersAction)).choices["render"]
    actions = {action.option_strings[-1]: action for action in render._actions
               if action.option_strings}
    for option in commandline.RENDER_OPTIONS:
        action = actions[option.flags[-1]]
        assert (action.option_strings, action.help) == (list(option.flags), option.help)


@pytest.mark.parametrize("name, value", [("mask_padding", (0.1, 0.0, 0.0, 0.0)),
                                         ("normalise_latent", False)])
def test_settings_without_an_option_are_refused(name: str, value: object) -> None:
    request = replace(BASE, settings=replace(Settings(), **{name: value}))
    with pytest.raises(ValueError, match=name):
        commandline.render_args(request)


def test_a_bad_command_line_is_one_input_error() -> None:
    with pytest.raises(InputError, match="--chunk-frames"):
        commandline.request_from_args(["-s", "a.jpg", "-i", "x", "-o", "y",
                                       "--chunk-frames", "9-3"])
    with pytest.raises(InputError, match="not both"):
        commandline.request_from_args(["-s", "a.jpg", "-i", "x", "-o", "y", "--chunk", "1/2",
                                       "--chunk-frames", "1-3"])


def test_chunk_frames_render_a_sub_range_of_the_analysed_range() -> None:
    selection = select_frames(tuple(range(1, 101)), (11, 60), None, "shot", chunk_frames=(21, 30))
    assert selection.analysed == tuple(range(11, 61)) and selection.rendered == tuple(range(21, 31))
    with pytest.raises(InputError, match="not inside the analysed range 11-60"):
        select_frames(tuple(range(1, 101)), (11, 60), None, "shot", chunk_frames=(55, 65))


def test_chunk_ranges_cover_the_range_once() -> None:
    assert chunk_ranges(range(1001, 1011), 4) == [(1001, 1004), (1005, 1008), (1009, 1010)]
    assert chunk_ranges([5], 10) == [(5, 5)]
    with pytest.raises(InputError):
        chunk_ranges(range(3), 0)


def test_openjd_progress_lines() -> None:
    progress = Progress("openjd", io.StringIO())
    out = io.StringIO()
    with redirect_stdout(out):
        for done in range(0, 21, 5):
            progress.phase(PhaseProgress("analysis", done, 20))
        for done in range(1, 5):
            progress.phase(PhaseProgress("swap", done, 4))
        progress.phase(PhaseProgress("encode", 1, 1))
    lines = out.getvalue().splitlines()
    assert lines[0] == "openjd_status: analysis 0/20 frames"
    assert "openjd_status: swapping 4 frames" in lines
    assert [line for line in lines if line.startswith("openjd_progress")] == [
        f"openjd_progress: {p}" for p in (25, 50, 75, 100)]
    assert not any(line.startswith("{") for line in lines)  # plain lines, not JSON


@pytest.mark.parametrize("argv, message", [
    (["farm", "openjd", "--blend", "edit.blend", "-i", "shot.mov", "--bundle", "job"],
     "drop --input"),
    (["farm", "openjd", "--blend", "e.blend", "--bundle", "j", "--enhancer", "gfpgan_1.4",
      "--frames", "1-5", "--chunk-size", "3"], "drop --enhancer, --frames, --chunk-size"),
    (["farm", "openjd", "-i", "shot.mov", "-o", "out/x.####.png", "--bundle", "job"],
     "needs -s SOURCE"),
    (["farm", "openjd", "-s", "a.jpg", "-i", "shot.mov", "-o", "out/x.####.png", "--chunk",
      "1/2", "--bundle", "job"], "--chunk is not for farm jobs"),
    (["farm", "dask", "-s", "a.jpg", "-i", "shot.mov", "-o", "out.mov", "--local", "2"],
     "farm jobs write image sequences"),
    (["farm", "dask", "-s", "a.jpg", "-i", "shot.mov", "-o", "o/x.####.png", "--local", "0"],
     "--local 0 must be at least 1"),
    (["farm", "dask", "-s", "a.jpg", "-i", "shot.mov", "-o", "o/x.####.png", "--scheduler",
      "tcp://head:8786", "--connect-timeout", "0"], "--connect-timeout 0 must be more than 0"),
    (["farm", "dask", "-s", "a.jpg", "-i", "shot.mov", "-o", "o/x.####.png"],
     "one of the arguments --scheduler --local is required"),
])
def test_farm_usage_errors_are_one_sentence_exit_2(argv: list[str], message: str,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1, err


def test_dask_tasks_name_every_file_absolutely(tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """A worker started in another folder runs the task the same: relative paths given to the
    client become absolute in the request the tasks are made from."""
    monkeypatch.chdir(tmp_path)
    settings = replace(Settings(), swapper="models/s.onnx", models_dir=Path("m"),
                       reference_images=(Path("ref.png"),))
    request = replace(BASE, settings=settings,
                      output=replace(BASE.output, matte="out/matte.####.png"),
                      policy=PolicyChoices(consent=(
                          (PersonInPicture("ref.png"), Path("c/jane.json")),
                          (SourcePhotos("b.jpg"), Path("c/jo.json")),
                          (SourcePhotos(), Path("c/all.json")))),
                      signing=SigningChoices(Path("keys/chain.pem"), Path("keys/k.pem")))
    made = farm_commandline.absolute_paths(request)
    assert made.policy.consent == (
        (PersonInPicture(str(tmp_path / "ref.png")), tmp_path / "c/jane.json"),
        (SourcePhotos(str(tmp_path / "b.jpg")), tmp_path / "c/jo.json"),
        (SourcePhotos(), tmp_path / "c/all.json"))
    assert made.signing == SigningChoices(tmp_path / "keys/chain.pem", tmp_path / "keys/k.pem")
    assert made.sources == (tmp_path / "actor.jpg",)
    assert made.input.path == str(tmp_path / "shot.mov")
    assert made.output.path == str(tmp_path / "out/shot.####.exr")
    assert made.output.matte == str(tmp_path / "out/matte.####.png")
    assert made.settings.swapper == str(tmp_path / "models/s.onnx")
    assert made.settings.detector == Settings().detector  # a manifest name stays a name
    assert made.settings.models_dir == tmp_path / "m"
    assert made.settings.reference_images == (tmp_path / "ref.png",)
    assert farm_commandline.absolute_paths(made) == made


def test_the_command_line_imports_no_farm_library() -> None:
    """`facefuse` starts every farm task: it must not pay for importing dask or openjd."""
    code = ("import sys, facefuse.cli.main; print(sorted({m.split('.')[0] for m in sys.modules} "
            "& {'dask', 'distributed', 'openjd', 'yaml'}))")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
                            timeout=60, check=True)
    assert result.stdout.strip() == "[]"
