"""addon/resolve/facefuse.lua run for real in Lua (lupa: LuaJIT as in Resolve, and Lua 5.4) with a
fake `resolve` global (tests/hosts/resolve_fake.lua) and the facefuse program replaced by a stub
that writes a known result; once with the real `facefuse resolve render` instead of the stub.
"""

from __future__ import annotations

import importlib
import json
import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from addon.resolve import install
from addon.resolve import swaps as resolve_swaps
from addon.resolve.job_file import parse_job
from tests.hosts.resolve_lua import (
    RUNTIMES,
    Launcher,
    use_planner,
)
from tests.hosts.resolve_lua import launcher_config as _config
from tests.hosts.resolve_lua import placed as _placed
from tests.render_media import YUNET_NAME, face_photo, make_face_clip
from tests.review_reports import review_report

START, DURATION, LEFT = 86448, 10, 3
STUB = """
import os, shutil, sys
known, capture = sys.argv[1], sys.argv[2]
args = sys.argv[3:]
shutil.copyfile(args[args.index("--job") + 1], capture)
if known != "-":
    shutil.copyfile(known, args[args.index("--result") + 1])
sys.stderr.write("the stub says hello\\n")
sys.exit(int(os.environ.get("STUB_EXIT", "0")))
"""


@pytest.fixture()
def media(tmp_path: Path) -> Path:
    path = tmp_path / "media" / "plate.mp4"
    path.parent.mkdir()
    path.write_bytes(b"a movie")
    return path


