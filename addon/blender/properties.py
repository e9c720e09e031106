"""The face-swap settings stored on each strip (`strip.facefuse`), saved in the .blend.

These are what the farm reads (headless.py): sources, target-face choice, models, mask, smoothing,
output folder and format, whether the strip is marked for swapping, and the strip's session: its
people with their casting (own source, skip, consent record), whether a swap requires consent
and the project the records name, and its corrections (skip, keep, hold or swap a person over a
range of frames). Preview, Swap, Review and the farm all build their request from
these (convert.strip_swap), so a .blend saved and opened again renders the same. File paths accept
Blender's `//` (relative to the .blend) and are resolved with bpy.path.abspath when used.
"""

from __future__ import annotations

from typing import Any

import bpy
from bpy.props import (
    BoolProperty,
    CollectionProperty,
    EnumProperty,
    FloatProperty,
    IntProperty,
    PointerProperty,
    StringProperty,
)
from bpy.types import PropertyGroup

from facefuse import Settings, Tunable, tunable_options

from . import convert, review, strips

DEFAULTS = Settings()
RELATIVE = {'PATH_SUPPORTS_BLEND_RELATIVE'}

SELECTOR_ITEMS = (
    ('one', "Main Person", "Swap the person seen most, in every shot they appear in"),
    ('many', "All", "Swap every face"),
    ('reference', "Reference",
     "Swap the faces that look like a reference face picked under the playhead"),
)
FORMAT_ITEMS = (
    ('AUTO', "Auto", "The input's format for image sequences (EXR, DPX, TIFF), PNG otherwise"),
    ('png', "PNG", "8 or 16-bit PNG, as deep as the input"),
    ('exr', "OpenEXR", "Half or float EXR"),
    ('tif', "TIFF", "8 or 16-bit TIFF"),
)
PROVIDER_ITEMS = (
    ('auto', "Auto", "The fastest runtime installed (CUDA, TensorRT, CoreML, DirectML, CPU)"),
    ('cpu', "CPU", "The CPU only"),
)
CORRECTION_ITEMS = (
    ('skip', "Skip", "Do not swap the person in these frames"),
    ('keep', "Keep", "Keep the original picture (with a person: that person only)"),
    ('hold', "Hold", "Swap the person, filling frames where the face was lost"),
    ('swap', "Swap", "Swap the person although the target face rule did not choose them"),
)


def _source_changed(item: FacefuseSource, _context: bpy.types.Context) -> None:
    if item.checked_path != item.filepath:
        item.faces = -1
        item.thumbnail = ""


class FacefuseSource(PropertyGroup):
    """One source image: whose face goes in."""

    filepath: StringProperty(name="Source Image", subtype='FILE_PATH', options=RELATIVE,
                             update=_source_changed,
                             description="A photo of the face to put into the strip")
    faces: IntProperty(name="Faces", default=-1,
                       description="Faces found in the image by the last check (-1: not checked)")
    thumbnail: StringProperty(name="Thumbnail", subtype='FILE_PATH',
                              description="The thumbnail with the faces outlined")
    checked_path: StringProperty(description="The path the face count belongs to")


def _casting_changed(item: FacefusePerson, _context: bpy.types.Context) -> None:
    """A person skipped or swapped again: the strip's review markers say so."""
    scene = item.id_data
    pointer = item.as_pointer()
    for strip in strips.all_strips(scene.sequence_editor):
        if any(person.as_pointer() == pointer for person in strip.facefuse.people):
            review.mark_corrected(scene, strip.facefuse)
            return


