"""Swapped frames -> an image strip on the channel above the source, frame-aligned with it and
drawn exactly over it.

Data API only (strips.new_image, then elements.append per frame): it works headless and with
bpy as a module, where the strip-add operators have no sequencer area to run in. The swapped
frames have the source's pixel size, so the source's transform (where Add > Movie/Image put
its fit to the project), crop, flips, blend and Color settings make the result draw as the
source does. Its modifiers are not repeated (the swap message says so).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import bpy

from .frames import StripSwap
from .strips import StripError, all_strips, container_of

NAME_LIMIT = 63
TRANSFORM = ("offset_x", "offset_y", "scale_x", "scale_y", "rotation", "origin", "filter")
CROP = ("min_x", "max_x", "min_y", "max_y")
DRAWING = ("use_flip_x", "use_flip_y", "blend_type", "blend_alpha", "alpha_mode",
           "color_saturation", "color_multiply", "multiply_alpha")


def find_strip(plan: StripSwap) -> tuple[Any, Any]:
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


def add_result_strip(plan: StripSwap) -> Any:
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
    mute = _remove_previous(strips, source)
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
    draw_as(strip, source, same_encoding=_keeps_encoding(plan))
    strip.mute = mute
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


def draw_as(strip: Any, source: Any, same_encoding: bool) -> None:
    """Give `strip` the framing, compositing and Color settings of `source` (same pixel size),
    and its colour space when `same_encoding` (the files hold the source's encoding)."""
    for name in TRANSFORM:
        setattr(strip.transform, name, getattr(source.transform, name))
    for name in CROP:
        setattr(strip.crop, name, getattr(source.crop, name))
    for name in DRAWING:
        setattr(strip, name, getattr(source, name))
    if same_encoding:
        strip.colorspace_settings.name = source.colorspace_settings.name


def _keeps_encoding(plan: StripSwap) -> bool:
    # the engine writes an EXR from display-referred input as scene-linear (facefuse.color),
    # which Blender reads as linear by default; every other output keeps the input's encoding
    output, source = (Path(plan.request.output.path).suffix.lower(),
                      Path(plan.request.input.path).suffix.lower())
    return output != ".exr" or source == ".exr"


def _remove_previous(strips: Any, source: Any) -> bool:
    """Remove the source's previous result strip: whether it was muted (the new one keeps
    that)."""
    previous = strips.get(source.facefuse.result_strip) if source.facefuse.result_strip else None
    if previous is None or previous.facefuse.result_of != source.name:
        return False
    mute = bool(previous.mute)
    strips.remove(previous)
    return mute


def resolved(strip: Any, frame: int) -> Path:
    """The file an image strip shows at timeline frame `frame` (absolute)."""
    element = strip.strip_elem_from_frame(frame)
    return Path(bpy.path.abspath(strip.directory)) / element.filename
