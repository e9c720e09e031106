"""Every entry point stops the same way on SIGTERM and SIGINT (exit 143 / 130, complete files
kept, scratch removed: facefuse.stopping), and a temporary a killed run leaves is swept by the
next run of any command that writes there (io.files.sweep_leftovers).

Real `preview`, `review`, `timeline swap`, `resolve render` and `render --report` processes on
the `farm` clip (120 frames, the real YuNet, the contract recogniser and colour swapper:
tests/integration/conftest.py) are signalled in their analysis, writing, pictures and report
phases; a SIGKILL stands for every way a run can die without cleaning up. `render`'s frames
and `bench` are signalled in test_farm_signals.py and test_bench.py; the helper itself and the
sweep rule are tests/unit/test_stopping.py and tests/unit/io/test_leftovers.py.
"""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from facefuse.cli.main import main
from facefuse.io.files import temporary_path
from tests.integration.farm_helpers import Farm, start

TERM, INT = 143, 130


def options(farm: Farm) -> list[str]:
    """The input, the source and the contract models, as every command takes them."""
    return ["-i", str(farm.clip), "-s", str(farm.source), "--detector", str(farm.detector),
            "--recogniser", str(farm.recogniser), "--swapper", str(farm.swapper),
            "--providers", "cpu", "--models-dir", str(farm.models), "--offline"]


def command(farm: Farm, verb: str, *args: str) -> list[str]:
    return [sys.executable, "-m", "facefuse", verb, *options(farm), "--progress", "json", *args]


def hidden(folder: Path) -> list[str]:
    """The hidden entries of a folder and of every folder under it (temporaries, scratch)."""
    return sorted(str(p.relative_to(folder)) for p in folder.rglob(".*"))


def signal_at(farm: Farm, cmd: list[str], log: Path, needle: str, signum: int,
              cache: Path) -> int:
    """Start `cmd`, send `signum` once its stdout (JSON progress) shows `needle`; its exit
    code."""
    proc = start(farm, cmd, log, cache=cache)
    deadline = time.monotonic() + 60
    while needle not in log.with_suffix(".out").read_text():
        assert proc.poll() is None, f"ended early (rc {proc.returncode})"
        assert time.monotonic() < deadline, f"no {needle!r} after 60 s"
        time.sleep(0.005)
    proc.send_signal(signum)
    proc.wait(timeout=60)
    return proc.returncode


def rerun(farm: Farm, cmd: list[str], cache: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, env=farm.env(cache), capture_output=True, text=True,
                          timeout=120, cwd=farm.root, check=False)


@pytest.mark.parametrize(("signum", "code"), [(signal.SIGTERM, TERM), (signal.SIGINT, INT)])
def test_preview_stopped_in_its_analysis_exits_with_the_signal_code_and_leaves_nothing(
        farm: Farm, tmp_path: Path, signum: int, code: int) -> None:
    """A preview analysing the shot (a cold cache) stops at the signal: no still, no scratch
    folder, no lock; its analysis cache keeps only whole files."""
    cache = tmp_path / "cache"
    still = tmp_path / "still.png"
    rc = signal_at(farm, command(farm, "preview", "-o", str(still), "--frame", "60"),
                   tmp_path / "log", '"phase": "analysis"', signum, cache)
    err = (tmp_path / "log.err").read_text()
    assert rc == code, err[-2000:]
    assert "Traceback" not in err
    assert not still.exists()
    assert hidden(tmp_path) == [], "the scratch or a temporary was left"
    assert not list(cache.rglob("*.lock")), "the analysis lock was left"


