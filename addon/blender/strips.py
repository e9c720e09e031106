"""The sequencer's strips under Blender 4.2-5.0 names, the active strip, and StripError.

Blender 5.0 names (strips, Strip, context.sequencer_scene) are used when present, with the
4.2-4.5 names (sequences, Sequence) as fallback.
"""

from __future__ import annotations

from typing import Any

import bpy

from facefuse import HostError

SWAPPABLE = ('MOVIE', 'IMAGE')


class StripError(HostError):
    """The strip, its settings or the file system stop a swap; the message tells the user why."""


def strip_type() -> Any:
    """bpy.types.Strip (5.0) or bpy.types.Sequence (4.2-4.5)."""
    return getattr(bpy.types, "Strip", None) or bpy.types.Sequence


def sequencer_scene(context: Any) -> Any:
    """The scene the sequencer shows: context.sequencer_scene (5.0) or context.scene."""
    return getattr(context, "sequencer_scene", None) or getattr(context, "scene", None)


def top_strips(editor: Any) -> Any:
    strips = getattr(editor, "strips", None)
    return strips if strips is not None else editor.sequences


def all_strips(editor: Any) -> Any:
    strips = getattr(editor, "strips_all", None)
    return strips if strips is not None else editor.sequences_all


def container_of(editor: Any, strip: Any) -> Any:
    """The collection holding `strip`: its meta strip's, or the editor's top level."""
    meta = strip.parent_meta()
    return top_strips(editor if meta is None else meta)


def active_strip(context: Any) -> tuple[Any, Any]:
    """(scene, active strip) of the sequencer; StripError when there is none."""
    scene = sequencer_scene(context)
    editor = scene.sequence_editor if scene is not None else None
    strip = editor.active_strip if editor is not None else None
    if strip is None:
        raise StripError("No active strip: click a movie or image strip in the Sequencer first")
    return scene, strip


def require_swappable(strip: Any) -> None:
    if strip.type == 'META':
        raise StripError(f"Strip '{strip.name}' is a meta strip: open it (Tab) and swap the "
                         "movie or image strips inside")
    if strip.type not in SWAPPABLE:
        kind = strip.type.lower().replace("_", " ")
        raise StripError(f"Strip '{strip.name}' is a {kind} strip: face swap works on movie "
                         "and image strips")


def require_own_picture(editor: Any, strip: Any) -> None:
    """StripError when Blender shows something other than the strip's own frames: an effect
    (Speed Control, a transition, a blur...) takes it, or a meta strip holding it, as input,
    or a meta strip holding it plays reversed or strobed."""
    holder = strip
    while holder is not None:
        where = f"Strip '{strip.name}' is " + (
            "" if holder == strip else f"inside meta strip '{holder.name}', ")
        effect = _effect_taking(editor, holder)
        if effect is not None:
            kind = effect.bl_rna.properties["type"].enum_items[effect.type].name
            raise StripError(f"{where}the input of the {kind} effect '{effect.name}': swap it "
                             "without the effect, then apply the effect to the result strip")
        if holder != strip and (holder.use_reverse_frames or holder.strobe > 1.0):
            raise StripError(f"{where}which plays reversed or strobed: swap it outside "
                             "the meta strip")
        holder = holder.parent_meta()


def _effect_taking(editor: Any, strip: Any) -> Any:
    """The first effect strip with `strip` as an input, or None."""
    return next((effect for effect in all_strips(editor)
                 if strip in (getattr(effect, "input_1", None),
                              getattr(effect, "input_2", None))), None)
