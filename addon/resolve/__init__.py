"""facefuse for DaVinci Resolve: facefuse.lua (the Workspace > Scripts menu script, for every
edition), install.py (puts it into Resolve's Scripts folder) and bridge.py (Studio's external
scripting). Installed from the wheel as the package ``facefuse_resolve``; see docs/resolve.md."""

from facefuse import prefer_source_tree

prefer_source_tree(__name__, "addon.resolve")