class FacefusePerson(PropertyGroup):
    """One person of the strip's shot plan (from its last review) and what the swap does
    with them: their own source image (RenderRequest.plan.assign) or none (skip), and the
    performer's consent record (RenderRequest.policy.consent, docs/consent.md)."""

    person_id: StringProperty(name="Person", description="The plan's id (p1, p2, ...)")
    frames: IntProperty(name="Frames", description="Frames where the face was found")
    first: IntProperty(name="First Frame", description="First timeline frame seen")
    last: IntProperty(name="Last Frame", description="Last timeline frame seen")
    swapped: BoolProperty(name="Swapped", description="Whether the last review's plan swaps "
                                                      "this person")
    why: StringProperty(name="Why", description="The plan's decision in words")
    source: StringProperty(name="Own Source", subtype='FILE_PATH', options=RELATIVE,
                           description="A photo for this person only (empty: the strip's "
                                       "sources)")
    skip: BoolProperty(name="Skip", description="Never swap this person",
                       update=_casting_changed)
    consent: StringProperty(name="Consent Record", subtype='FILE_PATH', options=RELATIVE,
                            description="The performer's consent record (a JSON file, see "
                                        "docs/consent.md); a swap that requires consent "
                                        "refuses a person without a valid one")


class FacefuseCorrection(PropertyGroup):
    """One correction of the strip's plan: an entry of the engine's overrides
    (docs/overrides.md) over frames first..last in the media's numbers, as the engine counts
    them, so it stays on the same pictures when the strip is moved or trimmed."""

    first: IntProperty(name="First", description="First frame, in the media's numbers")
    last: IntProperty(name="Last", description="Last frame, in the media's numbers")
    person: StringProperty(name="Person", description="The person it applies to (p1, p2, "
                                                      "...); empty: everyone (Keep only)")
    action: EnumProperty(name="Action", items=CORRECTION_ITEMS, default='skip')


class FacefuseMarker(PropertyGroup):
    """A timeline marker the strip's last review made (only these are replaced on re-review):
    its flag (`label`, kind:person) over the flagged frames first..last (the engine's
    numbers); its name says when a correction covers them."""

    name: StringProperty()
    frame: IntProperty()
    label: StringProperty()
    person: StringProperty()
    first: IntProperty()
    last: IntProperty()


class FacefuseStripSettings(PropertyGroup):
    """Everything a face swap of this strip needs; the headless renderer reads the same."""

    sources: CollectionProperty(type=FacefuseSource, name="Sources")
    source_index: IntProperty(name="Active Source", min=0)

    selector: EnumProperty(name="Target Face", items=SELECTOR_ITEMS, default=DEFAULTS.selector,
                           description="Which faces in the strip are replaced")
    reference_index: IntProperty(name="Face Number", min=0, default=0,
                                 description="Number of the face under the playhead (from the "
                                             "left) to use as the reference")
    reference_faces: IntProperty(name="Faces Under Playhead", default=-1,
                                 description="Faces found under the playhead by the last look "
                                             "(-1: not looked yet)")
    reference_image: StringProperty(name="Reference", subtype='FILE_PATH', options=RELATIVE,
                                     description="Picture of the face to replace (made by "
                                                 "'Use Face'; any photo works)")

    providers: EnumProperty(name="Runtime", items=PROVIDER_ITEMS, default='auto')
    models_dir: StringProperty(name="Models Folder", subtype='DIR_PATH', options=RELATIVE,
                               description="Where models are kept (empty: facefuse's default, "
                                           "$FACEFUSE_MODELS or the user cache)")
    cache_dir: StringProperty(name="Cache Folder", subtype='DIR_PATH', options=RELATIVE,
                              description="Embedding cache (empty: facefuse's default); the "
                                          "analysis cache and previews sit beside it")

    use_smoothing: BoolProperty(name="Smooth Landmarks", default=True,
                                description="Steady the face over time (no lag)")

    output_dir: StringProperty(name="Output Folder", subtype='DIR_PATH', options=RELATIVE,
                               description="Where the swapped frames go (empty: "
                                           f"{convert.DEFAULT_OUTPUT}<strip>/ next to the .blend)")
    file_format: EnumProperty(name="Format", items=FORMAT_ITEMS, default='AUTO')
    farm: BoolProperty(name="Swap on Farm",
                       description="Render this strip when headless.main() runs without --strip")

    people: CollectionProperty(type=FacefusePerson, name="People")
    person_index: IntProperty(name="Active Person", min=0)
    require_consent: BoolProperty(name="Require Consent",
                                  description="Refuse to swap anyone without a valid consent "
                                              "record in scope (a studio settings file may "
                                              "require it anyway)")
    project: StringProperty(name="Project",
                            description="The project this swap is for, as consent records' "
                                        "scope names it (empty: none named)")
    review_markers: CollectionProperty(type=FacefuseMarker)
    report: StringProperty(name="Review Report", subtype='FILE_PATH', options=RELATIVE,
                           description="The report.json of the last review")
    flagged: IntProperty(name="Flagged Frames", default=-1,
                         description="Frames the last review flagged (-1: not reviewed)")
    corrections: CollectionProperty(type=FacefuseCorrection, name="Corrections")
    correction_index: IntProperty(name="Active Correction", min=0)
    overrides_file: StringProperty(name="Corrections File", subtype='FILE_PATH',
                                   options=RELATIVE,
                                   description="An overrides JSON made elsewhere (the command "
                                               "line, the panel, by hand), applied before the "
                                               "strip's own corrections (empty: "
                                               "overrides.json in the output folder, when "
                                               "there is one)")

    rendered_by: StringProperty(name="Rendered By",
                                description="The request fingerprints of this strip's own "
                                            "swaps, the latest last: finished frames they made "
                                            "are replaced without asking")
    replace_asked: StringProperty(name="Replace Asked",
                                  description="The finished frames the last Swap Strip stopped "
                                              "before replacing, made with other choices")
    result_strip: StringProperty(name="Result Strip",
                                 description="The image strip the last swap created")
    result_of: StringProperty(name="Result Of",
                              description="On a result strip: the strip it was swapped from")


