"""`facefuse timeline swap` on timelines real editors wrote: an Avid AAF, a Premiere FCP 7 XML, a
DaVinci Resolve .otio export and EDLs (../shared/testdata/timelines, tests/hosts/timelines).

Each timeline's clips are relinked to frame-coded media made here (same names, rates, available
ranges and start timecodes: tests/hosts/real_edits.py), clips are marked as an editor would, the
swap renders on the contract models, and OpenTimelineIO's own time maths then says, at every
record frame a swapped clip is visible (dissolves included), which media frame its plate shows:
the swap must show that frame, swapped. The swapped timeline is then written back through the
FCP 7 XML and AAF adapters and read back, and the same holds there, its media linked.
"""

from __future__ import annotations

import contextlib
import io
import json
import re
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

import numpy as np
import opentimelineio as otio
import pytest

from facefuse.cli.main import main
from facefuse.hosting.plugins import installed_hosts
from tests.hosts import real_edits as r
from tests.render_media import YUNET_NAME, face_photo

pytestmark = pytest.mark.skipif("otio" not in installed_hosts(), reason="the otio host entry "
                                "point is not installed: pip install -e '.[test]' again")


@dataclass(frozen=True)
class Swapped:
    """One `timeline swap` of a real edit: its folders, what it printed and its exit code."""

    edit: Path
    out: Path
    face: np.ndarray
    code: int
    printed: str

    def read(self, name: str) -> otio.schema.Timeline:
        return otio.adapters.read_from_file(str(self.out / name))


def run_swap(edit: Path, out: Path | str, models: Path, cache: Path, testdata: Path,
             *extra: str) -> tuple[int, str]:
    """`facefuse timeline swap` on the contract models (the colour swapper paints the face)."""
    printed = io.StringIO()
    args = ["timeline", "swap", str(edit), "-o", str(out),
            "-s", str(testdata / "media" / "obama.jpg"), "--detector", YUNET_NAME,
            "--recogniser", str(models / "recogniser_512.onnx"),
            "--swapper", str(models / "colour_swapper.onnx"), "--providers", "cpu",
            "--models-dir", str(models), "--cache-dir", str(cache), "--offline", *extra]
    with contextlib.redirect_stdout(printed), contextlib.redirect_stderr(printed):
        code = main(args)
    return code, printed.getvalue()


def write_back(timeline: otio.schema.Timeline, path: Path, **args: object
               ) -> otio.schema.Timeline:
    """`timeline` written through the adapter of `path`'s suffix and read back."""
    otio.adapters.write_to_file(timeline, str(path), **args)
    return otio.adapters.read_from_file(str(path))


# --- Avid Media Composer: transitions.aaf ---------------------------------------------------------

AVID_MARKED = ("t-hawk (loop)-HD.mp4", "KOLL-HD.mp4")


@pytest.fixture(scope="module")
def avid(tmp_path_factory: pytest.TempPathFactory, testdata: Path, render_models: Path,
         render_cache: Path) -> Swapped:
    """transitions.aaf as `otioconvert` gives it, its clips relinked to media beside it the way
    the AAF reader names relative paths (file://./media/...), two of them marked (one between
    two dissolves, one after a dissolve from a gap); the output folder given as edit/../out."""
    root = tmp_path_factory.mktemp("avid")
    face = face_photo(testdata)
    timeline = otio.adapters.read_from_file(str(testdata / "timelines" / "transitions.aaf"))
    for _, clip in r.video_clips(timeline):
        if clip.name in AVID_MARKED:
            r.bring_online(clip, root / "edit" / "media", face,
                           lambda path: f"file://./media/{path.name}")
            r.mark(clip)
    edit = root / "edit" / "transitions.otio"
    otio.adapters.write_to_file(timeline, str(edit))
    code, printed = run_swap(edit, f"{root / 'edit'}/../out", render_models, render_cache,
                             testdata)
    return Swapped(edit, root / "out", face, code, printed)


def test_avid_every_record_frame_shows_the_swap_of_the_plates_frame(avid: Swapped):
    assert avid.code == 0, avid.printed
    swapped = avid.read("transitions.swapped.otio")
    checked = r.check_swaps(swapped, avid.out, avid.out, avid.face)
    # t-hawk: 77 frames and the 48 + 12 its dissolves show; KOLL-HD: 144 and 24
    assert checked == {"t-hawk__loop_-HD.v001": 137, "KOLL-HD.v001": 168}


