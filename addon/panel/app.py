"""Start the panel: on plain files (`facefuse panel [CLIP]`) or for another host's clip (the
Resolve host's `facefuse resolve open --job J --result R` gives it its JobHost). Both return
once the window is closed.

Qt ends the process (exit 134) when it cannot reach a display, so before the first window the
panel checks, on Linux, that there is one (DISPLAY or WAYLAND_DISPLAY, or QT_QPA_PLATFORM
naming another platform) and, on X11, that the system libraries Qt's xcb platform plugin loads
are installed (Qt's own message names only libxcb-cursor, whichever is missing); without them
it says so in one sentence naming each missing library and its Debian/Ubuntu package
(InputError, exit code 2).
"""

from __future__ import annotations

import ctypes
import os
import sys
from collections.abc import Callable, Mapping
from pathlib import Path

from PySide6.QtWidgets import QApplication

from facefuse import ExitCode, InputError, Settings

from .host import FileHost, Host
from .window import PanelWindow

# the system libraries (sonames) Qt 6's xcb platform plugin links, beyond libc and Qt's own
XCB_PLUGIN_LIBRARIES = (
    "libxcb.so.1", "libxcb-cursor.so.0", "libxcb-icccm.so.4", "libxcb-image.so.0",
    "libxcb-keysyms.so.1", "libxcb-randr.so.0", "libxcb-render.so.0",
    "libxcb-render-util.so.0", "libxcb-shape.so.0", "libxcb-shm.so.0", "libxcb-sync.so.1",
    "libxcb-util.so.1", "libxcb-xfixes.so.0", "libxcb-xkb.so.1", "libxkbcommon.so.0",
    "libxkbcommon-x11.so.0", "libX11.so.6", "libX11-xcb.so.1")


def loads(soname: str) -> bool:
    """Whether the dynamic loader finds and loads `soname` here."""
    try:
        ctypes.CDLL(soname)
    except OSError:
        return False
    return True


def debian_package(soname: str) -> str:
    """The Debian/Ubuntu package that ships `soname` by the usual naming (libxcb-icccm.so.4:
    libxcb-icccm4; libxkbcommon-x11.so.0: libxkbcommon-x11-0)."""
    stem, _, version = soname.partition(".so.")
    return f"{stem}{'-' if stem[-1].isdigit() else ''}{version}".lower()


def display_problem(env: Mapping[str, str], platform: str = sys.platform,
                    library_loads: Callable[[str], bool] = loads) -> str | None:
    """Why Qt could not show a window here (one sentence), or None."""
    if not platform.startswith("linux") or env.get("QT_QPA_PLATFORM"):
        return None
    if not env.get("DISPLAY") and not env.get("WAYLAND_DISPLAY"):
        return ("the panel needs a display and there is none (DISPLAY and WAYLAND_DISPLAY are "
                "not set): run it in a desktop session, or use `facefuse render` here")
    if env.get("WAYLAND_DISPLAY"):
        return None
    missing = [name for name in XCB_PLUGIN_LIBRARIES if not library_loads(name)]
    if not missing:
        return None
    packages = " ".join(dict.fromkeys(debian_package(name) for name in missing))
    return (f"the panel's Qt needs X11 libraries that are not installed ({', '.join(missing)}):"
            f" install them (Debian/Ubuntu: sudo apt install {packages}) and start again")


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
                   sources: tuple[Path, ...] = (), given: frozenset[str] | None = None) -> int:
    run_host(FileHost(clip), base, sources=sources, given=given)
    return ExitCode.OK


def run_host(host: Host, base: Settings | None = None, raise_window: bool = False,
             sources: tuple[Path, ...] = (), given: frozenset[str] | None = None) -> None:
    """The panel on `host`'s clip until the window is closed (raised above others: when
    another application started it). sources: photos to add to the remembered ones; given:
    the Settings fields the command line gave (they win over remembered values)."""
    app = application()
    window = PanelWindow(host, base, given=given)
    if sources:
        window.ui.sources.add(list(sources))
    window.show()
    if raise_window:
        window.raise_()
    app.exec()