def tunable_property(option: Tunable) -> dict[str, Any]:
    """Blender properties for one tunable engine setting, by attribute name.

    An optional model becomes two: `use_<name>` (on/off) and `<name>` (the model to use).
    """
    text = {"name": option.label, "description": option.help[:1].upper() + option.help[1:]}
    if option.kind == "bool":
        return {option.name: BoolProperty(default=option.default, **text)}
    if option.kind in ("model", "optional-model"):
        model = StringProperty(default=option.default or option.suggestion, **text)
        if option.kind == "model":
            return {option.name: model}
        switch = BoolProperty(name=f"Use {option.label}", default=option.default is not None,
                              description=f"Use a {option.label.lower()} model")
        return {f"use_{option.name}": switch, option.name: model}
    if option.kind in ("choice", "choices"):
        items = tuple((choice, choice.replace("-", " ").title(), "") for choice in option.choices)
        if option.kind == "choices":  # several at once: a set of the chosen names
            return {option.name: EnumProperty(items=items, default=set(option.default),
                                              options={'ENUM_FLAG'}, **text)}
        return {option.name: EnumProperty(items=items, default=option.default, **text)}
    bounds = {"min": option.minimum, "max": option.maximum}
    if option.kind == "int":
        return {option.name: IntProperty(default=option.default, **bounds, **text)}
    factor = {"subtype": 'FACTOR'} if (option.minimum, option.maximum) == (0.0, 1.0) else {}
    return {option.name: FloatProperty(default=option.default, **bounds, **factor, **text)}


def _add_tunable_properties(group: type) -> None:
    """Every engine setting the strip does not describe by hand becomes a strip property, so a
    new setting reaches the panel, the swap and the farm without host code of its own."""
    for option in tunable_options():
        if option.name not in group.__annotations__:
            group.__annotations__.update(tunable_property(option))


_add_tunable_properties(FacefuseStripSettings)
CLASSES = (FacefuseSource, FacefusePerson, FacefuseCorrection, FacefuseMarker,
           FacefuseStripSettings)


def register() -> None:
    for cls in CLASSES:
        bpy.utils.register_class(cls)
    strips.strip_type().facefuse = PointerProperty(type=FacefuseStripSettings)


def unregister() -> None:
    del strips.strip_type().facefuse
    for cls in reversed(CLASSES):
        bpy.utils.unregister_class(cls)