def test_avid_relative_paths_still_reach_their_files_from_the_output_folder(avid: Swapped):
    """The edit's relative media paths are rewritten to reach the same files from where the
    swapped timeline is, in the edit's own style; no '..' of -o is left in any path."""
    text = (avid.out / "transitions.swapped.otio").read_text(encoding="utf-8")
    swapped = avid.read("transitions.swapped.otio")
    targets = {clip.name: clip.media_reference.target_url for _, clip in r.video_clips(swapped)
               if isinstance(clip.media_reference, otio.schema.ExternalReference)}
    assert targets["KOLL-HD.mp4"] == "file://../edit/media/KOLL-HD.mp4"
    assert targets["KOLL-HD.v001"] == "file://./KOLL-HD.v001.mov"
    for name, target in targets.items():
        if name in AVID_MARKED or ".v001" in name:
            assert r.local(target, avid.out).is_file(), (name, target)
    assert "/../out" not in text and "edit/../" not in text


def test_avid_swapped_timeline_goes_through_aaf_and_fcp_xml_with_its_media_linked(
        avid: Swapped):
    swapped = avid.read("transitions.swapped.otio")
    through_aaf = write_back(swapped, avid.out / "back.aaf")
    through_xml = write_back(swapped, avid.out / "back.xml")
    for back in (through_aaf, through_xml):
        checked = r.check_swaps(back, avid.out, avid.out, avid.face)
        assert checked == {"t-hawk__loop_-HD.v001": 137, "KOLL-HD.v001": 168}


def test_a_second_run_on_the_swapped_edit_puts_v002_above_v001(
        avid: Swapped, testdata: Path, render_models: Path, render_cache: Path):
    """Run again on the swapped timeline as an editor exports it after importing it (here: as
    FCP 7 XML, which keeps neither track names nor facefuse's metadata), with the same clip
    marked: the new version goes on a track above the first one, which would hide it."""
    back = write_back(avid.read("transitions.swapped.otio"), avid.out / "again.xml")
    for _, clip in r.video_clips(back):
        if clip.name == "KOLL-HD.mp4":
            r.mark(clip)
    edit = avid.out / "again.otio"
    otio.adapters.write_to_file(back, str(edit))
    code, printed = run_swap(edit, avid.out, render_models, render_cache, testdata,
                             "--print-requests")
    assert code == 0, printed
    again = otio.adapters.read_from_file(str(avid.out / "again.swapped.otio"))
    names = [[clip.name for clip in track.find_clips()] for track in again.tracks
             if track.kind == otio.schema.TrackKind.Video]
    v001 = next(i for i, clips in enumerate(names) if "KOLL-HD.v001" in clips)
    v002 = next(i for i, clips in enumerate(names) if "KOLL-HD.v002" in clips)
    assert v002 > v001, names


def test_through_fcp_xml_the_adapter_moves_the_plate_and_the_swap_moves_with_it(avid: Swapped):
    """OpenTimelineIO's FCP 7 XML reader reads the gap between two dissolves of this Avid edit
    36 frames short (53 -> 17), moving KOLL-HD from record frame 247 to 211: the swap of it,
    which dissolves into a copy of the same frames, moves with it (checked frame by frame
    above)."""
    back = otio.adapters.read_from_file(str(avid.out / "back.xml"))
    starts = {clip.name: clip.range_in_parent().start_time.value
              for _, clip in r.video_clips(back)}
    assert starts["KOLL-HD.mp4"] == starts["KOLL-HD.v001"] == 211


# --- Adobe Premiere Pro: premiere_example.xml -----------------------------------------------------

PREMIERE_MARKED = ("clipitem-1", "clipitem-11")  # the 15 fps clip; the one whose media starts at 99


