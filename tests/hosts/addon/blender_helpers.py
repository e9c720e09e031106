"""Helpers for the Blender add-on tests (tests/hosts/addon/test_blender_*.py): the installed
add-on's modules, building a .blend with a plate strip, reading results back, driving jobs and
drawing panels without a UI.

This module imports bpy: only the bpy test files and the fixtures in tests/hosts/addon/conftest.py
import it, after tests/hosts/conftest.py pointed BLENDER_USER_* at the session's temporary folder.
The shots are generated clips whose frames carry their index as a burned-in marker and a real face
(tests/render_media.py): the real YuNet detector finds it, the contract colour swapper paints
it, so every output frame proves which source frame it came from and that it was processed.
With bpy as a module timers never fire: the operators run the engine before they return, and
the worker/timer path is driven by calling the timer callback (jobs.drain) by hand
(drain_until_idle).
"""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import bpy
import cv2
import numpy as np
import pytest

from facefuse.shot.contract.inputs import open_input
from tests.render_media import FACE_SIZE, FACE_XY, SIZE, YUNET_FILE

ADDON = "bl_ext.user_default.facefuse"
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


def uninstall() -> None:
    """Disable the add-on and remove its package from user_default, where present."""
    if ADDON in bpy.context.preferences.addons:
        bpy.ops.preferences.addon_disable(module=ADDON)
    repo = bpy.context.preferences.extensions.repos[_user_repo_index()]
    if (Path(repo.directory) / "facefuse").exists():
        bpy.ops.extensions.package_uninstall(repo_index=_user_repo_index(), pkg_id="facefuse")


# -- shots ---------------------------------------------------------------------------------------


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
        return [frame.to_ndarray() for _, frame in shot.read(shot.frame_numbers)]  # type: ignore[union-attr]
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


# -- strips made as the Sequencer's own operators make them --------------------------------------


@contextmanager
def sequencer_ui(scene: Any) -> Iterator[None]:
    """A context in which the Sequencer's strip operators run with bpy as a module.

    The window's first area is a Sequencer meanwhile and the workspace's sequencer scene is
    `scene` (5.0 polls context.sequencer_scene, which the workspace holds). No region: with the
    area's WINDOW region movie_strip_add crashes bpy 5.0.1.
    """
    window = bpy.context.window_manager.windows[0]
    area = window.screen.areas[0]
    kind, area.type = area.type, 'SEQUENCE_EDITOR'
    window.workspace.sequencer_scene = scene
    try:
        with bpy.context.temp_override(window=window, screen=window.screen, area=area,
                                       space_data=area.spaces.active):
            yield
    finally:
        area.type = kind


def ui_add_movie(scene: Any, clip: Path, channel: int = CHANNEL, start: int = 1) -> Any:
    """Add > Movie with the operator's defaults (fit_method 'FIT', its sound strip): the movie
    strip, active."""
    with sequencer_ui(scene):
        assert bpy.ops.sequencer.movie_strip_add(
            filepath=str(clip), directory=f"{clip.parent}/", files=[{"name": clip.name}],
            frame_start=start, channel=channel) == {'FINISHED'}
    strip = scene.sequence_editor.active_strip
    assert strip.type == 'MOVIE', strip.type
    return strip


def ui_split(scene: Any, strip: Any, frame: int, method: str = 'HARD') -> Any:
    """Split `strip` alone at `frame` (Shift+K: HARD, K: SOFT): its right part, active."""
    editor = scene.sequence_editor
    with sequencer_ui(scene):
        for other in editor.strips_all:
            other.select = other == strip
        assert bpy.ops.sequencer.split(frame=frame, type=method, side='BOTH') == {'FINISHED'}
    right = next(s for s in editor.strips_all
                 if s.type == strip.type and s.frame_final_start == frame and s != strip)
    editor.active_strip = right
    return right


def ui_meta(scene: Any, strips: list[Any]) -> Any:
    """Make Meta Strip (Ctrl+G) of `strips`: the meta strip."""
    editor = scene.sequence_editor
    with sequencer_ui(scene):
        for other in editor.strips_all:
            other.select = other in strips
        editor.active_strip = strips[0]
        assert bpy.ops.sequencer.meta_make() == {'FINISHED'}
    return editor.active_strip


@contextmanager
def muted(*strips: Any) -> Iterator[None]:
    """`strips` muted while the block runs."""
    for strip in strips:
        strip.mute = True
    try:
        yield
    finally:
        for strip in strips:
            strip.mute = False


# -- operators and jobs --------------------------------------------------------------------------


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


def marked_shot(shot: Any, clip: Path, testdata: Path) -> None:
    """The shot's strip marked Swap on Farm with a source, beside a second, unmarked strip that
    is set up as fully (so a farm run that swapped it would show), saved."""
    add_source(shot.strip, testdata / "media" / "obama.jpg")
    shot.strip.facefuse.farm = True
    other = add_plate(shot.scene, clip, name="unmarked", channel=6, start=60)
    configure(other, testdata, Path(shot.strip.facefuse.models_dir),
              Path(shot.strip.facefuse.cache_dir))
    add_source(other, testdata / "media" / "obama.jpg")
    assert bpy.ops.wm.save_mainfile() == {'FINISHED'}
