"""Open Job Description bundles from `facefuse farm openjd`, run by the real `openjd run`.

The bundle's chunks together write exactly the files one `facefuse render` of the range
writes, byte for byte; tasks print openjd_progress / openjd_status lines; the session's model
check runs once; a task run again skips its finished frames; a hand-corrupted analysis cache
entry is recomputed; a missing model fails the session in seconds naming the model; an output
parameter leading out of the output folder is refused. The template is also checked with
openjd-model's own parser.
"""

from __future__ import annotations

import contextlib
import errno
import io
import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
import yaml
from openjd.model import ParameterValue, ParameterValueType, create_job, decode_job_template

from facefuse.cli.main import main
from tests.hosts.farm.conftest import SHOT_FRAMES, farm_env
from tests.integration.farm_helpers import Farm, assert_identical_to, assert_only_outputs

OPENJD = Path(sys.executable).with_name("openjd")


def make_bundle(shot: Farm, program: Path, folder: Path,
                *extra: str) -> subprocess.CompletedProcess[str]:
    """`facefuse farm openjd` for the shot's frames 1-36 in chunks of 10 into folder/job: the
    command line's main() run here (what it writes is files; `openjd run` then runs the tasks
    in processes of their own)."""
    args = ["farm", "openjd", "-s", str(shot.source), "-i", str(shot.clip),
            "-o", str(folder / "out" / "out.####.png"),
            "--detector", str(shot.detector), "--recogniser", str(shot.recogniser),
            "--swapper", str(shot.swapper), "--providers", "cpu",
            "--models-dir", str(shot.models), "--cache-dir", str(folder / "cache"),
            "--frames", f"1-{SHOT_FRAMES}", "--chunk-size", "10",
            "--bundle", str(folder / "job"), "--facefuse", str(program), *extra]
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(args)
    return subprocess.CompletedProcess(args, code, out.getvalue(), err.getvalue())


def openjd_run(template: Path, *extra: str, timeout: float = 180
               ) -> subprocess.CompletedProcess[str]:
    """`openjd run` of the bundle with its job_parameters.json (and `extra` after it)."""
    values = "file://" + str(template.with_name("job_parameters.json"))
    return subprocess.run([str(OPENJD), "run", str(template), "-p", values, *extra],
                          capture_output=True, text=True, env=farm_env(), timeout=timeout,
                          check=False)


def one_task(frames: str) -> str:
    return "--tasks=" + json.dumps([{"Frame": frames}])


@pytest.fixture
def bundle(shot: Farm, facefuse_program: Path, tmp_path: Path) -> Path:
    made = make_bundle(shot, facefuse_program, tmp_path)
    assert made.returncode == 0, made.stderr
    assert "4 tasks" in made.stdout
    return tmp_path / "job" / "template.yaml"


def test_the_template_is_valid_openjd_with_chunked_frames(bundle: Path) -> None:
    template = yaml.safe_load(bundle.read_text())
    values = json.loads(bundle.with_name("job_parameters.json").read_text())
    kinds = {p["name"]: p["type"] for p in template["parameterDefinitions"]}
    job = create_job(job_template=decode_job_template(template=template,
                                                      supported_extensions=["TASK_CHUNKING"]),
                     job_parameter_values={name: ParameterValue(
                         type=ParameterValueType(kinds[name]), value=str(value))
                         for name, value in values.items()})
    step = job.steps[0]
    frame = step.parameterSpace.taskParameterDefinitions["Frame"]
    assert frame.chunks.defaultTaskCount == 10
    assert list(frame.range) == list(range(1, SHOT_FRAMES + 1))
    values = yaml.safe_load((bundle.parent / "parameter_values.yaml").read_text())
    by_name = {v["name"]: v["value"] for v in values["parameterValues"]}
    assert by_name["Frames"] == f"1-{SHOT_FRAMES}" and by_name["ChunkSize"] == 10
    for name in ("Input", "Source1", "OutputDir", "ModelsDir", "CacheDir", "DetectorModel",
                 "RecogniserModel", "SwapperModel"):
        assert kinds[name] == "PATH", name


