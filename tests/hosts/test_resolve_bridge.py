"""The Studio bridge (addon/resolve/bridge.py) and `facefuse resolve swap|install` against a fake
DaVinciResolveScript module that keeps to fusionscript-stubs' surface (tests/hosts/resolve_fake.py).
"""

from __future__ import annotations

import ast
import errno
import os
import shutil
import sys
from pathlib import Path

import cv2
import pytest

from addon.resolve import bridge, install, versions
from addon.resolve import swaps as resolve_swaps
from addon.resolve.job_file import ClipError, parse_job
from facefuse.cli.main import main
from facefuse.config import Settings
from facefuse.errors import ExitCode
from facefuse.io.files import atomic_write_bytes
from tests.hosts import resolve_fake as fake
from tests.media_factory import read_marker
from tests.render_media import YUNET_NAME, decode_video, face_photo, make_face_clip
from tests.resolve_facts import read_only_folder

CLIP_FRAMES = 20


def _stub_classes() -> dict[str, dict[str, list[list[str]]]]:
    """{class: {method: [parameter names of each overload]}} of fusionscript-stubs'
    fusionscript.pyi."""
    for entry in sys.path:
        stub = Path(entry) / "fusionscript-stubs" / "fusionscript.pyi"
        if stub.is_file():
            break
    else:
        pytest.skip("fusionscript-stubs is not installed: pip install -e '.[test]'")
    classes: dict[str, dict[str, list[list[str]]]] = {}
    for node in ast.parse(stub.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.ClassDef):
            methods = classes.setdefault(node.name, {})
            for item in node.body:
                if isinstance(item, ast.FunctionDef):
                    methods.setdefault(item.name, []).append([a.arg for a in item.args.args[1:]])
    return classes


def test_the_fake_module_keeps_to_the_real_api_surface():
    stubs = _stub_classes()
    checked = 0
    for cls in fake.FAKE_CLASSES:
        stub = stubs[cls.__name__]
        for name in (n for n in vars(cls) if n[:1].isupper()):
            assert name in stub, f"{cls.__name__}.{name} is not in Resolve's API"
            code = getattr(cls, name).__code__
            ours = list(code.co_varnames[1:code.co_argcount])
            assert any(ours == names[:len(ours)] for names in stub[name]), \
                f"{cls.__name__}.{name}{ours} is none of {stub[name]}"
            checked += 1
    assert checked >= 30


