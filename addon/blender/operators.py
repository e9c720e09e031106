"""Operators: a poll and a short execute each. The work is in tasks.py (run through jobs.py).

Every user mistake (no strip, a sound strip, a missing file, an unwritable folder) ends in one
`self.report({'ERROR'}, message)` and {'CANCELLED'}; nothing is written before the checks pass.
In the UI the engine runs on a worker thread and the operator returns at once; with bpy as a
module or `blender -b` it runs before the operator returns, and its outcome is reported.
"""

# Blender's API takes bl_options as a set class attribute.
# ruff: noqa: RUF012

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

import bpy
from bpy.props import CollectionProperty, EnumProperty, IntProperty, StringProperty
from bpy.types import Operator, OperatorFileListElement

from facefuse import FacefuseError, Job, Message

from . import convert, jobs, review, settings, strips, tasks
from .strips import StripError

IMAGE_GLOB = "*.png;*.jpg;*.jpeg;*.webp;*.bmp;*.tif;*.tiff"
OVERRIDE_ITEMS = (
    ('skip', "Skip", "Do not swap the person in these frames"),
    ('keep', "Keep", "Keep the original picture (with a person: that person only)"),
    ('hold', "Hold", "Swap the person, filling frames where the face was lost"),
    ('swap', "Swap", "Swap the person although the target face rule did not choose them"),
)
RANGE_ITEMS = (
    ('SCENE', "Scene Range", "The scene's frame range (its preview range when on)"),
    ('MARKERS', "Selected Markers", "From the first to the last selected timeline marker"),
)


def _run(operator: Operator, build: Callable[[], Job], started: str) -> set[str]:
    """Build and submit a job, reporting any problem or the outcome on the operator."""
    try:
        outcome = jobs.submit(build())
    except (StripError, FacefuseError) as exc:
        operator.report({'ERROR'}, settings.in_blender(str(exc)))
        return {'CANCELLED'}
    if outcome is None:
        operator.report({'INFO'}, started)
        return {'FINISHED'}
    return _report(operator, outcome)


def _report(operator: Operator, message: Message) -> set[str]:
    operator.report({message.level}, settings.in_blender(message.text))
    return {'CANCELLED'} if message.level == 'ERROR' else {'FINISHED'}


def _has_scene(context: Any) -> bool:
    return strips.sequencer_scene(context) is not None


class _NeedsSequencer:
    """Operators that act on the sequencer scene (the strip checks come in execute, with a
    message, rather than greying the button out silently)."""

    @classmethod
    def poll(cls, context: Any) -> bool:
        return _has_scene(context)


class FACEFUSE_OT_swap_strip(_NeedsSequencer, Operator):
    """Swap faces in the active strip's trimmed range into an image strip on the channel above"""

    bl_idname = "facefuse.swap_strip"
    bl_label = "Swap Strip"
    bl_options = {'REGISTER'}

    def execute(self, context: Any) -> set[str]:
        def build() -> Job:
            scene, strip = strips.active_strip(context)
            return tasks.swap_job(convert.plan_swap(scene, strip))
        return _run(self, build, "Face swap started: progress in the status bar")


class FACEFUSE_OT_preview_frame(_NeedsSequencer, Operator):
    """Swap the frame under the playhead and show it in the Image Editor ('facefuse preview')"""

    bl_idname = "facefuse.preview_frame"
    bl_label = "Preview Frame"
    bl_options = {'REGISTER'}

    def execute(self, context: Any) -> set[str]:
        def build() -> Job:
            scene, strip = strips.active_strip(context)
            return tasks.preview_job(convert.plan_swap(scene, strip), scene.frame_current)
        return _run(self, build, "Previewing the frame under the playhead")


class FACEFUSE_OT_find_faces(_NeedsSequencer, Operator):
    """Outline and number the faces under the playhead, to pick the reference face"""

    bl_idname = "facefuse.find_faces"
    bl_label = "Faces Under Playhead"
    bl_options = {'REGISTER'}

    def execute(self, context: Any) -> set[str]:
        def build() -> Job:
            scene, strip = strips.active_strip(context)
            return tasks.faces_job(convert.plan_swap(scene, strip, look=True),
                                   scene.frame_current)
        return _run(self, build, "Finding the faces under the playhead")