@pytest.fixture()
def stub(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """Point the launcher at the stub; returns set(result) that picks the known result."""
    script = tmp_path / "stub.py"
    script.write_text(STUB)
    capture = tmp_path / "job-seen.json"
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    monkeypatch.delenv("APP_SANDBOX_CONTAINER_ID", raising=False)

    def use(result: Path | None) -> Path:
        known = str(result) if result is not None else "-"
        command = " ".join(shlex.quote(p) for p in (sys.executable, str(script), known,
                                                    str(capture)))
        monkeypatch.setenv("FACEFUSE_RESOLVE_COMMAND", command)
        return capture
    return use


def _known_result(tmp_path: Path, media: Path, **changes: Any) -> Path:
    """A result placing a 10-frame PNG sequence at START on track 2 (the files exist)."""
    folder = media.parent / "facefuse"
    folder.mkdir(exist_ok=True)
    for number in range(LEFT + 1, LEFT + DURATION + 1):
        (folder / f"plate.{number:04d}.png").write_bytes(b"png")
    placement = resolve_swaps.Placement(
        media=str(folder / "plate.%04d.png"), sequence=True, start_index=LEFT + 1,
        end_index=LEFT + DURATION, bin="facefuse", name="plate facefuse", timeline="Timeline 1",
        timeline_id="", plate_id="", plate_track=1, track=2, insert=True, record_frame=START,
        duration=DURATION, start_frame=0, end_frame=DURATION)
    placement = resolve_swaps.Placement(**{**{n: getattr(placement, n)
                                             for n in placement.__slots__}, **changes})
    path = tmp_path / "known-result.json"
    resolve_swaps.write_result(path, placement, "done")
    return path


@pytest.mark.parametrize("runtime", RUNTIMES)
def test_the_launcher_hands_python_the_facts_and_places_the_result(
        runtime: str, media: Path, tmp_path: Path, stub):
    capture = stub(_known_result(tmp_path, media))
    launcher = Launcher(runtime, _config(media))
    assert launcher.run() is True, launcher.output
    facts = parse_job(json.loads(capture.read_text()))
    assert (facts.span.record_start, facts.span.duration, facts.span.left_offset) == \
        (START, DURATION, LEFT)
    assert (facts.track, facts.video_tracks, facts.edition.kind) == (1, 1, "free")
    assert facts.busy == {1: ((START, START + DURATION),)}
    (placed,) = launcher.track(2)
    (original,) = launcher.track(1)
    assert (placed.start, placed.duration) == (original.start, original.duration)
    (bin_,) = launcher.state.root.GetSubFolderList(launcher.state.root).values()
    assert bin_.name == "facefuse"
    assert "placed plate facefuse on video track 2 at frame 86448" in launcher.output
    assert not list(tmp_path.glob("facefuse-resolve-*")), "temporary files left behind"


def test_paths_with_spaces_quotes_and_accents_survive_both_ways(tmp_path: Path, stub,
                                                                monkeypatch: pytest.MonkeyPatch):
    odd = tmp_path / "Jo's café – rushes"
    odd.mkdir()
    media = odd / "plan séquence 01.mp4"
    media.write_bytes(b"a movie")
    capture = stub(_known_result(tmp_path, media))
    monkeypatch.setenv("TMPDIR", str(odd))
    launcher = Launcher(RUNTIMES[0], _config(media))
    assert launcher.run() is True, launcher.output
    seen = json.loads(capture.read_text(encoding="utf-8"))
    assert seen["item"]["media"]["File Path"] == str(media)
    (placed,) = launcher.track(2)
    assert placed.media.GetClipProperty(placed.media, "File Path") == \
        str(odd / "facefuse" / f"plate.[{LEFT + 1:04d}-{LEFT + DURATION:04d}].png")
    assert not list(odd.glob("facefuse-resolve-*"))


def test_the_launcher_finds_the_track_without_get_track_type_and_index(
        media: Path, tmp_path: Path, stub):
    capture = stub(None)
    item = {**_config(media)["items"][0], "track": 2}
    config = _config(media, tracks=2, no_track_index=True, items=[item])
    launcher = Launcher(RUNTIMES[0], config)
    launcher.run()
    assert json.loads(capture.read_text())["item"]["track"] == 2
    assert "facefuse wrote no result" in launcher.output and "the stub says hello" in \
        launcher.output


@pytest.mark.parametrize("change, words", [
    ({"media": None}, "generator, title or effect"),
    ({"media": {"File Path": "", "Type": "Video"}}, "offline"),
])
def test_python_decides_about_bad_items_and_nothing_is_placed(media: Path, tmp_path: Path,
                                                              stub, change, words):
    capture = stub(None)
    item = {**_config(media)["items"][0], **change}
    launcher = Launcher(RUNTIMES[0], _config(media, items=[item]))
    launcher.run()
    seen = json.loads(capture.read_text())
    with pytest.raises(Exception, match=words):
        parse_job(seen)
    assert launcher.track(2) == [] and "ImportMedia" not in list(launcher.state.calls.values())


def test_no_timeline_and_no_clip_reach_python_as_facts(media: Path, tmp_path: Path, stub):
    capture = stub(None)
    Launcher(RUNTIMES[0], _config(media, no_timeline=True)).run()
    assert json.loads(capture.read_text()).get("timeline") is None
    Launcher(RUNTIMES[0], _config(media, playhead=0)).run()
    assert json.loads(capture.read_text()).get("item") is None


def test_failed_resolve_calls_are_reported_and_stop_the_placement(media: Path, tmp_path: Path,
                                                                  stub):
    stub(_known_result(tmp_path, media, end_index=LEFT + DURATION + 5))  # frames not there
    launcher = Launcher(RUNTIMES[0], _config(media))
    assert launcher.run() is False
    assert "Resolve could not import" in launcher.output and launcher.track(2) == []
    stub(_known_result(tmp_path, media))
    refusing = Launcher(RUNTIMES[0], _config(media, refuse_add_track=True))
    assert refusing.run() is False
    assert "could not add a video track" in refusing.output
    stub(_known_result(tmp_path, media, end_frame=DURATION + 40))
    too_long = Launcher(RUNTIMES[0], _config(media, tracks=2))
    assert too_long.run() is False and "could not place" in too_long.output


def test_nothing_to_place_is_said_in_the_results_words(media: Path, tmp_path: Path, stub):
    path = tmp_path / "nothing.json"
    resolve_swaps.write_result(path, None, "The render was cancelled: nothing placed")
    stub(path)
    launcher = Launcher(RUNTIMES[0], _config(media))
    assert launcher.run() is True
    assert "The render was cancelled: nothing placed" in launcher.output
    assert "ImportMedia" not in list(launcher.state.calls.values())


def test_a_failing_program_a_missing_install_and_a_sandbox_are_one_sentence(
        media: Path, tmp_path: Path, stub, monkeypatch: pytest.MonkeyPatch):
    stub(None)
    monkeypatch.setenv("STUB_EXIT", "3")
    launcher = Launcher(RUNTIMES[0], _config(media))
    assert launcher.run() is False
    assert "did not finish (exit 3)" in launcher.output
    monkeypatch.delenv("FACEFUSE_RESOLVE_COMMAND")
    uninstalled = Launcher(RUNTIMES[0], _config(media))
    assert uninstalled.run() is False and "run `facefuse resolve install`" in uninstalled.output
    monkeypatch.setenv("APP_SANDBOX_CONTAINER_ID", "com.blackmagic-design.DaVinciResolveLite")
    sandboxed = Launcher(RUNTIMES[0], _config(media))
    assert sandboxed.run() is False and "sandboxed" in sandboxed.output
    outside = Launcher(RUNTIMES[0], _config(media))
    monkeypatch.delenv("APP_SANDBOX_CONTAINER_ID")
    assert outside.run(with_resolve=False) is False
    assert "Workspace > Scripts" in outside.output


def test_the_installed_launcher_runs_its_written_command(media: Path, tmp_path: Path, stub,
                                                         monkeypatch: pytest.MonkeyPatch):
    capture = stub(_known_result(tmp_path, media))
    command = install.launcher_text(os.environ["FACEFUSE_RESOLVE_COMMAND"])
    monkeypatch.delenv("FACEFUSE_RESOLVE_COMMAND")
    launcher = Launcher(RUNTIMES[0], _config(media))
    launcher.lua.globals().resolve = launcher.resolve
    assert launcher.lua.execute(command) is True, launcher.output
    assert capture.is_file() and len(launcher.track(2)) == 1


def test_the_launcher_with_the_real_program_swaps_and_places(
        tmp_path: Path, testdata: Path, render_models: Path, render_cache: Path,
        monkeypatch: pytest.MonkeyPatch):
    (tmp_path / "media").mkdir()
    clip = make_face_clip(tmp_path / "media" / "plate.mp4", face_photo(testdata), frames=20)
    source = testdata / "media" / "astronaut.png"
    command = [sys.executable, "-m", "facefuse", "resolve", "render", "-s", str(source),
               "--detector", YUNET_NAME, "--recogniser", str(render_models / "recogniser_512.onnx"),
               "--swapper", str(render_models / "colour_swapper.onnx"), "--providers", "cpu",
               "--models-dir", str(render_models), "--cache-dir", str(render_cache.parent),
               "--offline"]
    monkeypatch.setenv("FACEFUSE_RESOLVE_COMMAND", " ".join(shlex.quote(c) for c in command))
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    monkeypatch.delenv("APP_SANDBOX_CONTAINER_ID", raising=False)
    launcher = Launcher(RUNTIMES[0], _config(clip))
    assert launcher.run() is True, launcher.output
    written = sorted(p.name for p in (clip.parent / "facefuse").glob("*.png"))
    assert written == [f"plate_v001.{n:04d}.png" for n in range(LEFT + 1, LEFT + DURATION + 1)]
    (placed,) = launcher.track(2)
    assert (placed.start, placed.duration) == (START, DURATION)
    assert "placed plate_v001 facefuse on video track 2" in launcher.output
    shutil.rmtree(clip.parent / "facefuse")


@pytest.mark.parametrize("runtime", RUNTIMES)
@pytest.mark.parametrize("command", ["'/opt/ff/python' -m facefuse resolve open", "run a]",
                                     "x]]y", "end]=", "a]=]b]=="])
def test_the_written_command_reads_back_in_lua_whatever_brackets_it_holds(runtime: str,
                                                                          command: str) -> None:
    lua = importlib.import_module(runtime).LuaRuntime()
    assert lua.execute("return " + install._lua_long_string(command)) == command


# -- against what a live Resolve was measured to do (resolve_fake.lua) ---------------------------

@pytest.fixture()
def planner(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The launcher runs Python's real job reading and plan (no render: the frames are written
    as files); returns where the job the launcher wrote is copied."""
    return use_planner(tmp_path, monkeypatch)


@pytest.mark.parametrize("runtime", RUNTIMES)
@pytest.mark.parametrize("duration", [DURATION, 1])
def test_measured_every_frame_is_placed_in_the_clips_frame_space(
        runtime: str, media: Path, planner: Path, duration: int):
    item = {**_config(media)["items"][0], "duration": duration}
    launcher = Launcher(runtime, _config(media, items=[item], playhead=START))
    assert launcher.run() is True, launcher.output
    assert _placed(launcher) == [(2, START, duration, 0)]


@pytest.mark.parametrize("change", [{"locked": [2]}, {"disabled": [2]}])
def test_measured_a_locked_or_disabled_track_above_gets_a_track_inserted(
        media: Path, planner: Path, change: dict):
    launcher = Launcher(RUNTIMES[0], _config(media, tracks=2, **change))
    assert launcher.run() is True, launcher.output
    assert _placed(launcher) == [(2, START, DURATION, 0)]
    timeline = launcher.state.timeline
    assert len(timeline.tracks) == 3 and timeline.GetIsTrackEnabled(timeline, "video", 2)
    assert not timeline.GetIsTrackLocked(timeline, "video", 2)


def _switching(launcher: Launcher, during: Any) -> None:
    """Run facefuse as os.execute would, and do `during` while it runs (the user at work)."""
    def execute(command: str) -> int:
        code = subprocess.call(command, shell=True)
        during()
        return code
    launcher.lua.globals().os.execute = execute


def test_measured_the_swap_goes_to_the_jobs_timeline_and_a_range_taken_meanwhile_is_left(
        media: Path, planner: Path):
    launcher = Launcher(RUNTIMES[0], _config(media, tracks=2))
    state = launcher.state

    def meanwhile() -> None:
        state.switch_timeline()
        state.add_item(state.timeline, launcher.lua.table_from(
            {"name": "Title", "start": START + 4, "duration": 3, "track": 2}))
    _switching(launcher, meanwhile)
    assert launcher.run() is True, launcher.output
    assert _placed(launcher) == [(2, START, DURATION, 0)]
    assert len(state.timeline.tracks) == 3 and len(state.timeline.tracks[3]) == 1
    assert _placed(launcher, state.timelines[2]) == []


def test_measured_a_short_readback_is_a_failure_and_is_removed(media: Path, planner: Path):
    launcher = Launcher(RUNTIMES[0], _config(media, tracks=2, short_by=1))
    assert launcher.run() is False
    assert f"{DURATION - 1}" in launcher.output and _placed(launcher) == []


def test_measured_show_individual_frames_is_named(media: Path, planner: Path):
    launcher = Launcher(RUNTIMES[0], _config(media, tracks=2, individual_frames=True))
    assert launcher.run() is False
    assert "Show Individual Frames" in launcher.output and _placed(launcher) == []


@pytest.mark.parametrize("change", [{"page": "media"},
                                    {"rate": "29.97 DF", "drop": "1"}])
def test_measured_no_timecode_off_the_edit_pages_and_df_rates_still_place(
        media: Path, planner: Path, change: dict):
    item = _config(media)["items"][0]
    item["media"]["FPS"] = 29.97 if "rate" in change else 24.0
    launcher = Launcher(RUNTIMES[0], _config(media, items=[item], **change))
    assert launcher.run() is True, launcher.output
    assert _placed(launcher) == [(2, START, DURATION, 0)]


def test_measured_a_retimed_clip_is_refused(media: Path, planner: Path):
    item = {**_config(media)["items"][0], "speed": 2}
    launcher = Launcher(RUNTIMES[0], _config(media, items=[item]))
    launcher.run()
    seen = json.loads(planner.read_text())
    # at the timeline's rate GetSourceEndFrame is exclusive (source_end_equal_rates)
    assert seen["item"]["source_end"] - seen["item"]["source_start"] == 2 * DURATION
    assert "retime" in launcher.output and _placed(launcher) == []


def test_measured_a_second_render_is_a_new_version_placed(media: Path, planner: Path):
    launcher = Launcher(RUNTIMES[0], _config(media, tracks=2))
    assert launcher.run() is True, launcher.output
    timeline = launcher.state.timeline
    first = timeline.tracks[2][1]
    timeline.DeleteClips(timeline, launcher.lua.table_from([first]))
    assert launcher.run() is True, launcher.output
    (second,) = launcher.track(2)
    assert second.media.props["File Path"] != first.media.props["File Path"]


def test_measured_the_swap_looks_like_the_plate_and_carries_the_review_markers(
        media: Path, planner: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    report = tmp_path / "report.json"
    report.write_text(json.dumps(review_report([("missed", 6, 8, "p1", "face lost")])))
    monkeypatch.setenv("PLANNER_REPORT", str(report))
    look = {"ZoomX": 1.25, "Pan": 12.5, "RotationAngle": 3.5, "CropLeft": 8,
            "CompositeMode": 5, "Opacity": 80, "FlipX": True}
    item = {**_config(media)["items"][0], "properties": look}
    launcher = Launcher(RUNTIMES[0], _config(media, tracks=2, items=[item]))
    assert launcher.run() is True, launcher.output
    (plate,), (placed,) = launcher.track(1), launcher.track(2)
    assert {key: placed.properties[key] for key in look} == look
    assert [item.id for item in plate.graded_onto.values()] == [placed.id]
    (marker,) = placed.markers.values()
    assert (marker.name, marker.note, marker.duration) == ("missed", "face lost", 3)
    assert list(placed.markers.keys()) == [2]