def _premiere_edit(testdata: Path, media: Path, marked: tuple[str, ...]) -> str:
    """premiere_example.xml with its D:\\media paths pointing at `media` and a marker named swap
    on the clipitems `marked`, as Premiere writes a clip marker: nothing else changes."""
    text = (testdata / "timelines" / "premiere_example.xml").read_text(encoding="utf-8")
    text = text.replace("file://localhost/D%3a/media/", f"file://localhost{quote(str(media))}/")
    for item in marked:
        opening = re.search(rf'<clipitem id="{item}"[^>]*>', text)
        assert opening is not None, item
        start = re.search(r"<in>(\d+)</in>", text[opening.end():])
        marker = (f"<marker><comment></comment><name>swap</name><in>{start[1]}</in>"
                  "<out>-1</out></marker>")
        text = text[:opening.end()] + marker + text[opening.end():]
    return text


@pytest.fixture(scope="module")
def premiere(tmp_path_factory: pytest.TempPathFactory, testdata: Path, render_models: Path,
             render_cache: Path) -> Swapped:
    """The Premiere XML, swapped as it is (read by the FCP 7 XML adapter, written back as .otio
    and as .xml)."""
    root = tmp_path_factory.mktemp("premiere")
    face = face_photo(testdata)
    read = otio.adapters.read_from_file(str(testdata / "timelines" / "premiere_example.xml"))
    for _, clip in r.video_clips(read):
        if clip.name in ("sc01_sh010_anim.mov", "sc01_master_layerA_sh030_temp.mov"):
            path = root / "media" / clip.name
            if not path.exists():
                r.make_movie(path, clip.media_reference.available_range, face)
    edit = root / "premiere_example.xml"
    edit.write_text(_premiere_edit(testdata, root / "media", PREMIERE_MARKED), encoding="utf-8")
    code, printed = run_swap(edit, root / "out", render_models, render_cache, testdata)
    return Swapped(edit, root / "out", face, code, printed)


PREMIERE_CHECKED = {"sc01_sh010_anim.v001": 100, "sc01_master_layerA_sh030_temp.v001": 221}


def test_premiere_every_record_frame_shows_the_swap_of_the_plates_frame(premiere: Swapped):
    """The 15 fps clip over a 30 fps movie is swapped (its times are the movie's, 100 frames
    over 100 record frames), and the clip whose media timecode starts at frame 99 is too, with
    the 13 frames its dissolve shows."""
    assert premiere.code == 0, premiere.printed
    swapped = premiere.read("premiere_example.swapped.otio")
    assert r.check_swaps(swapped, premiere.out, premiere.out, premiere.face) == PREMIERE_CHECKED


def test_premiere_edit_is_written_back_as_fcp_xml_with_urls_as_premiere_writes_them(
        premiere: Swapped):
    assert "wrote " in premiere.printed and "premiere_example.swapped.xml" in premiere.printed
    back = premiere.read("premiere_example.swapped.xml")
    assert r.check_swaps(back, premiere.out, premiere.out, premiere.face) == PREMIERE_CHECKED
    text = (premiere.out / "premiere_example.swapped.xml").read_text(encoding="utf-8")
    assert f"<pathurl>file://localhost{quote(str(premiere.out))}/sc01_sh010_anim.v001.mov" in text


# --- DaVinci Resolve: resolve_effects.otio --------------------------------------------------------

def _resolve_online(testdata: Path, root: Path, face: np.ndarray, marked: str | None
                    ) -> Path:
    """resolve_effects.otio with every clip online (its movies on V5 were offline; its PNG
    stills too), bare absolute paths as Resolve writes them, `marked` given a swap marker."""
    timeline = otio.adapters.read_from_file(str(testdata / "timelines" / "resolve_effects.otio"))
    for _, clip in r.video_clips(timeline):
        r.bring_online(clip, root / "media", face, str)
        if clip.name == marked:
            r.mark(clip)
    edit = root / "resolve_effects.otio"
    otio.adapters.write_to_file(timeline, str(edit))
    return edit


@pytest.fixture(scope="module")
def resolve(tmp_path_factory: pytest.TempPathFactory, testdata: Path, render_models: Path,
            render_cache: Path) -> Swapped:
    root = tmp_path_factory.mktemp("resolve")
    face = face_photo(testdata)
    edit = _resolve_online(testdata, root, face, "sq0100_sh0050_layout_v004.mp4")
    code, printed = run_swap(edit, root / "out", render_models, render_cache, testdata)
    return Swapped(edit, root / "out", face, code, printed)


