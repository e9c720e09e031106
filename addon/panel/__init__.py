"""The facefuse Qt panel (PySide6): sources, face pick, settings, preview and render of one
clip, in Resolve (started by the Lua launcher) or on plain files (`facefuse panel CLIP`).

widgets.py: widgets that only emit signals · settings.py: the settings form built from
facefuse.tunable_options() · worker.py: engine work on QThreads · window.py: the window
that wires them to a host. Installed from the wheel as the package ``facefuse_panel``.
"""

from facefuse import prefer_source_tree

prefer_source_tree(__name__, "addon.panel")
