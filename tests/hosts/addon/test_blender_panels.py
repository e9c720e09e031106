"""What the Blender extension registers and draws: the zip installs and registers the strip
settings, disable/enable is symmetric, and the sidebar panels and status bar draw for every
kind of strip, for missing models and for a running job (drawn into a checking FakeLayout:
with bpy as a module panels never draw).

The extension zip is installed into the session's throw-away Blender user folder and enabled as
bl_ext.user_default.facefuse once for the modules of tests/hosts/addon/ (`addon`; `shot` is a
saved .blend with a trimmed plate strip: both in tests/hosts/addon/conftest.py; helpers in
tests/hosts/addon/blender_helpers.py).
"""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

# tests/hosts/conftest.py points BLENDER_USER_* at a temporary folder before bpy is imported.
bpy = pytest.importorskip("bpy", reason="bpy (Blender as a Python module) is not installed")


from tests.hosts.addon.blender_helpers import ADDON, FakeLayout, add_source, module

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
                *module("review_operators").CLASSES, *module("panels").CLASSES,
                *module("preferences").CLASSES]

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


# -- panels --------------------------------------------------------------------------------------


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
    assert "gfpgan_1.4 is missing: open Preferences" in layout.texts()
    assert "press Download models, or allow Online Access" in layout.texts()


def test_online_access_allows_downloads_and_the_panel_offers_them(
        shot: SimpleNamespace, monkeypatch: pytest.MonkeyPatch) -> None:
    settings_module = module("settings")
    props = shot.strip.facefuse
    props.detector, props.models_dir = "retinaface_10g", str(shot.folder / "no-models")
    assert settings_module.engine_settings(props).offline  # bpy as a module: no online access
    assert "Download Models" not in str(draw_panels().calls_of("operator"))

    monkeypatch.setattr(settings_module, "online_access", lambda: True)
    settings = settings_module.engine_settings(props)
    assert not settings.offline
    # missing, but fetched on first use
    assert module("convert").missing_models(settings) == []
    assert module("tasks").absent_models(settings)[0] == ("detector", "retinaface_10g")
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


def test_every_engine_setting_is_a_strip_property_drawn_and_passed_to_the_engine(
        shot: SimpleNamespace) -> None:
    """The strip's controls come from config.tunable_options: a setting added to the engine
    appears in the panels and reaches the swap with no Blender code of its own."""
    from facefuse.config import tunable_options

    props = shot.strip.facefuse
    for option in tunable_options():  # every optional model on (the mouth mask needs the parser)
        if option.kind == "optional-model":
            setattr(props, f"use_{option.name}", True)
    drawn = {c["name"] for c in draw_panels().calls_of("prop")}
    engine = module("settings").engine_settings
    for option in tunable_options():
        assert option.name in props.bl_rna.properties, option.name
        if option.name not in module("panels").DRAWN_BY_HAND or props.selector == 'reference':
            assert option.name in drawn or option.name == "similarity", option.name
        if option.kind == "float":
            value = option.maximum if option.maximum is not None else option.default + 0.5
            setattr(props, option.name, value)
            assert getattr(engine(props), option.name) == pytest.approx(value), option.name
        elif option.kind == "int":
            setattr(props, option.name, option.default + 32)
            assert getattr(engine(props), option.name) == option.default + 32, option.name
        elif option.kind == "bool":
            setattr(props, option.name, not option.default)
            assert getattr(engine(props), option.name) is (not option.default), option.name
    props.use_enhancer = False
    assert engine(props).enhancer is None


def test_a_multiple_choice_setting_is_a_set_on_the_strip_and_a_tuple_in_the_engine(
        shot: SimpleNamespace) -> None:
    """The "choices" kind (the region mask's face regions): an enum flag property whose set
    reaches Settings as a tuple in the engine's order."""
    from facefuse.config import Settings

    props = shot.strip.facefuse
    engine = module("settings").engine_settings
    assert set(props.mask_regions) == set(Settings().mask_regions)
    assert engine(props).mask_regions == Settings().mask_regions
    props.mask_regions = {"nose", "skin"}
    assert engine(props).mask_regions == ("skin", "nose")
    props.use_parser = True
    assert engine(props).parser == "bisenet_resnet_34"  # the suggestion, once switched on
