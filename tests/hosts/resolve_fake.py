"""A fake DaVinciResolveScript module that behaves as Resolve's documented Python API does.

Only methods that fusionscript-stubs (the typed surface of the real API) lists exist here, with
its parameter names (test_resolve_bridge checks this against the stub file). Behaviour kept from
the documentation: clip properties are strings, track indices are 1-based, AppendToTimeline takes
clip-info dicts with startFrame / endFrame (inclusive) / trackIndex / recordFrame, failures
return None, False or an empty list instead of raising, and scriptapp() returns None when no
Resolve answers.
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import av

_IDS = itertools.count(1)


def _uid() -> str:
    return f"fake-{next(_IDS)}"


class MediaPoolItem:
    def __init__(self, properties: dict[str, str]) -> None:
        self._properties = {k: str(v) for k, v in properties.items()}
        self._id = _uid()

    def GetName(self) -> str:
        return self._properties.get("Clip Name", "")

    def GetClipProperty(self, propertyName: str | None = None) -> str | dict:
        if propertyName is None:
            return dict(self._properties)
        return self._properties.get(propertyName, "")

    def GetUniqueId(self) -> str:
        return self._id


@dataclass(eq=False)
class TimelineItem:
    name: str
    start: int
    duration: int
    left_offset: int
    media: MediaPoolItem | None
    track: int
    uid: str = field(default_factory=_uid)

    def GetName(self) -> str:
        return self.name

    def GetStart(self, subframe_precision: bool = False) -> int:
        return self.start

    def GetEnd(self, subframe_precision: bool = False) -> int:
        return self.start + self.duration

    def GetDuration(self, subframe_precision: bool = False) -> int:
        return self.duration

    def GetLeftOffset(self, subframe_precision: bool = False) -> int:
        return self.left_offset

    def GetMediaPoolItem(self) -> MediaPoolItem | None:
        return self.media

    def GetUniqueId(self) -> str:
        return self.uid

    def GetTrackTypeAndIndex(self) -> list[Any]:
        return ["video", self.track]


class Timeline:
    def __init__(self, name: str = "Timeline 1", start_frame: int = 86400,
                 start_timecode: str = "01:00:00:00", rate: str = "24", drop: str = "0",
                 tracks: int = 1) -> None:
        self.name, self.start_frame, self.start_timecode = name, start_frame, start_timecode
        self.settings = {"timelineFrameRate": rate, "timelineDropFrameTimecode": drop}
        self.tracks: list[list[TimelineItem]] = [[] for _ in range(tracks)]
        self.playhead, self.current_timecode = start_frame, start_timecode

    def add(self, item: TimelineItem) -> TimelineItem:
        self.tracks[item.track - 1].append(item)
        return item

    def GetName(self) -> str:
        return self.name

    def GetStartFrame(self) -> int:
        return self.start_frame

    def GetStartTimecode(self) -> str:
        return self.start_timecode

    def GetCurrentTimecode(self) -> str:
        return self.current_timecode

    def GetSetting(self, settingName: str) -> str:
        return self.settings.get(settingName, "")

    def GetTrackCount(self, trackType: str) -> int:
        return len(self.tracks) if trackType == "video" else 0

    def AddTrack(self, trackType: str, subTrackType: Any = None) -> bool:
        if trackType != "video":
            return False
        self.tracks.append([])
        return True

    def GetItemListInTrack(self, trackType: str, index: int) -> list[TimelineItem] | None:
        if trackType != "video" or not 1 <= index <= len(self.tracks):
            return None
        return sorted(self.tracks[index - 1], key=lambda item: item.start)

    def GetCurrentVideoItem(self) -> TimelineItem | None:
        for track in reversed(self.tracks):
            for item in track:
                if item.start <= self.playhead < item.start + item.duration:
                    return item
        return None


class Folder:
    def __init__(self, name: str) -> None:
        self.name, self.clips, self.subfolders = name, [], []

    def GetName(self) -> str:
        return self.name

    def GetSubFolderList(self) -> list[Folder]:
        return list(self.subfolders)

    def GetClipList(self) -> list[MediaPoolItem]:
        return list(self.clips)


class MediaPool:
    def __init__(self, project: Project) -> None:
        self.project = project
        self.root = Folder("Master")
        self.current = self.root

    def GetRootFolder(self) -> Folder:
        return self.root

    def AddSubFolder(self, folder: Folder, name: str) -> Folder | None:
        if not name:
            return None
        sub = Folder(name)
        folder.subfolders.append(sub)
        return sub

    def GetCurrentFolder(self) -> Folder:
        return self.current

    def SetCurrentFolder(self, folder: Folder) -> bool:
        if not isinstance(folder, Folder):
            return False
        self.current = folder
        return True

    def ImportMedia(self, items: list[Any]) -> list[MediaPoolItem]:
        imported = []
        for entry in items:
            clip = _import(entry)
            if clip is None:
                return []
            imported.append(clip)
        self.current.clips.extend(imported)
        return imported

    def AppendToTimeline(self, clipInfo: list[dict[str, Any]]) -> list[TimelineItem]:
        timeline = self.project.timeline
        placed = []
        for info in clipInfo:
            clip, track = info.get("mediaPoolItem"), int(info.get("trackIndex", 1))
            first, last = int(info["startFrame"]), int(info["endFrame"])
            frames = int(clip.GetClipProperty("Frames")) if isinstance(clip, MediaPoolItem) else 0
            if timeline is None or not 1 <= track <= len(timeline.tracks) or \
                    not 0 <= first <= last < frames:
                return []
            record = int(info.get("recordFrame", timeline.start_frame))
            placed.append(timeline.add(TimelineItem(clip.GetName(), record, last - first + 1,
                                                    first, clip, track)))
        return placed


def _import(entry: Any) -> MediaPoolItem | None:
    """A media pool item for a file path, or for {"FilePath": "x.%04d.png", "StartIndex",
    "EndIndex"}; None when a file is missing (Resolve then imports nothing)."""
    if isinstance(entry, dict):
        pattern, first, last = entry["FilePath"], int(entry["StartIndex"]), int(entry["EndIndex"])
        paths = [Path(pattern % n) for n in range(first, last + 1)]
        if not paths or not all(p.is_file() for p in paths):
            return None
        shown = re.sub(r"%0(\d)d", lambda m: f"[{first:0{m[1]}d}-{last:0{m[1]}d}]", pattern)
        return MediaPoolItem({"File Path": shown, "Clip Name": Path(shown).name,
                              "Type": "Video", "Frames": str(len(paths))})
    path = Path(entry)
    if not path.is_file():
        return None
    with av.open(str(path)) as container:
        stream = container.streams.video[0]
        frames = stream.frames or sum(1 for _ in container.decode(stream))
        fps = stream.average_rate
    return MediaPoolItem({"File Path": str(path), "Clip Name": path.name, "Type": "Video",
                          "Frames": str(frames), "FPS": f"{float(fps):.3f}"})


class Project:
    def __init__(self, name: str, timeline: Timeline | None) -> None:
        self.name, self.timeline = name, timeline
        self.pool = MediaPool(self)

    def GetName(self) -> str:
        return self.name

    def GetMediaPool(self) -> MediaPool:
        return self.pool

    def GetCurrentTimeline(self) -> Timeline | None:
        return self.timeline


class ProjectManager:
    def __init__(self, project: Project | None) -> None:
        self.project = project

    def GetCurrentProject(self) -> Project | None:
        return self.project


class Resolve:
    def __init__(self, project: Project | None, product: str = "DaVinci Resolve Studio",
                 version: str = "19.1.3.7") -> None:
        self.manager = ProjectManager(project)
        self.product, self.version = product, version

    def GetProductName(self) -> str:
        return self.product

    def GetVersion(self) -> list[Any]:
        return [int(v) for v in self.version.split(".")] + [""]

    def GetVersionString(self) -> str:
        return self.version

    def GetProjectManager(self) -> ProjectManager:
        return self.manager


class Module:
    """What `import DaVinciResolveScript` gives: scriptapp("Resolve") is the running Resolve or
    None (not running, external scripting off)."""

    __name__ = "DaVinciResolveScript"

    def __init__(self, resolve: Resolve | None) -> None:
        self.resolve = resolve

    def scriptapp(self, name: str) -> Resolve | None:
        return self.resolve if name == "Resolve" else None


FAKE_CLASSES = (MediaPoolItem, TimelineItem, Timeline, Folder, MediaPool, Project, ProjectManager,
                Resolve)


def media_item(path: Path | str, frames: int, fps: str = "24", kind: str = "Video + Audio",
               name: str | None = None) -> MediaPoolItem:
    """A media pool item for a clip as Resolve describes it (every property a string)."""
    return MediaPoolItem({"File Path": str(path), "Type": kind, "FPS": fps, "Frames": str(frames),
                          "Clip Name": name or Path(path).name})


def world(clip: Path | None, *, frames: int = 20, start: int = 86448, duration: int = 10,
          left_offset: int = 3, rate: str = "24", drop: str = "0", clip_fps: str | None = None,
          product: str = "DaVinci Resolve Studio", start_frame: int = 86400,
          start_timecode: str = "01:00:00:00", playhead: int | None = None,
          current_timecode: str = "01:00:02:02", tracks: int = 1) -> Resolve:
    """A running Resolve with one project, one timeline and the item on V1 (clip None: a title
    without media), the playhead on the item."""
    timeline = Timeline(start_frame=start_frame, start_timecode=start_timecode, rate=rate,
                        drop=drop, tracks=tracks)
    media = media_item(clip, frames, clip_fps or rate) if clip is not None else None
    timeline.add(TimelineItem(clip.name if clip else "Text+", start, duration, left_offset, media,
                              1))
    timeline.playhead = playhead if playhead is not None else start + 2
    timeline.current_timecode = current_timecode
    return Resolve(Project("Project 1", timeline), product=product)
