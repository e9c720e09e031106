"""The OpenTimelineIO host without rendering: exact rates and frames, which clips a marker or
--all selects, versioned names, the farm's render lines (--print-requests) and review flags as
markers."""

from __future__ import annotations

import json
import shlex
from fractions import Fraction
from pathlib import Path

import opentimelineio as otio
import pytest

from addon.otio import commands, renders, selection
from addon.otio.flags import markers_from_report
from addon.otio.media import local_path
from addon.otio.times import exact_rate, frames_of
from facefuse import (
    InputError,
    InputSpec,
    OutputSpec,
    RenderRequest,
    RenderSummary,
    request_from_args,
)
from facefuse.cli.main import main
from facefuse.hosting.plugins import installed_hosts
from tests.hosts import otio_edits as e
from tests.media_factory import make_marked_clip
from tests.review_reports import review_report

TEMPLATE = RenderRequest(sources=(Path("me.jpg"),), input=InputSpec("-"), output=OutputSpec("-"))


@pytest.mark.parametrize("stored, exact", [
    (23.976, Fraction(24000, 1001)), (24000 / 1001, Fraction(24000, 1001)),
    (23.98, Fraction(24000, 1001)), (29.97, Fraction(30000, 1001)),
    (59.94, Fraction(60000, 1001)), (24.0, Fraction(24)), (25.0, Fraction(25)),
    (30.0, Fraction(30)), (12.5, Fraction(25, 2))])
def test_rates_are_exact(stored: float, exact: Fraction):
    assert exact_rate(stored) == exact


def test_frames_are_counted_exactly_at_an_hour_and_across_rates():
    hour_df = otio.opentime.from_timecode("01:00:00;00", e.NTSC)
    assert frames_of(hour_df, Fraction(30000, 1001)) == e.HOUR_DF
    # the same instant written at the rounded rate an editor may store
    assert frames_of(otio.opentime.RationalTime(86400, 23.976), Fraction(24000, 1001)) == 86400
    # 10 s of 48 kHz audio time is 240 frames at 24 fps
    assert frames_of(otio.opentime.RationalTime(480000, 48000), Fraction(24)) == 240


def test_media_paths_are_urls_or_paths_relative_to_the_timeline(tmp_path: Path):
    assert local_path((tmp_path / "a b.mov").as_uri(), Path("/elsewhere")) == tmp_path / "a b.mov"
    assert local_path("media/a.mov", tmp_path) == tmp_path / "media" / "a.mov"
    assert local_path("/abs/a.mov", tmp_path) == Path("/abs/a.mov")


@pytest.fixture()
def movie(tmp_path: Path) -> Path:
    return make_marked_clip(tmp_path / "A001.mp4", frames=24, rate=e.rate_of(e.FILM))


def _ref(movie: Path) -> otio.schema.ExternalReference:
    return e.movie(movie, e.HOUR_FILM, 24)


def test_markers_select_by_clip_or_by_track_range_and_all_takes_every_video_clip(
        movie: Path, tmp_path: Path):
    v1 = e.video_track("V1", [
        e.clip("a", _ref(movie), e.HOUR_FILM, 4, markers=("swap",)),
        e.clip("b", _ref(movie), e.HOUR_FILM + 4, 4, markers=("other", "Swap ")),
        e.clip("c", _ref(movie), e.HOUR_FILM + 8, 4),  # record 8-11: the track marker at 11
        e.clip("d", _ref(movie), e.HOUR_FILM + 12, 4)])  # a point marker at 16 is past it
    v1.markers.append(otio.schema.Marker(name="swap", marked_range=e.span(11, 3)))
    v1.markers.append(otio.schema.Marker(name="swap", marked_range=e.span(16, 0)))
    nested = otio.schema.Stack(name="compound")
    nested.append(e.video_track("inner", [e.clip("n", _ref(movie), e.HOUR_FILM, 4,
                                                 markers=("swap",))]))
    v2 = e.video_track("V2", [e.gap(2), nested])
    audio = otio.schema.Track(name="A1", kind=otio.schema.TrackKind.Audio)
    audio.append(e.clip("sound", _ref(movie), e.HOUR_FILM, 4, markers=("swap",)))
    made = e.timeline("edit", [v1, v2, audio])
    marked = selection.select_clips(made, "swap", 0, tmp_path)
    # b by "Swap ", c by the track marker (and d too: the 3-frame marker reaches frame 13)
    assert [s.clip.name for s in marked.swaps] == ["a", "b", "c", "d"]
    # the nested clip's marker is seen, and said to select nothing
    assert marked.notes == (("clip 'n' carries a 'swap' marker inside a nested stack: clips "
                             "in nested stacks are not swapped (swap the nested timeline's own "
                             "export)"),)
    everything = selection.select_clips(made, None, 2, tmp_path).swaps
    assert [s.clip.name for s in everything] == ["a", "b", "c", "d"]
    assert [s.frames for s in everything] == [
        (86400, 86405), (86402, 86409), (86406, 86413), (86410, 86417)]
    assert everything[1].label == "clip 'b' on V1 at 01:00:00:04"


