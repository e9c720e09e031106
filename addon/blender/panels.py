"""The "Face Swap" tab of the Sequencer sidebar, its sub-panels, and the status-bar progress.

Panels only draw: they read the active strip's settings and the job state and never run the
engine. Source thumbnails (PNG files made by facefuse.source_preview) are shown through one
bpy.utils.previews collection, made in register() and freed in unregister().
"""

# Blender's API takes bl_options as a set class attribute.
# ruff: noqa: RUF012

from __future__ import annotations

import os
import textwrap
from pathlib import Path
from typing import Any

import bpy
from bpy.types import Panel, UIList

from facefuse import Job, absent_models, missing_models, tunable_options

from . import convert, jobs, review, settings, strips
from .strips import StripError

CATEGORY = "Face Swap"
WRAP_CHARS = 48
LEVEL_ICONS = {'INFO': 'INFO', 'WARNING': 'ERROR', 'ERROR': 'CANCEL'}
# the Target Face panel draws these with the reference-picking workflow around them
DRAWN_BY_HAND = frozenset({"selector", "similarity"})

_thumbnails: Any = None  # bpy.utils.previews collection, between register() and unregister()


def swappable_strip(context: Any) -> Any:
    """The active strip when it is a movie or image strip, else None."""
    try:
        _, strip = strips.active_strip(context)
        strips.require_swappable(strip)
    except (StripError, AttributeError):
        return None
    return strip


def wrapped(layout: Any, text: str, icon: str = 'NONE', alert: bool = False) -> None:
    """Labels do not wrap: one label per line of at most WRAP_CHARS characters."""
    column = layout.column(align=True)
    column.alert = alert
    for i, line in enumerate(textwrap.wrap(text, WRAP_CHARS) or [""]):
        column.label(text=line, icon=icon if i == 0 else 'BLANK1')


def thumbnail_icon(path: str) -> int:
    """The icon id of a thumbnail PNG (0 when there is none, or without a GPU)."""
    if _thumbnails is None or not path or not os.path.isfile(path):
        return 0
    key = f"{path}:{os.stat(path).st_mtime_ns}"
    preview = _thumbnails.get(key) or _thumbnails.load(key, path, 'IMAGE')
    return int(preview.icon_id)


def draw_job(layout: Any, job: Job) -> None:
    row = layout.row(align=True)
    percent = round(100 * job.fraction)
    row.progress(factor=job.fraction, type='BAR', text=f"{job.label}: {percent}%")
    row.operator("facefuse.cancel", text="", icon='X')
    if job.status:
        layout.label(text=job.status)


class FACEFUSE_UL_sources(UIList):
    """Source images with their face count."""

    def draw_item(self, _context: Any, layout: Any, _data: Any, item: Any, _icon: int,
                  _active_data: Any, _active_property: str, _index: int = 0,
                  _flt_flag: int = 0) -> None:
        icon_value = thumbnail_icon(item.thumbnail)
        row = layout.row(align=True)
        name = Path(item.filepath).name or "(no file)"
        if icon_value:
            row.label(text=name, icon_value=icon_value)
        else:
            row.label(text=name, icon='IMAGE_DATA')
        status = row.row()
        status.alert = item.faces == 0
        status.label(text={-1: "?", 0: "no face", 1: "1 face"}.get(item.faces,
                                                                    f"{item.faces} faces"))


class FACEFUSE_UL_people(UIList):
    """The strip's people from its last review: id, frames, swapped or skipped, their own
    source and whether a consent record is attached."""

    def draw_item(self, _context: Any, layout: Any, _data: Any, item: Any, _icon: int,
                  _active_data: Any, _active_property: str, _index: int = 0,
                  _flt_flag: int = 0) -> None:
        row = layout.row(align=True)
        state = "skipped" if item.skip else ("swapped" if item.swapped else "not swapped")
        icon = 'HIDE_ON' if item.skip else ('USER' if item.swapped else 'GHOST_DISABLED')
        row.label(text=f"{item.person_id}: {item.frames} frames, {state}", icon=icon)
        if item.source:
            row.label(text=Path(item.source).name, icon='IMAGE_DATA')
        if item.consent:
            row.label(text="", icon='CHECKMARK')


class FACEFUSE_UL_corrections(UIList):
    """The strip's corrections, in timeline frames (a movie strip) or the files' numbers."""

    def draw_item(self, context: Any, layout: Any, _data: Any, item: Any, _icon: int,
                  _active_data: Any, _active_property: str, _index: int = 0,
                  _flt_flag: int = 0) -> None:
        entry = review.correction(item)
        strip = swappable_strip(context)
        text = review.describe(entry) if strip is None else review.describe_on(strip, entry)
        layout.label(text=text, icon='MODIFIER')


class FacefusePanel:
    bl_space_type = 'SEQUENCE_EDITOR'
    bl_region_type = 'UI'
    bl_category = CATEGORY


class StripPanel(FacefusePanel):
    """A sub-panel of Face Swap shown while a movie or image strip is active."""

    bl_parent_id = "SEQUENCER_PT_facefuse"

    @classmethod
    def poll(cls, context: Any) -> bool:
        return swappable_strip(context) is not None


