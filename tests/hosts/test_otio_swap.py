"""`facefuse timeline swap` end to end: timelines built with OpenTimelineIO (gaps, two video
tracks and an audio one, trimmed clips, an image sequence, a dissolve next to a marked clip, a
23.976 and a 29.97 drop-frame timeline starting at 01:00:00:00), swapped with real renders on
the contract models, the written timeline read back with the library, and every frame a swapped
clip shows read from the rendered files (the frame markers of tests/media_factory.py).
"""

from __future__ import annotations

import contextlib
import io
import json
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from urllib.parse import urlparse
from urllib.request import url2pathname

import numpy as np
import opentimelineio as otio
import pytest

from facefuse.cli.main import main
from facefuse.hosting.plugins import installed_hosts
from tests.hosts import otio_edits as e
from tests.integration.render_helpers import FACE_BOX, read_bgr, video_facts
from tests.media_factory import read_marker
from tests.render_media import (
    YUNET_NAME,
    decode_video,
    face_frame,
    face_photo,
    make_face_clip,
)

pytestmark = pytest.mark.skipif("otio" not in installed_hosts(), reason="the otio host entry "
                                "point is not installed: pip install -e '.[test]' again")


def swap_args(models: Path, cache: Path, edit: Path, out: Path, source: Path,
              *extra: str) -> list[str]:
    """`facefuse timeline swap` on the contract models (the colour swapper paints the face)."""
    return ["timeline", "swap", str(edit), "-o", str(out), "-s", str(source),
            "--detector", YUNET_NAME, "--recogniser", str(models / "recogniser_512.onnx"),
            "--swapper", str(models / "colour_swapper.onnx"), "--providers", "cpu",
            "--models-dir", str(models), "--cache-dir", str(cache), "--offline", *extra]


def local(url: str) -> Path:
    parsed = urlparse(url)
    return Path(url2pathname(parsed.path)) if parsed.scheme == "file" else Path(url)


def shown_files(clip: otio.schema.Clip) -> list[Path]:
    """The file of every frame a clip shows, in record order, from its media reference (the
    image number of a media time is counted by OpenTimelineIO from the available range)."""
    ref = clip.media_reference
    start, rate = clip.source_range.start_time, clip.source_range.duration.rate
    frames = round(clip.source_range.duration.value)
    if isinstance(ref, otio.schema.ImageSequenceReference):
        first = ref.available_range.start_time
        return [local(ref.target_url_for_image_number(
            round((start + otio.opentime.RationalTime(k, rate) - first).to_frames(ref.rate))))
            for k in range(frames)]
    return [local(ref.target_url)] * frames


def assert_swapped(path: Path, marker: int, face: np.ndarray) -> None:
    """The file holds media frame `marker` with its face changed (the colour swapper)."""
    pixels = read_bgr(path)
    assert read_marker(pixels) == marker, path
    x0, y0, x1, y1 = FACE_BOX
    original = face_frame(marker, face)
    assert np.any(pixels[y0:y1, x0:x1, :3] != original[y0:y1, x0:x1]), f"{path} is unswapped"


def tracks_by_name(made: otio.schema.Timeline) -> dict[str, otio.schema.Track]:
    return {track.name: track for track in made.tracks}


def clips_of(track: otio.schema.Track) -> list[otio.schema.Clip]:
    """The swaps of a track (not the copies of a neighbour a dissolve shows)."""
    return [item for item in track if isinstance(item, otio.schema.Clip)
            and "dissolve" not in item.metadata.get("facefuse", {})]


# --- a 23.976 edit: two video tracks, a dissolve, a sequence -------------------------------------

@dataclass(frozen=True)
class Edit:
    root: Path
    edit: Path
    out: Path
    face: np.ndarray
    original: otio.schema.Timeline
    swapped: otio.schema.Timeline
    printed: str
    code: int