def test_versions_follow_the_highest_in_the_folder_and_names_repeat_apart(
        movie: Path, tmp_path: Path):
    made = e.timeline("edit", [e.video_track("V1", [
        e.clip("A001.mov", _ref(movie), e.HOUR_FILM, 4, markers=("swap",)),
        e.clip("A001.mov", _ref(movie), e.HOUR_FILM + 6, 4, markers=("swap",)),
        e.clip("", _ref(movie), e.HOUR_FILM + 12, 4, markers=("swap",))])])
    edit = e.write(made, tmp_path / "edit.otio")
    out = tmp_path / "out"
    out.mkdir()
    for name in ("A001.v001.86400.exr", "A001.v003.mp4", "A001.v002x.exr", "A001_2.v009.0001"):
        (out / name).write_bytes(b"")
    swap = commands.timeline_swap(edit, TEMPLATE, out, "swap", handles=1, kind="png")
    assert [r.name for r in swap.renders] == ["A001.v004", "A001_2.v010", "clip.v001"]
    first = swap.renders[0].request
    assert first.output.path == str(out / "A001.v004.####.png")
    assert first.frames.range == (86400, 86404) and first.input.start_number == 86400
    assert first.input.path == str(movie)
    assert swap.path == out / "edit.swapped.otio"
    same = commands.timeline_swap(edit, TEMPLATE, out, "swap", kind="same").renders[0]
    assert same.request.output.path == str(out / "A001.v004.mp4") and not same.sequence
    assert same.request.output.codec == "h264"  # the command's codec, here the request's default
    movie_kind = commands.timeline_swap(edit, TEMPLATE, out, "swap").renders[0]
    assert movie_kind.request.output.path == str(out / "A001.v004.mov") and not movie_kind.sequence
    assert movie_kind.request.output.codec == "prores_4444"
    named = commands.timeline_swap(edit, TEMPLATE, out, "swap", codec="dnxhr_444").renders[0]
    assert named.request.output.codec == "dnxhr_444"
    with pytest.raises(InputError, match="output kind must be one of"):
        commands.timeline_swap(edit, TEMPLATE, out, "swap", kind="avi")


@pytest.mark.skipif("otio" not in installed_hosts(), reason="the otio host entry point is not "
                    "installed: pip install -e '.[test]' again")