class SEQUENCER_PT_facefuse(FacefusePanel, Panel):
    bl_label = "Face Swap"

    def draw(self, context: Any) -> None:
        layout = self.layout
        state = jobs.current()
        for job in state.jobs if state is not None else ():
            draw_job(layout.box(), job)
        if state is not None and state.message is not None:
            wrapped(layout, settings.in_blender(state.message.text),
                    LEVEL_ICONS[state.message.level],
                    alert=state.message.level == 'ERROR')
        try:
            scene, strip = strips.active_strip(context)
            strips.require_swappable(strip)
        except StripError as exc:
            wrapped(layout, str(exc), 'INFO')
            return
        if strip.facefuse.result_of:
            layout.label(text=f"Result of '{strip.facefuse.result_of}'", icon='LINKED')
        column = layout.column(align=True)
        column.scale_y = 1.3
        column.operator("facefuse.preview_frame", icon='IMAGE_DATA')
        column.operator("facefuse.swap_strip", icon='RENDER_ANIMATION')
        asked = strip.facefuse.replace_asked
        if asked:
            box = layout.box()
            wrapped(box, f"{asked[:1].upper()}{asked[1:]}.", 'ERROR')
            button = box.operator("facefuse.replace_frames", icon='FILE_REFRESH')
            button.scene, button.strip, button.accepted = scene.name, strip.name, asked


class SEQUENCER_PT_facefuse_sources(StripPanel, Panel):
    bl_label = "Sources"

    def draw(self, context: Any) -> None:
        layout = self.layout
        props = swappable_strip(context).facefuse
        row = layout.row()
        row.template_list("FACEFUSE_UL_sources", "", props, "sources", props, "source_index",
                          rows=3)
        side = row.column(align=True)
        side.operator("facefuse.add_sources", text="", icon='ADD')
        side.operator("facefuse.remove_source", text="", icon='REMOVE')
        side.separator()
        side.operator("facefuse.check_sources", text="", icon='FILE_REFRESH')
        if not props.sources:
            wrapped(layout, "Add a photo of the face to put in", 'INFO')
            return
        item = props.sources[min(props.source_index, len(props.sources) - 1)]
        layout.prop(item, "filepath", text="")
        icon_value = thumbnail_icon(item.thumbnail)
        if icon_value:
            layout.template_icon(icon_value=icon_value, scale=8.0)
        if item.faces == 0:
            wrapped(layout, "No face found in this image: use a photo where the face is "
                            "clearly visible", 'ERROR', alert=True)
        elif item.faces > 1:
            wrapped(layout, f"{item.faces} faces: the largest (green) is used", 'INFO')
        elif item.faces < 0:
            layout.operator("facefuse.check_sources", text="Check Faces", icon='VIEWZOOM')


class SEQUENCER_PT_facefuse_target(StripPanel, Panel):
    bl_label = "Target Face"

    def draw(self, context: Any) -> None:
        layout = self.layout
        props = swappable_strip(context).facefuse
        layout.row().prop(props, "selector", expand=True)
        if props.selector != 'reference':
            return
        layout.operator("facefuse.find_faces", icon='VIEWZOOM')
        if props.reference_faces >= 0:
            layout.label(text=f"{props.reference_faces} face(s) under the playhead")
        row = layout.row(align=True)
        row.prop(props, "reference_index")
        row.operator("facefuse.use_face")
        layout.prop(props, "reference_image")
        if not props.reference_image:
            wrapped(layout, "No reference yet: find the faces under the playhead, choose one "
                            "and press Use Face", 'ERROR', alert=True)
        layout.prop(props, "similarity", slider=True)


class SEQUENCER_PT_facefuse_people(StripPanel, Panel):
    bl_label = "People and Review"

    def draw(self, context: Any) -> None:
        layout = self.layout
        props = swappable_strip(context).facefuse
        row = layout.row(align=True)
        row.operator("facefuse.review_strip", icon='VIEWZOOM')
        flagged = row.row(align=True)
        flagged.enabled = props.flagged > 0
        flagged.operator("facefuse.rerender_flagged", icon='FILE_REFRESH')
        if props.flagged >= 0:
            row = layout.row(align=True)
            row.label(text=f"{props.flagged} frame(s) flagged, "
                           f"{len(props.review_markers)} marker(s)")
            row.operator("facefuse.open_report", text="", icon='URL')
        row = layout.row(align=True)
        row.prop(props, "require_consent")
        row.prop(props, "project")
        if not props.people:
            wrapped(layout, "Review the strip to list its people", 'INFO')
            return
        layout.template_list("FACEFUSE_UL_people", "", props, "people", props, "person_index",
                             rows=3)
        person = props.people[min(props.person_index, len(props.people) - 1)]
        layout.label(text=f"{person.person_id}: frames {person.first}-{person.last}, "
                          f"{person.why}")
        layout.prop(person, "source")
        layout.prop(person, "skip")
        layout.prop(person, "consent")
        draw_overrides(layout.box(), props)