@pytest.fixture(scope="module")
def face_clip(testdata: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """20 frames, 24 fps, 320x240 with a real face, timecode 01:00:00:00."""
    return make_face_clip(tmp_path_factory.mktemp("clip") / "plate.mp4", face_photo(testdata),
                          frames=CLIP_FRAMES)


@pytest.fixture()
def clip(face_clip: Path, tmp_path: Path) -> Path:
    """The clip in a media folder of this test's own (the result is written beside it)."""
    (tmp_path / "media").mkdir()
    return Path(shutil.copy2(face_clip, tmp_path / "media" / "plate.mp4"))


def _fake_outputs(swap: resolve_swaps.ItemSwap) -> None:
    """Files where the render would write them (the fake's ImportMedia checks they exist)."""
    placement = swap.placement
    Path(placement.media).parent.mkdir(parents=True, exist_ok=True)
    for number in range(placement.start_index, placement.end_index + 1):
        Path(placement.media % number).write_bytes(b"png")


def test_collected_facts_plan_and_placement_line_up_frame_for_frame(clip: Path):
    resolve = fake.world(clip, tracks=2)
    facts = parse_job(bridge.collect_job(resolve))
    assert (facts.span.record_start, facts.span.duration, facts.span.left_offset) == (86448, 10, 3)
    assert facts.track == 1 and facts.edition.kind == "studio"
    swap = resolve_swaps.item_swap(facts, (), Settings())
    _fake_outputs(swap)
    message = bridge.place(resolve, swap.placement)
    timeline = resolve.GetProjectManager().GetCurrentProject().GetCurrentTimeline()
    (placed,) = timeline.GetItemListInTrack("video", 2)
    original = timeline.GetItemListInTrack("video", 1)[0]
    assert (placed.GetStart(), placed.GetEnd()) == (original.GetStart(), original.GetEnd())
    bins = resolve.GetProjectManager().GetCurrentProject().GetMediaPool().GetRootFolder()
    (folder,) = bins.GetSubFolderList()
    assert folder.GetName() == "facefuse" and len(folder.GetClipList()) == 1
    assert "video track 2 at frame 86448" in message


def test_a_track_is_added_when_none_above_is_free(clip: Path):
    resolve = fake.world(clip, tracks=1)
    swap = resolve_swaps.item_swap(parse_job(bridge.collect_job(resolve)), (), Settings())
    _fake_outputs(swap)
    bridge.place(resolve, swap.placement)
    timeline = resolve.GetProjectManager().GetCurrentProject().GetCurrentTimeline()
    assert timeline.GetTrackCount("video") == 2
    assert [i.GetStart() for i in timeline.GetItemListInTrack("video", 2)] == [86448]


def test_resolve_refusing_an_import_or_a_placement_is_one_sentence(clip: Path):
    resolve = fake.world(clip)
    swap = resolve_swaps.item_swap(parse_job(bridge.collect_job(resolve)), (), Settings())
    with pytest.raises(bridge.BridgeError, match="could not import"):
        bridge.place(resolve, swap.placement)  # the frames were never rendered
    _fake_outputs(swap)
    too_long = resolve_swaps.Placement(**{**vars_of(swap.placement), "end_frame": 99})
    with pytest.raises(bridge.BridgeError, match="could not place"):
        bridge.place(resolve, too_long)


def vars_of(placement: resolve_swaps.Placement) -> dict:
    return {name: getattr(placement, name) for name in placement.__slots__}


def test_no_resolve_a_free_edition_and_a_missing_module_are_clear(tmp_path: Path):
    with pytest.raises(bridge.BridgeError, match="not running"):
        bridge.connect(fake.Module(None))
    free = fake.world(None, product="DaVinci Resolve")
    with pytest.raises(bridge.BridgeError, match="does not allow external scripting"):
        bridge.connect(fake.Module(free))
    with pytest.raises(bridge.BridgeError, match="was not found.*RESOLVE_SCRIPT_API"):
        bridge.load_module({"RESOLVE_SCRIPT_API": str(tmp_path / "none")}, "linux")


def test_the_module_is_found_through_resolve_script_api(tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch):
    modules = tmp_path / "Scripting" / "Modules"
    modules.mkdir(parents=True)
    (modules / "DaVinciResolveScript.py").write_text("def scriptapp(name):\n    return None\n")
    monkeypatch.delitem(sys.modules, "DaVinciResolveScript", raising=False)
    monkeypatch.setattr(sys, "path", list(sys.path))
    monkeypatch.delenv("RESOLVE_SCRIPT_LIB", raising=False)
    module = bridge.load_module({"RESOLVE_SCRIPT_API": str(tmp_path / "Scripting")}, "linux")
    assert Path(module.__file__).parent == modules
    windows = str(bridge.api_folders({"PROGRAMDATA": "C:\\ProgramData"}, "win32")[0])
    assert windows.startswith("C:\\ProgramData\\Blackmagic Design\\DaVinci Resolve\\Support")
    monkeypatch.delitem(sys.modules, "DaVinciResolveScript")


def test_a_title_under_the_playhead_is_refused():
    with pytest.raises(ClipError, match="generator, title or effect"):
        parse_job(bridge.collect_job(fake.world(None)))


def _swap_args(render_models: Path, render_cache: Path, source: Path, *extra: str) -> list[str]:
    return ["resolve", "swap", "-s", str(source), "--detector", YUNET_NAME,
            "--recogniser", str(render_models / "recogniser_512.onnx"),
            "--swapper", str(render_models / "colour_swapper.onnx"), "--providers", "cpu",
            "--models-dir", str(render_models), "--cache-dir", str(render_cache.parent),
            "--offline", *extra]


def test_resolve_swap_renders_the_used_range_and_places_it(
        clip: Path, testdata: Path, render_models: Path, render_cache: Path,
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]):
    resolve = fake.world(clip, tracks=1)
    monkeypatch.setitem(sys.modules, "DaVinciResolveScript", fake.Module(resolve))
    source = testdata / "media" / "astronaut.png"
    assert main(_swap_args(render_models, render_cache, source)) == ExitCode.OK
    out = clip.parent / "facefuse"
    assert sorted(p.name for p in out.glob("*.png")) == [f"plate_v001.{n:04d}.png"
                                                          for n in range(4, 14)]
    # frame for frame: the file placed at record frame 86448 + k holds source frame 3 + k
    for k in range(10):
        assert read_marker(cv2.imread(str(out / f"plate_v001.{4 + k:04d}.png"))) == 3 + k
    timeline = resolve.GetProjectManager().GetCurrentProject().GetCurrentTimeline()
    (placed,) = timeline.GetItemListInTrack("video", 2)
    assert (placed.GetStart(), placed.GetDuration()) == (86448, 10)
    assert "Placed plate_v001 facefuse on video track 2" in capsys.readouterr().out


