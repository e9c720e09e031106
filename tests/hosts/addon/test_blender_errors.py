"""The Blender extension on bad input: no or the wrong active strip, missing files (a source, a
consent record, the strip's own), a read-only output, an unsaved .blend, a model missing
offline: Swap and Preview each give one clear report and nothing is written.

The extension zip is installed into the session's throw-away Blender user folder and enabled as
bl_ext.user_default.facefuse once for the modules of tests/hosts/addon/ (`addon`; `shot` is a
saved .blend with a trimmed plate strip: both in tests/hosts/addon/conftest.py; helpers in
tests/hosts/addon/blender_helpers.py).
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
from pathlib import Path
from types import SimpleNamespace

import pytest

# tests/hosts/conftest.py points BLENDER_USER_* at a temporary folder before bpy is imported.
bpy = pytest.importorskip("bpy", reason="bpy (Blender as a Python module) is not installed")


from tests.hosts.addon.blender_helpers import (
    add_plate,
    add_source,
    configure,
    new_blend,
    operator_error,
)


def _no_active_strip(shot: SimpleNamespace, _testdata: Path) -> None:
    shot.scene.sequence_editor.active_strip = None


def _sound_strip(shot: SimpleNamespace, _testdata: Path) -> None:
    editor = shot.scene.sequence_editor
    editor.active_strip = editor.strips.new_sound("dialogue", shot.strip.filepath, 5, 1)


def _missing_source(shot: SimpleNamespace, _testdata: Path) -> None:
    add_source(shot.strip, shot.folder / "actor-gone.jpg")


def _missing_consent_record(shot: SimpleNamespace, _testdata: Path) -> None:
    person = shot.strip.facefuse.people.add()
    person.person_id, person.consent = "p1", str(shot.folder / "jane-gone.json")


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


def _long_corrections_file(shot: SimpleNamespace, _testdata: Path) -> None:
    shot.strip.facefuse.overrides_file = str(shot.folder / ("c" * 300 + ".json"))


def _long_output_folder(shot: SimpleNamespace, _testdata: Path) -> None:
    shot.strip.facefuse.output_dir = str(shot.folder / ("o" * 300))


BAD_INPUTS = {
    "no active strip": (_no_active_strip, "No active strip: click a movie or image strip"),
    "sound strip": (_sound_strip, ("Strip 'dialogue' is a sound strip: face swap works on movie "
                                   "and image strips")),
    "missing source": (_missing_source, "Source image .*actor-gone.jpg is missing"),
    "missing consent record": (_missing_consent_record, (
        "The consent record of person p1 is missing: .*jane-gone.json")),
    "strip file gone": (_strip_file_gone, "The movie of strip 'plate' is missing: .*copy.mp4"),
    "read-only output": (_read_only_output, "Cannot write the swapped frames to .*: "),
    "unsaved blend": (_unsaved_blend, ("Save the .blend first: the swapped frames go to "
                                       "//facefuse/plate/")),
    "model missing offline": (_missing_model, ("The detector model retinaface_10g is missing: "
                                               "open Preferences > Add-ons > facefuse and "
                                               "press Download models, or allow Online "
                                               "Access")),
    "corrections file name over 255 bytes": (_long_corrections_file, (
        "Corrections file: the name c{40}... is 305 bytes, and the file system takes names of "
        "at most 255 bytes")),
    "output folder name over 255 bytes": (_long_output_folder, (
        "Output folder: the name o{40}... is 300 bytes")),
}


@pytest.mark.parametrize("case", list(BAD_INPUTS))
def test_bad_input_is_one_clear_report_and_nothing_is_written(shot: SimpleNamespace,
                                                              testdata: Path, case: str) -> None:
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