def test_print_requests_gives_a_farm_the_render_lines_and_the_timeline(
        movie: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    made = e.timeline("edit", [e.video_track("V1", [
        e.clip("A", _ref(movie), e.HOUR_FILM + 2, 4, markers=("swap",)), e.gap(3),
        e.clip("B", _ref(movie), e.HOUR_FILM + 10, 5, markers=("swap",))])])
    edit = e.write(made, tmp_path / "edit.otio")
    out = tmp_path / "out"
    assert main(["timeline", "swap", str(edit), "-s", "me.jpg", "-o", str(out), "--handles",
                 "2", "--print-requests", "--crf", "12", "--codec", "ffv1", "--report",
                 "--format", "exr"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [shlex.split(line)[-2:] for line in lines] == [
        ["--report", str(out / "A.v001.review")], ["--report", str(out / "B.v001.review")]]
    requests = [request_from_args(shlex.split(line)[2:-2]) for line in lines]
    assert [line.split()[:2] for line in lines] == [["facefuse", "render"]] * 2
    assert [(r.input.path, r.output.path, r.frames.range) for r in requests] == [
        (str(movie), str(out / "A.v001.####.exr"), (86400, 86407)),
        (str(movie), str(out / "B.v001.####.exr"), (86408, 86416))]
    assert all(r.output.crf == 12 and r.output.codec == "ffv1" and
               r.input.start_number == 86400 and
               r.sources == (Path("me.jpg").absolute(),) for r in requests)
    assert sorted(p.name for p in out.iterdir()) == ["edit.swapped.otio"]
    swapped = otio.adapters.read_from_file(str(out / "edit.swapped.otio"))
    refs = [c.media_reference for c in swapped.tracks[1].find_clips()]
    assert [(r.name_prefix, r.start_frame) for r in refs] == [("A.v001.", 86400),
                                                              ("B.v001.", 86408)]


def _summary(frames: int, failed: tuple[tuple[int, str], ...] = (),
             cancelled: bool = False) -> RenderSummary:
    return RenderSummary(frames=frames, swapped=frames - len(failed), no_face=0, skipped=0,
                         failed=failed, seconds=1.0, cancelled=cancelled)


@pytest.mark.parametrize("outcome, code, words", [
    ((_summary(5, cancelled=True), True), 143, "was stopped"),
    ((_summary(5, failed=((86402, "cannot decode"),)), False), 5,
     "failed in 1 frame(s) (frame 86402: cannot decode)"),
    ((_summary(3), False), 2, "covered 3 of frames 86405-86409, as its media has fewer frames")])
def test_a_render_that_did_not_finish_whole_leaves_no_timeline(
        outcome: tuple[RenderSummary, bool], code: int, words: str, movie: Path, tmp_path: Path):
    made = e.timeline("edit", [e.video_track("V1", [
        e.clip("A", _ref(movie), e.HOUR_FILM, 5, markers=("swap",)),
        e.clip("B", _ref(movie), e.HOUR_FILM + 5, 5, markers=("swap",))])])
    swap = commands.timeline_swap(e.write(made, tmp_path / "edit.otio"), TEMPLATE, tmp_path / "out",
                              "swap")
    said: list[str] = []
    renders: list[RenderRequest] = []
    results = iter([(_summary(5), False), outcome])

    def render(request: RenderRequest) -> tuple[RenderSummary, bool]:
        renders.append(request)
        return next(results)

    got, sentence = commands.run_swap(swap, render, said.append)
    assert (got, len(renders)) == (code, 2)
    assert sentence.startswith("the render of clip 'B' on V1 at 01:00:00:05 ") and words in sentence
    assert said == [("clip 'A' on V1 at 01:00:00:00: frames 86400-86404 rendered as A.v001, 5 "
                     "of 5 swapped")]
    assert not swap.path.exists()


def test_flags_of_each_clips_review_report_land_on_its_swapped_clip(movie: Path, tmp_path: Path):
    made = e.timeline("edit", [e.video_track("V1", [
        e.clip("A", _ref(movie), e.HOUR_FILM + 4, 6, markers=("swap",))])])
    out = tmp_path / "out"
    swap = commands.timeline_swap(e.write(made, tmp_path / "edit.otio"), TEMPLATE, out, "swap",
                              handles=2, report=True)
    (clip,) = swap.renders
    assert clip.report == out / "A.v001.review" / "report.json"

    def render(request: RenderRequest) -> tuple[RenderSummary, bool]:
        flags = [("missed", first, last, "p1", "no face")
                 for first, last in ((86402, 86403), (86405, 86406))]
        clip.report.parent.mkdir(parents=True)
        clip.report.write_text(json.dumps(review_report(flags, first=86400, last=86420)),
                               encoding="utf-8")
        return _summary(10), False

    assert commands.run_swap(swap, render, lambda line: None)[0] == 0
    swapped = otio.adapters.read_from_file(str(swap.path))
    (placed,) = swapped.tracks[1].find_clips()
    # the flag over the handles only (86402-86403) is not the clip's: it shows 86404-86409
    assert [(m.name, m.marked_range) for m in placed.markers] == [
        ("facefuse missed", e.span(86405, 2))]


def test_review_flags_become_markers_on_their_frames(tmp_path: Path):
    report = tmp_path / "report.json"
    report.write_text(json.dumps(review_report([
        ("identity_jump", 86402, 86404, "p1", "the face changes identity"),
        ("low_confidence", 86410, 86410, "p2", "the detector is unsure")],
        first=86400, last=86420)), encoding="utf-8")
    markers = markers_from_report(report, e.t)
    assert [(m.name, m.marked_range, m.color, m.comment) for m in markers] == [
        ("facefuse identity_jump", e.span(86402, 3), "RED", "p1: the face changes identity"),
        ("facefuse low_confidence", e.span(86410, 1), "RED", "p2: the detector is unsure")]
    # the frames of a render of plate.1001.exr.. whose first frame is at media time 0
    shifted = markers_from_report(report, lambda number: e.t(number - 86400))
    assert [m.marked_range for m in shifted] == [e.span(2, 3), e.span(10, 1)]
    report.write_text('{"flags": [{"kind": "x"}]}', encoding="utf-8")
    with pytest.raises(InputError, match="is not a facefuse review report|has schema"):
        markers_from_report(report, e.t)
    assert renders.ClipRender.__dataclass_fields__["report"].default is None


def test_adapter_arguments_read_as_numbers_fractions_or_text():
    from addon.otio.command import adapter_args
    from facefuse.cli.hosts import Lent

    read = Lent().json_value
    assert adapter_args(["rate=25", "rate2=24000/1001", "strict=true", "style=avid"], read) == {
        "rate": 25, "rate2": 24000 / 1001, "strict": True, "style": "avid"}
    for bad in ("rate", "=25", "two words=1"):
        with pytest.raises(InputError, match="--adapter-arg takes KEY=VALUE"):
            adapter_args([bad], read)
    for deep in ("[" * 100000, "{\"a\": " * 5000, "[1, 2"):  # not a RecursionError
        with pytest.raises(InputError, match="--adapter-arg value"):
            adapter_args([f"x={deep}"], read)
