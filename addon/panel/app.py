"""Start the panel: on plain files (`facefuse panel [CLIP]`) or for a Resolve launcher's job
(`facefuse resolve open --job J --result R`). Both return the process exit code once the window
is closed; the job's result file is written whatever happens."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from PySide6.QtWidgets import QApplication

from facefuse.config import Settings
from facefuse.errors import ExitCode

from .host import FileHost, JobHost
from .window import PanelWindow

# Resolve starts the launcher with its own Qt plug-in folders in the environment; ours differ
RESOLVE_QT_VARIABLES = ("QT_PLUGIN_PATH", "QT_QPA_PLATFORM_PLUGIN_PATH", "QML2_IMPORT_PATH")


def application() -> QApplication:
    """The process's QApplication (made once)."""
    existing = QApplication.instance()
    if isinstance(existing, QApplication):
        return existing
    return QApplication(sys.argv[:1])


def run_standalone(clip: Path | None, base: Settings | None = None) -> int:
    app = application()
    window = PanelWindow(FileHost(clip), base)
    window.show()
    app.exec()
    return ExitCode.OK


def run_for_job(job: Path, result: Path, base: Settings | None = None) -> int:
    for name in RESOLVE_QT_VARIABLES:
        os.environ.pop(name, None)
    host = JobHost(job, result)
    app = application()
    window = PanelWindow(host, base)
    window.show()
    window.raise_()
    app.exec()
    return ExitCode.OK if host.placement is not None else ExitCode.USAGE
