"""The add-on's preferences (Preferences > Add-ons > facefuse): the models and their download.

Only draws: the Download Models operator (operators.py) does the work, with Blender's own
progress. The models listed are the active strip's, else facefuse's default set.
"""

from __future__ import annotations

from typing import Any

import bpy
from bpy.types import AddonPreferences

from facefuse import absent_models

from . import settings


class FacefusePreferences(AddonPreferences):
    bl_idname = __package__

    def draw(self, context: Any) -> None:
        from .operators import models_settings
        from .panels import wrapped

        layout = self.layout
        absent = absent_models(models_settings(context))
        if not absent:
            layout.label(text="Every model facefuse needs is downloaded", icon='CHECKMARK')
            return
        names = ", ".join(name for _, name in absent)
        wrapped(layout, f"Not downloaded yet: {names}", 'ERROR')
        if not settings.online_access():
            wrapped(layout, "Allow online access (Preferences > System) to download them",
                    'INFO')
        layout.operator("facefuse.fetch_models", icon='IMPORT')


CLASSES = (FacefusePreferences,)

# Blender's own symmetric pair: registers in order, unregisters in reverse
register, unregister = bpy.utils.register_classes_factory(CLASSES)
