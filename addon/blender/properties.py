"""The face-swap settings stored on each strip (`strip.facefuse`), saved in the .blend.

These are what the farm reads (headless.py): sources, target-face choice, models, mask, smoothing,
output folder and format, and whether the strip is marked for swapping. File paths accept
Blender's `//` (relative to the .blend) and are resolved with bpy.path.abspath when used.
"""

from __future__ import annotations

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

from facefuse.config import Settings

from . import convert

DEFAULTS = Settings()
RELATIVE = {'PATH_SUPPORTS_BLEND_RELATIVE'}

SELECTOR_ITEMS = (
    ('one', "Largest", "Swap the main face of the shot (the largest one)"),
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
    similarity: FloatProperty(name="Similarity", min=-1.0, max=1.0, default=DEFAULTS.similarity,
                              description="How alike a face must be to the reference to be "
                                          "swapped (cosine similarity of identities)")

    detector: StringProperty(name="Detector", default=DEFAULTS.detector,
                             description="Face detector: a model name or an .onnx file")
    recogniser: StringProperty(name="Recogniser", default=DEFAULTS.recogniser,
                               description="Identity model: a model name or an .onnx file")
    swapper: StringProperty(name="Swapper", default=DEFAULTS.swapper,
                            description="Face swapper: a model name or an .onnx file")
    use_enhancer: BoolProperty(name="Enhance", default=False,
                               description="Restore detail in the swapped face (slower)")
    enhancer: StringProperty(name="Enhancer", default="gfpgan_1.4",
                             description="Face restorer: a model name or an .onnx file")
    enhancer_blend: FloatProperty(name="Enhancer Blend", min=0.0, max=1.0,
                                  default=DEFAULTS.enhancer_blend, subtype='FACTOR')
    providers: EnumProperty(name="Runtime", items=PROVIDER_ITEMS, default='auto')
    models_dir: StringProperty(name="Models Folder", subtype='DIR_PATH', options=RELATIVE,
                               description="Where models are kept (empty: facefuse's default, "
                                           "$FACEFUSE_MODELS or the user cache)")
    cache_dir: StringProperty(name="Cache Folder", subtype='DIR_PATH', options=RELATIVE,
                              description="Embedding cache (empty: facefuse's default); the "
                                          "analysis cache and previews sit beside it")

    mask_blur: FloatProperty(name="Mask Blur", min=0.0, max=1.0, default=DEFAULTS.mask_blur,
                             subtype='FACTOR', description="Feathering of the pasted face")
    use_smoothing: BoolProperty(name="Smooth Landmarks", default=True,
                                description="Steady the face over time (no lag)")

    output_dir: StringProperty(name="Output Folder", subtype='DIR_PATH', options=RELATIVE,
                               description="Where the swapped frames go (empty: "
                                           f"{convert.DEFAULT_OUTPUT}<strip>/ next to the .blend)")
    file_format: EnumProperty(name="Format", items=FORMAT_ITEMS, default='AUTO')
    farm: BoolProperty(name="Swap on Farm",
                       description="Render this strip when headless.main() runs without --strip")

    result_strip: StringProperty(name="Result Strip",
                                 description="The image strip the last swap created")
    result_of: StringProperty(name="Result Of",
                              description="On a result strip: the strip it was swapped from")


CLASSES = (FacefuseSource, FacefuseStripSettings)


def register() -> None:
    for cls in CLASSES:
        bpy.utils.register_class(cls)
    convert.strip_type().facefuse = PointerProperty(type=FacefuseStripSettings)


def unregister() -> None:
    del convert.strip_type().facefuse
    for cls in reversed(CLASSES):
        bpy.utils.unregister_class(cls)
