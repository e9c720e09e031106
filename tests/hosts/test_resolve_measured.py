"""The Resolve host against what a live Resolve 19.1-21 was measured to do (shared/REFERENCE.md
section 6), through the Studio bridge and the fake module that behaves so
(tests/hosts/resolve_fake.py): collect the facts, plan, write the frames the render would
write, place, and read the timeline back. No models: the render itself is tested elsewhere."""

from __future__ import annotations

import errno
import json
import os
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest

from addon.resolve import bridge
from addon.resolve import swaps as resolve_swaps
from addon.resolve.job_file import ClipError, parse_job
from facefuse import TimecodeRate
from facefuse.cli.main import main
from facefuse.config import Settings
from facefuse.errors import ExitCode, InputError
from facefuse.models.manifest import default_manifest_path, load_manifest
from facefuse.shot.contract.request import RenderSummary
from tests.hosts import resolve_fake as fake
from tests.resolve_facts import job, read_only_folder
from tests.review_reports import review_report

START, DURATION, LEFT = 86448, 10, 3


@pytest.fixture()
def clip(tmp_path: Path) -> Path:
    """A clip file in a media folder of this test's own (nothing decodes it here)."""
    path = tmp_path / "media" / "plate.mp4"
    path.parent.mkdir()
    path.write_bytes(b"a movie")
    return path


def _plan(resolve: fake.Resolve, data: dict[str, Any] | None = None,
          output: str = "png") -> resolve_swaps.ItemSwap:
    """Facts -> plan, and the frames the render would write (the fake imports what exists)."""
    facts = parse_job(data if data is not None else bridge.collect_job(resolve))
    swap = resolve_swaps.item_swap(facts, (), Settings(), output)
    resolve_swaps.prepare(swap)
    placement = swap.placement
    Path(placement.media).parent.mkdir(parents=True, exist_ok=True)
    for number in range(placement.start_index, placement.end_index + 1):
        Path(placement.media % number).write_bytes(b"png")
    return swap


def _swaps(timeline: fake.Timeline) -> list[tuple[int, int, int, int]]:
    """(track, start, duration, left offset) of every item facefuse placed."""
    return [(item.track, item.start, item.duration, item.left_offset)
            for items in timeline.tracks for item in items
            if item.media is not None and "facefuse" in str(item.media.GetClipProperty(
                "File Path"))]


# -- frames: exclusive endFrame, the clip's own frame space --------------------------------------

@pytest.mark.parametrize("duration", [DURATION, 1])
def test_every_frame_is_placed_with_an_exclusive_end_in_the_sequences_frame_space(
        clip: Path, duration: int):
    resolve = fake.world(clip, tracks=2, duration=duration, playhead=START)
    swap = _plan(resolve)
    bridge.place(resolve, swap.placement)
    # the swap covers the plate's record range to the last frame; the first file is shown first
    assert _swaps(fake.timeline_of(resolve)) == [(2, START, duration, 0)]


def test_a_retimed_item_is_refused_though_its_offsets_and_span_agree(clip: Path):
    resolve = fake.world(clip, speed=2.0)
    data = bridge.collect_job(resolve)
    assert data["item"]["end"] - data["item"]["start"] == data["item"]["duration"]
    with pytest.raises(ClipError, match="retime"):
        parse_job(data)


def test_drop_frame_rates_read_with_their_suffix_and_number_fps(clip: Path):
    resolve = fake.world(clip, rate="29.97 DF", drop="1", clip_fps="29.97", start_frame=107892,
                         start_timecode="01:00:00;00", current_timecode="01:00:01;10",
                         start=107892 + 35, playhead=107892 + 40)
    facts = parse_job(bridge.collect_job(resolve))
    assert facts.rate == TimecodeRate(Fraction(30000, 1001), True)
    assert resolve_swaps.preview_frame_number(facts) == LEFT + 1 + 5


@pytest.mark.parametrize("fps", [23.976, 23.976023976023978, 24.0])
def test_a_number_typed_fps_is_read(clip: Path, fps: float):
    rate = "24" if fps == 24.0 else "23.976"
    resolve = fake.world(clip, rate=rate)
    media = fake.timeline_of(resolve).tracks[0][0].media
    assert media is not None
    media._properties["FPS"] = fps
    assert parse_job(bridge.collect_job(resolve)).name == "plate.mp4"


