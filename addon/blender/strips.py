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
    if strip.type not in SWAPPABLE:
        kind = strip.type.lower().replace("_", " ")
        raise StripError(f"Strip '{strip.name}' is a {kind} strip: face swap works on movie "
                         "and image strips")
