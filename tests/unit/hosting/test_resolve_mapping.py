"""Timecode maths and the timeline <-> source frame mapping of Resolve items (the Resolve host's
timeline, job_file and plan modules): pure, no Resolve, no models."""

from __future__ import annotations

import json
from fractions import Fraction
from pathlib import Path

import pytest

from addon.resolve import swaps as resolve_swaps
from addon.resolve.job_file import ClipError, parse_job, read_job
from addon.resolve.timeline import ItemSpan, playhead_frame
from facefuse.config import Settings
from facefuse.errors import InputError, OutputError
from facefuse.shot.contract.request import RenderSummary
from facefuse.timebase import TimecodeRate, frames_to_timecode, parse_rate, timecode_to_frames
from tests.resolve_facts import job, read_only_folder

NTSC_24 = Fraction(24000, 1001)
NTSC_30 = Fraction(30000, 1001)


@pytest.fixture()
def media(tmp_path: Path) -> Path:
    path = tmp_path / "media" / "plate.mp4"
    path.parent.mkdir()
    path.write_bytes(b"not decoded by these tests")
    return path


# -- rates and timecode -------------------------------------------------------------------------

@pytest.mark.parametrize("text, rate", [("23.976", NTSC_24), ("23.98", NTSC_24),
                                        ("29.97", NTSC_30), ("24", Fraction(24)),
                                        ("25.000", Fraction(25)), ("59.94", Fraction(60000, 1001)),
                                        ("30000/1001", NTSC_30), (30, Fraction(30))])
def test_rates_are_exact(text: str, rate: Fraction):
    assert parse_rate(text) == rate


@pytest.mark.parametrize("text", ["", "fast", "-24", "0"])
def test_bad_rates_are_refused(text: str):
    with pytest.raises(InputError):
        parse_rate(text)


@pytest.mark.parametrize("text", ["1e400", "1e308", "99999", "1e-300", "1e-400", "1e400 DF"])
def test_rates_no_timeline_has_are_refused_in_one_sentence(text: str, media: Path):
    """A rate of 1e400 read as an exact Fraction and failed later as an OverflowError (exit 1);
    1e308 and 1e-300 planned a swap at nonsense times."""
    with pytest.raises(InputError, match="is not a frame rate: rates go from 0.001 to 1000"):
        parse_rate(text)
    with pytest.raises(InputError, match="is not a frame rate"):
        parse_job(job(media, rate=text))
    with pytest.raises(ClipError, match="has an unreadable frame rate"):
        parse_job(job(media, rate="24", clip_fps=text))


def test_non_drop_timecode_at_24_and_23976_counts_nominal_frames():
    for rate in (TimecodeRate(Fraction(24)), TimecodeRate(NTSC_24)):
        assert timecode_to_frames("01:00:00:00", rate) == 86400
        assert timecode_to_frames("00:00:01:23", rate) == 47
        assert frames_to_timecode(86400 + 47, rate) == "01:00:01:23"


def test_drop_frame_2997_skips_two_numbers_a_minute_but_every_tenth():
    rate = TimecodeRate(NTSC_30, drop_frame=True)
    assert frames_to_timecode(1799, rate) == "00:00:59;29"
    assert frames_to_timecode(1800, rate) == "00:01:00;02"  # ;00 and ;01 do not exist
    assert frames_to_timecode(17982, rate) == "00:10:00;00"  # the tenth minute keeps them
    assert timecode_to_frames("01:00:00;00", rate) == 107892  # one hour = 107892 frames
    assert timecode_to_frames("00:01:00;02", rate) == 1800
    with pytest.raises(InputError, match="does not exist"):
        timecode_to_frames("00:01:00;00", rate)


def test_drop_frame_round_trips_over_two_hours():
    for rate in (TimecodeRate(NTSC_30, True), TimecodeRate(Fraction(60000, 1001), True)):
        for count in range(0, 2 * 3600 * rate.nominal, 7):
            assert timecode_to_frames(frames_to_timecode(count, rate), rate) == count


def test_drop_frame_needs_an_ntsc_rate_and_timecodes_are_checked():
    with pytest.raises(InputError, match="drop-frame"):
        TimecodeRate(Fraction(25), drop_frame=True)
    for bad in ("1:00:00", "01:00:00:24", "01:61:00:00", "aa:00:00:00"):
        with pytest.raises(InputError):
            timecode_to_frames(bad, TimecodeRate(Fraction(24)))