class FACEFUSE_OT_use_face(_NeedsSequencer, Operator):
    """Use the chosen face under the playhead as the reference: those faces get swapped"""

    bl_idname = "facefuse.use_face"
    bl_label = "Use Face"
    bl_options = {'REGISTER', 'UNDO'}

    index: IntProperty(name="Face Number", default=-1, min=-1,
                       description="Face number from the left (-1: the strip's Face Number)")

    def execute(self, context: Any) -> set[str]:
        def build() -> Job:
            scene, strip = strips.active_strip(context)
            index = self.index if self.index >= 0 else strip.facefuse.reference_index
            return tasks.reference_job(convert.plan_swap(scene, strip, look=True),
                                       scene.frame_current, index)
        return _run(self, build, "Saving the reference face")


class FACEFUSE_OT_add_sources(_NeedsSequencer, Operator):
    """Add photos of the face to put in (several photos of one person are averaged)"""

    bl_idname = "facefuse.add_sources"
    bl_label = "Add Source Images"
    bl_options = {'REGISTER', 'UNDO'}

    filepath: StringProperty(subtype='FILE_PATH', options={'SKIP_SAVE'})
    directory: StringProperty(subtype='DIR_PATH', options={'SKIP_SAVE'})
    files: CollectionProperty(type=OperatorFileListElement, options={'HIDDEN', 'SKIP_SAVE'})
    filter_glob: StringProperty(default=IMAGE_GLOB, options={'HIDDEN'})
    filter_image: bpy.props.BoolProperty(default=True, options={'HIDDEN', 'SKIP_SAVE'})
    filter_folder: bpy.props.BoolProperty(default=True, options={'HIDDEN', 'SKIP_SAVE'})

    def invoke(self, context: Any, _event: Any) -> set[str]:
        context.window_manager.fileselect_add(self)
        return {'RUNNING_MODAL'}

    def execute(self, context: Any) -> set[str]:
        try:
            scene, strip = strips.active_strip(context)
            strips.require_swappable(strip)
        except StripError as exc:
            self.report({'ERROR'}, str(exc))
            return {'CANCELLED'}
        paths = self._paths()
        if not paths:
            self.report({'ERROR'}, "No image chosen")
            return {'CANCELLED'}
        props = strip.facefuse
        for path in paths:
            item = props.sources.add()
            item.filepath = tasks.blend_path(path)
        props.source_index = len(props.sources) - 1
        added = f"{len(paths)} source image(s) added"
        try:
            outcome = jobs.submit(tasks.sources_job(scene, strip))
        except (StripError, FacefuseError) as exc:  # added all the same; checked later
            self.report({'WARNING'}, f"{added}, not checked yet: {exc}")
            return {'FINISHED'}
        if outcome is None:
            self.report({'INFO'}, f"{added}; checking their faces")
        else:
            self.report({'WARNING' if outcome.level == 'ERROR' else outcome.level}, outcome.text)
        return {'FINISHED'}

    def _paths(self) -> list[str]:
        names = [f.name for f in self.files if f.name]
        if names and self.directory:
            return [os.path.join(bpy.path.abspath(self.directory), n) for n in names]
        return [bpy.path.abspath(self.filepath)] if self.filepath else []


class FACEFUSE_OT_remove_source(_NeedsSequencer, Operator):
    """Remove the selected source image"""

    bl_idname = "facefuse.remove_source"
    bl_label = "Remove Source Image"
    bl_options = {'REGISTER', 'UNDO'}

    def execute(self, context: Any) -> set[str]:
        try:
            _, strip = strips.active_strip(context)
        except StripError as exc:
            self.report({'ERROR'}, str(exc))
            return {'CANCELLED'}
        props = strip.facefuse
        if not 0 <= props.source_index < len(props.sources):
            self.report({'ERROR'}, "No source image selected")
            return {'CANCELLED'}
        props.sources.remove(props.source_index)
        props.source_index = max(0, min(props.source_index, len(props.sources) - 1))
        return {'FINISHED'}


class FACEFUSE_OT_check_sources(_NeedsSequencer, Operator):
    """Find the faces in the source images again and redraw their thumbnails"""

    bl_idname = "facefuse.check_sources"
    bl_label = "Check Source Images"
    bl_options = {'REGISTER'}

    def execute(self, context: Any) -> set[str]:
        def build() -> Job:
            scene, strip = strips.active_strip(context)
            return tasks.sources_job(scene, strip)
        return _run(self, build, "Checking the faces in the source images")


class FACEFUSE_OT_review_strip(_NeedsSequencer, Operator):
    """Review the strip as Swap Strip renders it: flags become timeline markers, people are
    listed in Face Swap > People"""

    bl_idname = "facefuse.review_strip"
    bl_label = "Review"
    bl_options = {'REGISTER'}

    def execute(self, context: Any) -> set[str]:
        def build() -> Job:
            scene, strip = strips.active_strip(context)
            plan = convert.plan_swap(scene, strip)
            return tasks.review_job(plan, convert.review_folder(strip))
        return _run(self, build, "Reviewing the strip: progress in the status bar")