def build_edit(root: Path, face: np.ndarray) -> otio.schema.Timeline:
    """V1: gap 4, A001 (86402+6, marked, with a note), dissolve 2/2, A002 (unmarked), gap 3,
    plate (files 1003-1007; selected by a track marker); V2: gap 8, A001 again (86410+4,
    marked); A1: an audio clip with a swap marker (left alone)."""
    movie = make_face_clip(root / "A001.mp4", face, frames=16, rate=Fraction(24000, 1001))
    plates = e.write_face_sequence(root / "plates", face, 1001, 12)
    a = e.clip("A001", e.movie(movie, e.HOUR_FILM, 16), e.HOUR_FILM + 2, 6,
               markers=("swap", "note"))
    b = e.clip("A002", e.movie(movie, e.HOUR_FILM, 16), e.HOUR_FILM + 8, 5)
    plate = e.clip("plate", e.sequence(plates, "plate.", ".png", 1001, 12), 2, 5)
    v1 = e.video_track("V1", [e.gap(4), a, e.dissolve(2, 2), b, e.gap(3), plate])
    v1.markers.append(otio.schema.Marker(name="swap", marked_range=e.span(19, 1),
                                         color=otio.schema.MarkerColor.BLUE))
    d = e.clip("A001", e.movie(movie, e.HOUR_FILM, 16), e.HOUR_FILM + 10, 4,
               markers=("swap",))
    v2 = e.video_track("V2", [e.gap(8), d])
    audio = otio.schema.Track(name="A1", kind=otio.schema.TrackKind.Audio)
    audio.append(e.clip("A001", e.movie(movie, e.HOUR_FILM, 16), e.HOUR_FILM, 10,
                        markers=("swap",)))
    return e.timeline("edit", [v1, v2, audio])


@pytest.fixture(scope="module")
def edit(tmp_path_factory: pytest.TempPathFactory, testdata: Path, render_models: Path,
         render_cache: Path) -> Edit:
    root = tmp_path_factory.mktemp("otio-edit")
    face = face_photo(testdata)
    original = build_edit(root, face)
    path = e.write(original, root / "edit.otio")
    out = root / "swaps"
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed), contextlib.redirect_stderr(printed):
        code = main(swap_args(render_models, render_cache, path, out,
                              testdata / "media" / "obama.jpg", "--handles", "1", "--format",
                              "exr"))
    swapped = otio.adapters.read_from_file(str(out / "edit.swapped.otio"))
    return Edit(root, path, out, face, original, swapped, printed.getvalue(), code)


def test_each_swap_is_on_a_new_track_directly_above_its_clip(edit: Edit):
    assert edit.code == 0, edit.printed
    assert [t.name for t in edit.swapped.tracks] == ["V1", "V1 facefuse", "V2", "V2 facefuse",
                                                     "A1"]
    assert edit.swapped.global_start_time == edit.original.global_start_time
    tracks = tracks_by_name(edit.swapped)
    assert [c.name for c in clips_of(tracks["V1 facefuse"])] == ["A001.v001", "plate.v001"]
    assert [c.name for c in clips_of(tracks["V2 facefuse"])] == ["A001_2.v001"]
    # the original tracks are untouched
    for name in ("V1", "V2", "A1"):
        assert tracks[name].is_equivalent_to(tracks_by_name(edit.original)[name])
    assert "3 swapped clip(s) on 2 new track(s)" in edit.printed


def test_record_and_source_ranges_are_exact(edit: Edit):
    tracks, before = tracks_by_name(edit.swapped), tracks_by_name(edit.original)
    pairs = [(before["V1"][1], clips_of(tracks["V1 facefuse"])[0], e.span(e.HOUR_FILM + 2, 6)),
             (before["V1"][5], clips_of(tracks["V1 facefuse"])[1], e.span(2, 5)),
             (before["V2"][1], clips_of(tracks["V2 facefuse"])[0],
              e.span(e.HOUR_FILM + 10, 4))]
    for original, swap, source in pairs:
        assert swap.range_in_parent() == original.range_in_parent()
        assert swap.source_range == source
        assert swap.source_range.duration.rate == e.FILM


def test_every_frame_shown_is_the_swapped_media_frame_the_original_showed(edit: Edit):
    tracks = tracks_by_name(edit.swapped)
    a, plate = clips_of(tracks["V1 facefuse"])
    (d,) = clips_of(tracks["V2 facefuse"])
    for swap, first_marker in ((a, 2), (plate, 2), (d, 10)):
        files = shown_files(swap)
        for k, path in enumerate(files):
            assert_swapped(path, first_marker + k, edit.face)