@pytest.mark.parametrize("page", ["media", "fusion"])
def test_off_the_edit_pages_there_is_no_timecode_and_the_preview_is_the_first_frame(
        clip: Path, page: str):
    resolve = fake.world(clip)
    resolve.OpenPage(page)
    data = bridge.collect_job(resolve)
    assert data["timeline"]["current_timecode"] == ""
    facts = parse_job(data)
    assert resolve_swaps.preview_frame_number(facts) == LEFT + 1


# -- placement: the job's timeline, a usable track, read back -------------------------------------

def test_placement_goes_to_the_jobs_timeline_though_another_is_current(clip: Path):
    resolve = fake.world(clip, tracks=1)
    swap = _plan(resolve)
    other = fake.second_timeline(resolve)
    bridge.place(resolve, swap.placement)
    assert _swaps(fake.timeline_of(resolve)) == [(2, START, DURATION, 0)]
    assert _swaps(other) == []


def test_a_range_taken_while_rendering_gets_a_track_inserted_above_the_clip(clip: Path):
    resolve = fake.world(clip, tracks=3)
    swap = _plan(resolve)
    timeline = fake.timeline_of(resolve)
    title = timeline.add(fake.TimelineItem("Title", START + 5, 20, 0, None, 2))
    top = timeline.add(fake.TimelineItem("Logo", START, 5, 0, None, 3))
    message = bridge.place(resolve, swap.placement)
    assert _swaps(timeline) == [(2, START, DURATION, 0)]
    assert (title.track, top.track, timeline.GetTrackCount("video")) == (3, 4, 4)
    assert "video track 2" in message


@pytest.mark.parametrize("state", ["locked", "disabled"])
def test_a_locked_or_disabled_track_above_is_not_used(clip: Path, state: str):
    resolve = fake.world(clip, tracks=2)
    timeline = fake.timeline_of(resolve)
    if state == "locked":
        timeline.locked[1] = True
    else:
        timeline.enabled[1] = False
    swap = _plan(resolve)
    bridge.place(resolve, swap.placement)
    assert _swaps(timeline) == [(2, START, DURATION, 0)]
    assert timeline.GetIsTrackEnabled("video", 2) and not timeline.GetIsTrackLocked("video", 2)
    assert timeline.GetTrackCount("video") == 3


def test_a_track_is_added_on_top_where_resolve_cannot_insert(clip: Path):
    resolve = fake.world(clip, tracks=2)
    timeline = fake.timeline_of(resolve)
    timeline.insert_tracks = False
    timeline.locked[1] = True
    bridge.place(resolve, _plan(resolve).placement)
    assert _swaps(timeline) == [(3, START, DURATION, 0)]


def test_a_placement_that_reads_back_wrong_is_a_failure_and_is_removed(clip: Path):
    resolve = fake.world(clip, tracks=2)
    resolve.GetProjectManager().GetCurrentProject().GetMediaPool().short_by = 1
    with pytest.raises(bridge.BridgeError, match=f"{DURATION - 1} .*{DURATION}"):
        bridge.place(resolve, _plan(resolve).placement)
    assert _swaps(fake.timeline_of(resolve)) == []


def test_show_individual_frames_is_named_and_nothing_is_left_behind(clip: Path):
    resolve = fake.world(clip, tracks=2)
    pool = resolve.GetProjectManager().GetCurrentProject().GetMediaPool()
    pool.individual_frames = True
    with pytest.raises(bridge.BridgeError, match="Show Individual Frames"):
        bridge.place(resolve, _plan(resolve).placement)
    assert _swaps(fake.timeline_of(resolve)) == []
    assert all(not folder.GetClipList() for folder in pool.GetRootFolder().GetSubFolderList())


def test_each_render_is_a_new_version_so_a_re_import_never_serves_stale_frames(clip: Path):
    resolve = fake.world(clip, tracks=2)
    timeline = fake.timeline_of(resolve)
    first = _plan(resolve)
    bridge.place(resolve, first.placement)
    timeline.DeleteClips(timeline.tracks[1], False)
    second = _plan(resolve)
    assert second.placement.media != first.placement.media
    bridge.place(resolve, second.placement)
    (placed,) = timeline.tracks[1]
    assert placed.media is not None and \
        Path(second.placement.media).name.split("%")[0] in placed.media.GetClipProperty(
            "File Path")


# -- finishing the swap like the plate ---------------------------------------------------------

PLATE_LOOK = {"ZoomX": 1.25, "ZoomY": 1.25, "Pan": 12.0, "Tilt": -4.0, "RotationAngle": 3.5,
              "CropLeft": 8.0, "CropBottom": 2.0, "CompositeMode": 5, "Opacity": 80.0,
              "FlipX": True}