def test_a_movie_output_holds_just_the_used_range_and_is_placed(
        clip: Path, testdata: Path, render_models: Path, render_cache: Path,
        monkeypatch: pytest.MonkeyPatch):
    resolve = fake.world(clip, tracks=2, start=86400 + 100, left_offset=5, duration=8,
                         playhead=86400 + 101)
    monkeypatch.setitem(sys.modules, "DaVinciResolveScript", fake.Module(resolve))
    source = testdata / "media" / "astronaut.png"
    args = _swap_args(render_models, render_cache, source, "--output", "prores_4444")
    assert main(args) == ExitCode.OK
    movie = clip.parent / "facefuse" / "plate_v001_facefuse.mov"
    frames = decode_video(movie)
    assert [read_marker(f) for f in frames] == list(range(5, 13))
    timeline = resolve.GetProjectManager().GetCurrentProject().GetCurrentTimeline()
    (placed,) = timeline.GetItemListInTrack("video", 2)
    assert (placed.GetStart(), placed.GetDuration(), placed.GetLeftOffset()) == (86500, 8, 0)


def test_resolve_swap_without_resolve_or_into_a_read_only_folder_places_nothing(
        clip: Path, testdata: Path, render_models: Path, render_cache: Path,
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]):
    source = testdata / "media" / "astronaut.png"
    monkeypatch.setitem(sys.modules, "DaVinciResolveScript", fake.Module(None))
    assert main(_swap_args(render_models, render_cache, source)) == ExitCode.USAGE
    assert "not running" in capsys.readouterr().err
    resolve = fake.world(clip)
    monkeypatch.setitem(sys.modules, "DaVinciResolveScript", fake.Module(resolve))
    read_only_folder(monkeypatch, clip.parent)
    assert main(_swap_args(render_models, render_cache, source)) == ExitCode.OUTPUT
    assert "read-only" in capsys.readouterr().err
    timeline = resolve.GetProjectManager().GetCurrentProject().GetCurrentTimeline()
    assert timeline.GetTrackCount("video") == 1 and not (clip.parent / "facefuse").exists()


def test_install_writes_the_program_path_and_uninstall_removes_only_ours(tmp_path: Path):
    folder = tmp_path / "Scripts" / "Utility"
    assert main(["resolve", "install", "--scripts-dir", str(folder)]) == ExitCode.OK
    text = (folder / "facefuse.lua").read_text()
    assert f"local INSTALLED_COMMAND = [['{sys.executable}' -m facefuse resolve open]]" in text
    assert main(["resolve", "install", "--uninstall", "--scripts-dir", str(folder)]) == 0
    assert not (folder / "facefuse.lua").exists()
    (folder / "facefuse.lua").write_text("-- someone else's script\n")
    assert main(["resolve", "install", "--scripts-dir", str(folder)]) == ExitCode.USAGE
    assert (folder / "facefuse.lua").read_text() == "-- someone else's script\n"


@pytest.mark.parametrize("code", [errno.EROFS, errno.ENOSPC])
def test_a_scripts_folder_that_refuses_the_launcher_is_code_6(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
        code: int):
    def refuse(path: Path, data: bytes) -> None:
        raise OSError(code, os.strerror(code), str(path))

    monkeypatch.setattr(install, "atomic_write_bytes", refuse)
    folder = tmp_path / "Scripts" / "Utility"
    assert main(["resolve", "install", "--scripts-dir", str(folder)]) == ExitCode.OUTPUT
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and f"cannot write {folder / 'facefuse.lua'}" in err


