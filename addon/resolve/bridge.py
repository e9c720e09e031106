"""The one Python file that touches DaVinci Resolve's scripting API (DaVinciResolveScript).

Used for Studio's external scripting (`facefuse resolve swap`): find the module, connect to the
running Resolve, collect the raw facts of the item under the playhead in the same job format the
Lua launcher writes (job_file.py), and carry out a placement (swaps.Placement) exactly as the
launcher does. Every decision (frame mapping, track choice, output) is made in job_file.py and
swaps.py, not here.

Resolve's API reports failure by returning None or False rather than raising; every call whose
result matters is checked and turned into a BridgeError sentence, and what AppendToTimeline
placed is read back from the track rather than taken from its return value (over a taken range
it returns an empty item). Methods a Resolve may lack (unique ids, source frames and seconds,
track locks) are called only where `dir()` lists them: hasattr() is True for every name on a
Resolve object (measured). It makes no Studio-only call, and runs only once GetProductName()
says Studio (a Studio-only call on Free raises a modal that makes later calls fail).
"""

from __future__ import annotations

import importlib
import os
import re
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from facefuse import HostError, InputError, parse_rate, same_rate

from .job_file import JOB_SCHEMA, JOB_VERSION
from .source_frames import whole_frame
from .swaps import Placement

MODULE = "DaVinciResolveScript"
CLIP_PROPERTIES = ("File Path", "Type", "FPS", "Frames", "Start", "End", "Clip Name")
# the item's source readers, job key -> method (job_file.py and source_frames.py read them)
SOURCE_READERS = {"source_start": "GetSourceStartFrame", "source_end": "GetSourceEndFrame",
                  "source_start_time": "GetSourceStartTime",
                  "source_end_time": "GetSourceEndTime"}
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
    tracks = range(1, count + 1)
    busy = {str(track): [[it.GetStart(), it.GetEnd()]
                         for it in timeline.GetItemListInTrack("video", track) or []]
            for track in tracks}
    return {"name": timeline.GetName(), "id": _call(timeline, "GetUniqueId") or "",
            "start_frame": timeline.GetStartFrame(),
            "start_timecode": timeline.GetStartTimecode(),
            "current_timecode": timeline.GetCurrentTimecode() or "",
            "frame_rate": timeline.GetSetting("timelineFrameRate"),
            "drop_frame": timeline.GetSetting("timelineDropFrameTimecode"),
            "video_tracks": count, "busy": busy,
            "locked": [t for t in tracks if _track_locked(timeline, t)],
            "disabled": [t for t in tracks if not _track_enabled(timeline, t)]}


def _item_facts(timeline: Any, item: Any) -> dict[str, Any]:
    media = item.GetMediaPoolItem()
    facts: dict[str, Any] = {
        "name": item.GetName(), "id": _call(item, "GetUniqueId") or "",
        "start": item.GetStart(), "end": item.GetEnd(), "duration": item.GetDuration(),
        "left_offset": item.GetLeftOffset(), "track": _track_of(timeline, item),
        "media": None}
    facts.update({key: _call(item, method) for key, method in SOURCE_READERS.items()})
    if media:
        facts["media"] = {name: media.GetClipProperty(name) for name in CLIP_PROPERTIES}
    return facts


def _call(thing: Any, method: str, *args: Any) -> Any:
    """thing.method(*args), or None where this Resolve has no such method (not in dir())."""
    return getattr(thing, method)(*args) if method in dir(thing) else None


def _track_locked(timeline: Any, track: int) -> bool:
    return bool(_call(timeline, "GetIsTrackLocked", "video", track))


def _track_enabled(timeline: Any, track: int) -> bool:
    enabled = _call(timeline, "GetIsTrackEnabled", "video", track)
    return enabled is None or bool(enabled)