def test_resolve_every_record_frame_shows_the_swap_and_goes_through_fcp_xml(resolve: Swapped):
    assert resolve.code == 0, resolve.printed
    swapped = resolve.read("resolve_effects.swapped.otio")
    expected = {"sq0100_sh0050_layout_v004.v001": 98}
    assert r.check_swaps(swapped, resolve.out, resolve.out, resolve.face) == expected
    back = write_back(swapped, resolve.out / "back.xml")
    assert r.check_swaps(back, resolve.out, resolve.out, resolve.face) == expected


def test_resolve_all_leaves_stills_alone_and_writes_what_resolve_imports(
        resolve: Swapped, testdata: Path, render_models: Path, render_cache: Path):
    """--all on Resolve's export: its 16 PNG stills and titles are left alone with a note each
    (they refused the whole edit before), its four movies are swapped; each swap carries the
    plate's 7 Resolve effects (Transform with its zoom keyframes, Cropping, ...) and is written
    as Resolve's own import takes it (REFERENCE 6b): Clip.2 with a media reference map, a bare
    path, an available range in the media's own frames, the timeline's global start time."""
    out = resolve.out.parent / "all"
    code, printed = run_swap(resolve.edit, out, render_models, render_cache, testdata, "--all",
                             "--print-requests")
    assert code == 0, printed
    notes = [line for line in printed.splitlines() if line.endswith(": left as it is")]
    assert len(notes) == 16 and all("is a still image (" in line for line in notes)
    assert printed.count("facefuse render ") == 4
    swapped = otio.adapters.read_from_file(str(out / "resolve_effects.swapped.otio"))
    plates = {clip.name: clip for _, clip in r.video_clips(swapped)}
    swap = plates["sq0100_sh0010_layout_v004.v001"]
    plate = plates["sq0100_sh0010_layout_v004.mp4"]
    assert [e.metadata["Resolve_OTIO"]["Effect Name"] for e in swap.effects] == [
        "Transform", "Cropping", "Dynamic Zoom", "Composite", "Lens Correction",
        "Retime and Scaling", "Video Faders"]
    assert [e.to_json_string() for e in swap.effects] == \
        [e.to_json_string() for e in plate.effects]
    data = json.loads((out / "resolve_effects.swapped.otio").read_text(encoding="utf-8"))
    assert data["global_start_time"] is not None
    clips = [item for track in data["tracks"]["children"] for item in track["children"]
             if item.get("name") == "sq0100_sh0010_layout_v004.v001"]
    (written,) = clips
    assert written["OTIO_SCHEMA"] == "Clip.2"
    key = written["active_media_reference_key"]
    reference = written["media_references"][key]
    assert reference["OTIO_SCHEMA"].startswith("ExternalReference")
    assert reference["target_url"] == str(out / "sq0100_sh0010_layout_v004.v001.mov")
    assert reference["available_range"]["start_time"]["value"] == 0
    assert reference["metadata"]["Resolve_OTIO"]["Media Url"] == reference["target_url"]


# --- EDLs: 25fps.edl, speed_effects_small.edl, cdl_example01.edl ---------------------------------

def _refused(edit: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], *extra: str) -> str:
    """The one sentence `timeline swap` refuses `edit` with (exit 2, nothing written)."""
    out = tmp_path / "refused"
    code = main(["timeline", "swap", str(edit), "-s", "me.jpg", "-o", str(out), *extra])
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1, err
    assert not out.exists()
    return err


