"""What the panel remembers between runs, in Qt's own settings store (QSettings: an INI file
under the user's config folder, ~/.config/facefuse/panel.ini on Linux): the settings form's
values (models and options), the source photos, the output kind and the output folder the
user chose. Clips, people and results are not remembered.

`PanelStore()` opens the user's store; tests point Qt's INI location at a folder of their own
(QSettings.setPath) before making one.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

from PySide6.QtCore import QSettings

log = logging.getLogger(__name__)

ORGANISATION, APPLICATION = "facefuse", "panel"
FORM, SOURCES, OUTPUT, FOLDER = "form", "sources", "output", "folder"


class PanelStore:
    """The panel's remembered values (see the module docstring)."""

    def __init__(self, settings: QSettings | None = None) -> None:
        self.settings = settings or QSettings(QSettings.Format.IniFormat,
                                              QSettings.Scope.UserScope, ORGANISATION,
                                              APPLICATION)

    def form(self) -> dict[str, Any]:
        """The form's values by Settings field name ({} when none were saved or the saved
        ones cannot be read)."""
        text = self.settings.value(FORM, "")
        try:
            values = json.loads(str(text)) if text else {}
        except json.JSONDecodeError:
            log.warning("facefuse panel: the saved settings in %s are not JSON; using defaults",
                        self.settings.fileName())
            return {}
        return values if isinstance(values, dict) else {}

    def save_form(self, values: dict[str, Any]) -> None:
        self.settings.setValue(FORM, json.dumps(values, sort_keys=True))

    def sources(self) -> list[Path]:
        return [Path(p) for p in self._list(SOURCES)]

    def save_sources(self, paths: list[Path]) -> None:
        self.settings.setValue(SOURCES, json.dumps([str(p) for p in paths]))

    def output(self) -> str:
        return str(self.settings.value(OUTPUT, ""))

    def save_output(self, kind: str) -> None:
        self.settings.setValue(OUTPUT, kind)

    def folder(self) -> str:
        return str(self.settings.value(FOLDER, ""))

    def save_folder(self, folder: str) -> None:
        self.settings.setValue(FOLDER, folder)

    def sync(self) -> None:
        self.settings.sync()

    def _list(self, key: str) -> list[str]:
        try:
            values = json.loads(str(self.settings.value(key, "[]")))
        except json.JSONDecodeError:
            return []
        return [str(v) for v in values] if isinstance(values, list) else []
