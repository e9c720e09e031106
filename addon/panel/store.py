"""What the panel remembers between runs, in Qt's own settings store (QSettings: an INI file
under the user's config folder, ~/.config/facefuse/panel.ini on Linux): the settings form's
values (models and options), the source photos, the output kind and the output folder the
user chose; and beside it, one JSON file per shot (session.py) in the folder `panel-sessions`
(~/.config/facefuse/panel-sessions/<key>.json): the work on that shot, restored when it is
opened again. A file per shot rather than INI keys: a shot's casting is a small document,
written whole and atomically, read only when its shot is opened, and one shot's file never
touches another's.

`PanelStore()` opens the user's store; tests point Qt's INI location at a folder of their own
(QSettings.setPath) before making one.
"""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path
from typing import Any

from PySide6.QtCore import QSettings

from facefuse import InputError, atomic_write_bytes, load_json_file

from .host import Clip
from .session import Session, shot_key

log = logging.getLogger(__name__)

ORGANISATION, APPLICATION = "facefuse", "panel"
FORM, SOURCES, OUTPUT, FOLDER = "form", "sources", "output", "folder"
SESSIONS = "panel-sessions"


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

    def session_path(self, clip: Clip) -> Path:
        """Where the session of `clip` is kept (beside the settings file)."""
        return Path(self.settings.fileName()).parent / SESSIONS / f"{shot_key(clip)}.json"

    def session(self, clip: Clip) -> Session | None:
        """The kept session of `clip`, or None (none yet, or one that cannot be read)."""
        path = self.session_path(clip)
        if not os.path.lexists(path):
            return None
        try:  # the one reader of small files: a FIFO or a 10000-deep file never hangs it
            data = load_json_file(path, f"the session {path}")
        except InputError as exc:
            log.warning("facefuse panel: %s; starting afresh", exc)
            return None
        return Session.from_json(data)

    def save_session(self, clip: Clip, session: Session) -> None:
        """Keep `session` for `clip` (written whole, atomically; unchanged: not rewritten)."""
        path = self.session_path(clip)
        data = json.dumps(session.to_json(clip), indent=1, sort_keys=True).encode()
        try:
            if path.is_file() and path.read_bytes() == data:
                return
            path.parent.mkdir(parents=True, exist_ok=True)
            atomic_write_bytes(path, data)
        except OSError as exc:
            log.warning("facefuse panel: the session %s cannot be written: %s", path, exc)

    def _list(self, key: str) -> list[str]:
        try:
            values = json.loads(str(self.settings.value(key, "[]")))
        except json.JSONDecodeError:
            return []
        return [str(v) for v in values] if isinstance(values, list) else []
