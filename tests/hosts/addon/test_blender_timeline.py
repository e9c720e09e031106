"""Strips made the way the Sequencer's UI makes them (its own operators: Add > Movie and Image,
Split, Make Meta, Add Effect): the swap takes the frames Blender shows and its result strip
draws exactly over the plate, both checked by rendering the sequencer with bpy; strips whose
picture an effect or retiming keys change are refused in one sentence.

The extension zip is installed into the session's throw-away Blender user folder and enabled as
bl_ext.user_default.facefuse once for the modules of tests/hosts/addon/ (`addon`; `clip` is a
20-frame clip whose frame i carries marker i and a face: both in tests/hosts/addon/conftest.py;
helpers in tests/hosts/addon/blender_helpers.py).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

# tests/hosts/conftest.py points BLENDER_USER_* at a temporary folder before bpy is imported.
bpy = pytest.importorskip("bpy", reason="bpy (Blender as a Python module) is not installed")

import cv2

from tests.hosts.addon.blender_helpers import (
    ADDON,
    FACE_BOX,
    FACE_CENTRE,
    add_source,
    blender_render,
    configure,
    last_message,
    module,
    muted,
    new_blend,
    operator_error,
    result_strip,
    sequencer_ui,
    source_frames,
    ui_add_movie,
    ui_meta,
    ui_split,
)
from tests.media_factory import read_marker
from tests.render_media import face_frame

IMAGE_FIRST = 1001  # the number of the first file of the image sequence


@pytest.fixture
def ui_shot(addon: Any, testdata: Path, render_models: Path, render_cache: Path,
            tmp_path: Path) -> SimpleNamespace:
    """A saved, empty 320x240 .blend; `ready(strip)` sets a strip up for the contract colour
    swapper with a source."""
    def ready(strip: Any) -> Any:
        configure(strip, testdata, render_models, render_cache)
        add_source(strip, testdata / "media" / "obama.jpg")
        strip.id_data.sequence_editor.active_strip = strip
        return strip

    return SimpleNamespace(scene=new_blend(tmp_path / "ui.blend"), folder=tmp_path, ready=ready)


# -- which media frame each timeline frame shows -------------------------------------------------


def _hard_split(shot: SimpleNamespace, clip: Path) -> Any:
    plate = ui_add_movie(shot.scene, clip, start=1)  # frames 1-20 show media 0-19
    right = ui_split(shot.scene, plate, 8)  # media 7-19 at 8-20
    right.frame_offset_end = -2  # held: 21 and 22 show media 19
    return right


def _hold_offsets(shot: SimpleNamespace, clip: Path) -> Any:
    plate = ui_add_movie(shot.scene, clip, start=1)
    plate.animation_offset_start, plate.animation_offset_end = 4, 3  # media 4-16 at 1-13
    plate.frame_offset_start = -2  # held: -1 and 0 show media 4
    return plate


def _image_hard_split(shot: SimpleNamespace, _clip: Path) -> Any:
    plates = shot.folder / "plates"
    plates.mkdir()
    names = [f"shot_{IMAGE_FIRST + i}.png" for i in range(10)]
    for i, name in enumerate(names):
        cv2.imwrite(str(plates / name), face_frame(i, None))
    with sequencer_ui(shot.scene):
        assert bpy.ops.sequencer.image_strip_add(
            directory=f"{plates}/", files=[{"name": n} for n in names], frame_start=1,
            channel=2) == {'FINISHED'}
    right = ui_split(shot.scene, shot.scene.sequence_editor.active_strip, 5)
    right.frame_offset_end = 2
    return right


TIMINGS = {"hard split": (_hard_split, 0), "hold offsets": (_hold_offsets, 0),
           "image hard split": (_image_hard_split, IMAGE_FIRST)}


@pytest.mark.parametrize("case", list(TIMINGS))
def test_each_timeline_frame_maps_to_the_media_frame_blender_shows(
        ui_shot: SimpleNamespace, clip: Path, case: str) -> None:
    make, first_number = TIMINGS[case]
    strip = ui_shot.ready(make(ui_shot, clip))
    plan = module("convert").strip_swap(ui_shot.scene, strip, look=True, prepare=False)
    start = module("frames").START_NUMBER if strip.type == 'MOVIE' else first_number
    for frame in range(strip.frame_final_start, strip.frame_final_end):
        shown = read_marker(blender_render(ui_shot.scene, frame, ui_shot.folder))
        assert plan.number_at(frame) - start == shown, frame


def test_the_right_part_of_a_hard_split_is_swapped_from_its_own_frames(
        ui_shot: SimpleNamespace, clip: Path) -> None:
    right = ui_shot.ready(_hard_split(ui_shot, clip))
    assert (right.animation_offset_start, right.frame_duration) == (7, 13)
    assert bpy.ops.facefuse.swap_strip() == {'FINISHED'}
    assert "13 swapped" in last_message().text, last_message().text

    swapped = result_strip(ui_shot.scene, right.name)
    assert (swapped.frame_final_start, swapped.frame_final_end) == (8, 23)
    sources = source_frames(clip)
    with muted(right):
        for frame, index in ((8, 7), (14, 13), (20, 19), (22, 19)):
            picture = blender_render(ui_shot.scene, frame, ui_shot.folder)
            assert read_marker(picture) == index, frame
            assert _changed(picture, sources[index], FACE_CENTRE), frame


# -- the result strip draws over the plate -------------------------------------------------------


def test_the_result_strip_draws_exactly_over_a_fitted_and_framed_plate(
        ui_shot: SimpleNamespace, clip: Path) -> None:
    scene = ui_shot.scene
    scene.render.resolution_x, scene.render.resolution_y = 160, 120  # half the footage's size
    plate = ui_add_movie(scene, clip, start=1)
    transform = plate.transform
    assert (transform.scale_x, transform.scale_y) == (0.5, 0.5)  # Add > Movie fits the footage
    plate.frame_offset_start, plate.frame_offset_end = 5, 12  # media 5-7 at 6-8
    ui_shot.ready(plate)
    assert bpy.ops.facefuse.swap_strip() == {'FINISHED'}
    swapped = result_strip(scene, plate.name)
    half = tuple(v // 2 for v in FACE_BOX)
    face = 0.0  # the share of the picture the swapped face changes
    for frame in (6, 8):
        plain, swap = _plate_and_swap(scene, plate, swapped, frame, ui_shot.folder)
        assert read_marker(cv2.resize(swap, None, fx=2, fy=2,
                                      interpolation=cv2.INTER_NEAREST)) == frame - 1
        outside = np.ones(plain.shape[:2], bool)
        outside[half[1]:half[3], half[0]:half[2]] = False
        assert _differs(plain, swap)[outside].mean() < 0.01  # decoders differ at sharp edges
        face = max(face, _differs(plain, swap).mean())
        assert _changed(swap, plain, (FACE_CENTRE[0] // 2, FACE_CENTRE[1] // 2))

    _frame_and_grade(scene, plate)
    assert bpy.ops.facefuse.swap_strip() == {'FINISHED'}  # nothing rendered again
    assert "3 already done" in last_message().text
    swapped = result_strip(scene, plate.name)
    plain, swap = _plate_and_swap(scene, plate, swapped, 7, ui_shot.folder)
    assert _differs(plain, swap).mean() <= face + 0.01, face  # the swapped face, nothing else
    for name in ("offset_x", "offset_y", "scale_x", "scale_y", "rotation", "filter"):
        assert getattr(swapped.transform, name) == getattr(plate.transform, name), name
    assert tuple(swapped.transform.origin) == tuple(plate.transform.origin)
    for name in ("min_x", "max_x", "min_y", "max_y"):
        assert getattr(swapped.crop, name) == getattr(plate.crop, name), name
    assert swapped.colorspace_settings.name == plate.colorspace_settings.name

    plate.modifiers.new("grade", 'BRIGHT_CONTRAST')  # not repeated: the message says so
    swapped.mute = True  # kept by the strip that replaces it
    assert bpy.ops.facefuse.swap_strip() == {'FINISHED'}
    assert last_message().level == 'WARNING'
    assert "without the 1 modifier(s) of 'plate.mp4'" in last_message().text
    assert result_strip(scene, plate.name).mute and not plate.mute


def _frame_and_grade(scene: Any, plate: Any) -> None:
    """Move, turn, crop, flip and grade the plate, partly transparent over a red strip, its
    pixels read as linear."""
    red = scene.sequence_editor.strips.new_effect("red", 'COLOR', 1, 1, length=30)
    red.color = (1.0, 0.0, 0.0)
    transform = plate.transform
    transform.offset_x, transform.offset_y, transform.rotation = 4.0, -3.0, 0.1
    transform.origin = (0.45, 0.55)
    transform.filter = 'NEAREST'
    plate.crop.min_x, plate.crop.max_y = 60, 40
    plate.use_flip_x = True
    plate.blend_type, plate.blend_alpha = 'ALPHA_OVER', 0.6
    plate.color_saturation, plate.color_multiply = 0.4, 0.8
    plate.colorspace_settings.name = 'Linear Rec.709'


def _plate_and_swap(scene: Any, plate: Any, swapped: Any, frame: int,
                    folder: Path) -> tuple[np.ndarray, np.ndarray]:
    """Blender's picture of `frame` with the plate alone, then with the swap alone."""
    with muted(swapped):
        plain = blender_render(scene, frame, folder)
    with muted(plate):
        swap = blender_render(scene, frame, folder)
    return plain, swap


