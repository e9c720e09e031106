"""Start the panel: on plain files (`facefuse panel [CLIP]`) or for another host's clip (the
Resolve host's `facefuse resolve open --job J --result R` gives it its JobHost). Both return
once the window is closed.

Qt ends the process (exit 134) when it cannot reach a display, so before the first window the
panel checks, on Linux, that there is one (DISPLAY or WAYLAND_DISPLAY, or QT_QPA_PLATFORM
naming another platform) and that X11's libxcb-cursor, which Qt 6.5+ needs, is installed;
without them it says so in one sentence (InputError, exit code 2).
"""

from __future__ import annotations

import ctypes.util
import os
import sys
from collections.abc import Mapping
from pathlib import Path

from PySide6.QtWidgets import QApplication

from facefuse import ExitCode, InputError, Settings

from .host import FileHost, Host
from .window import PanelWindow


def display_problem(env: Mapping[str, str], platform: str = sys.platform) -> str | None:
    """Why Qt could not show a window here (one sentence), or None."""
    if not platform.startswith("linux") or env.get("QT_QPA_PLATFORM"):
        return None
    if not env.get("DISPLAY") and not env.get("WAYLAND_DISPLAY"):
        return ("the panel needs a display and there is none (DISPLAY and WAYLAND_DISPLAY are "
                "not set): run it in a desktop session, or use `facefuse render` here")
    if not env.get("WAYLAND_DISPLAY") and ctypes.util.find_library("xcb-cursor") is None:
        return ("the panel's Qt needs the X11 library libxcb-cursor, which is not installed: "
                "install it (Debian/Ubuntu: sudo apt install libxcb-cursor0) and start again")
    return None


def application() -> QApplication:
    """The process's QApplication (made once); InputError when there is no display."""
    existing = QApplication.instance()
    if isinstance(existing, QApplication):
        return existing
    problem = display_problem(os.environ)
    if problem is not None:
        raise InputError(problem)
    return QApplication(sys.argv[:1])


def run_standalone(clip: Path | None, base: Settings | None = None,
                   sources: tuple[Path, ...] = ()) -> int:
    run_host(FileHost(clip), base, sources=sources)
    return ExitCode.OK


def run_host(host: Host, base: Settings | None = None, raise_window: bool = False,
             sources: tuple[Path, ...] = ()) -> None:
    """The panel on `host`'s clip until the window is closed (raised above others: when
    another application started it). sources: photos to add to the remembered ones."""
    app = application()
    window = PanelWindow(host, base)
    if sources:
        window.ui.sources.add(list(sources))
    window.show()
    if raise_window:
        window.raise_()
    app.exec()
