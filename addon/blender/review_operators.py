"""Operators of the People and Review panel: review the strip, correct its plan (corrections
kept on the strip), re-render the flagged frames, open the review's page. A poll and a short
execute each, as in operators.py, whose helpers they share."""

# Blender's API takes bl_options as a set class attribute.
# ruff: noqa: RUF012

from __future__ import annotations

from typing import Any

import bpy
from bpy.props import EnumProperty, StringProperty
from bpy.types import Operator

from facefuse import Job

from . import convert, review, strips, swap, tasks
from .operators import NeedsSequencer, run_job
from .properties import CORRECTION_ITEMS
from .strips import StripError

RANGE_ITEMS = (
    ('SCENE', "Scene Range", "The scene's frame range (its preview range when on)"),
    ('MARKERS', "Selected Markers", "From the first to the last selected timeline marker"),
)


class FACEFUSE_OT_review_strip(NeedsSequencer, Operator):
    """Review the strip as Swap Strip renders it: flags become timeline markers, people are
    listed in Face Swap > People"""

    bl_idname = "facefuse.review_strip"
    bl_label = "Review"
    bl_options = {'REGISTER'}

    def execute(self, context: Any) -> set[str]:
        def build() -> Job:
            scene, strip = strips.active_strip(context)
            plan = convert.strip_swap(scene, strip, review=True)
            return tasks.review_job(plan, convert.review_folder(strip))
        return run_job(self, build, "Reviewing the strip: progress in the status bar")


class FACEFUSE_OT_add_override(NeedsSequencer, Operator):
    """Correct the plan over a frame range: kept on the strip, used by Preview, Swap, Review and
    the farm (docs/overrides.md)"""

    bl_idname = "facefuse.add_override"
    bl_label = "Add Correction"
    bl_options = {'REGISTER', 'UNDO'}

    action: EnumProperty(name="Action", items=CORRECTION_ITEMS, default='skip')
    frames: EnumProperty(name="Frames", items=RANGE_ITEMS, default='SCENE')
    person: StringProperty(name="Person", description="A person id (empty: the active "
                                                       "person of Face Swap > People)")

    def execute(self, context: Any) -> set[str]:
        try:
            scene, strip = strips.active_strip(context)
            plan = convert.strip_swap(scene, strip, prepare=False, look=True)
            frames = self._range(scene)
            entry = review.override_entry(plan, frames, self.action, self._person(strip))
            count = review.add_correction(strip.facefuse, entry)
            review.mark_corrected(scene, strip.facefuse)
        except StripError as exc:
            self.report({'ERROR'}, str(exc))
            return {'CANCELLED'}
        (first, last), = entry.frames
        shown = plan.timeline_frames(first, last)
        text = review.describe(entry, (shown[0], shown[-1]))
        self.report({'INFO'}, f"Correction {count}: {text}; Swap Strip re-renders the "
                              "finished frames it changes")
        return {'FINISHED'}

    def _range(self, scene: Any) -> tuple[int, int]:
        if self.frames == 'SCENE':
            return review.scene_range(scene)
        marked = review.marked_range(scene)
        if marked is None:
            raise StripError("No marker selected: select the markers around the range")
        return marked

    def _person(self, strip: Any) -> str:
        if self.person or self.action == 'keep':
            return self.person
        people = strip.facefuse.people
        index = strip.facefuse.person_index
        return people[index].person_id if 0 <= index < len(people) else ""


class FACEFUSE_OT_remove_override(NeedsSequencer, Operator):
    """Remove the selected correction of the strip (Swap Strip re-renders what it changed)"""

    bl_idname = "facefuse.remove_override"
    bl_label = "Remove Correction"
    bl_options = {'REGISTER', 'UNDO'}

    def execute(self, context: Any) -> set[str]:
        try:
            scene, strip = strips.active_strip(context)
            props = strip.facefuse
            entry = review.remove_correction(props, props.correction_index)
            review.mark_corrected(scene, props)
        except StripError as exc:
            self.report({'ERROR'}, str(exc))
            return {'CANCELLED'}
        self.report({'INFO'}, f"Correction removed: {review.describe_on(strip, entry)}")
        return {'FINISHED'}


class FACEFUSE_OT_rerender_flagged(NeedsSequencer, Operator):
    """Render again only the frames the strip's last review flagged"""

    bl_idname = "facefuse.rerender_flagged"
    bl_label = "Re-render Flagged"
    bl_options = {'REGISTER'}

    def execute(self, context: Any) -> set[str]:
        def build() -> Job:
            scene, strip = strips.active_strip(context)
            shot, flagged = review.flagged_numbers(bpy.path.abspath(strip.facefuse.report))
            plan = convert.strip_swap(scene, strip, only=flagged, only_input=f"shot:{shot}",
                                     overwrite=True)
            return swap.swap_job(plan, ask=False)  # replacing them is what it is for
        return run_job(self, build, "Re-rendering the flagged frames")


class FACEFUSE_OT_open_report(NeedsSequencer, Operator):
    """Open the page of the strip's last review (its flags, people and contact sheet) in the
    web browser"""

    bl_idname = "facefuse.open_report"
    bl_label = "Open Report"
    bl_options = {'REGISTER'}

    def execute(self, context: Any) -> set[str]:
        try:
            _, strip = strips.active_strip(context)
            page = review.report_page(bpy.path.abspath(strip.facefuse.report))
        except StripError as exc:
            self.report({'ERROR'}, str(exc))
            return {'CANCELLED'}
        open_page(page)
        self.report({'INFO'}, f"Opened {page}")
        return {'FINISHED'}


def open_page(page: Any) -> None:
    """Show an HTML file in the system's web browser (Blender's own URL opener)."""
    bpy.ops.wm.url_open(url=page.as_uri())


CLASSES = (
    FACEFUSE_OT_review_strip,
    FACEFUSE_OT_add_override,
    FACEFUSE_OT_remove_override,
    FACEFUSE_OT_rerender_flagged,
    FACEFUSE_OT_open_report,
)

# Blender's own symmetric pair: registers in order, unregisters in reverse
register, unregister = bpy.utils.register_classes_factory(CLASSES)
