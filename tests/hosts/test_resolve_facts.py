"""The measured facts table (tests/hosts/resolve_facts.json), row by row: both fakes give the
readback a live Resolve gave (the row's example), and the host (the Studio bridge and the Lua
launcher, job_file.py, plan.py) does what the row asks of it."""

from __future__ import annotations

import ast
import json
from pathlib import Path
from typing import Any

import pytest

from addon.resolve import bridge
from addon.resolve import swaps as resolve_swaps
from addon.resolve.job_file import ClipError, parse_job
from addon.resolve.source_frames import (
    NORMAL,
    RETIMED,
    SourceReadback,
    shown_frames,
    speed_verdict,
    whole_frame,
)
from facefuse import parse_rate
from facefuse.config import Settings
from facefuse.shot.contract.request import RenderSummary
from tests.hosts import resolve_fake as fake
from tests.hosts.resolve_lua import RUNTIMES, START, Launcher, placed, use_planner

ROWS = fake.FACTS
HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
READERS = ("GetSourceStartTime", "GetSourceEndTime", "GetSourceStartFrame", "GetSourceEndFrame")


@pytest.fixture()
def media(tmp_path: Path) -> Path:
    path = tmp_path / "media" / "plate.mov"
    path.parent.mkdir()
    path.write_bytes(b"a movie")
    return path