def test_references_carry_handles_and_the_dissolve_frames(edit: Edit):
    tracks = tracks_by_name(edit.swapped)
    a, plate = clips_of(tracks["V1 facefuse"])
    # A001: used 86402-86409 (its 6 frames and the dissolve's 2), one handle each side
    assert a.media_reference.available_range == e.span(e.HOUR_FILM + 1, 10)
    assert a.media_reference.start_frame == e.HOUR_FILM + 1
    assert a.media_reference.rate == e.FILM
    # the sequence keeps its plate's media times (0 is file 1001) and its file numbers
    assert plate.media_reference.available_range == e.span(1, 7)
    assert plate.media_reference.start_frame == 1002
    for number in range(e.HOUR_FILM + 1, e.HOUR_FILM + 11):
        assert_swapped(edit.out / f"A001.v001.{number}.exr", number - e.HOUR_FILM, edit.face)
    assert sorted(p.name for p in edit.out.glob("plate.v001.*")) == [
        f"plate.v001.{n}.exr" for n in range(1002, 1009)]
    # the dissolve after A001 is on the new track too, into a copy of the 2 frames of A002 it
    # shows (the swap dissolves into A002 as the plate does), then a gap for the rest of A002
    items = list(tracks["V1 facefuse"])
    assert isinstance(items[2], otio.schema.Transition)
    assert items[2].in_offset == e.t(2) and items[2].out_offset == e.t(2)
    copy = items[3]
    assert copy.name == "A002" and copy.metadata["facefuse"] == {"dissolve": "A002"}
    assert copy.source_range == e.span(e.HOUR_FILM + 8, 2)
    assert copy.range_in_parent() == e.span(10, 2) and not copy.markers
    assert isinstance(items[4], otio.schema.Gap) and items[4].duration() == e.t(3)


def test_markers_come_along_but_not_the_one_that_selected_the_clip(edit: Edit):
    a = clips_of(tracks_by_name(edit.swapped)["V1 facefuse"])[0]
    assert [m.name for m in a.markers] == ["note"]
    assert a.markers[0].marked_range == e.span(e.HOUR_FILM + 2, 1)
    assert a.metadata["facefuse"]["clip"] == "A001"
    assert list(a.metadata["facefuse"]["frames"]) == [e.HOUR_FILM + 1, e.HOUR_FILM + 10]


# --- 29.97 drop frame from 01:00:00;00, the movie kind, versions --------------------------------

def test_a_drop_frame_timeline_swaps_into_movies_with_their_timecode_and_new_versions(
        tmp_path: Path, testdata: Path, render_models: Path, render_cache: Path,
        capsys: pytest.CaptureFixture[str]):
    face = face_photo(testdata)
    movie = make_face_clip(tmp_path / "E.mp4", face, frames=10, rate=Fraction(30000, 1001),
                           timecode="01:00:00;00")
    shot = e.clip("E", e.movie(movie, e.HOUR_DF, 10, e.NTSC), e.HOUR_DF + 2, 4, e.NTSC,
                  markers=("swap",))
    made = e.timeline("df", [e.video_track("V1", [e.gap(2, e.NTSC), shot])], e.HOUR_DF,
                      e.NTSC)
    assert otio.opentime.to_timecode(made.global_start_time, e.NTSC, True) == "01:00:00;00"
    path = e.write(made, tmp_path / "df.otio")
    out = tmp_path / "out"
    args = swap_args(render_models, render_cache, path, out, testdata / "media" / "obama.jpg",
                     "--handles", "1", "--format", "same")
    assert main(args) == 0
    assert "clip 'E' on V1 at 01:00:00;02" in capsys.readouterr().out
    assert main([*args, "--report"]) == 0  # again: a new version, the first one kept
    assert sorted(p.name for p in out.iterdir()) == ["E.v001.mp4", "E.v002.mp4",
                                                     "E.v002.review", "df.swapped.otio"]
    report = json.loads((out / "E.v002.review" / "report.json").read_text(encoding="utf-8"))
    assert (report["frames"]["first"], report["frames"]["last"]) == (e.HOUR_DF + 1,
                                                                     e.HOUR_DF + 6)
    swapped = otio.adapters.read_from_file(str(out / "df.swapped.otio"))
    (swap,) = clips_of(swapped.tracks[1])
    assert swap.name == "E.v002"
    assert local(swap.media_reference.target_url) == out / "E.v002.mp4"
    assert swap.media_reference.available_range == e.span(e.HOUR_DF + 1, 6, e.NTSC)
    assert swap.source_range == e.span(e.HOUR_DF + 2, 4, e.NTSC)
    assert swap.range_in_parent() == e.span(2, 4, e.NTSC)
    rendered = out / "E.v002.mp4"
    assert [read_marker(f) for f in decode_video(rendered)] == list(range(1, 7))
    facts = video_facts(rendered)
    assert facts["timecode"] == "01:00:00;01" and facts["rate"] == Fraction(30000, 1001)