def test_scripts_folders_per_os(tmp_path: Path):
    home = tmp_path / "home"
    assert install.scripts_folder("linux", {}, home) == \
        home / ".local/share/DaVinciResolve/Fusion/Scripts/Utility"
    assert install.scripts_folder("darwin", {}, home) == home / (
        "Library/Application Support/Blackmagic Design/DaVinci Resolve/Fusion/Scripts/Utility")
    appdata = tmp_path / "AppData"
    assert install.scripts_folder("win32", {"APPDATA": str(appdata)}, home) == appdata / (
        "Blackmagic Design/DaVinci Resolve/Support/Fusion/Scripts/Utility")
    assert not install.sandboxed_resolve(home, "darwin")
    (home / install.SANDBOX_CONTAINER).mkdir(parents=True)
    assert install.sandboxed_resolve(home, "darwin")


def test_a_finished_swap_run_again_renders_nothing_and_places_a_new_version(
        clip: Path, testdata: Path, render_models: Path, render_cache: Path,
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]):
    resolve = fake.world(clip, tracks=1)
    monkeypatch.setitem(sys.modules, "DaVinciResolveScript", fake.Module(resolve))
    source = testdata / "media" / "astronaut.png"
    assert main(_swap_args(render_models, render_cache, source)) == ExitCode.OK
    timeline = fake.timeline_of(resolve)
    timeline.DeleteClips(timeline.tracks[1], False)  # the user removes the first swap
    capsys.readouterr()
    assert main(_swap_args(render_models, render_cache, source)) == ExitCode.OK
    out = clip.parent / "facefuse"
    for n in range(4, 14):  # the second version is the first one's files, linked
        assert (out / f"plate_v002.{n:04d}.png").stat().st_ino == \
            (out / f"plate_v001.{n:04d}.png").stat().st_ino
    assert "10 done by an earlier render" in capsys.readouterr().out
    (placed,) = timeline.tracks[1]
    assert "plate_v002" in placed.media.GetClipProperty("File Path")


def test_a_new_version_never_changes_the_files_of_the_last(tmp_path: Path):
    folder = tmp_path / "facefuse"
    folder.mkdir()
    for n in (4, 5):
        (folder / f"plate_v001.{n:04d}.png").write_bytes(b"old")
    (folder / "plate_v001_facefuse.mov").write_bytes(b"movie")
    assert versions.latest_version(folder, "plate") == 1
    assert versions.latest_version(folder, "plat") == 0
    assert versions.seed(str(folder / "plate_v001.%04d.png"),
                         str(folder / "plate_v002.%04d.png"), range(4, 7)) == 2
    atomic_write_bytes(folder / "plate_v002.0004.png", b"new")  # as the writers replace a frame
    assert (folder / "plate_v001.0004.png").read_bytes() == b"old"
    assert (folder / "plate_v002.0005.png").read_bytes() == b"old"


def test_a_new_version_carries_the_credentials_sidecars_of_the_frames_it_starts_from(
        tmp_path: Path):
    folder = tmp_path / "facefuse"
    folder.mkdir()
    for n in (4, 5):
        (folder / f"plate_v001.{n:04d}.exr").write_bytes(b"frame")
    (folder / "plate_v001.0004.exr.c2pa").write_bytes(b"signed")  # 5 was never signed
    (folder / "plate_v002.0004.exr.c2pa").write_bytes(b"stale")  # a seed stopped half-way
    assert versions.seed(str(folder / "plate_v001.%04d.exr"),
                         str(folder / "plate_v002.%04d.exr"), range(4, 6)) == 2
    assert (folder / "plate_v002.0004.exr.c2pa").stat().st_ino == \
        (folder / "plate_v001.0004.exr.c2pa").stat().st_ino
    assert not (folder / "plate_v002.0005.exr.c2pa").exists()
    atomic_write_bytes(folder / "plate_v002.0004.exr.c2pa", b"signed again")  # as signing does
    assert (folder / "plate_v001.0004.exr.c2pa").read_bytes() == b"signed"
