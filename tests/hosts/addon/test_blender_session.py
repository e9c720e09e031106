"""A strip's session, with bpy 5.0 as a module: its casting (each person's own source, skips)
and its corrections (skip, keep, hold or swap a person over frames) are kept on the strip, so a
.blend saved and opened again makes the same request, and Preview, Swap Strip and the farm
(headless.main) render the same frames from it; a casting needs no Sources when everyone
swapped has their own; a swap asks before replacing finished frames made with other choices
(the farm says so instead).

Fixtures in tests/hosts/addon/conftest.py (`shot`: a saved .blend with a trimmed plate strip
whose timeline frame f shows media frame f - FIRST + TRIM_START + 1).
"""

from __future__ import annotations

import dataclasses
import importlib
import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

# tests/hosts/conftest.py points BLENDER_USER_* at a temporary folder before bpy is imported.
bpy = pytest.importorskip("bpy", reason="bpy (Blender as a Python module) is not installed")

import cv2

from facefuse import PersonId, render
from tests.hosts.addon.blender_helpers import (
    ADDON,
    FIRST,
    STRIP_START,
    TRIM_START,
    TRIMMED,
    FakeLayout,
    add_source,
    configure,
    last_message,
    module,
    new_blend,
    operator_error,
    source_frames,
)
from tests.render_media import face_frame, face_photo

MEDIA_FIRST = TRIM_START + 1  # the media number at timeline frame FIRST


def _corrected(shot: SimpleNamespace, testdata: Path) -> None:
    """Reviewed, p1 cast with their own source, three corrections made and one removed."""
    add_source(shot.strip, testdata / "media" / "obama.jpg")
    assert bpy.ops.facefuse.review_strip() == {'FINISHED'}, last_message()
    shot.strip.facefuse.people[0].source = str(testdata / "media" / "biden.jpg")
    scene = shot.scene
    scene.frame_start, scene.frame_end = FIRST + 1, FIRST + 3
    assert bpy.ops.facefuse.add_override(action='skip') == {'FINISHED'}
    scene.timeline_markers.new("a", frame=FIRST + 5).select = True
    scene.timeline_markers.new("b", frame=FIRST + 6).select = True
    assert bpy.ops.facefuse.add_override(action='keep', frames='MARKERS') == {'FINISHED'}
    assert bpy.ops.facefuse.add_override(action='hold') == {'FINISHED'}
    assert bpy.ops.facefuse.remove_override() == {'FINISHED'}  # the last one, active