def _differs(picture: np.ndarray, other: np.ndarray) -> np.ndarray:
    """Where two pictures differ by more than 10 levels in a channel: (H, W) bool."""
    return np.abs(picture.astype(int) - other.astype(int)).max(axis=2) > 10


def _changed(picture: np.ndarray, source: np.ndarray, centre: tuple[int, int]) -> bool:
    """Whether the face at `centre` (row, column) was painted over."""
    row, col = centre
    around = np.s_[row - 5:row + 5, col - 5:col + 5]
    return bool(np.abs(picture[around].astype(int) - source[around].astype(int)).mean() > 10)


# -- metas and refusals --------------------------------------------------------------------------


def test_a_strip_inside_a_meta_is_swapped_into_the_meta(ui_shot: SimpleNamespace,
                                                        clip: Path) -> None:
    plate = ui_add_movie(ui_shot.scene, clip, start=1)
    plate.frame_offset_start, plate.frame_offset_end = 3, 13  # media 3-6 at 4-7
    meta = ui_meta(ui_shot.scene, [plate])
    meta.frame_start += 10  # moved with its contents: media 3-6 at 14-17
    ui_shot.ready(plate)
    assert bpy.ops.facefuse.swap_strip() == {'FINISHED'}
    swapped = result_strip(ui_shot.scene, plate.name)
    assert swapped.parent_meta() == meta
    sources = source_frames(clip)
    with muted(plate):
        for frame in (14, 17):
            picture = blender_render(ui_shot.scene, frame, ui_shot.folder)
            assert read_marker(picture) == frame - 11, frame
            assert _changed(picture, sources[frame - 11], FACE_CENTRE)


