"""Which frames a render does (shot.contract.frames): ranges, chunks, gaps, lists of frames, review
reports' flagged frames, refusals."""

from __future__ import annotations

import argparse
import json
import logging

import pytest

from facefuse.cli import render as cli_render
from facefuse.errors import InputError
from facefuse.io.sequences import chunk_of
from facefuse.shot.contract import commandline
from facefuse.shot.contract.frames import (
    FrameChoice,
    FrameSelection,
    format_frame_list,
    parse_frame_list,
    parse_frames,
    select_frames,
)
from facefuse.shot.contract.request import FrameSpec, InputSpec, OutputSpec, RenderRequest

SHOT = tuple(range(1001, 1011))  # ten frames, 1001-1010


def test_everything_by_default():
    assert select_frames(SHOT, None, None, "shot") == FrameSelection(SHOT, SHOT)


def test_a_range_is_clipped_to_the_input():
    selection = select_frames(SHOT, (995, 1003), None, "shot")
    assert selection.analysed == selection.rendered == (1001, 1002, 1003)


def test_a_chunk_renders_its_slice_and_analyses_the_whole_range():
    selections = [select_frames(SHOT, None, (i, 3), "shot") for i in (1, 2, 3)]
    assert all(selection.analysed == SHOT for selection in selections)
    assert [s.rendered for s in selections] == [chunk_of(SHOT, i, 3) for i in (1, 2, 3)]
    assert sum((selection.rendered for selection in selections), ()) == SHOT


def test_a_chunk_of_a_range():
    selection = select_frames(SHOT, (1003, 1008), (2, 2), "shot")
    assert selection.analysed == tuple(range(1003, 1009))
    assert selection.rendered == (1006, 1007, 1008)


def test_more_chunks_than_frames_leaves_some_empty():
    assert select_frames(SHOT[:2], None, (3, 3), "shot").rendered == ()


@pytest.mark.parametrize("frames", [(1, 1000), (1011, 2000)])
def test_a_range_outside_the_input_is_refused_naming_both(frames):
    with pytest.raises(InputError, match=rf"frames {frames[0]}-{frames[1]} are outside shot, "
                                         r"which has frames 1001-1010"):
        select_frames(SHOT, frames, None, "shot")


def test_gaps_matter_only_for_sequences():
    holes = (1, 2, 5, 6, 9)
    assert select_frames(holes, None, None, "clip").rendered == holes
    with pytest.raises(InputError, match=r"plate has gaps: frame 3, 4, 7, 8 missing \(4 in all\)"):
        select_frames(holes, None, None, "plate", contiguous=True)
    assert select_frames(holes, (5, 6), None, "plate", contiguous=True).rendered == (5, 6)


def test_a_chunk_that_does_not_exist_is_refused():
    with pytest.raises(InputError, match="chunk 4/3 does not exist"):
        select_frames(SHOT, None, (4, 3), "shot")


# -- lists of frames and review reports (--frames LIST, --frames flagged:REPORT) --------------

def _report(folder, flagged=((1003, 1004), (1008, 1008)), frames=(1001, 1010), **extra):
    """A minimal review report (the fields review.report.load_report requires)."""
    folder.mkdir(exist_ok=True)
    data = {"schema": "facefuse.review/1", "shot_id": "0123456789abcdef", "input": "shot.mov",
            "frames": {"first": frames[0], "last": frames[1]}, "cuts": [], "people": [],
            "strip": [], "flags": [], "samples": [], "series": [], "timings": {},
            "flagged_frames": [list(r) for r in flagged], **extra}
    (folder / "report.json").write_text(json.dumps(data))
    return folder / "report.json"


def _read_cli(args):
    """What `facefuse render ARGS` asks for (cli.render reads flagged: reports)."""
    parser = argparse.ArgumentParser()
    commandline.add_render_options(parser)
    return cli_render.request_from_args(parser.parse_args(args))


def test_a_single_range_is_the_shot_range_and_a_list_renders_only_its_frames():
    assert parse_frames("1001-1010") == FrameChoice((1001, 1010))
    assert parse_frames("1035") == FrameChoice((1035, 1035))
    assert parse_frames("1040-1042,1001-1010,1035,1005-1011") == FrameChoice(
        None, ((1001, 1011), (1035, 1035), (1040, 1042)))
    assert format_frame_list(((1001, 1011), (1035, 1035))) == "1001-1011,1035"
    assert parse_frame_list(format_frame_list(((7, 9), (12, 12)))) == ((7, 9), (12, 12))


@pytest.mark.parametrize("text", ["1001-1010,", "1001-,1005", "a,b", "1010-1001,1020", ",",
                                  "-5,3"])
def test_a_bad_list_is_one_sentence(text):
    with pytest.raises(InputError, match=r"^frame list .* is not a comma list of frames and "
                                         r"ranges, e\.g\. 1001-1010,1035,1040-1042$"):
        parse_frames(text)


def test_a_list_renders_only_its_frames_of_the_whole_range():
    selection = select_frames(SHOT, None, None, "shot", only=((1002, 1003), (1009, 1009)))
    assert selection == FrameSelection(SHOT, (1002, 1003, 1009))


def test_chunks_of_a_list_share_its_frames_out():
    only = ((1001, 1002), (1005, 1005), (1008, 1010))
    by_chunk = [select_frames(SHOT, None, (i, 2), "shot", only=only).rendered for i in (1, 2)]
    assert by_chunk == [(1001, 1002, 1005), (1008, 1009, 1010)]
    by_frames = [select_frames(SHOT, None, None, "shot", chunk_frames=c, only=only).rendered
                 for c in ((1001, 1004), (1005, 1010))]
    assert by_frames == [(1001, 1002), (1005, 1008, 1009, 1010)]
    assert all(select_frames(SHOT, None, (i, 2), "shot", only=only).analysed == SHOT
               for i in (1, 2))


