"""Start the panel: on plain files (`facefuse panel [CLIP]`) or for another host's clip (the
Resolve host's `facefuse resolve open --job J --result R` gives it its JobHost). Both return
once the window is closed."""

from __future__ import annotations

import sys
from pathlib import Path

from PySide6.QtWidgets import QApplication

from facefuse import ExitCode, Settings

from .host import FileHost, Host
from .window import PanelWindow


def application() -> QApplication:
    """The process's QApplication (made once)."""
    existing = QApplication.instance()
    if isinstance(existing, QApplication):
        return existing
    return QApplication(sys.argv[:1])


def run_standalone(clip: Path | None, base: Settings | None = None) -> int:
    run_host(FileHost(clip), base)
    return ExitCode.OK


def run_host(host: Host, base: Settings | None = None, raise_window: bool = False) -> None:
    """The panel on `host`'s clip until the window is closed (raised above others: when
    another application started it)."""
    app = application()
    window = PanelWindow(host, base)
    window.show()
    if raise_window:
        window.raise_()
    app.exec()
