"""What the Qt panel's tests share: a shown window and waiting until nothing runs or waits to
run (their `base` settings and `source` photo are fixtures in conftest.py)."""

from __future__ import annotations

from addon.panel.window import PanelWindow

WAIT_MS = 60000


def shown_window(qtbot, host, base) -> PanelWindow:
    window = PanelWindow(host, base)
    qtbot.addWidget(window)
    window.show()
    return window


def wait_idle(qtbot, window: PanelWindow) -> None:
    """Until no job runs and no look waits for its turn."""
    qtbot.waitUntil(lambda: not window.jobs.runner.jobs and not window.act.pending,
                    timeout=WAIT_MS)