@pytest.mark.parametrize("only, said", [
    (((999, 1002),), ("frames 999-1002 of the list are outside the analysed range of shot, "
                      "frames 1001-1010")),
    (((1005, 1005), (1010, 1011)), "frames 1010-1011 of the list are outside"),
    (((1001, 1003), (1100, 1100)), "frames 1100 of the list are outside"),
])
def test_a_list_reaching_outside_the_shot_is_refused(only, said):
    """A listed frame is asked for by name (docs/overrides.md): one the shot lacks is refused,
    not left out with a warning."""
    with pytest.raises(InputError, match=said):
        select_frames(SHOT, None, None, "shot", only=only)


def test_a_list_of_frames_the_shot_lacks_is_refused():
    with pytest.raises(InputError, match=r"^frames 1011-1020,2000 of the list are outside the "
                                         r"analysed range of shot, frames 1001-1010$"):
        select_frames(SHOT, None, None, "shot", only=((1011, 1020), (2000, 2000)))


@pytest.mark.parametrize("frames, rendered", [((1001, 1100), (1001, 1010)),
                                              ((990, 1003), (1001, 1003))])
def test_a_range_reaching_past_the_input_renders_what_it_has_with_a_warning(
        frames, rendered, caplog):
    with caplog.at_level(logging.WARNING, logger="facefuse.shot.contract.frames"):
        selection = select_frames(SHOT, frames, None, "shot")
    assert (selection.rendered[0], selection.rendered[-1]) == rendered
    assert (f"frames {frames[0]}-{frames[1]} reach past shot, which has frames 1001-1010: "
            f"rendering frames {rendered[0]}-{rendered[1]} ({len(selection.rendered)})"
            ) in caplog.text


def test_a_range_inside_the_input_says_nothing(caplog):
    with caplog.at_level(logging.WARNING, logger="facefuse.shot.contract.frames"):
        select_frames(SHOT, (1002, 1009), None, "shot")
        select_frames(SHOT, None, None, "shot", only=((1001, 1010),))
    assert caplog.text == ""


def test_a_report_gives_its_flagged_frames_over_its_analysed_range(tmp_path):
    path = _report(tmp_path / "review")
    assert parse_frames(f"flagged:{path}") == FrameChoice(None, report=path)  # named, not read
    expected = FrameChoice((1001, 1010), ((1003, 1004), (1008, 1008)), "shot:0123456789abcdef",
                           path)  # the file read: an input no output may replace
    assert cli_render.flagged_choice(path) == expected
    assert cli_render.flagged_choice(path.parent) == expected  # the folder will do


@pytest.mark.parametrize("content, reason", [
    ("{not json", r"is not JSON \(.* at line 1\)$"),
    (json.dumps({"schema": "facefuse.review/0"}), r"has schema 'facefuse\.review/0'"),
    (json.dumps([1, 2]), r"is not a JSON object$"),
])
def test_a_bad_report_is_one_sentence(tmp_path, content, reason):
    (tmp_path / "report.json").write_text(content)
    with pytest.raises(InputError, match=rf"^the review report .*report\.json {reason}"):
        cli_render.flagged_choice(tmp_path)


def test_a_missing_or_empty_report_is_refused(tmp_path):
    with pytest.raises(InputError, match=r"^the review report .*nothing\.json does not exist"):
        cli_render.flagged_choice(tmp_path / "nothing.json")
    with pytest.raises(InputError, match=r"flags no frames: there is nothing to render$"):
        cli_render.flagged_choice(_report(tmp_path / "r", flagged=()))


def test_the_command_line_reads_lists_and_reports_and_writes_them_back(tmp_path):
    base = ["-s", "a.jpg", "-i", "shot.mov", "-o", "o/x.####.png"]
    listed = commandline.request_from_args([*base, "--frames", "1035,1001-1010"])
    assert (listed.frames.range, listed.frames.only) == (None, ((1001, 1010), (1035, 1035)))
    report = _report(tmp_path / "review")
    flagged = _read_cli([*base, "--frames", f"flagged:{report}"])
    assert (flagged.frames.range, flagged.frames.only, flagged.frames.only_input) == (
        (1001, 1010), ((1003, 1004), (1008, 1008)), "shot:0123456789abcdef")
    for request in (listed, flagged):
        args = commandline.render_args(request)
        assert "flagged:" not in " ".join(args)  # a farm task carries the frames themselves
        assert commandline.request_from_args(args) == request
    with pytest.raises(InputError, match="not both"):
        commandline.request_from_args([*base, "--frames", "1,3", "--only-frames", "1"])
    with pytest.raises(InputError, match="flagged:REPORT is read by `facefuse render`"):
        commandline.request_from_args([*base, "--frames", f"flagged:{report}"])


def test_a_request_keeps_its_list_normalised():
    request = RenderRequest(sources=(), input=InputSpec("i"),
                            frames=FrameSpec(only=((9, 9), (1, 3), (4, 5))), output=OutputSpec("o"))
    assert request.frames.only == ((1, 5), (9, 9))
    with pytest.raises(InputError, match="empty"):
        RenderRequest(sources=(), input=InputSpec("i"), frames=FrameSpec(only=()),
                      output=OutputSpec("o"))