def test_the_swap_gets_the_plates_grade_and_inspector_transform(clip: Path):
    resolve = fake.world(clip, tracks=2)
    timeline = fake.timeline_of(resolve)
    plate = timeline.tracks[0][0]
    plate.properties.update(PLATE_LOOK)
    bridge.place(resolve, _plan(resolve).placement)
    (placed,) = timeline.tracks[1]
    assert {key: placed.properties[key] for key in PLATE_LOOK} == PLATE_LOOK
    assert plate.graded_onto == [placed]


def _report(tmp_path: Path) -> Path:
    path = tmp_path / "review" / "report.json"
    path.parent.mkdir()
    path.write_text(json.dumps(review_report([
        ("missed", 6, 8, "p1", "face lost for 3 frames"),
        ("identity_jump", 12, 20, "p1", "jump"), ("extreme_yaw", 30, 40, "p2", "outside")])))
    return path


def test_review_flags_become_markers_on_the_placed_item(clip: Path, tmp_path: Path):
    resolve = fake.world(clip, tracks=2)
    data = bridge.collect_job(resolve)
    data["review_report"] = str(_report(tmp_path))
    bridge.place(resolve, _plan(resolve, data).placement)
    (placed,) = fake.timeline_of(resolve).tracks[1]
    markers = placed.GetMarkers()
    # engine frames 4..13 are item offsets 0..9: [6, 8] -> 2 (3 frames), [12, 20] -> 8 (2)
    assert {frame: (m["name"], m["duration"], m["note"]) for frame, m in markers.items()} == {
        2.0: ("missed", 3.0, "face lost for 3 frames"), 8.0: ("identity_jump", 2.0, "jump")}
    assert markers[2.0]["color"] != markers[8.0]["color"]


# -- what a render means (issue 24: place only what was rendered; a finished job places) ---------

def _summary(**counts: Any) -> RenderSummary:
    base = {"frames": DURATION, "swapped": DURATION, "no_face": 0, "skipped": 0, "failed": (),
            "seconds": 1.0, "cancelled": False}
    return RenderSummary(**{**base, **counts})


def test_a_finished_job_run_again_places_its_frames(clip: Path):
    swap = resolve_swaps.item_swap(parse_job(job(clip)), (), Settings())
    placement, message = resolve_swaps.outcome(swap, _summary(swapped=0, skipped=DURATION))
    assert placement is not None, message


def test_fewer_frames_rendered_than_the_item_covers_places_nothing(clip: Path):
    data = job(clip)
    del data["item"]["media"]["Frames"]
    swap = resolve_swaps.item_swap(parse_job(data), (), Settings())
    placement, message = resolve_swaps.outcome(swap, _summary(frames=4, swapped=4))
    assert placement is None and "nothing placed" in message


@pytest.mark.parametrize("field, value", [
    ("start", float("nan")), ("start", float("inf")), ("duration", 1e300), ("track", 10 ** 9),
    ("left_offset", -float("inf")), ("busy", {"1": [[1]]}), ("busy", {"1": "x"}),
    ("busy", [1, 2]), ("video_tracks", float("nan"))])
def test_bad_job_fields_are_one_sentence(clip: Path, field: str, value: Any):
    data = job(clip)
    where = data["timeline"] if field in ("busy", "video_tracks") else data["item"]
    where[field] = value
    with pytest.raises(InputError):
        parse_job(json.loads(json.dumps(data)))


def test_a_long_clip_name_still_gives_names_a_file_system_takes(clip: Path):
    swap = resolve_swaps.item_swap(parse_job(job(clip, name="x" * 400 + ".mp4")), (), Settings())
    assert len(Path(swap.request.output.path).name.encode()) <= 255


# -- the result file (issue 24: never over an input; a bad place is one sentence) ---------------

def _render_args(job_path: Path, result: Path, source: Path, models: Path) -> list[str]:
    return ["resolve", "render", "--job", str(job_path), "--result", str(result), "-s",
            str(source), "--models-dir", str(models), "--offline", "--providers", "cpu"]


@pytest.mark.parametrize("target", ["media", "source", "job", "report"])
def test_the_result_file_never_replaces_an_input(clip: Path, tmp_path: Path, target: str,
                                                 capsys: pytest.CaptureFixture[str]):
    source = tmp_path / "me.png"
    source.write_bytes(b"my photo")
    job_path = tmp_path / "job.json"
    job_path.write_text(json.dumps(job(clip)))
    report = _report(tmp_path)
    result = {"media": clip, "source": source, "job": job_path, "report": report}[target]
    before = result.read_bytes()
    args = [*_render_args(job_path, result, source, tmp_path / "models"),
            *(["--review-report", str(report)] if target == "report" else [])]
    assert main(args) == ExitCode.USAGE
    assert result.read_bytes() == before
    assert "result" in capsys.readouterr().err


