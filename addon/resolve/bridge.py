"""The one Python file that touches DaVinci Resolve's scripting API (DaVinciResolveScript).

Used for Studio's external scripting (`facefuse resolve swap`): find the module, connect to the
running Resolve, collect the raw facts of the item under the playhead in the same job format the
Lua launcher writes (job_file.py), and carry out a placement (plan.Placement) exactly as the
launcher does. Every decision (frame mapping, track choice, output) is made in job_file.py and
plan.py, not here.

Resolve's API reports failure by returning None or False rather than raising; every call whose
result matters is checked and turned into a BridgeError sentence.
"""

from __future__ import annotations

import importlib
import os
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from facefuse import HostError

from .job_file import JOB_SCHEMA, JOB_VERSION
from .plan import Placement

MODULE = "DaVinciResolveScript"
CLIP_PROPERTIES = ("File Path", "Type", "FPS", "Frames", "Clip Name")
_API_FOLDERS = {
    "linux": ("/opt/resolve/Developer/Scripting", "/home/resolve/Developer/Scripting"),
    "darwin": (("/Library/Application Support/Blackmagic Design/DaVinci Resolve/Developer"
                "/Scripting"),),
    "win32": (r"%PROGRAMDATA%\Blackmagic Design\DaVinci Resolve\Support\Developer\Scripting",),
}
_LIBRARIES = {
    "linux": "/opt/resolve/libs/Fusion/fusionscript.so",
    "darwin": "/Applications/DaVinci Resolve/DaVinci Resolve.app/Contents/Libraries/Fusion/"
              "fusionscript.so",
    "win32": r"C:\Program Files\Blackmagic Design\DaVinci Resolve\fusionscript.dll",
}


class BridgeError(HostError):
    """Resolve, its scripting module or one of its calls stops the bridge; one sentence."""


def api_folders(env: Mapping[str, str] = os.environ, platform: str = sys.platform) -> list[Path]:
    """Where DaVinciResolveScript.py may be: $RESOLVE_SCRIPT_API/Modules, then this OS's
    documented install folder."""
    key = "linux" if platform.startswith("linux") else platform
    roots = [env["RESOLVE_SCRIPT_API"]] if env.get("RESOLVE_SCRIPT_API") else []
    roots += [_expand(folder, env) for folder in _API_FOLDERS.get(key, ())]
    return [Path(root) / "Modules" for root in roots]


def load_module(env: Mapping[str, str] = os.environ, platform: str = sys.platform) -> Any:
    """Import DaVinciResolveScript (already importable, or from api_folders). The module finds
    Resolve's library through $RESOLVE_SCRIPT_LIB; this OS's default is filled in when unset."""
    key = "linux" if platform.startswith("linux") else platform
    if not env.get("RESOLVE_SCRIPT_LIB") and key in _LIBRARIES:
        os.environ.setdefault("RESOLVE_SCRIPT_LIB", _LIBRARIES[key])
    folders = api_folders(env, platform)
    for folder in [None, *folders]:
        if folder is not None:
            if not (folder / f"{MODULE}.py").is_file():
                continue
            sys.path.insert(0, str(folder))
        try:
            return importlib.import_module(MODULE)
        except ImportError:
            continue
    looked = ", ".join(str(f) for f in folders) or "nowhere"
    raise BridgeError(f"Resolve's scripting module {MODULE} was not found (looked in {looked}):"
                      " install DaVinci Resolve Studio or set RESOLVE_SCRIPT_API to its "
                      "Developer/Scripting folder")


def connect(module: Any) -> Any:
    """The running Resolve, if it is Studio with external scripting on; BridgeError otherwise.

    Free never answers external scripts; its Workspace > Scripts menu runs the Lua launcher."""
    resolve = module.scriptapp("Resolve")
    if resolve is None:
        raise BridgeError("DaVinci Resolve is not running or does not accept external scripts: "
                          "start Resolve Studio and set Preferences > System > General > "
                          "External scripting using to Local (Resolve Free: use Workspace > "
                          "Scripts > facefuse instead)")
    product = str(resolve.GetProductName() or "")
    if "studio" not in product.lower():
        raise BridgeError(f"{product or 'This Resolve'} does not allow external scripting: use "
                          "Workspace > Scripts > facefuse inside Resolve (install it with "
                          "`facefuse resolve install`)")
    return resolve


# -- facts --------------------------------------------------------------------------------------