def test_preview_killed_leaves_scratch_the_next_preview_and_cache_clear_sweep(
        farm: Farm, tmp_path: Path) -> None:
    """SIGKILL in the preview's render leaves its scratch folder; the next preview (same
    cache) sweeps it and completes; `cache clear` sweeps one too."""
    cache = tmp_path / "cache"
    still = tmp_path / "still.png"
    cmd = command(farm, "preview", "-o", str(still), "--frame", "3", "--frames", "1-6")
    rc = signal_at(farm, cmd, tmp_path / "killed", '"phase": "analysis"', signal.SIGKILL,
                   cache)
    assert rc == -signal.SIGKILL
    left = hidden(cache)
    assert left, "the kill must leave the scratch folder (else this test proves nothing)"
    again = rerun(farm, cmd, cache)
    assert again.returncode == 0, again.stderr[-2000:]
    assert still.is_file() and hidden(tmp_path) == []
    assert hidden(cache) == []

    # what a killed preview leaves, swept by `cache clear`
    rc = signal_at(farm, [*cmd, "--overwrite"], tmp_path / "killed2", '"phase"',
                   signal.SIGKILL, cache)
    assert rc == -signal.SIGKILL and hidden(cache)
    assert main(["cache", "clear", "--cache-dir", str(cache)]) == 0
    assert hidden(cache) == []


@pytest.mark.parametrize(("signum", "code"), [(signal.SIGTERM, TERM), (signal.SIGINT, INT)])
def test_review_stopped_in_its_pictures_leaves_the_folder_as_it_was(
        farm: Farm, tmp_path: Path, signum: int, code: int) -> None:
    """Stopped while it renders its stills (the analysis cached): exit 143/130, no report,
    no staging folder beside it, no scratch."""
    parent = tmp_path / "reports"
    parent.mkdir()
    rc = signal_at(farm, command(farm, "review", "-o", str(parent / "report")),
                   tmp_path / "log", '"phase": "pictures"', signum, farm.cache)
    err = (tmp_path / "log.err").read_text()
    assert rc == code, err[-2000:]
    assert list(parent.iterdir()) == []
    assert "Traceback" not in err and "review stopped by" in err


def test_a_killed_review_staging_folder_is_swept_by_the_next_review(
        farm: Farm, tmp_path: Path) -> None:
    """SIGKILL in the pictures phase leaves the hidden staging folder beside the report; the
    next review written beside it (another report) removes it and completes."""
    parent = tmp_path / "reports"
    parent.mkdir()
    rc = signal_at(farm, command(farm, "review", "-o", str(parent / "first"), "--frames",
                                 "1-20"), tmp_path / "log", '"phase": "pictures"',
                   signal.SIGKILL, farm.cache)
    assert rc == -signal.SIGKILL
    assert hidden(parent), "the kill must leave the staging folder"
    again = rerun(farm, command(farm, "review", "-o", str(parent / "second"), "--frames",
                                "1-20"))
    assert again.returncode == 0, again.stderr[-2000:]
    assert hidden(parent) == [] and sorted(p.name for p in parent.iterdir()) == ["second"]