def test_casting_and_corrections_survive_save_and_reopen_and_drive_every_render(
        shot: SimpleNamespace, clip: Path, testdata: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    _corrected(shot, testdata)
    props = shot.strip.facefuse
    assert [(c.action, c.person, c.first, c.last) for c in props.corrections] == [
        ('skip', "p1", MEDIA_FIRST + 1, MEDIA_FIRST + 3),
        ('keep', "", MEDIA_FIRST + 5, MEDIA_FIRST + 6)]
    layout = FakeLayout()
    module("panels").SEQUENCER_PT_facefuse_people.draw(SimpleNamespace(layout=layout),
                                                       bpy.context)
    shown = layout.texts()  # in timeline frames
    assert f"skip p1 over frames {FIRST + 1}-{FIRST + 3}" in shown
    assert f"keep everyone over frames {FIRST + 5}-{FIRST + 6}" in shown
    before = module("convert").strip_swap(shot.scene, shot.strip).request
    written = before.plan.overrides.read_bytes()
    assert json.loads(written)["overrides"] == [
        {"frames": f"{MEDIA_FIRST + 1}-{MEDIA_FIRST + 3}", "action": "skip", "person": "p1"},
        {"frames": f"{MEDIA_FIRST + 5}-{MEDIA_FIRST + 6}", "action": "keep"}]
    assert before.plan.assign == ((PersonId("p1"), testdata / "media" / "biden.jpg"),)

    # saved, the file the engine read is gone, the .blend opened again: the same request
    assert bpy.ops.wm.save_mainfile() == {'FINISHED'}
    before.plan.overrides.unlink()
    assert bpy.ops.wm.open_mainfile(filepath=str(shot.blend)) == {'FINISHED'}
    scene = bpy.context.scene
    strip = scene.sequence_editor.strips["plate"]
    after = module("convert").strip_swap(scene, strip).request
    assert after == before and after.plan.overrides.read_bytes() == written

    # the farm renders it; Swap Strip in Blender finds every frame done (same plan)
    headless = importlib.import_module(f"{ADDON}.headless")
    assert headless.main(["--strip", "plate"]) == 0
    said = capsys.readouterr().out
    assert f"{TRIMMED - 5} swapped, 5 left as they are by your corrections, 0 without a " \
        "face" in said, said
    assert f"timeline frame {FIRST + 1} (media {MEDIA_FIRST + 1}) left as corrected" in said
    scene.sequence_editor.active_strip = strip
    assert bpy.ops.facefuse.swap_strip() == {'FINISHED'}, last_message()
    assert f"{TRIMMED} already done" in last_message().text

    # corrected frames keep the picture; the preview shows what the render wrote
    sources = source_frames(clip)
    out = Path(bpy.path.abspath("//facefuse/plate"))
    for frame in (FIRST + 1, FIRST + 3, FIRST + 5, FIRST + 6):
        picture = cv2.imread(str(out / f"plate.{frame - FIRST + MEDIA_FIRST:04d}.png"))
        assert np.array_equal(picture, sources[frame - STRIP_START]), frame
    for frame in (FIRST + 2, FIRST + 8):
        scene.frame_current = frame
        assert bpy.ops.facefuse.preview_frame() == {'FINISHED'}, last_message()
        preview = cv2.imread(bpy.path.abspath(bpy.data.images["facefuse preview"].filepath))
        rendered = cv2.imread(str(out / f"plate.{frame - FIRST + MEDIA_FIRST:04d}.png"))
        assert np.array_equal(preview, rendered), frame


def test_a_corrections_file_made_elsewhere_comes_before_the_strips_own(
        shot: SimpleNamespace, testdata: Path, tmp_path: Path) -> None:
    add_source(shot.strip, testdata / "media" / "obama.jpg")
    convert = module("convert")
    elsewhere = tmp_path / "fixes.json"
    elsewhere.write_text(json.dumps({"schema": "facefuse.overrides/1", "overrides": [
        {"frames": f"{MEDIA_FIRST}-{MEDIA_FIRST + 1}", "action": "keep"}]}))
    shot.strip.facefuse.overrides_file = str(elsewhere)
    assert convert.strip_swap(shot.scene, shot.strip).request.plan.overrides == elsewhere
    shot.scene.frame_start, shot.scene.frame_end = FIRST + 4, FIRST + 4
    assert bpy.ops.facefuse.add_override(action='keep') == {'FINISHED'}
    request = convert.strip_swap(shot.scene, shot.strip).request
    assert request.plan.overrides == shot.out / "corrections.json"
    assert [e["frames"] for e in json.loads(request.plan.overrides.read_text())["overrides"]] == [
        f"{MEDIA_FIRST}-{MEDIA_FIRST + 1}", f"{MEDIA_FIRST + 4}"]
    assert json.loads(elsewhere.read_text())["overrides"][0]["action"] == "keep"  # untouched
    elsewhere.unlink()
    with pytest.raises(module("strips").StripError, match="Corrections file .* is missing"):
        convert.strip_swap(shot.scene, shot.strip)


def _two_people(testdata: Path, models: Path, cache: Path, folder: Path) -> Any:
    """A saved .blend whose active image strip shows two faces in each of its 6 frames (the
    same photo twice: two people of the plan), Target Face All, no Sources."""
    face = face_photo(testdata)
    plates = folder / "plates"
    plates.mkdir()
    for i in range(6):
        frame = face_frame(i, face)
        frame[80:80 + face.shape[0], 30:30 + face.shape[1]] = face
        cv2.imwrite(str(plates / f"two.{1001 + i}.png"), frame)
    scene = new_blend(folder / "two.blend")
    strip = scene.sequence_editor.strips.new_image("two", str(plates / "two.1001.png"), 1, 1)
    for i in range(1, 6):
        strip.elements.append(f"two.{1001 + i}.png")
    scene.sequence_editor.active_strip = strip
    configure(strip, testdata, models, cache)
    strip.facefuse.selector = 'many'
    return strip


def test_every_person_cast_needs_no_sources(addon: object, testdata: Path, render_models: Path,
                                            render_cache: Path, tmp_path: Path) -> None:
    """No photo under Sources: Review lists the people, a swap names whoever is swapped without
    a source, and once each is cast (or skipped) it renders."""
    props = _two_people(testdata, render_models, render_cache, tmp_path).facefuse
    assert "No source image" in operator_error(bpy.ops.facefuse.swap_strip)
    assert bpy.ops.facefuse.review_strip() == {'FINISHED'}, last_message()
    assert [(p.person_id, p.swapped) for p in props.people] == [("p1", True), ("p2", True)]
    props.people[0].source = str(testdata / "media" / "biden.jpg")
    error = operator_error(bpy.ops.facefuse.swap_strip)  # the engine's word, Blender's buttons
    assert "p2 is swapped but has no source: give an Own Source or Skip" in error, error
    assert "\n" not in error.strip() and "--assign" not in error
    assert not list((tmp_path / "facefuse" / "two").glob("two.*.png"))  # nothing written

    props.people[1].skip = True
    assert bpy.ops.facefuse.swap_strip() == {'FINISHED'}, last_message()
    assert last_message().level == 'INFO' and "(6 swapped" in last_message().text
    props.people[1].skip, props.people[1].source = False, str(testdata / "media" / "obama.jpg")
    assert bpy.ops.facefuse.preview_frame() == {'FINISHED'}, last_message()


class _Confirm:
    """Stands in for window_manager.invoke_confirm (no dialog with bpy as a module)."""

    def __init__(self) -> None:
        self.asked: dict[str, object] = {}

    def invoke_confirm(self, _operator: object, _event: object, **kwargs: object) -> set[str]:
        self.asked = kwargs
        return {'RUNNING_MODAL'}


def test_a_swap_asks_before_replacing_frames_made_with_other_choices(
        shot: SimpleNamespace, testdata: Path, capsys: pytest.CaptureFixture[str]) -> None:
    add_source(shot.strip, testdata / "media" / "obama.jpg")
    props, scene = shot.strip.facefuse, shot.scene
    assert bpy.ops.facefuse.swap_strip() == {'FINISHED'}, last_message()
    first = shot.out / f"plate.{MEDIA_FIRST:04d}.png"

    # the strip's own frames: the user changed their own choices, replaced without a question
    props.swapper_weight = 0.7
    assert bpy.ops.facefuse.swap_strip() == {'FINISHED'}, last_message()
    assert f"{TRIMMED} made with other choices replaced" in last_message().text
    assert props.replace_asked == "" and len(props.rendered_by.split()) == 2

    # frames made elsewhere (the command line, a farm, with 0.4): not the strip's own
    elsewhere = module("convert").strip_swap(scene, shot.strip).request
    render(dataclasses.replace(elsewhere, settings=dataclasses.replace(
        elsewhere.settings, swapper_weight=0.4)))
    made = first.read_bytes()
    assert bpy.ops.facefuse.swap_strip() == {'FINISHED'}  # 0.7: nothing written yet
    said = last_message()
    assert said.level == 'WARNING' and "stopped before writing" in said.text
    asked = props.replace_asked
    assert f"replaces {TRIMMED} finished frames ({MEDIA_FIRST}-{MEDIA_FIRST + TRIMMED - 1})" \
        in asked and "swapper_weight 0.4 -> 0.7" in asked
    assert first.read_bytes() == made

    # the panel asks again; the dialog names the frames and what differs
    layout = FakeLayout()
    module("panels").SEQUENCER_PT_facefuse.draw(SimpleNamespace(layout=layout), bpy.context)
    assert "facefuse.replace_frames" in {c["idname"] for c in layout.calls_of("operator")}
    assert "swapper_weight 0.4 -> 0.7" in " ".join(layout.texts().split())  # wrapped
    confirm = _Confirm()
    dialog = SimpleNamespace(accepted=asked)
    module("operators").FACEFUSE_OT_replace_frames.invoke(
        dialog, SimpleNamespace(window_manager=confirm), None)
    assert confirm.asked["confirm_text"] == "Replace" and "swapper_weight" in \
        str(confirm.asked["message"])

    # accepting what was said replaces them; an answer to another question asks again
    props.swapper_weight = 0.6
    assert bpy.ops.facefuse.replace_frames(scene=scene.name, strip="plate",
                                           accepted=asked) == {'FINISHED'}
    assert "stopped before writing" in last_message().text and first.read_bytes() == made
    assert bpy.ops.facefuse.replace_frames(scene=scene.name, strip="plate",
                                           accepted=props.replace_asked) == {'FINISHED'}
    assert f"({TRIMMED} swapped, 0 without a face, 0 already done; {TRIMMED} made with other " \
        "choices replaced)" in last_message().text
    assert props.replace_asked == "" and first.read_bytes() != made

    # the farm does not ask: it says what it replaces, as `facefuse render` does
    props.swapper_weight = 0.5
    assert bpy.ops.wm.save_mainfile() == {'FINISHED'}
    headless = importlib.import_module(f"{ADDON}.headless")
    assert headless.main(["--strip", "plate"]) == 0
    out = capsys.readouterr().out
    assert f"plate: note: this render replaces {TRIMMED} finished frames" in out
    assert "swapper_weight 0.6 -> 0.5" in out
    assert f"{TRIMMED} swapped, 0 without a face, 0 already done, {TRIMMED} made with other " \
        "choices replaced" in out

    # a script replaces frames made elsewhere without asking
    render(dataclasses.replace(elsewhere, settings=dataclasses.replace(
        elsewhere.settings, swapper_weight=0.4)))
    assert bpy.ops.facefuse.swap_strip(replace=True) == {'FINISHED'}
    assert f"{TRIMMED} made with other choices replaced" in last_message().text
    assert props.replace_asked == ""


def test_headless_frames_ignore_the_corrections_outside_them_with_a_note(
        shot: SimpleNamespace, clip: Path, testdata: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    """Corrections made over the whole strip, a farm task of a few frames: those outside its
    frames are left out, said in a note, and those inside apply."""
    add_source(shot.strip, testdata / "media" / "obama.jpg")
    assert bpy.ops.facefuse.review_strip() == {'FINISHED'}, last_message()
    scene = shot.scene
    for first, last, action in ((FIRST + 1, FIRST + 3, 'skip'), (FIRST + 5, FIRST + 8, 'keep'),
                                (FIRST + 12, FIRST + 12, 'keep')):
        scene.frame_start, scene.frame_end = first, last
        assert bpy.ops.facefuse.add_override(action=action) == {'FINISHED'}
    headless = importlib.import_module(f"{ADDON}.headless")
    capsys.readouterr()
    assert headless.main(["--strip", "plate", "--frames", f"{FIRST + 7}-{FIRST + 9}"]) == 0
    said = capsys.readouterr().out
    assert "error" not in said, said
    assert f"the corrections outside frames {MEDIA_FIRST + 7}-{MEDIA_FIRST + 9} are ignored " \
        f"here: 2 entries wholly ({MEDIA_FIRST + 1}-{MEDIA_FIRST + 3}, {MEDIA_FIRST + 12}) " \
        f"and 1 in part ({MEDIA_FIRST + 5}-{MEDIA_FIRST + 6})" in said, said
    assert "1 swapped, 2 left as they are by your corrections" in said
    # p1 is the person of the strip's review: the engine plans over the strip's range
    written = json.loads((shot.out / "corrections.json").read_text())
    assert written["shot"] == json.loads(
        Path(bpy.path.abspath(shot.strip.facefuse.report)).read_text())["shot_id"]
    assert written["analysed"] == f"{MEDIA_FIRST}-{MEDIA_FIRST + TRIMMED - 1}"
    sources = source_frames(clip)
    for frame in (FIRST + 7, FIRST + 8):
        kept = cv2.imread(str(shot.out / f"plate.{MEDIA_FIRST + frame - FIRST:04d}.png"))
        assert np.array_equal(kept, sources[frame - STRIP_START]), frame
    assert sorted(p.name for p in shot.out.glob("plate.*.png")) == [
        f"plate.{n:04d}.png" for n in range(MEDIA_FIRST + 7, MEDIA_FIRST + 10)]