@pytest.fixture()
def planner(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    return use_planner(tmp_path, monkeypatch)


def _lua_config(media: Path, *, fps: float, rate: str, left: int, duration: int,
                frames: int = 5000, product: str = "DaVinci Resolve",
                **item: Any) -> dict[str, Any]:
    props = {"File Path": str(media), "Type": "Video + Audio", "FPS": fps,
             "Frames": str(frames), "Clip Name": media.name}
    spec = {"name": media.name, "start": START, "duration": duration, "left_offset": left,
            "track": 1, "media": props, **item}
    return {"product": product, "rate": rate, "tracks": 1, "playhead": START,
            "current_timecode": "01:00:00:00", "items": [spec]}


def _worlds(media: Path, *, fps: float, rate: str, left: int, duration: int,
            frames: int = 5000, start_seconds: float = 0.0,
            **item: Any) -> tuple[fake.Resolve, Launcher]:
    """The same item in both fakes: the Python world and a Lua launcher (not run)."""
    world = fake.world(media, frames=frames, left_offset=left, duration=duration, rate=rate,
                       clip_fps=str(fps), start=START, playhead=START,
                       start_seconds=start_seconds, **item)
    lua = Launcher(RUNTIMES[0], _lua_config(media, fps=fps, rate=rate, left=left,
                                            duration=duration, frames=frames,
                                            start_seconds=start_seconds, **item))
    return world, lua


def _readbacks(world: fake.Resolve, lua: Launcher) -> list[dict[str, tuple[Any, Any]]]:
    """The source side of the item as each fake reads it back."""
    py_item, lua_item = fake.timeline_of(world).tracks[0][0], lua.track(1)[0]
    found = []
    for call in (lambda name: getattr(py_item, name)(),
                 lambda name: getattr(lua_item, name)(lua_item)):
        found.append({"frames": (call("GetSourceStartFrame"), call("GetSourceEndFrame")),
                      "times": (call("GetSourceStartTime"), call("GetSourceEndTime")),
                      "offsets": (call("GetLeftOffset"), call("GetRightOffset"))})
    return found


def _outcome(facts: Any) -> str:
    swap = resolve_swaps.item_swap(facts, (), Settings())
    summary = RenderSummary(frames=facts.span.duration, swapped=facts.span.duration, no_face=0,
                            skipped=0, failed=(), seconds=1.0, cancelled=False)
    return resolve_swaps.outcome(swap, summary)[1]


# -- the table itself ---------------------------------------------------------------------------

def _test_names() -> set[str]:
    names = set()
    for path in HERE.glob("test_resolve_*.py"):
        names |= {node.name for node in ast.parse(path.read_text(encoding="utf-8")).body
                  if isinstance(node, ast.FunctionDef)}
    return names


def test_every_row_says_what_resolve_returned_where_and_has_its_test():
    table = json.loads((HERE / "resolve_facts.json").read_text(encoding="utf-8"))
    tests, docs = _test_names(), (ROOT / "docs" / "resolve.md").read_text(encoding="utf-8")
    for row in table["rows"]:
        assert {"id", "call", "situation", "readback", "builds", "status", "source", "fake",
                "test"} <= row.keys(), row["id"]
        assert row["status"] in ("measured", "documented", "reported", "assumed"), row["id"]
        assert row["source"].split(",")[0].split(" ")[0] in (*table["sources"], "none:")
        assert row["test"] in tests, f"{row['id']}: no test {row['test']}"
        if row["status"] in ("assumed", "reported"):
            assert f"`{row['id']}`" in docs, f"{row['id']} is not on the checklist"


# -- source frames: exclusive at equal rates, inclusive at differing rates ------------------------

def test_a_clip_at_its_own_rate_reads_an_exclusive_end_and_is_swapped(media: Path,
                                                                        planner: Path):
    example = ROWS["source_end_equal_rates"]["example"]
    config = {"fps": example["media_fps"], "rate": str(example["timeline_fps"]),
              "left": example["source_start"], "duration": example["duration"]}
    world, lua = _worlds(media, **config)
    for read in _readbacks(world, lua):
        assert read["frames"] == (example["source_start_frame"], example["source_end_frame"])
    facts = parse_job(bridge.collect_job(world))
    assert (facts.span.left_offset, facts.span.duration, facts.caveats) == (1822, 48, ())
    assert lua.run() is True, lua.output
    assert placed(lua) == [(2, START, example["duration"], 0)]


def test_at_differing_rates_the_end_frame_is_inclusive_and_the_seconds_agree(media: Path):
    example = ROWS["source_end_differing_rates"]["example"]
    media_fps, rate = parse_rate(example["media_fps"]), parse_rate(example["timeline_fps"])
    world, lua = _worlds(media, fps=example["media_fps"], rate=str(example["timeline_fps"]),
                         left=example["source_start_frame"], duration=example["duration"])
    for read in _readbacks(world, lua):
        assert read["frames"] == (example["source_start_frame"], example["source_end_frame"])
        seconds = SourceReadback(start_time=read["times"][0], end_time=read["times"][1])
        assert shown_frames(seconds, media_fps, rate) == pytest.approx(92.4, abs=0.05)
    frames_only = SourceReadback(example["source_start_frame"], example["source_end_frame"])
    assert shown_frames(frames_only, media_fps, rate) == 93  # one past the inclusive end
    assert speed_verdict(frames_only, example["duration"], media_fps, rate)[0] == NORMAL
    # a 48 fps clip at 100% on a 24 fps timeline: 10 timeline frames show 20 source frames
    double = SourceReadback(0, 19)
    assert speed_verdict(double, 10, parse_rate(48), parse_rate(24)) == (NORMAL, 20)
    with pytest.raises(ClipError, match="runs at 29.97 fps but the timeline at 24"):
        parse_job(bridge.collect_job(world))
    # at the timeline's own rate the count is whole: half a frame off is a retime
    own = parse_rate(24)
    assert speed_verdict(SourceReadback(start_time=0, end_time=10.5 / 24), 10, own, own)[0] \
        == RETIMED
    assert speed_verdict(SourceReadback(start_time=0, end_time=10.02 / 24), 10, own, own)[0] \
        == NORMAL


# -- seconds: the media's timecode space, whole frames times the media's rate ----------------------

def test_seconds_in_the_medias_timecode_space_cancel_in_the_span(media: Path, planner: Path):
    example = ROWS["source_time_origin"]["example"]
    origin = example["source_start_time"] - example["file_relative_seconds"]
    world, lua = _worlds(media, fps=example["media_fps"], rate=str(example["timeline_fps"]),
                         left=example["source_start_frame"], duration=74, start_seconds=origin)
    for read in _readbacks(world, lua):
        assert read["frames"][0] == example["source_start_frame"]
        assert read["times"][0] == pytest.approx(example["source_start_time"], abs=1e-3)
    # at the clip's own rate the host reads the seconds' span, not their origin
    world, lua = _worlds(media, fps=29.97, rate="29.97", left=300, duration=20,
                         start_seconds=origin)
    data = bridge.collect_job(world)
    assert data["item"]["source_start_time"] == pytest.approx(example["source_start_time"],
                                                              abs=1e-3)
    facts = parse_job(data)
    assert (facts.span.left_offset, facts.caveats) == (300, ())
    assert lua.run() is True, lua.output
    seen = json.loads(planner.read_text())["item"]
    assert seen["source_end_time"] - seen["source_start_time"] == pytest.approx(20 / 29.97)
    assert seen["source_start_time"] > 15000


def test_the_seconds_times_the_media_rate_are_whole_frames(media: Path):
    for seconds, fps, frame in ROWS["source_end_time_exact"]["example"]["readings"]:
        assert whole_frame(seconds * fps) == frame
    assert int(24.524 * 29.97) == 734  # truncating would lose the last frame
    for read in _readbacks(*_worlds(media, fps=25, rate="25", left=40, duration=30)):
        assert read["times"][1] * 25 == pytest.approx(read["frames"][1], abs=1e-6)


# -- retimes, reversed clips ---------------------------------------------------------------------

@pytest.mark.parametrize("speed", [1, 2])
def test_a_retime_shows_as_the_source_span_and_is_refused(media: Path, speed: int):
    example = ROWS["retime_source_span"]["example"]
    offsets = ROWS["left_offset_warped"]["example"]["offsets"][str(speed)]
    world, lua = _worlds(media, fps=24, rate="24", left=example["source_start"],
                         duration=example["duration"], speed=speed)
    for read in _readbacks(world, lua):
        assert read["frames"] == tuple(example["spans"][str(speed)])
        assert read["offsets"] == tuple(offsets)
    data = bridge.collect_job(world)
    assert data["item"]["end"] - data["item"]["start"] == data["item"]["duration"]
    if speed == 1:
        assert parse_job(data).span.duration == 48
    else:
        with pytest.raises(ClipError, match="shows 96 source frames over 48 timeline frames"):
            parse_job(data)


def test_a_reversed_clip_is_refused_as_retimed(media: Path):
    example = ROWS["reversed"]["example"]
    world, lua = _worlds(media, fps=24, rate="24", left=46, duration=49, reverse=True)
    for read in _readbacks(world, lua):
        assert read["frames"] == (example["source_start_frame"], example["source_end_frame"])
    with pytest.raises(ClipError, match="plays in reverse .* from 95.* down to 46"):
        parse_job(bridge.collect_job(world))


def test_zero_source_frames_are_unknown_and_the_result_says_so(media: Path, planner: Path):
    example = ROWS["xml_import_zero"]
    world, lua = _worlds(media, fps=24, rate="24", left=3, duration=10, xml_imported=True)
    for read in _readbacks(world, lua):
        assert read["frames"] == tuple(example["example"].values())
        assert read["times"] == tuple(example["fake"]["seconds"])
    facts = parse_job(bridge.collect_job(world))
    assert facts.span.left_offset == 3  # the left offset it falls back to
    assert "0/0" in facts.caveats[0] and "retime check could not be made" in facts.caveats[0]
    assert "retime check could not be made" in _outcome(facts)
    assert lua.run() is True, lua.output
    assert "retime check could not be made" in lua.output and placed(lua) == [(2, START, 10, 0)]


def test_a_frame_read_a_hair_under_the_integer_is_rounded(media: Path):
    example = ROWS["hair_under_whole_frame"]["example"]
    world, lua = _worlds(media, fps=24, rate="24", left=example["whole"], duration=10,
                         hair=True)
    for read in _readbacks(world, lua):
        assert read["frames"][0] == pytest.approx(example["read"])
    data = bridge.collect_job(world)
    data["item"]["left_offset"] = example["read"]
    facts = parse_job(json.loads(json.dumps(data)))
    assert (facts.span.left_offset, facts.caveats) == (example["whole"], ())
    assert bridge._number(str(example["read"])) == example["whole"]


def test_no_speed_is_readable_so_the_source_span_is_the_witness(media: Path):
    world, lua = _worlds(media, fps=24, rate="24", left=3, duration=10, speed=2)
    keys = ROWS["speed_unreadable"]["fake"]["keys"]
    py_item, lua_item = fake.timeline_of(world).tracks[0][0], lua.track(1)[0]
    assert all(py_item.GetProperty(key) is None for key in keys)
    assert all(lua_item.GetProperty(lua_item, key) is None for key in keys)
    with pytest.raises(ClipError, match="retimed"):
        parse_job(bridge.collect_job(world))


# -- AppendToTimeline ----------------------------------------------------------------------------

def _append(world: fake.Resolve | Launcher, clip: Any, first: int, last: int,
            record: int = START + 100) -> list[Any]:
    info = {"mediaPoolItem": clip, "startFrame": first, "endFrame": last, "trackIndex": 1,
            "recordFrame": record, "mediaType": 1}
    if isinstance(world, Launcher):
        manager = world.resolve.GetProjectManager(world.resolve)
        project = manager.GetCurrentProject(manager)
        pool = project.GetMediaPool(project)
        table = world.lua.table_from([world.lua.table_from(info)])
        return list(pool.AppendToTimeline(pool, table).values())
    return world.GetProjectManager().GetCurrentProject().GetMediaPool().AppendToTimeline([info])


def _clip(world: fake.Resolve | Launcher) -> Any:
    if isinstance(world, Launcher):
        return world.track(1)[0].media
    return fake.timeline_of(world).tracks[0][0].media


def test_an_append_places_end_minus_start_frames_from_the_left_offset_sent(media: Path):
    example = ROWS["append_end_exclusive"]["example"]
    for world in _worlds(media, fps=24, rate="24", left=0, duration=10, frames=7000):
        (item,) = _append(world, _clip(world), example["start_frame"], example["end_frame"])
        lua = isinstance(world, Launcher)
        assert (item.GetDuration(item) if lua else item.GetDuration()) == example["duration"]
        assert (item.GetLeftOffset(item) if lua else item.GetLeftOffset()) == \
            ROWS["left_offset_is_start_frame"]["example"]["left_offset"]


def test_an_append_over_a_taken_range_returns_a_shell_and_places_nothing(media: Path):
    for world in _worlds(media, fps=24, rate="24", left=0, duration=10):
        clip = _clip(world)
        lua = isinstance(world, Launcher)
        (shell,) = _append(world, clip, 0, 5, record=START)  # over the plate on V1
        if lua:
            assert shell.GetUniqueId is None and len(world.track(1)) == 1
        else:
            assert "GetUniqueId" not in dir(shell) and shell.GetUniqueId() is None
            assert len(fake.timeline_of(world).tracks[0]) == 1


@pytest.mark.parametrize("frames, clip_fps, rate, length",
                         ROWS["append_mixed_rate_floor"]["example"]["cases"])
def test_a_clip_at_another_rate_is_appended_floored_into_timeline_frames(
        media: Path, frames: int, clip_fps: float, rate: float, length: int):
    for world in _worlds(media, fps=clip_fps, rate=f"{rate:g}", left=0, duration=10):
        (item,) = _append(world, _clip(world), 300, 300 + frames)
        lua = isinstance(world, Launcher)
        assert (item.GetDuration(item) if lua else item.GetDuration()) == length


def test_a_swap_imported_at_another_rate_than_the_timeline_is_not_placed(
        media: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    world = fake.world(media, tracks=2)
    swap = resolve_swaps.item_swap(parse_job(bridge.collect_job(world)), (), Settings())
    Path(swap.placement.media).parent.mkdir()
    for number in range(swap.placement.start_index, swap.placement.end_index + 1):
        Path(swap.placement.media % number).write_bytes(b"png")
    pool = world.GetProjectManager().GetCurrentProject().GetMediaPool()
    pool.sequence_fps = 23.976  # floor(10 x 24 / 23.976) = 10: the length alone reads right
    with pytest.raises(bridge.BridgeError, match="at 23.976 fps but the timeline runs at 24"):
        bridge.place(world, swap.placement)
    assert fake.timeline_of(world).tracks[1] == []
    assert all(not f.GetClipList() for f in pool.GetRootFolder().GetSubFolderList())
    use_planner(tmp_path, monkeypatch)
    lua = Launcher(RUNTIMES[0], {**_lua_config(media, fps=24, rate="24", left=3, duration=10),
                                 "tracks": 2, "sequence_fps": 23.976})
    assert lua.run() is False
    assert "at 23.976 fps but the timeline runs at 24" in lua.output and placed(lua) == []


# -- probing, editions ---------------------------------------------------------------------------

def test_methods_are_probed_with_dir_and_an_absent_one_is_never_called(media: Path,
                                                                        planner: Path):
    older = frozenset({*READERS, "GetTrackTypeAndIndex"})
    world = fake.world(media, absent=older)
    item = fake.timeline_of(world).tracks[0][0]
    assert hasattr(item, "GetSourceStartTime") and "GetSourceStartTime" not in dir(item)
    assert item.GetSourceStartTime() is None and fake.SESSION.fabricated == ["GetSourceStartTime"]
    fake.SESSION.fabricated.clear()
    fake.timeline_of(world).absent = frozenset({"GetIsTrackLocked", "GetIsTrackEnabled"})
    data = bridge.collect_job(world)
    facts = parse_job(data)
    assert fake.SESSION.fabricated == []
    assert (data["item"]["track"], data["timeline"]["disabled"]) == (1, [])
    assert "no source readers" in facts.caveats[0]
    lua = Launcher(RUNTIMES[0], {**_lua_config(media, fps=24, rate="24", left=3, duration=10),
                                 "absent": sorted(READERS)})
    assert lua.run() is True, lua.output
    assert "source_start_time" not in json.loads(planner.read_text())["item"]
    assert "no source readers" in lua.output


def test_no_studio_only_call_is_made_and_free_is_known_by_its_product_name(media: Path,
                                                                            planner: Path):
    names = ROWS["studio_only_modal"]["fake"]["studio_only"]
    _, lua = _worlds(media, fps=24, rate="24", left=3, duration=10)
    free = fake.world(media, product="DaVinci Resolve")
    timeline = fake.timeline_of(free)
    assert timeline.CreateSubtitlesFromAudio() is False and timeline.GetName() is False
    with pytest.raises(bridge.BridgeError, match="does not allow external scripting"):
        bridge.connect(fake.Module(fake.world(media, product="DaVinci Resolve")))
    for source in ("facefuse.lua", "bridge.py"):
        text = (ROOT / "addon" / "resolve" / source).read_text(encoding="utf-8")
        assert not any(name in text for name in names)
    lua_timeline = lua.state.timeline
    assert lua_timeline.CreateSubtitlesFromAudio(lua_timeline) is False
    assert lua_timeline.GetName(lua_timeline) is False
    free_lua = Launcher(RUNTIMES[0], _lua_config(media, fps=24, rate="24", left=3, duration=10))
    assert free_lua.run() is True, free_lua.output
    assert free_lua.state.session.modal is False and placed(free_lua) == [(2, START, 10, 0)]
