"""The Blender extension's face swap for real, with bpy 5.0.1 as a module (no Blender binary):
Swap Strip makes a frame-aligned result strip that survives a reload, the preview shows the
swapped frame under the playhead, a reference face is picked there, and image-sequence and
held still strips keep their file numbers and timing.

The extension zip is installed into the session's throw-away Blender user folder and enabled as
bl_ext.user_default.facefuse once for the modules of tests/hosts/addon/ (`addon`; `shot` is a
saved .blend with a trimmed plate strip: both in tests/hosts/addon/conftest.py; helpers in
tests/hosts/addon/blender_helpers.py).
"""

from __future__ import annotations

import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

# tests/hosts/conftest.py points BLENDER_USER_* at a temporary folder before bpy is imported.
bpy = pytest.importorskip("bpy", reason="bpy (Blender as a Python module) is not installed")

import cv2

from tests.hosts.addon.blender_helpers import (
    CHANNEL,
    FACE_CENTRE,
    FIRST,
    STRIP_START,
    TRIM_START,
    TRIMMED,
    add_source,
    assert_processed,
    blender_render,
    configure,
    element_file,
    last_message,
    module,
    new_blend,
    operator_error,
    result_strip,
    source_frames,
)
from tests.media_factory import read_marker
from tests.render_media import SIZE, YUNET_FILE, face_frame, face_photo


def test_swap_strip_makes_a_frame_aligned_strip_that_survives_a_reload(
        shot: SimpleNamespace, clip: Path, testdata: Path) -> None:
    scene, strip = shot.scene, shot.strip
    media = testdata / "media"
    assert bpy.ops.facefuse.add_sources(directory=str(media), files=[
        {"name": "obama.jpg"}, {"name": "biden.jpg"}]) == {'FINISHED'}
    props = strip.facefuse
    assert [Path(bpy.path.abspath(s.filepath)).resolve() for s in props.sources] == [
        (media / "obama.jpg").resolve(), (media / "biden.jpg").resolve()]
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

    # a second preview reuses the first one's Pipeline and sessions: no model is loaded again
    scene.frame_set(FIRST + 4)
    assert bpy.ops.facefuse.preview_frame() == {'FINISHED'}  # loads the models once
    shared = module("jobs").runner().shared_pipeline
    assert shared is not None and len(shared.models.sessions) >= 2
    sessions = len(shared.models.sessions)
    started = time.perf_counter()
    assert bpy.ops.facefuse.preview_frame() == {'FINISHED'}
    preview_s = time.perf_counter() - started
    assert module("jobs").runner().shared_pipeline is shared
    assert len(shared.models.sessions) == sessions
    print(f"\nswap of {TRIMMED} frames {swap_s:.2f} s, a preview with loaded models "
          f"{preview_s:.2f} s")

    # same settings: nothing re-rendered, the result strip replaced, not doubled
    stamps = {p: p.stat().st_mtime_ns for p in shot.out.glob("plate.*.png")}
    assert bpy.ops.facefuse.swap_strip() == {'FINISHED'}
    assert f"{TRIMMED} already done" in last_message().text
    assert {p: p.stat().st_mtime_ns for p in shot.out.glob("plate.*.png")} == stamps
    assert result_strip(scene).channel == CHANNEL + 1
    # changed settings: the strip's own frames, rendered again without a question
    props.mask_blur, props.farm = 0.6, True
    assert bpy.ops.facefuse.swap_strip() == {'FINISHED'}
    assert f"{TRIMMED} swapped" in last_message().text and not props.replace_asked
    assert f"{TRIMMED} made with other choices replaced" in last_message().text

    assert bpy.ops.wm.save_mainfile() == {'FINISHED'}
    assert bpy.ops.wm.read_homefile(use_empty=True) == {'FINISHED'}
    assert bpy.ops.wm.open_mainfile(filepath=str(shot.blend)) == {'FINISHED'}
    scene = bpy.context.scene
    props = scene.sequence_editor.strips["plate"].facefuse
    assert [Path(bpy.path.abspath(s.filepath)).resolve() for s in props.sources] == [
        (media / "obama.jpg").resolve(), (media / "biden.jpg").resolve()]
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