def _speed_control(shot: SimpleNamespace, clip: Path) -> Any:
    return _effect_on(shot, ui_add_movie(shot.scene, clip), 'SPEED')


def _blur(shot: SimpleNamespace, clip: Path) -> Any:
    return _effect_on(shot, ui_add_movie(shot.scene, clip), 'GAUSSIAN_BLUR')


def _meta_under_speed(shot: SimpleNamespace, clip: Path) -> Any:
    plate = ui_add_movie(shot.scene, clip)
    _effect_on(shot, ui_meta(shot.scene, [plate]), 'SPEED')
    return plate


def _retimed(shot: SimpleNamespace, clip: Path) -> Any:
    plate = ui_add_movie(shot.scene, clip, start=1)
    shot.scene.frame_current = 10
    with sequencer_ui(shot.scene):
        assert bpy.ops.sequencer.retiming_key_add() == {'FINISHED'}
        assert bpy.ops.sequencer.retiming_segment_speed_set(speed=50) == {'FINISHED'}
    return plate


def _meta(shot: SimpleNamespace, clip: Path) -> Any:
    return ui_meta(shot.scene, [ui_add_movie(shot.scene, clip)])


def _effect_on(shot: SimpleNamespace, strip: Any, kind: str) -> Any:
    with sequencer_ui(shot.scene):
        for other in shot.scene.sequence_editor.strips_all:
            other.select = other == strip
        assert bpy.ops.sequencer.effect_strip_add(type=kind) == {'FINISHED'}
    return strip


REFUSED: dict[str, tuple[Callable[[SimpleNamespace, Path], Any], str]] = {
    "speed control": (_speed_control, ("Strip 'plate.mp4' is the input of the Speed effect "
                                       "'Speed': swap it without the effect")),
    "blur": (_blur, ("Strip 'plate.mp4' is the input of the Gaussian Blur effect "
                     "'Gaussian Blur': swap it without the effect")),
    "meta under speed": (_meta_under_speed, ("Strip 'plate.mp4' is inside meta strip "
                                             "'MetaStrip', the input of the Speed effect")),
    "retiming keys": (_retimed, "Strip 'plate.mp4' is retimed"),
    "meta strip": (_meta, "Strip 'MetaStrip' is a meta strip: open it"),
}


@pytest.mark.parametrize("case", list(REFUSED))
def test_strips_whose_picture_an_effect_or_retiming_changes_are_refused(
        ui_shot: SimpleNamespace, clip: Path, case: str, capsys: pytest.CaptureFixture[str]
        ) -> None:
    make, message = REFUSED[case]
    strip = make(ui_shot, clip)
    if strip.type != 'META':
        ui_shot.ready(strip)
    ui_shot.scene.sequence_editor.active_strip = strip
    for operator in (bpy.ops.facefuse.swap_strip, bpy.ops.facefuse.preview_frame):
        error = operator_error(operator)
        assert message in error, error
        assert "Traceback" not in error and error.count("\n") <= 1, error
    assert not (ui_shot.folder / "facefuse").exists()
    capsys.readouterr()
    headless = importlib.import_module(f"{ADDON}.headless")
    assert headless.main(["--strip", strip.name]) == 2  # the farm's path
    assert message in capsys.readouterr().out