def draw_overrides(layout: Any, props: Any) -> None:
    """Correction buttons (one per action, over the scene range or the selected markers) and
    the strip's corrections."""
    layout.label(text="Correct the active person", icon='MODIFIER')
    for frames, text in (('SCENE', "Scene Range"), ('MARKERS', "Selected Markers")):
        row = layout.row(align=True)
        row.label(text=text)
        for action in ('skip', 'keep', 'hold', 'swap'):
            button = row.operator("facefuse.add_override", text=action.title())
            button.action, button.frames = action, frames
    if props.corrections:
        row = layout.row()
        row.template_list("FACEFUSE_UL_corrections", "", props, "corrections", props,
                          "correction_index", rows=2)
        row.operator("facefuse.remove_override", text="", icon='REMOVE')
    layout.prop(props, "overrides_file")


class SEQUENCER_PT_facefuse_models(StripPanel, Panel):
    bl_label = "Models"
    bl_options = {'DEFAULT_CLOSED'}

    def draw_header_preset(self, context: Any) -> None:
        if model_problems(context):
            self.layout.label(text="", icon='ERROR')

    def draw(self, context: Any) -> None:
        layout = self.layout
        layout.use_property_split = True
        props = swappable_strip(context).facefuse
        for problem in model_problems(context):
            wrapped(layout, problem, 'ERROR', alert=True)
        if settings.online_access() and absent_models(settings.engine_settings(props)):
            wrapped(layout, "Some models are not downloaded yet; they are fetched on first "
                            "use, or now:", 'INFO')
            layout.operator("facefuse.fetch_models", icon='IMPORT')
        for group in ("models", "detail", "detection", "performance"):
            draw_tunables(layout, props, group)
        layout.prop(props, "providers")
        layout.prop(props, "models_dir")
        layout.prop(props, "cache_dir")


class SEQUENCER_PT_facefuse_output(StripPanel, Panel):
    bl_label = "Mask and Output"
    bl_options = {'DEFAULT_CLOSED'}

    def draw(self, context: Any) -> None:
        layout = self.layout
        layout.use_property_split = True
        strip = swappable_strip(context)
        props = strip.facefuse
        draw_tunables(layout, props, "mask")
        layout.prop(props, "use_smoothing")
        layout.separator()
        layout.prop(props, "output_dir")
        if not props.output_dir:
            layout.label(text=f"Default: {_default_output(strip)}")
        layout.prop(props, "file_format")
        layout.prop(props, "farm")
        if props.result_strip:
            layout.label(text=f"Result: {props.result_strip}", icon='SEQUENCE')


def draw_tunables(layout: Any, props: Any, group: str) -> None:
    """Every engine setting of a group, as the engine describes it (config.tunable_options);
    an optional model greys out what depends on it while it is off."""
    column = layout
    for option in tunable_options():
        if option.group != group or option.name in DRAWN_BY_HAND:
            continue
        if option.kind == "optional-model":
            layout.prop(props, f"use_{option.name}")
            column = layout.column()
            column.active = getattr(props, f"use_{option.name}")
        column.prop(props, option.name, slider=option.kind == "float")


def model_problems(context: Any) -> list[str]:
    """What stops the active strip's models from loading, with how to fix it."""
    strip = swappable_strip(context)
    if strip is None:
        return []
    try:
        return [settings.in_blender(m)
                for m in missing_models(settings.engine_settings(strip.facefuse))]
    except Exception as exc:  # noqa: BLE001 - a panel must draw whatever the settings are
        return [str(exc)]


def _default_output(strip: Any) -> str:
    return f"{convert.DEFAULT_OUTPUT}{bpy.path.clean_name(strip.name)}/"


def draw_status(self: Any, _context: Any) -> None:
    """Appended to the status bar: the running swap's progress and a cancel button."""
    state = jobs.current()
    job = state.running(jobs.RENDER) or state.running(jobs.LOOK) if state is not None else None
    if job is not None:
        row = self.layout.row(align=True)
        row.progress(factor=job.fraction, type='BAR',
                     text=f"{job.label}: {round(100 * job.fraction)}%")
        row.operator("facefuse.cancel", text="", icon='X')


CLASSES = (
    FACEFUSE_UL_sources,
    FACEFUSE_UL_people,
    FACEFUSE_UL_corrections,
    SEQUENCER_PT_facefuse,
    SEQUENCER_PT_facefuse_sources,
    SEQUENCER_PT_facefuse_target,
    SEQUENCER_PT_facefuse_people,
    SEQUENCER_PT_facefuse_models,
    SEQUENCER_PT_facefuse_output,
)


def register() -> None:
    global _thumbnails
    import bpy.utils.previews

    for cls in CLASSES:
        bpy.utils.register_class(cls)
    _thumbnails = bpy.utils.previews.new()
    bpy.types.STATUSBAR_HT_header.append(draw_status)


def unregister() -> None:
    global _thumbnails
    bpy.types.STATUSBAR_HT_header.remove(draw_status)
    if _thumbnails is not None:
        bpy.utils.previews.remove(_thumbnails)
        _thumbnails = None
    for cls in reversed(CLASSES):
        bpy.utils.unregister_class(cls)