def test_playhead_is_counted_from_the_timelines_start():
    rate = TimecodeRate(NTSC_30, True)
    start = timecode_to_frames("01:00:00;00", rate)
    assert playhead_frame("01:00:01;00", "01:00:00;00", start, rate) == start + 30
    with pytest.raises(InputError, match="before"):
        playhead_frame("00:59:59;29", "01:00:00;00", start, rate)


# -- item spans ----------------------------------------------------------------------------------

def test_a_clip_trimmed_at_both_ends_maps_record_frames_to_its_used_source_frames():
    span = ItemSpan(record_start=86448, duration=10, left_offset=3)
    assert span.source_index(86448) == 3 and span.source_index(86457) == 12
    assert span.engine_frames == (4, 13)  # engine numbers movies from 1
    assert span.engine_frame(86450) == 6
    for outside in (86447, 86458):
        with pytest.raises(InputError, match="outside"):
            span.source_index(outside)


def test_an_image_sequence_keeps_its_file_numbers():
    span = ItemSpan(record_start=0, duration=5, left_offset=2, first_number=1001)
    assert span.engine_frames == (1003, 1007)


# -- job files -----------------------------------------------------------------------------------

def test_a_job_at_one_hour_becomes_facts_and_a_request_for_the_used_range(media: Path,
                                                                          tmp_path: Path):
    facts = parse_job(job(media))
    assert facts.span == ItemSpan(86448, 10, 3)
    assert facts.edition.kind == "studio" and facts.edition.version == (19, 1, 3)
    swap = resolve_swaps.item_swap(facts, (tmp_path / "me.jpg",), Settings())
    assert swap.request.input.path == str(media)
    assert swap.request.frames.range == (4, 13) and swap.request.input.start_number == 1
    assert swap.request.output.path == str(media.parent / "facefuse" / "plate_v001.####.png")
    placed = swap.placement
    assert (placed.record_frame, placed.track, placed.bin) == (86448, 2, "facefuse")
    assert (placed.start_index, placed.end_index) == (4, 13)  # the files the render writes
    assert placed.media.endswith("plate_v001.%04d.png") and placed.sequence
    # the placed clip covers exactly the item's record range: 10 frames from 86448
    assert placed.end_frame - placed.start_frame == facts.span.duration  # end exclusive
    assert resolve_swaps.preview_frame_number(facts) == 4 + 2  # playhead at 01:00:02:02


@pytest.mark.parametrize("rate, drop, start_tc, current_tc, start_frame", [
    ("23.976", "0", "01:00:00:00", "01:00:02:05", 86400),
    ("29.97", "1", "01:00:00;00", "01:00:01;10", 107892),
])
def test_ntsc_timelines_map_the_playhead_to_the_source(media: Path, rate: str, drop: str,
                                                       start_tc: str, current_tc: str,
                                                       start_frame: int):
    parsed = TimecodeRate(parse_rate(rate), drop == "1")
    here = playhead_frame(current_tc, start_tc, start_frame, parsed)
    facts = parse_job(job(media, rate=rate, drop=drop, start=here - 4, left_offset=7,
                          start_frame=start_frame, start_timecode=start_tc,
                          current_timecode=current_tc))
    assert facts.rate == parsed
    assert resolve_swaps.preview_frame_number(facts) == 7 + 4 + 1
    placed = resolve_swaps.item_swap(facts, (), Settings()).placement
    assert placed.record_frame == here - 4


def test_a_movie_output_holds_just_the_used_range(media: Path):
    swap = resolve_swaps.item_swap(parse_job(job(media)), (), Settings(), output="prores_4444")
    assert swap.request.output.codec == "prores_4444"
    assert swap.request.output.path.endswith("plate_v001_facefuse.mov")
    placed = swap.placement
    assert not placed.sequence and (placed.start_frame, placed.end_frame) == (0, 10)


def test_the_track_directly_above_is_used_when_free_else_one_is_inserted_there(media: Path):
    start, end = 86448, 86458
    free_above = job(media, video_tracks=3, busy={"1": [[start, end]], "2": [[end, end + 5]]})
    assert resolve_swaps.placement_track(parse_job(free_above)) == (2, False)
    busy_above = job(media, video_tracks=3, busy={"2": [[start - 5, start + 1]], "3": []})
    assert resolve_swaps.placement_track(parse_job(busy_above)) == (2, True)
    locked = {**job(media, video_tracks=3, busy={})}
    locked["timeline"]["locked"] = [2]
    assert resolve_swaps.placement_track(parse_job(locked)) == (2, True)
    assert resolve_swaps.placement_track(parse_job(job(media, video_tracks=1))) == (2, True)


