"""The Blender extension for real, with bpy 5.0.1 as a module (no Blender binary).

The extension zip (the packaged one with its wheels when it can be built, else addon/blender
zipped as it is) is installed into the session's throw-away Blender user folder (conftest.py
sets BLENDER_USER_* before bpy is first imported) and enabled as bl_ext.user_default.facefuse,
then uninstalled again at the end of this module. The shots are
generated clips whose frames carry their index as a burned-in marker and a real face
(tests/render_fixtures.py): the real YuNet detector finds it, the contract colour swapper paints
it, so every output frame proves which source frame it came from and that it was processed.
With bpy as a module timers never fire: the operators run the engine before they return, and
the worker/timer path is driven here by calling the timer callback (jobs.drain) by hand.
"""

from __future__ import annotations

import importlib
import os
import shutil
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

# tests/hosts/conftest.py points BLENDER_USER_* at a temporary folder before bpy is imported.
bpy = pytest.importorskip("bpy", reason="bpy (Blender as a Python module) is not installed")

import cv2

from facefuse.io.sequences import chunk_of
from facefuse.shot.inputs import open_input
from tests.conftest import REPO_ROOT
from tests.media_factory import read_marker
from tests.render_fixtures import (  # noqa: F401 - fixtures are used by name
    FACE_SIZE,
    FACE_XY,
    SIZE,
    face_frame,
    face_photo,
    make_face_clip,
    render_cache_fixture,
    render_models_fixture,
)

ADDON = "bl_ext.user_default.facefuse"
ADDON_ROOT = REPO_ROOT / "addon" / "blender"
YUNET_FILE = "face_detection_yunet_2023mar.onnx"
CLIP_FRAMES = 20
STRIP_START, TRIM_START, TRIM_END, CHANNEL = 10, 3, 4, 2
FIRST = STRIP_START + TRIM_START  # first trimmed timeline frame
TRIMMED = CLIP_FRAMES - TRIM_START - TRIM_END  # trimmed duration
FACE_BOX = (FACE_XY[0] - 45, FACE_XY[1] - 45, FACE_XY[0] + FACE_SIZE[0] + 45,
            FACE_XY[1] + FACE_SIZE[1] + 45)  # x0, y0, x1, y1: where any paste must stay