def test_openjd_run_in_chunks_equals_one_render_and_resumes(shot: Farm, bundle: Path) -> None:
    out = bundle.parent.parent / "out"
    run = openjd_run(bundle)
    log = run.stdout + run.stderr
    assert run.returncode == 0, log[-3000:]
    assert log.count("Running Task") == 4, "frames 1-36 in chunks of up to 10 are 4 tasks"
    assert log.count("Entering Environment: FacefuseModels") == 1
    assert log.count(" ok ") == 3, "the session checks the three models once"
    assert log.count("openjd_progress: 100") == 4 and "openjd_status: swapping 9 frames" in log
    assert "openjd_status: analysis 0/36 frames" in log, "one task analyses the whole range"
    files = assert_only_outputs(out, "png", max_temps=0)
    assert list(files) == list(range(1, SHOT_FRAMES + 1))
    assert_identical_to(files, shot.reference)

    again = openjd_run(bundle, one_task("11-20"))
    assert again.returncode == 0, again.stdout[-3000:]
    assert "0 done, 10 already done, 0 failed of 10 frames" in again.stdout


def test_a_corrupt_analysis_cache_entry_is_recomputed(shot: Farm, bundle: Path) -> None:
    out, cache = bundle.parent.parent / "out", bundle.parent.parent / "cache"
    first = openjd_run(bundle, one_task("1-10"))
    assert first.returncode == 0, first.stdout[-3000:]
    entries = list((cache / "analysis").glob("*.npz"))
    assert len(entries) == 1
    good = entries[0].read_bytes()
    entries[0].write_bytes(good[: len(good) // 2])  # a half-written entry, by hand
    for path in out.glob("out.000[1-9].png"):
        path.unlink()
    again = openjd_run(bundle, one_task("1-10"))
    log = again.stdout + again.stderr
    assert again.returncode == 0, log[-3000:]
    assert f"ignoring the damaged analysis cache {entries[0]}" in log, log[-3000:]
    assert "openjd_status: analysis 0/36 frames" in log, "the shot is analysed again"
    files = assert_only_outputs(out, "png", max_temps=0)
    assert list(files) == list(range(1, 11))
    assert_identical_to(files, shot.reference)
    with np.load(entries[0]) as data:
        assert len(data.files) > 0, "the entry was replaced by a complete one"


def test_a_missing_model_fails_the_session_in_seconds(shot: Farm, bundle: Path) -> None:
    gone = shot.models / "missing_swapper.onnx"
    started = time.monotonic()
    run = openjd_run(bundle, "-p", f"SwapperModel={gone}", timeout=60)
    elapsed = time.monotonic() - started
    log = run.stdout + run.stderr
    assert run.returncode != 0
    assert "missing_swapper.onnx does not exist" in log, log[-3000:]
    assert "Running Task" not in log, "no task may start without its models"
    assert elapsed < 20, f"the model check took {elapsed:.1f} s"
    assert not (bundle.parent.parent / "out").exists()


def test_no_parameter_writes_outside_the_output_folder(shot: Farm, bundle: Path,
                                                       facefuse_program: Path,
                                                       tmp_path: Path) -> None:
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (tmp_path / "out").mkdir()
    os.symlink(outside, tmp_path / "out" / "link")
    for pattern in ("../escape.####.png", "link/sym.####.png"):  # more in tests/unit
        run = openjd_run(bundle, "-p", f"OutputPattern={pattern}", one_task("1-2"), timeout=60)
        log = run.stdout + run.stderr
        assert run.returncode != 0, pattern
        assert "is outside the job's output folder" in log, log[-3000:]
    # An absolute pattern is joined to OutputDir by the template: it lands inside the folder.
    run = openjd_run(bundle, "-p", f"OutputPattern={outside}/abs.####.png", one_task("1-2"),
                     timeout=60)
    assert run.returncode == 0, run.stdout[-3000:]
    assert len(list((tmp_path / "out").rglob("abs.000[12].png"))) == 2
    assert not list(outside.iterdir()) and not list(tmp_path.glob("*.png"))

    matte = make_bundle(shot, facefuse_program, tmp_path / "second", "--matte",
                        str(tmp_path / "elsewhere" / "matte.####.png"))
    assert matte.returncode == 2 and "outside the job's output folder" in matte.stderr


def test_without_task_chunking_listed_chunks_give_the_same_files(
        shot: Farm, facefuse_program: Path, tmp_path: Path) -> None:
    """--no-task-chunking: plain 2023-09 (no extension), the chunks fixed as (ChunkStart,
    ChunkEnd) pairs: 1-10, 11-20, 21-30, 31-36; the same files as one render."""
    made = make_bundle(shot, facefuse_program, tmp_path, "--no-task-chunking")
    assert made.returncode == 0, made.stderr
    template = yaml.safe_load((tmp_path / "job" / "template.yaml").read_text())
    assert "extensions" not in template
    space = template["steps"][0]["parameterSpace"]
    assert space["combination"] == "(ChunkStart, ChunkEnd)"
    assert [p["range"] for p in space["taskParameterDefinitions"]] == [[1, 11, 21, 31],
                                                                      [10, 20, 30, 36]]
    run = openjd_run(tmp_path / "job" / "template.yaml", "--extensions", "")
    log = run.stdout + run.stderr
    assert run.returncode == 0, log[-3000:]
    assert log.count("Running Task") == 4 and "openjd_status: swapping 6 frames" in log
    files = assert_only_outputs(tmp_path / "out", "png", max_temps=0)
    assert list(files) == list(range(1, SHOT_FRAMES + 1))
    assert_identical_to(files, shot.reference)


def test_a_cancelled_task_is_told_first_and_keeps_its_complete_frames(bundle: Path) -> None:
    """Cancelling `openjd run` cancels the running action NOTIFY_THEN_TERMINATE: facefuse gets
    SIGTERM, finishes no further frame, leaves only complete files and exits 143 (SIGKILL, the
    default TERMINATE, would end it with -9 and leave its temporaries)."""
    out = bundle.parent.parent / "out"
    values = "file://" + str(bundle.with_name("job_parameters.json"))
    run = subprocess.Popen([str(OPENJD), "run", str(bundle), "-p", values, one_task("1-36")],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                           env=farm_env())
    assert run.stdout is not None
    lines = []
    for line in run.stdout:
        lines.append(line)
        if "openjd_status: analysis" in line:  # facefuse runs, its SIGTERM handler is set
            run.send_signal(signal.SIGTERM)
            break
    lines += run.stdout.readlines()
    run.wait(60)
    log = "".join(lines)
    assert "exited with code: 143" in log, log[-3000:]
    files = assert_only_outputs(out, "png", max_temps=0) if out.exists() else {}
    assert len(files) < SHOT_FRAMES, "stopped before the end, with complete frames only"


def test_names_with_double_braces_reach_the_task_as_they_are(shot: Farm, facefuse_program: Path,
                                                             tmp_path: Path) -> None:
    """A format string reads "{{" as an expression: a shot called take{{1}}.mp4 and a value
    with braces still make a valid bundle, and the task gets the text as it is."""
    clip = tmp_path / "take{{1}}.mp4"
    clip.write_bytes(shot.clip.read_bytes())
    braced = replace(shot, clip=clip)
    made = make_bundle(braced, facefuse_program, tmp_path, "--colorspace", "x{{y}}")
    assert made.returncode == 0, made.stderr
    template = yaml.safe_load((tmp_path / "job" / "template.yaml").read_text())
    assert "{{" not in template["name"] and "take((1)).mp4" in template["name"]
    values = json.loads((tmp_path / "job" / "job_parameters.json").read_text())
    assert "x{{y}}" in values.values()
    kinds = {p["name"]: p["type"] for p in template["parameterDefinitions"]}
    create_job(job_template=decode_job_template(template=template,
                                                supported_extensions=["TASK_CHUNKING"]),
               job_parameter_values={name: ParameterValue(
                   type=ParameterValueType(kinds[name]), value=str(value))
                   for name, value in values.items()})
    run = openjd_run(tmp_path / "job" / "template.yaml", one_task("1-2"), timeout=120)
    log = run.stdout + run.stderr
    assert "x{{y}}" in log, log[-3000:]  # the render names the colour space as given


@pytest.mark.parametrize("code", [errno.ENOSPC, errno.EROFS])
def test_a_bundle_the_disk_refuses_is_one_sentence_with_code_6(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, code: int) -> None:
    """A full or read-only bundle folder: OutputError naming the file, not an OSError."""
    from facefuse.errors import ExitCode, OutputError
    from facefuse.farm import openjd

    def refuse(path: Path, data: bytes) -> None:
        raise OSError(code, os.strerror(code), str(path))

    monkeypatch.setattr(openjd, "atomic_write_bytes", refuse)
    template = {"specificationVersion": "jobtemplate-2023-09", "name": "shot",
                "parameterDefinitions": [{"name": "Colorspace", "type": "STRING"}],
                "steps": [{"name": "render", "script": {"actions": {"onRun": {
                    "command": "facefuse", "args": ["--version"]}}}}]}
    values = {"parameterValues": [{"name": "Colorspace", "value": "sRGB"}]}
    with pytest.raises(OutputError, match=f"cannot write {tmp_path / 'job'}/") as info:
        openjd.write_bundle(openjd.Bundle(template, values), tmp_path / "job")
    assert info.value.exit_code == ExitCode.OUTPUT