@pytest.mark.parametrize("target", ["model", "manifest", "named model"])
def test_the_result_file_never_replaces_a_model_file_or_the_manifest(
        clip: Path, tmp_path: Path, target: str, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]):
    """The model files the command reads (by path, or a manifest name's file in the models
    folder) and the manifest are inputs like the media and the source."""
    source = tmp_path / "me.png"
    source.write_bytes(b"my photo")
    job_path = tmp_path / "job.json"
    job_path.write_text(json.dumps(job(clip)))
    models = tmp_path / "models"
    models.mkdir()
    model = tmp_path / "rec.onnx"
    model.write_bytes(b"onnx")
    manifest = tmp_path / "manifest.toml"
    manifest.write_bytes(default_manifest_path().read_bytes())
    monkeypatch.setenv("FACEFUSE_MANIFEST", str(manifest))
    named = models / load_manifest().models[Settings().detector].file
    named.write_bytes(b"detector")
    result = {"model": model, "manifest": manifest, "named model": named}[target]
    before = result.read_bytes()
    args = [*_render_args(job_path, result, source, models), "--recogniser", str(model)]
    assert main(args) == ExitCode.USAGE
    assert result.read_bytes() == before
    assert "which this command reads" in capsys.readouterr().err


@pytest.mark.parametrize("where", ["missing/result.json", "folder", "r" * 300 + ".json"])
def test_a_result_path_that_cannot_be_written_is_one_sentence(clip: Path, tmp_path: Path,
                                                              where: str,
                                                              capsys: pytest.CaptureFixture[str]):
    source = tmp_path / "me.png"
    source.write_bytes(b"my photo")
    job_path = tmp_path / "job.json"
    job_path.write_text(json.dumps(job(clip)))
    (tmp_path / "folder").mkdir()
    code = main(_render_args(job_path, tmp_path / where, source, tmp_path / "models"))
    err = capsys.readouterr().err
    assert code in (ExitCode.USAGE, ExitCode.OUTPUT) and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1 and "result" in err


def test_a_sequence_shorter_than_the_item_is_refused_before_rendering(tmp_path: Path):
    (tmp_path / "plates").mkdir()
    first = tmp_path / "plates" / "shot.1001.exr"
    first.write_bytes(b"exr")
    data = job(tmp_path / "plates" / "shot.[1001-1010].exr")
    del data["item"]["media"]["Frames"]
    with pytest.raises(ClipError, match="10-frame media"):
        parse_job(data)  # frames 3-12 of a 10-frame sequence


def test_a_read_only_result_folder_is_one_sentence_with_code_6(
        clip: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]):
    source = tmp_path / "me.png"
    source.write_bytes(b"my photo")
    job_path = tmp_path / "job.json"
    job_path.write_text(json.dumps(job(clip)))
    (tmp_path / "ro").mkdir()
    read_only_folder(monkeypatch, tmp_path / "ro")
    args = _render_args(job_path, tmp_path / "ro" / "result.json", source, tmp_path / "models")
    assert main(args) == ExitCode.OUTPUT
    assert len(capsys.readouterr().err.strip().splitlines()) == 1


def test_a_bad_job_field_is_said_in_the_result_file(clip: Path, tmp_path: Path):
    source = tmp_path / "me.png"
    source.write_bytes(b"my photo")
    data = job(clip)
    data["item"]["start"] = float("nan")
    job_path, result = tmp_path / "job.json", tmp_path / "result.json"
    job_path.write_text(json.dumps(data))
    assert main(_render_args(job_path, result, source, tmp_path / "models")) == ExitCode.USAGE
    placement, message = resolve_swaps.read_result(result)
    assert placement is None and "item start" in message


def test_a_result_file_the_disk_refuses_is_one_sentence_with_code_6(
        clip: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]):
    def full(path: Path, data: bytes) -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(path))

    monkeypatch.setattr(resolve_swaps, "atomic_write_bytes", full)
    source = tmp_path / "me.png"
    source.write_bytes(b"my photo")
    data = job(clip)
    data["item"]["start"] = float("nan")  # refused at once: only the result is written
    job_path, result = tmp_path / "job.json", tmp_path / "result.json"
    job_path.write_text(json.dumps(data))
    assert main(_render_args(job_path, result, source, tmp_path / "models")) == ExitCode.OUTPUT
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and f"cannot write the result file {result}" in err