FACE_CENTRE = (FACE_XY[1] + FACE_SIZE[1] // 2, FACE_XY[0] + FACE_SIZE[0] // 2)  # row, column
DRAIN_TIMEOUT_S = 90.0


# -- the extension -------------------------------------------------------------------------------

def module(name: str = "") -> Any:
    """The installed add-on's (sub)module as loaded now (a re-enable loads it again)."""
    return sys.modules[f"{ADDON}.{name}" if name else ADDON]


def _user_repo_index() -> int:
    repos = bpy.context.preferences.extensions.repos
    return next(i for i, repo in enumerate(repos) if repo.module == "user_default")


def _uninstall() -> None:
    if ADDON in bpy.context.preferences.addons:
        bpy.ops.preferences.addon_disable(module=ADDON)
    repo = bpy.context.preferences.extensions.repos[_user_repo_index()]
    if (Path(repo.directory) / "facefuse").exists():
        bpy.ops.extensions.package_uninstall(repo_index=_user_repo_index(), pkg_id="facefuse")


@pytest.fixture(scope="module")
def extension_zip(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
                  ) -> Path:
    """The packaged zip with its wheels (tests/hosts/conftest.py: blender_extension_zip); where
    that cannot be built (no wheels cached, offline) addon/blender zipped here without wheels,
    which works because facefuse is importable in this environment already."""
    try:
        return Path(request.getfixturevalue("blender_extension_zip"))
    except (pytest.FixtureLookupError, pytest.skip.Exception):
        pass
    path = tmp_path_factory.mktemp("extension") / "facefuse.zip"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        for file in sorted(ADDON_ROOT.rglob("*")):
            if file.is_file() and "__pycache__" not in file.parts:
                archive.write(file, file.relative_to(ADDON_ROOT).as_posix())
    return path


@pytest.fixture(scope="module")
def addon(blender_user_dirs: Any, extension_zip: Path) -> Any:
    """The extension installed from its zip into the user_default repository of this
    session's throw-away Blender user folder, and enabled; uninstalled afterwards."""
    _uninstall()
    assert bpy.ops.extensions.package_install_files(
        filepath=str(extension_zip), repo="user_default", enable_on_install=True) == {'FINISHED'}
    assert ADDON in bpy.context.preferences.addons
    yield module()
    _uninstall()


# -- shots ---------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def clip(testdata: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """20 frames, 24 fps, 320x240: frame i carries marker i and a real face."""
    return make_face_clip(tmp_path_factory.mktemp("clip") / "plate.mp4", face_photo(testdata),
                          frames=CLIP_FRAMES)


@pytest.fixture
def shot(addon: Any, clip: Path, testdata: Path, render_models: Path, render_cache: Path,
         tmp_path: Path) -> SimpleNamespace:
    """A saved .blend with the clip as movie strip 'plate' (active), trimmed at both ends and
    set up for the contract colour swapper, real YuNet, CPU, offline; no source yet."""
    scene = new_blend(tmp_path / "shot.blend")
    strip = add_plate(scene, clip)
    configure(strip, testdata, render_models, render_cache)
    return SimpleNamespace(scene=scene, strip=strip, blend=tmp_path / "shot.blend",
                           folder=tmp_path, out=tmp_path / "facefuse" / "plate")


def new_blend(path: Path | None) -> Any:
    """An empty file (saved to `path` unless None) with a 320x240 scene and a sequencer."""
    bpy.ops.wm.read_homefile(use_empty=True)
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        assert bpy.ops.wm.save_as_mainfile(filepath=str(path)) == {'FINISHED'}
    scene = bpy.context.scene
    scene.render.resolution_x, scene.render.resolution_y = SIZE
    scene.render.resolution_percentage = 100
    scene.view_settings.view_transform = 'Standard'
    scene.sequence_editor_create()
    return scene


def add_plate(scene: Any, clip: Path, name: str = "plate", channel: int = CHANNEL,
              start: int = STRIP_START) -> Any:
    strip = scene.sequence_editor.strips.new_movie(name, str(clip), channel, start)
    strip.frame_offset_start, strip.frame_offset_end = TRIM_START, TRIM_END
    scene.sequence_editor.active_strip = strip
    return strip


def configure(strip: Any, testdata: Path, models: Path, cache: Path) -> None:
    props = strip.facefuse
    props.detector = str(testdata / "models" / YUNET_FILE)
    props.recogniser = str(models / "recogniser_512.onnx")
    props.swapper = str(models / "colour_swapper.onnx")
    props.providers = 'cpu'
    props.models_dir = str(models)
    props.cache_dir = str(cache)


def add_source(strip: Any, path: Path) -> None:
    strip.facefuse.sources.add().filepath = str(path)


def source_frames(clip: Path) -> list[np.ndarray]:
    """The clip's frames as the engine decodes them (0-based): where nothing was pasted, an
    output frame must equal its source frame exactly."""
    shot = open_input(str(clip))
    try:
        return [frame for _, frame in shot.read(shot.frame_numbers)]
    finally:
        shot.close()


def result_strip(scene: Any, source_name: str = "plate") -> Any:
    found = [s for s in scene.sequence_editor.strips_all if s.facefuse.result_of == source_name]
    assert len(found) == 1, [s.name for s in found]
    return found[0]


def element_file(strip: Any, frame: int) -> Path:
    return Path(bpy.path.abspath(strip.directory)) / strip.strip_elem_from_frame(frame).filename


def assert_processed(picture: np.ndarray, source: np.ndarray) -> None:
    """`picture` is `source` with its face replaced: changed at the face, equal far from it."""
    x0, y0, x1, y1 = FACE_BOX
    outside = np.ones(source.shape[:2], bool)
    outside[y0:y1, x0:x1] = False
    assert np.array_equal(picture[outside], source[outside])
    row, col = FACE_CENTRE
    centre = np.s_[row - 10:row + 10, col - 10:col + 10]
    assert np.abs(picture[centre].astype(int) - source[centre].astype(int)).mean() > 10


def blender_render(scene: Any, frame: int, folder: Path) -> np.ndarray:
    """The sequencer's own picture of timeline frame `frame` (BGR uint8)."""
    scene.frame_set(frame)
    scene.render.image_settings.file_format = 'PNG'
    scene.render.filepath = str(folder / f"blender.{frame:04d}.png")
    bpy.ops.render.render(write_still=True)
    return cv2.imread(scene.render.filepath)


def last_message() -> Any:
    return module("jobs").current().message


def operator_error(operator: Any, **kwargs: Any) -> str:
    """The error an operator reports (bpy turns ERROR reports into a RuntimeError)."""
    with pytest.raises(RuntimeError) as info:
        operator(**kwargs)
    return str(info.value)


def drain_until_idle(jobs: Any, until: Any = None) -> None:
    """Do what Blender's timer does: call jobs.drain() until no job is left (or `until()`)."""
    deadline = time.monotonic() + DRAIN_TIMEOUT_S
    while jobs.current().jobs and not (until and until()):
        assert time.monotonic() < deadline, "the job did not finish"
        jobs.drain()
        time.sleep(0.02)


# -- installation and registration ---------------------------------------------------------------

def test_the_zip_installs_and_registers_the_strip_settings(addon: Any) -> None:
    assert hasattr(bpy.types.Strip, "facefuse")
    props = bpy.types.Strip.bl_rna.properties["facefuse"]
    assert props.fixed_type.identifier == "FacefuseStripSettings"
    assert bpy.types.SEQUENCER_PT_facefuse.bl_category == "Face Swap"
    assert bpy.types.SEQUENCER_PT_facefuse.bl_space_type == 'SEQUENCE_EDITOR'


def test_disable_and_enable_again_is_symmetric(addon: Any) -> None:
    def registered() -> list[Any]:
        return [*module("properties").CLASSES, *module("operators").CLASSES,
                *module("panels").CLASSES]

    before = registered()
    assert all(cls.is_registered for cls in before)
    draw_status, jobs = module("panels").draw_status, module("jobs")
    assert draw_status in bpy.types.STATUSBAR_HT_header.draw._draw_funcs
    assert jobs._on_load_pre in bpy.app.handlers.load_pre

    assert bpy.ops.preferences.addon_disable(module=ADDON) == {'FINISHED'}
    assert not any(cls.is_registered for cls in before)
    assert not hasattr(bpy.types.Strip, "facefuse")
    assert draw_status not in bpy.types.STATUSBAR_HT_header.draw._draw_funcs
    assert jobs._on_load_pre not in bpy.app.handlers.load_pre
    assert jobs.current() is None and not bpy.app.timers.is_registered(jobs.drain)

    assert bpy.ops.preferences.addon_enable(module=ADDON) == {'FINISHED'}
    assert all(cls.is_registered for cls in registered())
    assert hasattr(bpy.types.Strip, "facefuse") and module("jobs").current() is not None
    assert module("panels").draw_status in bpy.types.STATUSBAR_HT_header.draw._draw_funcs


# -- the swap ------------------------------------------------------------------------------------

def test_swap_strip_makes_a_frame_aligned_strip_that_survives_a_reload(
        shot: SimpleNamespace, clip: Path, testdata: Path) -> None:
    scene, strip = shot.scene, shot.strip
    media = testdata / "media"
    assert bpy.ops.facefuse.add_sources(directory=str(media), files=[
        {"name": "obama.jpg"}, {"name": "biden.jpg"}]) == {'FINISHED'}
    props = strip.facefuse
    assert [Path(bpy.path.abspath(s.filepath)).resolve() for s in props.sources] == [
        media / "obama.jpg", media / "biden.jpg"]
    assert [s.faces for s in props.sources] == [1, 1]  # checked when added: thumbnails made
    assert all(Path(s.thumbnail).is_file() for s in props.sources)

    started = time.perf_counter()
    assert bpy.ops.facefuse.swap_strip() == {'FINISHED'}
    swap_s = time.perf_counter() - started
    assert last_message().level == 'INFO' and f"{TRIMMED} swapped" in last_message().text

    swapped = result_strip(scene)
    assert swapped.type == 'IMAGE' and swapped.channel == CHANNEL + 1
    assert swapped.frame_final_start == strip.frame_final_start == FIRST
    assert swapped.frame_final_duration == strip.frame_final_duration == TRIMMED
    assert len(swapped.elements) == TRIMMED and swapped.directory == "//facefuse/plate/"
    assert props.result_strip == swapped.name
    sources = source_frames(clip)
    for frame in range(FIRST, FIRST + TRIMMED):
        index = frame - STRIP_START  # the movie frame (0-based) shown at this timeline frame
        picture = cv2.imread(str(element_file(swapped, frame)))
        assert read_marker(picture) == index, frame
        assert_processed(picture, sources[index])
    assert sorted(p.name for p in shot.out.glob("plate.*.png")) == [
        f"plate.{n:04d}.png" for n in range(TRIM_START + 1, TRIM_START + TRIMMED + 1)]

    # Blender itself shows the swapped frame of the right source frame at each timeline frame
    for frame in (FIRST, FIRST + TRIMMED // 2, FIRST + TRIMMED - 1):
        picture = blender_render(scene, frame, shot.folder)
        assert read_marker(picture) == frame - STRIP_START
        assert np.abs(picture[FACE_CENTRE].astype(int)
                      - sources[frame - STRIP_START][FACE_CENTRE].astype(int)).max() > 10

    # the preview of one frame takes a fraction of the render
    scene.frame_set(FIRST + 4)
    assert bpy.ops.facefuse.preview_frame() == {'FINISHED'}  # loads the models once
    started = time.perf_counter()
    assert bpy.ops.facefuse.preview_frame() == {'FINISHED'}
    assert time.perf_counter() - started < swap_s / 3

    # same settings: nothing re-rendered, the result strip replaced, not doubled
    stamps = {p: p.stat().st_mtime_ns for p in shot.out.glob("plate.*.png")}
    assert bpy.ops.facefuse.swap_strip() == {'FINISHED'}
    assert f"{TRIMMED} already done" in last_message().text
    assert {p: p.stat().st_mtime_ns for p in shot.out.glob("plate.*.png")} == stamps
    assert result_strip(scene).channel == CHANNEL + 1
    # changed settings: rendered again
    props.mask_blur, props.farm = 0.6, True
    assert bpy.ops.facefuse.swap_strip() == {'FINISHED'}
    assert f"{TRIMMED} swapped" in last_message().text

    assert bpy.ops.wm.save_mainfile() == {'FINISHED'}
    assert bpy.ops.wm.read_homefile(use_empty=True) == {'FINISHED'}
    assert bpy.ops.wm.open_mainfile(filepath=str(shot.blend)) == {'FINISHED'}
    scene = bpy.context.scene
    props = scene.sequence_editor.strips["plate"].facefuse
    assert [Path(bpy.path.abspath(s.filepath)).resolve() for s in props.sources] == [
        media / "obama.jpg", media / "biden.jpg"]
    assert [s.faces for s in props.sources] == [1, 1]
    assert props.mask_blur == pytest.approx(0.6) and props.farm and props.selector == 'one'
    assert props.detector == str(testdata / "models" / YUNET_FILE) and props.providers == 'cpu'
    assert props.result_strip == result_strip(scene).name
    assert len(result_strip(scene).elements) == TRIMMED


def test_preview_shows_the_swapped_frame_under_the_playhead(shot: SimpleNamespace, clip: Path,
                                                            testdata: Path) -> None:
    add_source(shot.strip, testdata / "media" / "obama.jpg")
    frame = FIRST + 5
    shot.scene.frame_set(frame)
    assert bpy.ops.facefuse.preview_frame() == {'FINISHED'}
    image = bpy.data.images["facefuse preview"]
    assert tuple(image.size) == SIZE
    rgba = np.array(image.pixels[:], np.float32).reshape(SIZE[1], SIZE[0], 4)
    bgr = np.ascontiguousarray(rgba[::-1, :, 2::-1] * 255).round().astype(np.uint8)
    assert read_marker(bgr) == frame - STRIP_START  # Blender shows the frame under the playhead
    picture = cv2.imread(bpy.path.abspath(image.filepath))
    assert_processed(picture, source_frames(clip)[frame - STRIP_START])
    assert not list(shot.out.glob("plate.*.png"))  # a preview renders nothing into the output

    shot.scene.frame_set(FIRST + TRIMMED)  # just past the trimmed end
    error = operator_error(bpy.ops.facefuse.preview_frame)
    assert f"the playhead (frame {FIRST + TRIMMED}) is outside strip 'plate'" in error


def test_reference_face_is_picked_under_the_playhead(shot: SimpleNamespace, clip: Path,
                                                     testdata: Path) -> None:
    props = shot.strip.facefuse
    add_source(shot.strip, testdata / "media" / "obama.jpg")
    props.selector = 'reference'
    error = operator_error(bpy.ops.facefuse.swap_strip)
    assert "needs a reference" in error and not list(shot.out.glob("plate.*"))

    shot.scene.frame_set(FIRST + 2)
    assert bpy.ops.facefuse.find_faces() == {'FINISHED'}
    assert props.reference_faces == 1 and "facefuse faces" in bpy.data.images
    error = operator_error(bpy.ops.facefuse.use_face, index=3)
    assert "has 1 face(s): pick a number from 0 to 0, not 3" in error
    assert bpy.ops.facefuse.use_face(index=0) == {'FINISHED'}
    assert props.selector == 'reference'
    assert props.reference_image.startswith("//facefuse/plate/reference/reference-")
    assert Path(bpy.path.abspath(props.reference_image)).is_file()

    shot.scene.frame_set(FIRST + 9)
    assert bpy.ops.facefuse.preview_frame() == {'FINISHED'}  # the reference face is found again
    picture = cv2.imread(bpy.path.abspath(bpy.data.images["facefuse preview"].filepath))
    assert_processed(picture, source_frames(clip)[FIRST + 9 - STRIP_START])


def test_image_sequence_strip_keeps_its_file_numbers(addon: Any, testdata: Path,
                                                     render_models: Path, render_cache: Path,
                                                     tmp_path: Path) -> None:
    plates = tmp_path / "plates"
    plates.mkdir()
    frames = [face_frame(i, face_photo(testdata)) for i in range(8)]
    for i, frame in enumerate(frames):
        cv2.imwrite(str(plates / f"shot_{1001 + i}.png"), frame)
    scene = new_blend(tmp_path / "seq.blend")
    strip = scene.sequence_editor.strips.new_image("seq", str(plates / "shot_1001.png"), 1, 1)
    for i in range(1, 8):
        strip.elements.append(f"shot_{1001 + i}.png")
    strip.frame_offset_start, strip.frame_offset_end = 2, 1  # timeline frames 3-7
    scene.sequence_editor.active_strip = strip
    configure(strip, testdata, render_models, render_cache)
    add_source(strip, testdata / "media" / "obama.jpg")

    assert bpy.ops.facefuse.swap_strip() == {'FINISHED'}

    out = tmp_path / "facefuse" / "seq"
    assert sorted(p.name for p in out.glob("seq.*.png")) == [
        f"seq.{n}.png" for n in range(1003, 1008)]
    assert not (out / "input").exists()  # a numbered sequence is read where it is
    swapped = result_strip(scene, "seq")
    assert swapped.frame_final_start == strip.frame_final_start == 3
    assert swapped.frame_final_duration == strip.frame_final_duration == 5
    for frame in range(3, 8):
        picture = cv2.imread(str(element_file(swapped, frame)))
        assert read_marker(picture) == frame - 1
        assert_processed(picture, frames[frame - 1])


def test_held_still_image_goes_through_a_linked_sequence(addon: Any, testdata: Path,
                                                         render_models: Path,
                                                         render_cache: Path,
                                                         tmp_path: Path) -> None:
    still = tmp_path / "still.png"
    cv2.imwrite(str(still), face_frame(7, face_photo(testdata)))
    scene = new_blend(tmp_path / "still.blend")
    strip = scene.sequence_editor.strips.new_image("still", str(still), 1, 5)
    strip.frame_final_duration = 4
    scene.sequence_editor.active_strip = strip
    configure(strip, testdata, render_models, render_cache)
    add_source(strip, testdata / "media" / "obama.jpg")

    assert bpy.ops.facefuse.swap_strip() == {'FINISHED'}

    out = tmp_path / "facefuse" / "still"
    assert sorted(p.name for p in out.glob("still.*.png")) == ["still.0001.png"]
    assert (out / "input" / "src.0001.png").resolve() == still.resolve()
    swapped = result_strip(scene, "still")
    assert (swapped.frame_final_start, swapped.frame_final_duration) == (5, 4)
    assert {element_file(swapped, f).name for f in range(5, 9)} == {"still.0001.png"}
    assert read_marker(cv2.imread(str(out / "still.0001.png"))) == 7


# -- the worker and the timer --------------------------------------------------------------------

def test_in_the_ui_the_swap_runs_on_a_worker_drained_by_the_timer(
        shot: SimpleNamespace, testdata: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    jobs = module("jobs")
    monkeypatch.setattr(jobs, "runs_blocking", lambda: False)
    add_source(shot.strip, testdata / "media" / "obama.jpg")

    assert bpy.ops.facefuse.swap_strip() == {'FINISHED'}  # returns at once
    job = jobs.current().running(jobs.RENDER)
    assert job is not None and job.total == TRIMMED
    assert bpy.app.timers.is_registered(jobs.drain)
    error = operator_error(bpy.ops.facefuse.swap_strip)
    assert "is still running" in error
    layout = FakeLayout()
    module("panels").draw_status(SimpleNamespace(layout=layout), bpy.context)
    assert layout.calls_of("progress") and layout.calls_of("operator")

    drain_until_idle(jobs)
    assert job.done == TRIMMED and job.fraction == 1.0
    assert last_message().level == 'INFO' and f"{TRIMMED} swapped" in last_message().text
    assert result_strip(shot.scene).frame_final_duration == TRIMMED
    assert jobs.drain() is None  # idle: the timer stops


def test_cancel_keeps_only_complete_frames_and_a_rerun_resumes(
        shot: SimpleNamespace, testdata: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    jobs, tasks = module("jobs"), module("tasks")
    monkeypatch.setattr(jobs, "runs_blocking", lambda: False)
    swap_job = tasks.swap_job

    def slowed_swap_job(plan: Any) -> Any:
        """The real job, its frames written at most every 50 ms: Cancel lands mid-render."""
        job = swap_job(plan)
        work = job.work

        def slowed(report: Any, cancelled: Any) -> Any:
            return work(lambda item: (time.sleep(0.05), report(item)), cancelled)

        job.work = slowed
        return job

    monkeypatch.setattr(tasks, "swap_job", slowed_swap_job)
    add_source(shot.strip, testdata / "media" / "obama.jpg")
    shot.strip.facefuse.mask_blur = 0.45  # settings of its own: nothing to resume from

    assert bpy.ops.facefuse.swap_strip() == {'FINISHED'}
    job = jobs.current().running(jobs.RENDER)
    drain_until_idle(jobs, until=lambda: job.done >= 2)
    assert bpy.ops.facefuse.cancel() == {'FINISHED'}
    drain_until_idle(jobs)

    assert last_message().level == 'WARNING' and "cancelled" in last_message().text
    assert not [s for s in shot.scene.sequence_editor.strips if s.facefuse.result_of]
    kept = sorted(shot.out.glob("plate.*.png"))
    assert 2 <= len(kept) < TRIMMED
    assert not [p.name for p in shot.out.iterdir() if p.name.startswith(".")]  # no temp files
    for path in kept:  # every kept frame is complete and right
        assert read_marker(cv2.imread(str(path))) == int(path.name.split(".")[1]) - 1

    monkeypatch.setattr(jobs, "runs_blocking", lambda: True)
    monkeypatch.setattr(tasks, "swap_job", swap_job)
    assert bpy.ops.facefuse.swap_strip() == {'FINISHED'}
    assert f"{len(kept)} already done" in last_message().text
    assert result_strip(shot.scene).frame_final_duration == TRIMMED


# -- farm ----------------------------------------------------------------------------------------

def run_headless(*args: str) -> subprocess.CompletedProcess[str]:
    """headless.main in a fresh Python process with bpy as a module, as a farm would run it."""
    code = ("import sys, bpy\n"
            "from bl_ext.user_default.facefuse import headless\n"
            "sys.exit(headless.main(sys.argv[1:]))\n")
    env = {**os.environ, "BLENDER_USER_RESOURCES": os.environ["BLENDER_USER_RESOURCES"]}
    return subprocess.run([sys.executable, "-c", code, *args], env=env, capture_output=True,
                          text=True, timeout=180, check=False)


def test_headless_renders_one_chunk_then_finishes_the_marked_strips(
        shot: SimpleNamespace, clip: Path, testdata: Path) -> None:
    add_source(shot.strip, testdata / "media" / "obama.jpg")
    shot.strip.facefuse.farm = True
    other = add_plate(shot.scene, clip, name="unmarked", channel=6, start=60)
    configure(other, testdata, Path(shot.strip.facefuse.models_dir),
              Path(shot.strip.facefuse.cache_dir))
    add_source(other, testdata / "media" / "obama.jpg")
    assert bpy.ops.wm.save_mainfile() == {'FINISHED'}
    numbers = tuple(range(TRIM_START + 1, TRIM_START + TRIMMED + 1))

    chunk = run_headless(str(shot.blend), "--chunk", "2/3")
    assert chunk.returncode == 0, chunk.stdout + chunk.stderr
    assert sorted(p.name for p in shot.out.glob("plate.*.png")) == [
        f"plate.{n:04d}.png" for n in chunk_of(numbers, 2, 3)]
    assert not (shot.folder / "facefuse" / "unmarked").exists()

    rest = run_headless(str(shot.blend), "--add-strips")
    assert rest.returncode == 0, rest.stdout + rest.stderr
    assert f"{len(chunk_of(numbers, 2, 3))} already done" in rest.stdout
    assert len(list(shot.out.glob("plate.*.png"))) == TRIMMED
    assert bpy.ops.wm.open_mainfile(filepath=str(shot.blend)) == {'FINISHED'}
    swapped = result_strip(bpy.context.scene)
    assert (swapped.frame_final_start, swapped.frame_final_duration) == (FIRST, TRIMMED)

    missing = run_headless(str(shot.blend), "--strip", "nope")
    assert missing.returncode == 2 and "no strip named 'nope'" in missing.stdout
    assert run_headless(str(shot.blend), "--chunk", "4/3").returncode == 2


def test_headless_frames_are_timeline_frames(shot: SimpleNamespace, testdata: Path,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    headless = importlib.import_module(f"{ADDON}.headless")
    add_source(shot.strip, testdata / "media" / "obama.jpg")
    shot.strip.facefuse.farm = True

    assert headless.main(["--frames", "1-5"]) == 0  # before the strip: nothing to do
    assert "outside frames 1-5, skipped" in capsys.readouterr().out
    assert headless.main(["--frames", f"{FIRST + 7}-{FIRST + 9}"]) == 0
    expected = [f"plate.{n:04d}.png" for n in range(TRIM_START + 8, TRIM_START + 11)]
    assert sorted(p.name for p in shot.out.glob("plate.*.png")) == expected
    assert [read_marker(cv2.imread(str(shot.out / name))) for name in expected] == [
        FIRST + 7 - STRIP_START, FIRST + 8 - STRIP_START, FIRST + 9 - STRIP_START]
    assert not [s for s in shot.scene.sequence_editor.strips if s.facefuse.result_of]


def test_headless_main_in_process_reports_bad_arguments(addon: Any, tmp_path: Path,
                                                         capsys: pytest.CaptureFixture[str]
                                                         ) -> None:
    headless = importlib.import_module(f"{ADDON}.headless")
    new_blend(None)
    assert headless.main(["--strip", "nope"]) == 2
    assert "no strip named 'nope'" in capsys.readouterr().out
    assert headless.main([]) == 2
    assert "no strip marked Swap on Farm" in capsys.readouterr().out
    assert headless.main([str(tmp_path / "gone.blend")]) == 2
    assert headless.main(["--frames", "9-3"]) == 2
    assert "starts after it ends" in capsys.readouterr().err


# -- bad inputs ----------------------------------------------------------------------------------

def _no_active_strip(shot: SimpleNamespace, _testdata: Path) -> None:
    shot.scene.sequence_editor.active_strip = None


def _sound_strip(shot: SimpleNamespace, _testdata: Path) -> None:
    editor = shot.scene.sequence_editor
    editor.active_strip = editor.strips.new_sound("dialogue", shot.strip.filepath, 5, 1)


def _missing_source(shot: SimpleNamespace, _testdata: Path) -> None:
    add_source(shot.strip, shot.folder / "actor-gone.jpg")


def _strip_file_gone(shot: SimpleNamespace, _testdata: Path) -> None:
    copy = shot.folder / "copy.mp4"
    shutil.copy2(bpy.path.abspath(shot.strip.filepath), copy)
    shot.strip.filepath = str(copy)
    copy.unlink()


def _read_only_output(shot: SimpleNamespace, _testdata: Path) -> None:
    if os.geteuid() != 0:
        folder = shot.folder / "locked"
        folder.mkdir()
        folder.chmod(0o555)
    else:  # root writes anywhere the mode bits forbid: use a read-only file system
        folder = Path("/sys/kernel")
        try:
            with tempfile.TemporaryFile(dir=folder):
                pytest.skip("no read-only folder available to root here")
        except OSError:
            pass
    shot.strip.facefuse.output_dir = str(folder)


def _unsaved_blend(shot: SimpleNamespace, testdata: Path) -> None:
    clip = Path(bpy.path.abspath(shot.strip.filepath))
    models, cache = Path(shot.strip.facefuse.models_dir), Path(shot.strip.facefuse.cache_dir)
    scene = new_blend(None)
    shot.scene, shot.strip = scene, add_plate(scene, clip)
    configure(shot.strip, testdata, models, cache)


def _missing_model(shot: SimpleNamespace, _testdata: Path) -> None:
    props = shot.strip.facefuse
    props.detector, props.models_dir = "retinaface_10g", str(shot.folder / "no-models")


BAD_INPUTS = {
    "no active strip": (_no_active_strip, "No active strip: click a movie or image strip"),
    "sound strip": (_sound_strip, ("Strip 'dialogue' is a sound strip: face swap works on movie "
                                   "and image strips")),
    "missing source": (_missing_source, "Source image .*actor-gone.jpg is missing"),
    "strip file gone": (_strip_file_gone, "The movie of strip 'plate' is missing: .*copy.mp4"),
    "read-only output": (_read_only_output, "Cannot write the swapped frames to .*: "),
    "unsaved blend": (_unsaved_blend, ("Save the .blend first: the swapped frames go to "
                                       "//facefuse/plate/")),
    "model missing offline": (_missing_model, ("The detector model retinaface_10g is missing: "
                                               "run `facefuse models fetch retinaface_10g`, or "
                                               "allow Online Access")),
}


@pytest.mark.parametrize("case", list(BAD_INPUTS))
def test_bad_input_is_one_clear_report_and_nothing_is_written(shot: SimpleNamespace,
                                                              testdata: Path, case: str) -> None:
    import re

    add_source(shot.strip, testdata / "media" / "obama.jpg")
    breaker, message = BAD_INPUTS[case]
    breaker(shot, testdata)
    strips_before = sorted(s.name for s in shot.scene.sequence_editor.strips_all)
    files_before = sorted(p.relative_to(shot.folder) for p in shot.folder.rglob("*"))

    for operator in (bpy.ops.facefuse.swap_strip, bpy.ops.facefuse.preview_frame):
        error = operator_error(operator)
        assert re.search(message, error), error
        assert "Traceback" not in error and error.count("\n") <= 1, error

    assert sorted(s.name for s in shot.scene.sequence_editor.strips_all) == strips_before
    assert sorted(p.relative_to(shot.folder) for p in shot.folder.rglob("*")) == files_before
    assert "facefuse preview" not in bpy.data.images


# -- panels --------------------------------------------------------------------------------------

VALID_ICONS = frozenset(bpy.types.UILayout.bl_rna.functions["label"].parameters["icon"]
                        .enum_items.keys())


class FakeLayout:
    """Stands in for UILayout (panels never draw with bpy as a module) and checks each call:
    properties exist on their data, operators and lists are registered, icons are real."""

    def __init__(self, calls: list[tuple[str, dict[str, Any]]] | None = None) -> None:
        self.calls = calls if calls is not None else []

    def _sub(self, *_args: Any, **_kwargs: Any) -> FakeLayout:
        return FakeLayout(self.calls)

    row = column = box = split = column_flow = grid_flow = _sub

    def _record(self, kind: str, **kwargs: Any) -> None:
        icon = kwargs.get("icon", 'NONE')
        assert icon in VALID_ICONS, f"unknown icon {icon}"
        self.calls.append((kind, kwargs))

    def label(self, text: str = "", **kwargs: Any) -> None:
        self._record("label", text=text, **kwargs)

    def prop(self, data: Any, name: str, **kwargs: Any) -> None:
        assert name in data.bl_rna.properties, f"{data} has no property {name}"
        self._record("prop", name=name, **kwargs)

    def operator(self, idname: str, **kwargs: Any) -> SimpleNamespace:
        group, name = idname.split(".")
        getattr(getattr(bpy.ops, group), name).get_rna_type()  # raises KeyError when unknown
        self._record("operator", idname=idname, **kwargs)
        return SimpleNamespace()

    def template_list(self, list_type: str, _list_id: str, data: Any, name: str,
                      active_data: Any, active_name: str, **_kwargs: Any) -> None:
        assert getattr(bpy.types, list_type).is_registered
        assert name in data.bl_rna.properties and active_name in active_data.bl_rna.properties
        self._record("template_list", list_type=list_type)
        for item in getattr(data, name):  # draw every row like Blender would
            getattr(bpy.types, list_type).draw_item(
                SimpleNamespace(), bpy.context, FakeLayout(self.calls), data, item, 0,
                active_data, active_name, 0, 0)

    def progress(self, **kwargs: Any) -> None:
        assert 0.0 <= kwargs["factor"] <= 1.0
        self._record("progress", **kwargs)

    def template_icon(self, **kwargs: Any) -> None:
        self._record("template_icon", **kwargs)

    def separator(self, **_kwargs: Any) -> None:
        return None

    def calls_of(self, kind: str) -> list[dict[str, Any]]:
        return [kwargs for k, kwargs in self.calls if k == kind]

    def texts(self) -> str:
        return " ".join(kw.get("text", "") for kw in self.calls_of("label"))


def draw_panels(context: Any = None) -> FakeLayout:
    """Draw every facefuse panel whose poll passes, as the sidebar would; their layout calls."""
    context = context or bpy.context
    layout = FakeLayout()
    for cls in module("panels").CLASSES:
        if not hasattr(cls, "draw") or not issubclass(cls, bpy.types.Panel):
            continue
        if hasattr(cls, "poll") and not cls.poll(context):
            continue
        panel = SimpleNamespace(layout=FakeLayout(layout.calls))
        if hasattr(cls, "draw_header_preset"):
            cls.draw_header_preset(panel, context)
        cls.draw(panel, context)
    return layout


def test_panels_draw_for_every_kind_of_strip(shot: SimpleNamespace, testdata: Path) -> None:
    editor = shot.scene.sequence_editor
    editor.active_strip = None
    assert "No active strip" in draw_panels().texts()

    editor.active_strip = editor.strips.new_sound("dialogue", shot.strip.filepath, 5, 1)
    assert "is a sound strip" in draw_panels().texts()

    editor.active_strip = shot.strip
    layout = draw_panels()
    assert "Add a photo of the face" in layout.texts()
    assert {c["idname"] for c in layout.calls_of("operator")} >= {
        "facefuse.preview_frame", "facefuse.swap_strip", "facefuse.add_sources"}

    assert bpy.ops.facefuse.add_sources(filepath=str(testdata / "media" / "obama.jpg")) == {
        'FINISHED'}
    add_source(shot.strip, testdata / "media" / "astronaut.png")  # not checked yet
    shot.strip.facefuse.selector = 'reference'
    shot.strip.facefuse.use_enhancer = True
    layout = draw_panels()
    assert layout.calls_of("template_list") and "1 face" in layout.texts()
    assert "No reference yet" in layout.texts()
    assert {c["idname"] for c in layout.calls_of("operator")} >= {
        "facefuse.find_faces", "facefuse.use_face"}
    # the enhancer model is not on disk and Blender is offline: the panel says how to get it
    assert "run `facefuse models fetch gfpgan_1.4`, or allow Online Access" in layout.texts()


def test_online_access_allows_downloads_and_the_panel_offers_them(
        shot: SimpleNamespace, monkeypatch: pytest.MonkeyPatch) -> None:
    convert = module("convert")
    props = shot.strip.facefuse
    props.detector, props.models_dir = "retinaface_10g", str(shot.folder / "no-models")
    assert convert.engine_settings(props).offline  # bpy as a module: no online access
    assert "Download Models" not in str(draw_panels().calls_of("operator"))

    monkeypatch.setattr(convert, "online_access", lambda: True)
    settings = convert.engine_settings(props)
    assert not settings.offline
    assert module("convert").models.missing_models(settings) == []  # missing, but fetched on first use
    assert module("convert").models.absent_models(settings)[0] == ("detector", "retinaface_10g")
    layout = draw_panels()
    assert "facefuse.fetch_models" in {c["idname"] for c in layout.calls_of("operator")}
    assert "not downloaded yet" in layout.texts()


def test_panels_and_status_bar_draw_a_running_job(addon: Any) -> None:
    jobs = module("jobs")
    job = jobs.Job(jobs.RENDER, "Face swap of 'plate'", lambda report, cancelled: None,
                   lambda job, result: jobs.Message('INFO', "done"), total=10, done=4,
                   status="frame 5 swapped")
    jobs.current().jobs.append(job)
    try:
        layout = draw_panels()
        bar = FakeLayout()
        module("panels").draw_status(SimpleNamespace(layout=bar), bpy.context)
    finally:
        jobs.current().jobs.remove(job)
    assert [c["factor"] for c in layout.calls_of("progress")] == [0.4]
    assert "Face swap of 'plate': 40%" in layout.calls_of("progress")[0]["text"]
    assert bar.calls_of("progress") and bar.calls_of("operator")[0]["idname"] == "facefuse.cancel"