def test_a_25_fps_edl_is_read_at_the_rate_given_to_its_adapter(
        testdata: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    """An EDL says no rate: read at the adapter's default 24 this one cannot be read at all;
    with --adapter-arg rate=25 it is, and its clips (offline in any EDL) are named at their
    25 fps record timecode."""
    edl = testdata / "timelines" / "25fps.edl"
    assert "cannot read the timeline" in _refused(edl, tmp_path, capsys, "--all")
    line = _refused(edl, tmp_path, capsys, "--all", "--adapter-arg", "rate=25")
    assert "clip 'sq001_s001' on V at 00:00:00:00 has no media" in line
    assert "--adapter-arg takes KEY=VALUE" in _refused(edl, tmp_path, capsys, "--adapter-arg",
                                                       "rate")


def _relinked_edl(testdata: Path, folder: Path, face: np.ndarray) -> Path:
    """25fps.edl with its clips relinked to 25 fps movies starting at 01:00:00:00 (an EDL
    names no files: the editor relinks by reel), sq001_s004 marked: edl.otio in `folder`."""
    timeline = otio.adapters.read_from_file(str(testdata / "timelines" / "25fps.edl"), rate=25)
    for _, clip in r.video_clips(timeline):
        source = clip.source_range
        hour = otio.opentime.RationalTime(90000, 25)
        available = otio.opentime.TimeRange(hour, source.end_time_exclusive() - hour
                                            + otio.opentime.RationalTime(5, 25))
        if clip.name == "sq001_s004":
            r.bring_online(clip, folder / "media", face, str, available)
            r.mark(clip)
    edit = folder / "edl.otio"
    otio.adapters.write_to_file(timeline, str(edit))
    return edit


def test_a_25_fps_edl_relinked_swaps_frame_for_frame(
        testdata: Path, tmp_path: Path, render_models: Path, render_cache: Path):
    """The EDL's clips relinked to 25 fps movies starting at 01:00:00:00 (an EDL names no
    files: the editor relinks by reel), one marked: its 49 frames are swapped in place."""
    face = face_photo(testdata)
    edit = _relinked_edl(testdata, tmp_path, face)
    code, printed = run_swap(edit, tmp_path / "out", render_models, render_cache, testdata)
    assert code == 0, printed
    swapped = otio.adapters.read_from_file(str(tmp_path / "out" / "edl.swapped.otio"))
    assert r.check_swaps(swapped, tmp_path / "out", tmp_path / "out", face) == {
        "sq001_s004.v001": 49}


def test_a_25_fps_edl_swapped_under_consent_and_signed_checks_frame_by_frame(
        testdata: Path, tmp_path: Path, render_models: Path, render_cache: Path):
    """The real EDL relinked as above, swapped as EXR frames under a required consent record
    and a signing key: the swaps are unchanged (49 frames), each frame the swapped timeline
    points at carries its credentials in a sidecar beside it, naming the record; without the
    record the same command is refused before anything is written."""
    pytest.importorskip("c2pa")
    from facefuse.credentials import check_sequence
    from tests.signing_chain import make_chain
    from tests.unit.test_consent import write_record

    face = face_photo(testdata)
    edit = _relinked_edl(testdata, tmp_path, face)
    chain = make_chain(tmp_path)
    record = write_record(tmp_path, scope={}, expires=None)
    signed = ("--format", "exr", "--require-consent", "--sign-cert", str(chain.cert),
              "--sign-key", str(chain.key))
    code, printed = run_swap(edit, tmp_path / "refused", render_models, render_cache,
                             testdata, *signed)
    assert code == 2 and "without valid consent (no consent record)" in printed, printed
    assert not list((tmp_path / "refused").rglob("*.exr"))
    code, printed = run_swap(edit, tmp_path / "out", render_models, render_cache, testdata,
                             *signed, "--consent", f"source={record}")
    assert code == 0, printed
    swapped = otio.adapters.read_from_file(str(tmp_path / "out" / "edl.swapped.otio"))
    assert r.check_swaps(swapped, tmp_path / "out", tmp_path / "out", face) == {
        "sq001_s004.v001": 49}
    frames = sorted((tmp_path / "out").rglob("*.exr"))
    assert len(frames) == 49 and all(Path(f"{f}.c2pa").is_file() for f in frames)
    checked = check_sequence(frames)
    assert checked.counts == {"valid": 49}, checked.summary()
    made = checked.frames[0].credential
    assert made is not None and [(c.person, c.performer) for c in made.consent] == [
        ("p1", "Jane Doe")]


def test_edl_retimes_are_refused_and_its_locators_select_clips(
        testdata: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    """A freeze frame (M2 000.0) and a 47.6 fps M2 of a real EDL are retimes; the locators of an
    Avid EDL (in record time, with VFX notes as names) select the clip they sit on."""
    timeline = otio.adapters.read_from_file(
        str(testdata / "timelines" / "speed_effects_small.edl"))
    for name, effect in (("Z682_156 (LAY3)", "FreezeFrame"),
                         ("Z686_5A (LAY2) (47.56 FPS)", "LinearTimeWarp")):
        for _, clip in r.video_clips(timeline):
            del clip.markers[:]
            if clip.name == name:
                r.mark(clip)
        edit = tmp_path / "speed.otio"
        otio.adapters.write_to_file(timeline, str(edit))
        assert f"clip '{name}' on V at " in (line := _refused(edit, tmp_path, capsys))
        assert f"is retimed ({effect})" in line
    cdl = r.REPO_TIMELINES / "cdl_example01.edl"
    locators = otio.adapters.read_from_file(str(cdl), rate=24)
    marked = next(clip for _, clip in r.video_clips(locators) if clip.markers)
    name = marked.markers[0].name
    line = _refused(cdl, tmp_path, capsys, "--adapter-arg", "rate=24", "--marker", name)
    assert f"clip '{marked.name}' on " in line and "has no media" in line


# --- nested stacks: nested_example.otio ----------------------------------------------------------

def test_nested_stacks_are_left_alone_and_a_marker_inside_one_is_said(
        testdata: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    face = face_photo(testdata)
    timeline = otio.adapters.read_from_file(str(testdata / "timelines" / "nested_example.otio"))
    for _, clip in r.video_clips(timeline):
        source = clip.source_range
        available = otio.opentime.TimeRange(otio.opentime.RationalTime(0, 24),
                                            source.end_time_exclusive())
        r.bring_online(clip, tmp_path / "media", face, str, available)
    inner = next(clip for clip in timeline.find_clips() if clip.name == "Clip Inside A Track")
    r.mark(inner)
    edit = tmp_path / "nested.otio"
    otio.adapters.write_to_file(timeline, str(edit))
    line = _refused(edit, tmp_path, capsys)
    assert "no clip of My Timeline carries a marker named 'swap' (1 clip(s) inside nested " \
           "stacks carry it: clips in nested stacks are not swapped)" in line
    out = tmp_path / "out"
    assert main(["timeline", "swap", str(edit), "-s", "me.jpg", "-o", str(out), "--all",
                 "--print-requests"]) == 0
    printed = capsys.readouterr()
    assert printed.out.count("facefuse render ") == 4
    swapped = otio.adapters.read_from_file(str(out / "nested.swapped.otio"))
    plate, swaps = swapped.tracks[0], swapped.tracks[1]
    assert [type(item).__name__ for item in swaps] == [
        "Clip", "Gap", "Clip", "Gap", "Clip", "Gap", "Clip"]
    assert [item.range_in_parent() for item in swaps] == \
        [item.range_in_parent() for item in plate]


# --- more real files: tests/hosts/timelines ------------------------------------------------------

def _placeholder(path: Path) -> str:
    """A file where a clip's media is, for runs that read no picture (--print-requests)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"not decoded by --print-requests")
    return str(path)


def _print_requests(edit: Path, out: Path, capsys: pytest.CaptureFixture[str], *extra: str
                    ) -> tuple[list[str], str]:
    code = main(["timeline", "swap", str(edit), "-s", "me.jpg", "-o", str(out),
                 "--print-requests", *extra])
    printed = capsys.readouterr()
    assert code == 0, printed.err
    return printed.out.splitlines(), printed.err


def test_avids_identity_time_warp_is_100_percent_and_its_reverse_a_retime(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    """Avid marks an untouched clip with a LinearTimeWarp of 1.0: it is swapped; the same
    edit's reverse (-1.0) is refused as a retime."""
    timeline = otio.adapters.read_from_file(str(r.REPO_TIMELINES / "misc_speed_effects.aaf"))
    clips = [clip for _, clip in r.video_clips(timeline)]
    for clip in clips:
        clip.media_reference.target_url = _placeholder(tmp_path / "media" / r.media_name(clip))
    identity, reverse = clips[9], clips[8]
    assert [e.time_scalar for e in identity.effects] == [1.0]
    r.mark(identity)
    edit = tmp_path / "speed.otio"
    otio.adapters.write_to_file(timeline, str(edit))
    lines, _ = _print_requests(edit, tmp_path / "out", capsys)
    assert len(lines) == 1 and "--frames 86432-86447 " in lines[0]
    r.mark(reverse)
    otio.adapters.write_to_file(timeline, str(edit))
    line = _refused(edit, tmp_path, capsys)
    assert "clip 'Frame Debugger 1h.mov' on TimelineMobSlot at 01:00:02:16 is retimed " \
           "(LinearTimeWarp)" in line


def test_a_file_of_two_sequences_names_them_and_takes_the_one_asked_for(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    """Premiere's AAF of two sequences; the second one's speed (Premiere's Video Speed Control,
    a bare TimeEffect) is a retime."""
    aaf = r.REPO_TIMELINES / "multiple_top_level_mobs.aaf"
    line = _refused(aaf, tmp_path, capsys, "--all")
    assert "holds 2 timelines ('nestTest2', 'testNest30_2'): name one with --timeline" in line
    line = _refused(aaf, tmp_path, capsys, "--all", "--timeline", "nope")
    assert "holds no timeline named 'nope'" in line
    line = _refused(aaf, tmp_path, capsys, "--all", "--timeline", "testNest30_2")
    assert "is retimed (" in line


def test_a_muted_clip_on_a_disabled_track_gives_a_muted_swap_on_a_disabled_track(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    timeline = otio.adapters.read_from_file(str(r.REPO_TIMELINES / "test_muted_clip.aaf"))
    ((index, clip),) = list(r.video_clips(timeline))
    clip.media_reference.target_url = _placeholder(tmp_path / "media" / r.media_name(clip))
    timeline.tracks[index].enabled = False  # the editor switched the track off too
    edit = tmp_path / "muted.otio"
    otio.adapters.write_to_file(timeline, str(edit))
    _print_requests(edit, tmp_path / "out", capsys, "--all")
    swapped = otio.adapters.read_from_file(str(tmp_path / "out" / "muted.swapped.otio"))
    swap_track = swapped.tracks[index + 1]
    (swap,) = swap_track.find_clips()
    assert swap.name.endswith(".v001") and not swap.enabled and not swap_track.enabled


def test_premieres_29_97_drop_frame_clip_over_23_976_media_is_planned_in_media_frames(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    """2989 record frames at 29.97 over a 2391-frame 23.976 movie: every movie frame, once or
    twice, as Premiere plays it; the swap keeps the plate's times."""
    timeline = otio.adapters.read_from_file(str(r.REPO_TIMELINES / "2997fps-DFTC.aaf"))
    ((_, clip),) = list(r.video_clips(timeline))
    clip.media_reference.target_url = _placeholder(tmp_path / "media" / r.media_name(clip))
    r.mark(clip)
    edit = tmp_path / "dftc.otio"
    otio.adapters.write_to_file(timeline, str(edit))
    (line,), _ = _print_requests(edit, tmp_path / "out", capsys)
    assert "--frames 0-2390 " in line
    swapped = otio.adapters.read_from_file(str(tmp_path / "out" / "dftc.swapped.otio"))
    swap = swapped.tracks[1].find_clips()[0]
    assert swap.source_range == clip.source_range
    assert swap.media_reference.available_range == clip.media_reference.available_range


def test_premieres_two_files_of_one_path_keep_the_xml_from_being_written_wrong(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    """Premiere wrote source.mp4 twice, at timecodes 353 and 434: OpenTimelineIO's FCP 7 XML
    writer would give both the first one's and move an in-point by 81 frames, so the swapped
    timeline is written as .otio only, with a warning saying why."""
    media = tmp_path / "media"
    for name in ("source.mp4", "source3.mp4", "source4.mp4"):
        _placeholder(media / name)
    text = (r.REPO_TIMELINES / "premiere_enable_property.xml").read_text(encoding="utf-8")
    edit = tmp_path / "enable.xml"
    edit.write_text(text.replace("file://localhost/", f"file://localhost{quote(str(media))}/"),
                    encoding="utf-8")
    out = tmp_path / "out"
    lines, err = _print_requests(edit, out, capsys, "--all")
    assert len(lines) == 6
    assert "warning: enable.swapped.xml is not written: clips 'source.mp4' and " \
           "'video_track_1_disabled_1' name one file" in err
    assert "moving the in-point of 'video_track_1_disabled_1'" in err
    assert sorted(p.name for p in out.iterdir()) == ["enable.swapped.otio"]