class FACEFUSE_OT_add_override(_NeedsSequencer, Operator):
    """Correct the plan over a frame range: the strip's next swap uses it (docs/overrides.md)"""

    bl_idname = "facefuse.add_override"
    bl_label = "Add Override"
    bl_options = {'REGISTER', 'UNDO'}

    action: EnumProperty(name="Action", items=OVERRIDE_ITEMS, default='skip')
    frames: EnumProperty(name="Frames", items=RANGE_ITEMS, default='SCENE')
    person: StringProperty(name="Person", description="A person id (empty: the active "
                                                       "person of Face Swap > People)")

    def execute(self, context: Any) -> set[str]:
        try:
            scene, strip = strips.active_strip(context)
            plan = convert.plan_swap(scene, strip, prepare=False, look=True)
            entry = review.override_entry(plan, self._range(scene), self.action,
                                          self._person(strip))
            count = review.add_override(convert.overrides_path(strip), entry)
        except StripError as exc:
            self.report({'ERROR'}, str(exc))
            return {'CANCELLED'}
        who = f" {entry.person}" if entry.person else ""
        (first, last), = entry.frames
        self.report({'INFO'}, f"Override {count}: {self.action}{who} over frames "
                              f"{first}-{last}; Swap Strip re-renders what it changes")
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


class FACEFUSE_OT_rerender_flagged(_NeedsSequencer, Operator):
    """Render again only the frames the strip's last review flagged"""

    bl_idname = "facefuse.rerender_flagged"
    bl_label = "Re-render Flagged"
    bl_options = {'REGISTER'}

    def execute(self, context: Any) -> set[str]:
        def build() -> Job:
            scene, strip = strips.active_strip(context)
            shot, flagged = review.flagged_numbers(bpy.path.abspath(strip.facefuse.report))
            plan = convert.plan_swap(scene, strip, only=flagged, only_input=f"shot:{shot}",
                                     overwrite=True)
            return tasks.swap_job(plan)
        return _run(self, build, "Re-rendering the flagged frames")


class FACEFUSE_OT_fetch_models(Operator):
    """Download the models facefuse needs that are not on this computer yet"""

    bl_idname = "facefuse.fetch_models"
    bl_label = "Download Models"
    bl_options = {'REGISTER'}

    @classmethod
    def poll(cls, context: Any) -> bool:
        if not settings.online_access():
            cls.poll_message_set("Online access is off (Preferences > System)")
            return False
        return True

    def execute(self, context: Any) -> set[str]:
        def build() -> Job:
            return tasks.fetch_job(models_settings(context), context.window_manager)
        return _run(self, build, "Downloading models: progress in the status bar")


def models_settings(context: Any) -> Any:
    """The active strip's model settings, else facefuse's defaults (online)."""
    try:
        _, strip = strips.active_strip(context)
        strips.require_swappable(strip)
    except (StripError, AttributeError):
        from facefuse import Settings

        return Settings(offline=not settings.online_access())
    return settings.engine_settings(strip.facefuse)


class FACEFUSE_OT_cancel(Operator):
    """Stop the face swap (finished frames are kept; Swap Strip resumes)"""

    bl_idname = "facefuse.cancel"
    bl_label = "Cancel Face Swap"
    bl_options = {'REGISTER'}

    @classmethod
    def poll(cls, context: Any) -> bool:
        return bool(jobs.runner().jobs)

    def execute(self, context: Any) -> set[str]:
        count = jobs.cancel()
        self.report({'INFO'}, f"Cancelling {count} job(s)")
        return {'FINISHED'}


CLASSES = (
    FACEFUSE_OT_add_sources,
    FACEFUSE_OT_remove_source,
    FACEFUSE_OT_check_sources,
    FACEFUSE_OT_find_faces,
    FACEFUSE_OT_use_face,
    FACEFUSE_OT_preview_frame,
    FACEFUSE_OT_swap_strip,
    FACEFUSE_OT_review_strip,
    FACEFUSE_OT_add_override,
    FACEFUSE_OT_rerender_flagged,
    FACEFUSE_OT_fetch_models,
    FACEFUSE_OT_cancel,
)


def register() -> None:
    for cls in CLASSES:
        bpy.utils.register_class(cls)


def unregister() -> None:
    for cls in reversed(CLASSES):
        bpy.utils.unregister_class(cls)
