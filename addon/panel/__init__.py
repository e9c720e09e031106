"""The facefuse Qt panel (PySide6): one clip's timeline with the review on it, its people,
sources, settings, preview, render and result, in Resolve (started by the Lua launcher) or on
plain files (`facefuse panel CLIP`); docs/panel.md is its page.

layout.py places the widgets (widgets.py, timeline.py, people.py, settings.py, viewer.py and
viewer_bar.py: they show what they are given and emit signals) · actions.py (requests, job
plumbing), frames.py (the frame under the playhead), live.py (its swap, made in the background
as the playhead moves, and the session's picture cache), looks.py (thumbnails, Find people,
Preview), rendering.py and downloads.py start engine jobs (worker.py: QThreads) and show what
comes back · review.py, corrections.py and session.py (a shot's kept work) are plain data ·
store.py what is remembered · window.py wires it all to a host (host.py) · app.py starts it.
Installed from the wheel as the package ``facefuse_panel``.
"""

from facefuse import prefer_source_tree

prefer_source_tree(__name__, "addon.panel")