def test_a_second_review_into_a_folder_leaves_only_the_pictures_its_report_lists(
        farm: Farm, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    folder = tmp_path / "report"
    monkeypatch.setenv("FACEFUSE_CACHE", str(farm.cache))
    review = ["review", *options(farm), "-o", str(folder), "--progress", "none"]
    assert main([*review, "--frames", "1-20"]) == 0
    first = {p.relative_to(folder) for p in folder.rglob("*.jpg")}
    assert main([*review, "--frames", "21-40"]) == 0
    capsys.readouterr()
    report = json.loads((folder / "report.json").read_text(encoding="utf-8"))
    listed = {Path(name) for name in _pictures_named(report)}
    on_disk = {p.relative_to(folder) for p in folder.rglob("*") if p.suffix in (".jpg", ".png")}
    assert first - listed, "the earlier report's samples must differ (else this proves nothing)"
    assert on_disk <= listed | {p for p in on_disk if p.parts[0] == "plots"}, \
        f"pictures the report does not list: {sorted(map(str, on_disk - listed))}"


def _pictures_named(value: object) -> list[str]:
    """Every string in the report that names a picture file."""
    if isinstance(value, str):
        return [value] if value.endswith((".jpg", ".png")) else []
    if isinstance(value, dict):
        return [name for item in value.values() for name in _pictures_named(item)]
    if isinstance(value, list):
        return [name for item in value for name in _pictures_named(item)]
    return []


def test_a_temporary_of_a_dead_writer_is_swept_by_any_command_that_writes_there(
        farm: Farm, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """What killed runs of other commands left in a folder (a timeline swap's movie of
    another version, a preview's still, a review's staging folder) goes with the next
    preview, review or render written there; a live writer's temporary stays."""
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)
    pid = int(dead.stdout)
    folder = tmp_path / "out"
    folder.mkdir()
    monkeypatch.setenv("FACEFUSE_CACHE", str(farm.cache))
    for verb, extra in (("preview", ["-o", str(folder / "still.png"), "--frame", "2",
                                     "--frames", "1-4"]),
                        ("review", ["-o", str(folder / "report"), "--frames", "1-4"]),
                        ("render", ["-o", str(folder / "f.####.png"), "--frames", "1-2",
                                    "--progress", "none"])):
        left = [_dead_temporary(folder / "A001.v001.mov", pid, True),
                _dead_temporary(folder / "still.png", pid, False),
                _dead_temporary(folder / "report", pid, False, folder=True)]
        live = temporary_path(folder / "live.png", keep_suffix=True)
        live.write_bytes(b"being written")
        assert main([verb, *options(farm), *extra]) == 0, verb
        capsys.readouterr()
        assert not any(p.exists() for p in left), f"{verb} left {hidden(folder)}"
        assert live.exists(), f"{verb} removed a live writer's temporary"
        live.unlink()
        for entry in folder.iterdir():
            shutil.rmtree(entry) if entry.is_dir() else entry.unlink()


def _dead_temporary(target: Path, pid: int, keep_suffix: bool, folder: bool = False) -> Path:
    """A temporary of `target` named as written by process `pid` (ended)."""
    name = temporary_path(target, keep_suffix).name
    pid_part = name.split(".")[-3 if not keep_suffix else -4]
    _, place, _ = pid_part.split("-")
    path = target.with_name(name.replace(pid_part, f"{pid}-{place}-x"))
    if folder:
        path.mkdir()
        (path / "report.json").write_text("{}")
    else:
        path.write_bytes(b"half")
    return path


@pytest.mark.parametrize(("signum", "code", "phase"), [
    (signal.SIGKILL, -signal.SIGKILL, "writing"), (signal.SIGTERM, TERM, "writing"),
    (signal.SIGINT, INT, "writing"), (signal.SIGTERM, TERM, "report")])
def test_a_timeline_swap_stopped_mid_clip_leaves_no_temporary_after_a_rerun(
        farm: Farm, tmp_path: Path, signum: int, code: int, phase: str) -> None:
    """`timeline swap` into PNG sequences, stopped while its clip renders (or, with --report,
    while the clip's review report is staged): SIGTERM and SIGINT exit 143/130 with complete
    frames only; a SIGKILL's temporaries (of version 1) are swept by the re-run, which renders
    version 2 and writes the swapped timeline."""
    otio = pytest.importorskip("opentimelineio")
    from facefuse.hosting.plugins import installed_hosts
    from tests.hosts import otio_edits as e

    if "otio" not in installed_hosts():
        pytest.skip("the otio host entry point is not installed")
    rate, used = 24.0, 120 if phase == "writing" else 24  # a report waits for the whole clip
    made = e.timeline("edit", [e.video_track("V1", [e.clip(
        "A001", e.movie(farm.clip, 0, 120, rate), 0, used, rate, markers=("swap",))])],
        start=86400, rate=rate)
    edit = e.write(made, tmp_path / "edit.otio")
    out = tmp_path / "out"
    cmd = [sys.executable, "-m", "facefuse", "timeline", "swap", str(edit), "-o", str(out),
           "--format", "png", *options(farm)[2:], *(["--report"] if phase == "report" else [])]
    proc = start(farm, cmd, tmp_path / "log")
    _wait_files(proc, out, "A001.v001.*.png" if phase == "writing" else ".A001.v001.review.*",
                5 if phase == "writing" else 1)
    proc.send_signal(signum)
    proc.wait(timeout=60)
    err = (tmp_path / "log.err").read_text()
    assert proc.returncode == code, err[-2000:]
    assert "Traceback" not in err
    frames = sorted(out.glob("A001.v001.*.png"))
    assert 5 <= len(frames) <= used if phase == "report" else 5 <= len(frames) < used, \
        "the signal must land mid-clip"
    if signum != signal.SIGKILL:
        assert hidden(out) == [], "a stopped swap leaves no temporary"
        if phase == "writing":
            return  # the re-run after a stop is test_farm_signals.py's (the same render)
    again = rerun(farm, cmd)
    assert again.returncode == 0, again.stderr[-2000:]
    assert hidden(out) == [], "the re-run swept what the stopped one left"
    assert (out / "edit.swapped.otio").is_file()
    assert otio.adapters.read_from_file(str(out / "edit.swapped.otio"))
    assert len(list(out.glob("A001.v002.*.png"))) == used
    if phase == "report":
        assert (out / "A001.v002.review" / "report.json").is_file()


def _wait_files(proc: subprocess.Popen, folder: Path, pattern: str, count: int) -> None:
    deadline = time.monotonic() + 60
    while not folder.is_dir() or len(list(folder.glob(pattern))) < count:
        assert proc.poll() is None, f"ended early (rc {proc.returncode})"
        assert time.monotonic() < deadline, f"fewer than {count} {pattern} after 60 s"
        time.sleep(0.005)


@pytest.mark.parametrize(("signum", "code"), [(signal.SIGTERM, TERM), (signal.SIGINT, INT)])
def test_a_resolve_render_stopped_mid_clip_writes_its_result_and_leaves_no_temporary(
        farm: Farm, tmp_path: Path, signum: int, code: int) -> None:
    """`resolve render` (the launcher's command without the panel) stopped while it writes
    frames: exit 143/130, complete frames only, and the result file says nothing was placed."""
    from tests.resolve_facts import job

    job_path = tmp_path / "job.json"
    job_path.write_text(json.dumps(job(farm.clip, duration=110, left_offset=0, frames=120,
                                       name="shot.mkv", busy={"1": [[86448, 86558]]})))
    out, result = tmp_path / "out", tmp_path / "result.json"
    cmd = [sys.executable, "-m", "facefuse", "resolve", "render", "--job", str(job_path),
           "--result", str(result), "--output", "png", "--output-dir", str(out),
           *options(farm)[2:]]
    proc = start(farm, cmd, tmp_path / "log")
    _wait_files(proc, out, "**/*.png", 5)
    proc.send_signal(signum)
    proc.wait(timeout=60)
    err = (tmp_path / "log.err").read_text()
    assert proc.returncode == code, err[-2000:]
    assert "Traceback" not in err
    assert 5 <= len(list(out.glob("**/*.png"))) < 110, "the signal must land mid-clip"
    assert hidden(out) == [], "a stopped render leaves no temporary"
    assert "stopped" in result.read_text(encoding="utf-8")


def test_a_render_stopped_in_its_report_exits_143_and_leaves_its_frames_only(
        farm: Farm, tmp_path: Path) -> None:
    """`render --report`: SIGTERM while the report is staged (after the frames) stops it as
    in the frames: exit 143, the frames kept, no report, no staging folder."""
    out, parent = tmp_path / "out", tmp_path / "reports"
    out.mkdir()
    parent.mkdir()
    cmd = command(farm, "render", "-o", str(out / "f.####.png"), "--frames", "1-24",
                  "--report", str(parent / "report"))
    proc = start(farm, cmd, tmp_path / "log")
    _wait_files(proc, parent, ".report.*", 1)
    proc.send_signal(signal.SIGTERM)
    proc.wait(timeout=60)
    err = (tmp_path / "log.err").read_text()
    assert proc.returncode == TERM, err[-2000:]
    assert "Traceback" not in err
    assert list(parent.iterdir()) == []
    assert len(list(out.glob("f.*.png"))) == 24 and hidden(out) == []