def collect_job(resolve: Any) -> dict[str, Any]:
    """The raw facts of the item under the playhead, as the Lua launcher writes them."""
    project = resolve.GetProjectManager().GetCurrentProject()
    job: dict[str, Any] = {
        "schema": JOB_SCHEMA, "version": JOB_VERSION, "product": resolve.GetProductName(),
        "resolve_version": resolve.GetVersionString(), "platform": _platform(),
        "sandboxed": False, "project": project.GetName() if project else None,
        "timeline": None, "item": None}
    timeline = project.GetCurrentTimeline() if project else None
    if not timeline:
        return job
    job["timeline"] = _timeline_facts(timeline)
    item = timeline.GetCurrentVideoItem()
    if item:
        job["item"] = _item_facts(timeline, item)
    return job


def _timeline_facts(timeline: Any) -> dict[str, Any]:
    count = int(timeline.GetTrackCount("video") or 0)
    busy = {str(track): [[it.GetStart(), it.GetEnd()]
                         for it in timeline.GetItemListInTrack("video", track) or []]
            for track in range(1, count + 1)}
    return {"name": timeline.GetName(), "start_frame": timeline.GetStartFrame(),
            "start_timecode": timeline.GetStartTimecode(),
            "current_timecode": timeline.GetCurrentTimecode(),
            "frame_rate": timeline.GetSetting("timelineFrameRate"),
            "drop_frame": timeline.GetSetting("timelineDropFrameTimecode"),
            "video_tracks": count, "busy": busy}


def _item_facts(timeline: Any, item: Any) -> dict[str, Any]:
    media = item.GetMediaPoolItem()
    facts: dict[str, Any] = {
        "name": item.GetName(), "start": item.GetStart(), "end": item.GetEnd(),
        "duration": item.GetDuration(), "left_offset": item.GetLeftOffset(),
        "track": _track_of(timeline, item), "media": None}
    if media:
        facts["media"] = {name: media.GetClipProperty(name) for name in CLIP_PROPERTIES}
    return facts


def _track_of(timeline: Any, item: Any) -> int | None:
    """The item's 1-based video track: GetTrackTypeAndIndex (Resolve 19+), else a search."""
    found = getattr(item, "GetTrackTypeAndIndex", None)
    if found is not None:
        kind_index = found()
        if kind_index:
            return int(kind_index[1])
    wanted = item.GetUniqueId()
    for track in range(1, int(timeline.GetTrackCount("video") or 0) + 1):
        if any(it.GetUniqueId() == wanted
               for it in timeline.GetItemListInTrack("video", track) or []):
            return track
    return None


def _platform() -> str:
    return {"win32": "Windows", "darwin": "Mac"}.get(sys.platform, "Linux")


# -- placement ----------------------------------------------------------------------------------

def place(resolve: Any, placement: Placement) -> str:
    """Import the swapped media into its bin and append it at the placement's record frame on
    its track (adding video tracks up to it); the sentence to show. BridgeError on failure."""
    project = resolve.GetProjectManager().GetCurrentProject()
    timeline = project.GetCurrentTimeline() if project else None
    if not timeline:
        raise BridgeError("The timeline was closed before the swap could be placed")
    pool = project.GetMediaPool()
    folder = _bin(pool, placement.bin)
    if not pool.SetCurrentFolder(folder):
        raise BridgeError(f"Resolve could not open the Media Pool bin '{placement.bin}'")
    clip = _import(pool, placement)
    while int(timeline.GetTrackCount("video") or 0) < placement.track:
        if not timeline.AddTrack("video"):
            raise BridgeError(f"Resolve could not add video track {placement.track}")
    placed = pool.AppendToTimeline([{
        "mediaPoolItem": clip, "startFrame": placement.start_frame,
        "endFrame": placement.end_frame, "trackIndex": placement.track,
        "recordFrame": placement.record_frame}])
    if not placed:
        raise BridgeError(f"Resolve could not place {placement.name} on video track "
                          f"{placement.track} at frame {placement.record_frame}")
    return (f"Placed {placement.name} on video track {placement.track} at frame "
            f"{placement.record_frame} (Media Pool bin '{placement.bin}')")


def _bin(pool: Any, name: str) -> Any:
    root = pool.GetRootFolder()
    for folder in root.GetSubFolderList() or []:
        if folder.GetName() == name:
            return folder
    folder = pool.AddSubFolder(root, name)
    if not folder:
        raise BridgeError(f"Resolve could not create the Media Pool bin '{name}'")
    return folder


def _import(pool: Any, placement: Placement) -> Any:
    if placement.sequence:
        items = pool.ImportMedia([{"FilePath": placement.media, "StartIndex":
                                   placement.start_index, "EndIndex": placement.end_index}])
    else:
        items = pool.ImportMedia([placement.media])
    if not items:
        raise BridgeError(f"Resolve could not import {placement.media} into the Media Pool")
    return items[0]


def _expand(text: str, env: Mapping[str, str]) -> str:
    for key, value in env.items():
        text = text.replace(f"%{key}%", value)
    return text
