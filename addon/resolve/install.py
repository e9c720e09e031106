"""Put the Lua launcher into Resolve's Scripts folder (`facefuse resolve install [--uninstall]`).

The launcher is facefuse.lua beside this file with one line changed: the command that starts
facefuse, written as this Python's absolute path (`<python> -m facefuse resolve open`), because
Resolve's own environment does not have the user's virtual environment on its PATH. At run time
$FACEFUSE_RESOLVE_COMMAND overrides it. Files are written atomically; a file of that name that
is not ours is never overwritten or removed.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from pathlib import Path

from facefuse import HostError, OutputError, atomic_write_bytes

SCRIPT_NAME = "facefuse.lua"
COMMAND_LINE = 'local INSTALLED_COMMAND = ""'
OWNER_MARK = "-- facefuse launcher"
SANDBOX_CONTAINER = "Library/Containers/com.blackmagic-design.DaVinciResolveLite"
_SUPPORT = "Blackmagic Design/DaVinci Resolve"


class InstallError(HostError):
    """The launcher cannot be installed or removed; one sentence."""


def scripts_folder(platform: str = sys.platform, env: Mapping[str, str] = os.environ,
                   home: Path | None = None) -> Path:
    """Resolve's per-user Fusion/Scripts/Utility folder on this OS."""
    home = Path(home) if home is not None else Path.home()
    if platform == "win32":
        appdata = env.get("APPDATA") or str(home / "AppData" / "Roaming")
        return Path(appdata) / _SUPPORT / "Support" / "Fusion" / "Scripts" / "Utility"
    if platform == "darwin":
        return home / "Library" / "Application Support" / _SUPPORT / "Fusion" / "Scripts" / \
            "Utility"
    return home / ".local" / "share" / "DaVinciResolve" / "Fusion" / "Scripts" / "Utility"


def sandboxed_resolve(home: Path | None = None, platform: str = sys.platform) -> bool:
    """Whether the App Store (sandboxed) Resolve is installed for this user (macOS only)."""
    home = Path(home) if home is not None else Path.home()
    return platform == "darwin" and (home / SANDBOX_CONTAINER).is_dir()


def default_command(platform: str = sys.platform) -> str:
    """The command line the launcher runs: this Python, absolute, with `-m facefuse resolve
    open` (it appends --job and --result)."""
    return f"{_quote(sys.executable, platform)} -m facefuse resolve open"


def launcher_text(command: str) -> str:
    """facefuse.lua with `command` written in."""
    source = (Path(__file__).with_name(SCRIPT_NAME)).read_text(encoding="utf-8")
    if COMMAND_LINE not in source:
        raise InstallError(f"{SCRIPT_NAME} lacks its command line: the package is damaged")
    literal = _lua_long_string(command)
    return source.replace(COMMAND_LINE, f"local INSTALLED_COMMAND = {literal}", 1)


def install(folder: Path | None = None, command: str | None = None) -> Path:
    """Write the launcher into `folder` (default: scripts_folder()); its path. OutputError
    (exit 6) when the folder refuses it (read-only, full, permissions)."""
    folder = Path(folder) if folder is not None else scripts_folder()
    target = folder / SCRIPT_NAME
    _check_ours(target)
    try:
        folder.mkdir(parents=True, exist_ok=True)
        atomic_write_bytes(target, launcher_text(command or default_command()).encode("utf-8"))
    except OSError as exc:
        raise OutputError(f"cannot write {target}: {exc.strerror or exc}") from None
    return target


def uninstall(folder: Path | None = None) -> Path | None:
    """Remove the launcher from `folder`; its path, or None when it was not there."""
    target = (Path(folder) if folder is not None else scripts_folder()) / SCRIPT_NAME
    if not target.exists():
        return None
    _check_ours(target)
    try:
        target.unlink()
    except OSError as exc:
        raise OutputError(f"cannot remove {target}: {exc.strerror or exc}") from None
    return target


def _check_ours(target: Path) -> None:
    if not target.exists():
        return
    try:
        text = target.read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        raise InstallError(f"cannot read {target}: {exc.strerror or exc}") from None
    if OWNER_MARK not in text:
        raise InstallError(f"{target} exists and is not facefuse's launcher: move it away first")


def _quote(text: str, platform: str) -> str:
    if platform == "win32":
        return f'"{text}"'
    return "'" + text.replace("'", "'\\''") + "'"


def _lua_long_string(text: str) -> str:
    """`text` as a Lua long string literal, with enough `=` that the closing bracket is the
    first one Lua finds (text holding `]]`, or ending in `]`, needs a level above)."""
    level = 0
    while (text + f"]{'=' * level}]").find(f"]{'=' * level}]") != len(text):
        level += 1
    return f"[{'=' * level}[{text}]{'=' * level}]"