def _track_of(timeline: Any, item: Any) -> int | None:
    """The item's 1-based video track: GetTrackTypeAndIndex (Resolve 19+), else a search."""
    kind_index = _call(item, "GetTrackTypeAndIndex")
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
    """Carry out a placement (swaps.py says what it is): on the job's timeline, made current;
    import into its bin; on the track directly above the plate, inserted when that one is busy,
    locked or disabled now; read back; the plate's grade, Inspector transform and the review
    markers onto it. The sentence to show; BridgeError on failure."""
    project = resolve.GetProjectManager().GetCurrentProject()
    if not project:
        raise BridgeError("The project was closed before the swap could be placed")
    timeline = _job_timeline(project, placement)
    plate, plate_track = _plate(timeline, placement)
    pool = project.GetMediaPool()
    if not pool.SetCurrentFolder(_bin(pool, placement.bin)):
        raise BridgeError(f"Resolve could not open the Media Pool bin '{placement.bin}'")
    clip = _import(pool, placement)
    track = _target_track(timeline, placement, plate_track + 1)
    item = _append(pool, timeline, clip, placement, track)
    notes = _finish(plate, item, placement)
    return (f"Placed {placement.name} on video track {track} at frame "
            f"{placement.record_frame} (Media Pool bin '{placement.bin}')"
            + "".join(f"; {note}" for note in notes))


def _job_timeline(project: Any, placement: Placement) -> Any:
    """The timeline the job was collected on, made current (AppendToTimeline appends to the
    current timeline, and the user may have opened another while facefuse rendered)."""
    def is_job(timeline: Any) -> bool:
        if placement.timeline_id and _call(timeline, "GetUniqueId"):
            return bool(timeline.GetUniqueId() == placement.timeline_id)
        return bool(timeline.GetName() == placement.timeline)

    current = project.GetCurrentTimeline()
    if current and is_job(current):
        return current
    for index in range(1, int(project.GetTimelineCount() or 0) + 1):
        timeline = project.GetTimelineByIndex(index)
        if timeline and is_job(timeline):
            if not project.SetCurrentTimeline(timeline):
                raise BridgeError(f"Resolve could not open the timeline '{placement.timeline}'")
            return timeline
    raise BridgeError(f"The timeline '{placement.timeline}' is no longer in the project: "
                      "nothing placed")


def _plate(timeline: Any, placement: Placement) -> tuple[Any, int]:
    """The clip the swap covers and its track now; BridgeError when it moved meanwhile."""
    for track in range(1, int(timeline.GetTrackCount("video") or 0) + 1):
        for item in timeline.GetItemListInTrack("video", track) or []:
            same = (item.GetUniqueId() == placement.plate_id if placement.plate_id
                    else track == placement.plate_track
                    and item.GetStart() == placement.record_frame)
            if not same:
                continue
            if (item.GetStart(), item.GetDuration()) != (placement.record_frame,
                                                         placement.duration):
                raise BridgeError(f"The clip under {placement.name} was moved or trimmed while "
                                  "facefuse rendered: nothing placed (render it again)")
            return item, track
    raise BridgeError(f"The clip that {placement.name} replaces is no longer on the timeline: "
                      "nothing placed")


def _usable(timeline: Any, track: int, start: int, end: int) -> bool:
    """Whether an append on `track` over [start, end) is taken and shown."""
    if track > int(timeline.GetTrackCount("video") or 0) or _track_locked(timeline, track) \
            or not _track_enabled(timeline, track):
        return False
    return all(it.GetEnd() <= start or it.GetStart() >= end
               for it in timeline.GetItemListInTrack("video", track) or [])


def _target_track(timeline: Any, placement: Placement, track: int) -> int:
    """`track` (directly above the plate) when it is usable, else a track inserted there (or on
    top, where this Resolve cannot insert at an index)."""
    start, end = placement.record_frame, placement.record_frame + placement.duration
    if not placement.insert and _usable(timeline, track, start, end):
        return track
    count = int(timeline.GetTrackCount("video") or 0)
    if not timeline.AddTrack("video", {"index": track}) and not timeline.AddTrack("video"):
        raise BridgeError(f"Resolve could not add a video track for {placement.name}")
    for candidate in (track, count + 1):
        if _usable(timeline, candidate, start, end):
            return candidate
    raise BridgeError(f"Resolve added no free video track for {placement.name}")