@pytest.mark.parametrize("change, message", [
    ({"item": None}, "No clip under the playhead"),
    ({"timeline": None}, "No timeline is open"),
])
def test_missing_facts_are_one_sentence(media: Path, change: dict, message: str):
    with pytest.raises(ClipError, match=message):
        parse_job({**job(media), **change})


def test_bad_items_are_refused_with_a_reason(media: Path, tmp_path: Path):
    cases = [
        (job(None), "generator, title or effect"),
        (job(media, kind="Compound"), "compound clip"),
        (job(media, kind="Fusion Title"), "fusion title clip"),
        (job(tmp_path / "gone.mov"), "offline"),
        (job(""), "offline"),
        (job(media, rate="24", clip_fps="25.000"), "runs at 25 fps but the timeline at 24"),
        (job(media, frames=8), "retimed"),
    ]
    for data, message in cases:
        with pytest.raises(ClipError, match=message):
            parse_job(data)
    stretched = job(media)
    stretched["item"]["end"] += 4
    with pytest.raises(ClipError, match="retimed"):
        parse_job(stretched)


def test_broken_job_files_are_input_errors(tmp_path: Path, media: Path):
    path = tmp_path / "job.json"
    with pytest.raises(InputError, match="does not exist"):
        read_job(path)
    path.write_text("{not json")
    with pytest.raises(InputError, match="is not JSON"):
        read_job(path)
    path.write_text(json.dumps({**job(media), "version": 9}))
    with pytest.raises(InputError, match="version 9"):
        read_job(path)
    path.write_text(json.dumps({"schema": "other"}))
    with pytest.raises(InputError, match="not a facefuse Resolve job"):
        read_job(path)


def test_an_image_sequence_clip_reads_as_a_pattern(tmp_path: Path):
    for number in range(1001, 1021):
        (tmp_path / f"shot.{number}.exr").write_bytes(b"x")
    facts = parse_job(job(str(tmp_path / "shot.[1001-1020].exr"), left_offset=2))
    assert facts.input == str(tmp_path / "shot.####.exr") and facts.is_sequence
    swap = resolve_swaps.item_swap(facts, (), Settings())
    assert swap.request.frames.range == (1003, 1012) and swap.request.input.start_number == 1001


def test_a_read_only_media_folder_is_refused_before_rendering(
        media: Path, monkeypatch: pytest.MonkeyPatch):
    read_only_folder(monkeypatch, media.parent)
    with pytest.raises(OutputError, match="not writable.*read-only"):
        resolve_swaps.item_swap(parse_job(job(media)), (), Settings())
    assert not (media.parent / "facefuse").exists()
    elsewhere = media.parent.parent / "elsewhere"
    swap = resolve_swaps.item_swap(parse_job(job(media)), (), Settings(), folder=elsewhere)
    assert swap.request.output.path == str(elsewhere / "plate_v001.####.png")


def test_results_round_trip_and_outcomes_say_why_nothing_is_placed(media: Path,
                                                                   tmp_path: Path):
    swap = resolve_swaps.item_swap(parse_job(job(media)), (), Settings())

    def summary(**counts: object) -> RenderSummary:
        base = {"frames": 10, "swapped": 10, "no_face": 0, "skipped": 0, "failed": (),
                "seconds": 1.0, "cancelled": False}
        return RenderSummary(**{**base, **counts})  # type: ignore[arg-type]

    assert resolve_swaps.outcome(swap, summary())[0] == swap.placement
    for counts, words in [({"cancelled": True, "swapped": 3}, "stopped before the end"),
                          ({"failed": ((5, "disk full"),)}, "frame 5: disk full"),
                          ({"swapped": 0, "no_face": 10}, "no face was found"),
                          ({"swapped": 0, "no_face": 10, "unselected": 10}, "none was selected")]:
        placement, message = resolve_swaps.outcome(swap, summary(**counts))
        assert placement is None and words in message and "nothing placed" in message
    path = tmp_path / "result.json"
    resolve_swaps.write_result(path, swap.placement, "ok")
    assert resolve_swaps.read_result(path) == (swap.placement, "ok")
    resolve_swaps.write_result(path, None, "why")
    assert json.loads(path.read_text())["status"] == "nothing"
    assert resolve_swaps.read_result(path) == (None, "why")
