"""Swapped frames -> an image strip on the channel above the source, frame-aligned with it.

Data API only (strips.new_image, then elements.append per frame): it works headless and with
bpy as a module, where the strip-add operators have no sequencer area to run in.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import bpy

from .frames import SwapPlan
from .strips import StripError, all_strips, container_of

NAME_LIMIT = 63


def find_strip(plan: SwapPlan) -> tuple[Any, Any]:
    """(scene, strip) of a plan, or StripError when either was deleted or renamed meanwhile."""
    try:
        return strip_named(plan.scene, plan.strip)
    except StripError:
        raise StripError(f"Strip '{plan.strip}' is gone; the swapped frames are in "
                         f"{plan.output_dir}") from None


def strip_named(scene_name: str, strip_name: str) -> tuple[Any, Any]:
    """(scene, strip) by names; StripError when either does not exist."""
    scene = bpy.data.scenes.get(scene_name)
    editor = scene.sequence_editor if scene is not None else None
    strip = all_strips(editor).get(strip_name) if editor is not None else None
    if strip is None:
        raise StripError(f"Strip '{strip_name}' is gone")
    return scene, strip


def add_result_strip(plan: SwapPlan) -> Any:
    """Create (or re-create) the result strip of a finished swap; it replaces the previous one.

    One element per trimmed source frame, in order, starting at the source's first frame, on the
    lowest free channel above the source. StripError when frames are missing.
    """
    scene, source = find_strip(plan)
    missing = plan.missing_outputs()
    if missing:
        shown = ", ".join(map(str, missing[:8])) + (" ..." if len(missing) > 8 else "")
        raise StripError(f"{len(missing)} frame(s) of '{plan.strip}' are not rendered yet "
                         f"({shown}); press Swap Strip again to finish them")
    strips = container_of(scene.sequence_editor, source)
    _remove_previous(strips, source)
    start, end = plan.frame_start, plan.frame_start + len(plan.numbers)
    channel = free_channel(strips, start, end, source.channel + 1)
    names = [plan.output_name(n) for n in plan.numbers]
    folder = plan.output_dir_setting if plan.output_dir_setting.endswith(("/", "\\")) \
        else plan.output_dir_setting + "/"
    name = f"{source.name} swap"[:NAME_LIMIT]
    strip = strips.new_image(name, str(plan.output_dir / names[0]), channel, start)
    for file_name in names[1:]:
        strip.elements.append(file_name)
    strip.directory = folder
    strip.facefuse.result_of = source.name
    source.facefuse.result_strip = strip.name
    return strip


def free_channel(strips: Any, start: int, end: int, lowest: int) -> int:
    """The lowest channel >= lowest with no strip overlapping frames [start, end)."""
    busy = {s.channel for s in strips
            if s.frame_final_start < end and start < s.frame_final_end}
    channel = lowest
    while channel in busy:
        channel += 1
    if channel > 128:
        raise StripError("No free channel above the strip for the result")
    return channel


def _remove_previous(strips: Any, source: Any) -> None:
    previous = strips.get(source.facefuse.result_strip) if source.facefuse.result_strip else None
    if previous is not None and previous.facefuse.result_of == source.name:
        strips.remove(previous)


def resolved(strip: Any, frame: int) -> Path:
    """The file an image strip shows at timeline frame `frame` (absolute)."""
    element = strip.strip_elem_from_frame(frame)
    return Path(bpy.path.abspath(strip.directory)) / element.filename