def _append(pool: Any, timeline: Any, clip: Any, placement: Placement, track: int) -> Any:
    """Append the clip and read back what Resolve placed; BridgeError unless it is exactly the
    planned start, duration and track (a wrong item is removed again)."""
    _check_rate(pool, clip, placement)
    base = _number(clip.GetClipProperty("Start"))
    pool.AppendToTimeline([{
        "mediaPoolItem": clip, "startFrame": base + placement.start_frame,
        "endFrame": base + placement.end_frame, "trackIndex": track,
        "recordFrame": placement.record_frame, "mediaType": 1}])
    wanted = clip.GetUniqueId()
    for item in timeline.GetItemListInTrack("video", track) or []:
        media = item.GetMediaPoolItem()
        if item.GetStart() != placement.record_frame or not media or \
                media.GetUniqueId() != wanted:
            continue
        if item.GetDuration() != placement.duration:
            timeline.DeleteClips([item], False)
            raise BridgeError(f"Resolve placed {item.GetDuration()} frames of {placement.name} "
                              f"instead of {placement.duration} (read back on video track "
                              f"{track}): removed again, nothing placed")
        return item
    raise BridgeError(f"Resolve could not place {placement.name} on video track {track} at "
                      f"frame {placement.record_frame} (nothing there on reading back)")


def _check_rate(pool: Any, clip: Any, placement: Placement) -> None:
    """BridgeError (the clip removed again) when Resolve imported the swap at another rate than
    the timeline's: AppendToTimeline would floor its frames into timeline frames."""
    try:
        clip_fps = parse_rate(clip.GetClipProperty("FPS"))
    except InputError:
        return
    if placement.fps and not same_rate(clip_fps, parse_rate(placement.fps)):
        pool.DeleteClips([clip])
        raise BridgeError(f"Resolve imported {placement.name} at {float(clip_fps):g} fps but the "
                          f"timeline runs at {placement.fps:.5g} fps: nothing placed (Resolve "
                          "would retime it; render a ProRes 4444 or DNxHR 444 movie, which "
                          "carries the clip's rate)")


def _finish(plate: Any, item: Any, placement: Placement) -> list[str]:
    """The plate's grade and Inspector settings, and the review markers, onto the swap; what
    could not be done, in words."""
    notes = []
    if not _call(plate, "CopyGrades", [item]):
        notes.append("the plate's grade could not be copied")
    failed = [name for name in placement.properties
              if (value := plate.GetProperty(name)) is not None
              and not item.SetProperty(name, value)]
    if failed:
        notes.append(f"{len(failed)} Inspector settings could not be copied "
                     f"({', '.join(failed[:4])})")
    added = sum(bool(item.AddMarker(m.frame, m.color, m.name, m.note, m.duration, m.custom))
                for m in placement.markers)
    if placement.markers:
        notes.append(f"{added} of {len(placement.markers)} review markers added")
    return notes


def _number(value: Any) -> int:
    """A clip property's whole number, rounded (a hair off reads as the frame), 0 if none."""
    try:
        return whole_frame(float(str(value).strip()))
    except (ValueError, OverflowError):
        return 0


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
    """The rendered media as one Media Pool item (the one already in the bin when Resolve
    imports nothing for a path it knows)."""
    if placement.sequence:
        items = pool.ImportMedia([{"FilePath": placement.media, "StartIndex":
                                   placement.start_index, "EndIndex": placement.end_index}])
    else:
        items = pool.ImportMedia([placement.media])
    items = list(items or []) or _known(pool, placement)
    if not items:
        raise BridgeError(f"Resolve could not import {placement.media} into the Media Pool")
    if len(items) > 1:
        pool.DeleteClips(items)
        raise BridgeError(f"Resolve imported {placement.name} as {len(items)} single frames: "
                          "turn off Show Individual Frames in the Media Pool's options menu and "
                          "run facefuse again")
    return items[0]


def _known(pool: Any, placement: Placement) -> list[Any]:
    shown = sequence_path(placement)
    return [clip for clip in pool.GetCurrentFolder().GetClipList() or []
            if clip.GetClipProperty("File Path") == shown][:1]


def sequence_path(placement: Placement) -> str:
    """The media's "File Path" as Resolve shows it (`name.[0004-0013].png` for a sequence)."""
    if not placement.sequence:
        return placement.media
    return re.sub(r"%0(\d)d", lambda m: f"[{placement.start_index:0{m[1]}d}-"
                  f"{placement.end_index:0{m[1]}d}]", placement.media)


def _expand(text: str, env: Mapping[str, str]) -> str:
    for key, value in env.items():
        text = text.replace(f"%{key}%", value)
    return text
