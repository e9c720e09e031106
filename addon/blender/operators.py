"""Operators: a poll and a short execute each. The work is in tasks.py (run through jobs.py);
those of the People and Review panel are in review_operators.py.

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
from bpy.props import (
    BoolProperty,
    CollectionProperty,
    IntProperty,
    StringProperty,
)
from bpy.types import Operator, OperatorFileListElement

from facefuse import FacefuseError, Job, Message

from . import convert, jobs, result, settings, strips, swap, tasks
from .strips import StripError

IMAGE_GLOB = "*.png;*.jpg;*.jpeg;*.webp;*.bmp;*.tif;*.tiff"


def run_job(operator: Operator, build: Callable[[], Job], started: str) -> set[str]:
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


class NeedsSequencer:
    """Operators that act on the sequencer scene (the strip checks come in execute, with a
    message, rather than greying the button out silently)."""

    @classmethod
    def poll(cls, context: Any) -> bool:
        return _has_scene(context)


class FACEFUSE_OT_swap_strip(NeedsSequencer, Operator):
    """Swap faces in the active strip's trimmed range into an image strip on the channel above
    (it asks before replacing finished frames made with other choices)"""

    bl_idname = "facefuse.swap_strip"
    bl_label = "Swap Strip"
    bl_options = {'REGISTER'}

    replace: BoolProperty(name="Replace Without Asking", options={'SKIP_SAVE'},
                          description="Replace finished frames made with other choices "
                                      "without asking first (scripts)")

    def execute(self, context: Any) -> set[str]:
        def build() -> Job:
            scene, strip = strips.active_strip(context)
            return swap.swap_job(convert.strip_swap(scene, strip), ask=not self.replace)
        return run_job(self, build, "Face swap started: progress in the status bar")


class FACEFUSE_OT_replace_frames(Operator):
    """Swap the strip, replacing the finished frames made with other choices that the last
    Swap Strip stopped before"""

    bl_idname = "facefuse.replace_frames"
    bl_label = "Replace Finished Frames"
    bl_options = {'REGISTER', 'INTERNAL'}

    scene: StringProperty(options={'HIDDEN', 'SKIP_SAVE'})
    strip: StringProperty(options={'HIDDEN', 'SKIP_SAVE'})
    accepted: StringProperty(options={'HIDDEN', 'SKIP_SAVE'},
                             description="What the user was told the swap replaces")

    def invoke(self, context: Any, event: Any) -> set[str]:
        return context.window_manager.invoke_confirm(
            self, event, title="Replace finished frames?", confirm_text="Replace",
            message=f"{self.accepted[:1].upper()}{self.accepted[1:]}.", icon='WARNING')

    def execute(self, context: Any) -> set[str]:
        def build() -> Job:
            scene, strip = result.strip_named(self.scene, self.strip)
            return swap.swap_job(convert.strip_swap(scene, strip), accepted=self.accepted)
        return run_job(self, build, "Face swap started: progress in the status bar")


class FACEFUSE_OT_preview_frame(NeedsSequencer, Operator):
    """Swap the frame under the playhead and show it in the Image Editor ('facefuse preview')"""

    bl_idname = "facefuse.preview_frame"
    bl_label = "Preview Frame"
    bl_options = {'REGISTER'}

    def execute(self, context: Any) -> set[str]:
        def build() -> Job:
            scene, strip = strips.active_strip(context)
            return tasks.preview_job(convert.strip_swap(scene, strip), scene.frame_current)
        return run_job(self, build, "Previewing the frame under the playhead")


class FACEFUSE_OT_find_faces(NeedsSequencer, Operator):
    """Outline and number the faces under the playhead, to pick the reference face"""

    bl_idname = "facefuse.find_faces"
    bl_label = "Faces Under Playhead"
    bl_options = {'REGISTER'}

    def execute(self, context: Any) -> set[str]:
        def build() -> Job:
            scene, strip = strips.active_strip(context)
            return tasks.faces_job(convert.strip_swap(scene, strip, look=True),
                                   scene.frame_current)
        return run_job(self, build, "Finding the faces under the playhead")


class FACEFUSE_OT_use_face(NeedsSequencer, Operator):
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
            return tasks.reference_job(convert.strip_swap(scene, strip, look=True),
                                       scene.frame_current, index)
        return run_job(self, build, "Saving the reference face")


class FACEFUSE_OT_add_sources(NeedsSequencer, Operator):
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


class FACEFUSE_OT_remove_source(NeedsSequencer, Operator):
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


class FACEFUSE_OT_check_sources(NeedsSequencer, Operator):
    """Find the faces in the source images again and redraw their thumbnails"""

    bl_idname = "facefuse.check_sources"
    bl_label = "Check Source Images"
    bl_options = {'REGISTER'}

    def execute(self, context: Any) -> set[str]:
        def build() -> Job:
            scene, strip = strips.active_strip(context)
            return tasks.sources_job(scene, strip)
        return run_job(self, build, "Checking the faces in the source images")


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
        return run_job(self, build, "Downloading models: progress in the status bar")


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
    FACEFUSE_OT_replace_frames,
    FACEFUSE_OT_fetch_models,
    FACEFUSE_OT_cancel,
)

# Blender's own symmetric pair: registers in order, unregisters in reverse
register, unregister = bpy.utils.register_classes_factory(CLASSES)
