"""A fake DaVinciResolveScript module that behaves as a live Resolve 19.1-21 was measured to behave.

Only methods that fusionscript-stubs (the typed surface of the real API) lists exist here, with
its parameter names (test_resolve_bridge checks this against the stub file). The behaviour is the
measured one (shared/REFERENCE.md section 6), not the documentation's reading of it:

- AppendToTimeline appends to the project's *current* timeline; `endFrame` is exclusive; the
  frames are those of the clip's own frame space, `Start`..`End` of its clip properties (0..N-1
  for a movie, the file numbers for an image sequence); over an occupied range, or on a locked
  track, the append is dropped and the returned item is an empty shell that is on no track;
  `MediaPool.short_by` makes a build that places fewer frames than asked (readback tests).
- Clip properties are strings except `FPS`, a number; a timeline rate may read "29.97 DF".
- Under a retime (item `speed`), GetLeftOffset and the record span follow the warped timing;
  only GetSourceStartFrame / GetSourceEndFrame (inclusive) show the source frames used, and
  GetProperty("Speed") is None.
- GetCurrentTimecode answers "" off the Cut, Edit, Color, Fairlight and Deliver pages.
- ImportMedia of a path already in the Media Pool imports nothing; with "Show Individual Frames"
  (`MediaPool.individual_frames`) an image sequence comes in as one still per file.
- AddTrack("video", {"index": n}) inserts a track at n (`Timeline.insert_tracks` False: an older
  build that adds on top whatever the index).
- Failures return None, False or an empty list instead of raising; scriptapp() returns None when
  no Resolve answers.
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import av

_IDS = itertools.count(1)
EDIT_PAGES = ("cut", "edit", "color", "fairlight", "deliver")
INSPECTOR_DEFAULTS = {"Pan": 0.0, "Tilt": 0.0, "ZoomX": 1.0, "ZoomY": 1.0, "ZoomGang": True,
                      "RotationAngle": 0.0, "AnchorPointX": 0.0, "AnchorPointY": 0.0,
                      "Pitch": 0.0, "Yaw": 0.0, "FlipX": False, "FlipY": False,
                      "CropLeft": 0.0, "CropRight": 0.0, "CropTop": 0.0, "CropBottom": 0.0,
                      "CropSoftness": 0.0, "CropRetain": False, "DynamicZoomEase": 0,
                      "CompositeMode": 0, "Opacity": 100.0, "Distortion": 0.0,
                      "RetimeProcess": 0, "MotionEstimation": 0, "Scaling": 0,
                      "ResizeFilter": 0}


def _uid() -> str:
    return f"fake-{next(_IDS)}"


class MediaPoolItem:
    def __init__(self, properties: dict[str, Any]) -> None:
        self._properties = {k: (v if k == "FPS" else str(v)) for k, v in properties.items()}
        self._id = _uid()

    def GetName(self) -> str:
        return str(self._properties.get("Clip Name", ""))

    def GetClipProperty(self, propertyName: str | None = None) -> Any:
        if propertyName is None:
            return dict(self._properties)
        return self._properties.get(propertyName, "")

    def GetUniqueId(self) -> str:
        return self._id

    def span(self) -> tuple[int, int]:
        """The clip's frame space: (Start, End + 1)."""
        start = int(self._properties.get("Start") or 0)
        end = self._properties.get("End")
        last = int(end) if end not in (None, "") else start + int(
            self._properties.get("Frames") or 0) - 1
        return start, last + 1


@dataclass(eq=False)
class TimelineItem:
    name: str
    start: int
    duration: int
    left_offset: int
    media: MediaPoolItem | None
    track: int
    speed: float = 1.0
    source_start: int | None = None
    uid: str = field(default_factory=_uid)
    properties: dict[str, Any] = field(default_factory=lambda: dict(INSPECTOR_DEFAULTS))
    markers: dict[float, dict[str, Any]] = field(default_factory=dict)
    graded_onto: list[TimelineItem] = field(default_factory=list)

    def GetName(self) -> str:
        return self.name

    def GetStart(self, subframe_precision: bool = False) -> int:
        return self.start

    def GetEnd(self, subframe_precision: bool = False) -> int:
        return self.start + self.duration

    def GetDuration(self, subframe_precision: bool = False) -> int:
        return self.duration

    def GetLeftOffset(self, subframe_precision: bool = False) -> int:
        # a retime warps the offset as it warps the record span (measured at 200%)
        return round(self._source_start() / self.speed)

    def GetSourceStartFrame(self) -> int:
        return self._source_start()

    def GetSourceEndFrame(self) -> int:
        return self._source_start() + round(self.duration * self.speed) - 1

    def _source_start(self) -> int:
        return self.left_offset if self.source_start is None else self.source_start

    def GetMediaPoolItem(self) -> MediaPoolItem | None:
        return self.media

    def GetUniqueId(self) -> str:
        return self.uid

    def GetTrackTypeAndIndex(self) -> list[Any]:
        return ["video", self.track]

    def GetProperty(self, propertyKey: str | None = None) -> Any:
        if propertyKey is None:
            return dict(self.properties)
        return self.properties.get(propertyKey)

    def SetProperty(self, propertyKey: str, propertyValue: Any) -> bool:
        if propertyKey not in INSPECTOR_DEFAULTS:
            return False
        self.properties[propertyKey] = propertyValue
        return True

    def CopyGrades(self, tgtTimelineItems: list[TimelineItem]) -> bool:
        if not tgtTimelineItems:
            return False
        self.graded_onto.extend(tgtTimelineItems)
        return True

    def AddMarker(self, frameId: float, color: str, name: str, note: str, duration: float,
                  customData: str | None = None) -> bool:
        if frameId in self.markers or not 0 <= frameId < self.duration or duration < 1:
            return False
        self.markers[float(frameId)] = {"color": color, "duration": float(duration),
                                        "note": note, "name": name,
                                        "customData": customData or ""}
        return True

    def GetMarkers(self) -> dict[float, dict[str, Any]]:
        return dict(self.markers)


class Timeline:
    def __init__(self, name: str = "Timeline 1", start_frame: int = 86400,
                 start_timecode: str = "01:00:00:00", rate: str = "24", drop: str = "0",
                 tracks: int = 1) -> None:
        self.name, self.start_frame, self.start_timecode = name, start_frame, start_timecode
        self.settings = {"timelineFrameRate": rate, "timelineDropFrameTimecode": drop}
        self.tracks: list[list[TimelineItem]] = [[] for _ in range(tracks)]
        self.locked: list[bool] = [False] * tracks
        self.enabled: list[bool] = [True] * tracks
        self.playhead, self.current_timecode = start_frame, start_timecode
        self.page = ["edit"]  # shared with the Resolve that shows this timeline
        self.insert_tracks = True
        self.uid = _uid()

    def add(self, item: TimelineItem) -> TimelineItem:
        self.tracks[item.track - 1].append(item)
        return item

    def busy(self, track: int, start: int, end: int) -> bool:
        return any(it.start < end and start < it.start + it.duration
                   for it in self.tracks[track - 1])

    def GetName(self) -> str:
        return self.name

    def GetUniqueId(self) -> str:
        return self.uid

    def GetStartFrame(self) -> int:
        return self.start_frame

    def GetStartTimecode(self) -> str:
        return self.start_timecode

    def GetCurrentTimecode(self) -> str:
        return self.current_timecode if self.page[0] in EDIT_PAGES else ""

    def GetSetting(self, settingName: str) -> str:
        return self.settings.get(settingName, "")

    def GetTrackCount(self, trackType: str) -> int:
        return len(self.tracks) if trackType == "video" else 0

    def AddTrack(self, trackType: str, newTrackOptions: Any = None) -> bool:
        if trackType != "video":
            return False
        index = len(self.tracks) + 1
        if self.insert_tracks and isinstance(newTrackOptions, dict) and "index" in \
                newTrackOptions:
            index = int(newTrackOptions["index"])
            if not 1 <= index <= len(self.tracks) + 1:
                return False
        self.tracks.insert(index - 1, [])
        self.locked.insert(index - 1, False)
        self.enabled.insert(index - 1, True)
        for number, items in enumerate(self.tracks, start=1):
            for item in items:
                item.track = number
        return True

    def GetIsTrackLocked(self, trackType: str, trackIndex: int) -> bool:
        return trackType == "video" and 1 <= trackIndex <= len(self.tracks) and \
            self.locked[trackIndex - 1]

    def GetIsTrackEnabled(self, trackType: str, trackIndex: int) -> bool:
        return trackType == "video" and 1 <= trackIndex <= len(self.tracks) and \
            self.enabled[trackIndex - 1]

    def SetTrackLock(self, trackType: str, trackIndex: int, Bool: bool) -> bool:
        if trackType != "video" or not 1 <= trackIndex <= len(self.tracks):
            return False
        self.locked[trackIndex - 1] = bool(Bool)
        return True

    def SetTrackEnable(self, trackType: str, trackIndex: int, Bool: bool) -> bool:
        if trackType != "video" or not 1 <= trackIndex <= len(self.tracks):
            return False
        self.enabled[trackIndex - 1] = bool(Bool)
        return True

    def GetItemListInTrack(self, trackType: str, index: int) -> list[TimelineItem] | None:
        if trackType != "video" or not 1 <= index <= len(self.tracks):
            return None
        return sorted(self.tracks[index - 1], key=lambda item: item.start)

    def DeleteClips(self, timelineItems: list[TimelineItem], Bool: bool = False) -> bool:
        found = False
        for items in self.tracks:
            for item in list(items):
                if item in timelineItems:
                    items.remove(item)
                    found = True
        return found

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
        self.individual_frames = False  # the Media Pool's "Show Individual Frames"
        self.short_by = 0  # a build that places fewer frames than asked (readback tests)

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

    def _known_paths(self) -> set[str]:
        paths, folders = set(), [self.root]
        while folders:
            folder = folders.pop()
            folders += folder.subfolders
            paths |= {str(clip.GetClipProperty("File Path")) for clip in folder.clips}
        return paths

    def ImportMedia(self, items: list[Any]) -> list[MediaPoolItem]:
        imported: list[MediaPoolItem] = []
        known = self._known_paths()
        for entry in items:
            clips = _import(entry, self.individual_frames)
            if not clips:
                return []
            imported += [c for c in clips if c.GetClipProperty("File Path") not in known]
        self.current.clips.extend(imported)
        return imported

    def DeleteClips(self, clips: list[MediaPoolItem]) -> bool:
        folders, found = [self.root], False
        while folders:
            folder = folders.pop()
            folders += folder.subfolders
            for clip in list(folder.clips):
                if clip in clips:
                    folder.clips.remove(clip)
                    found = True
        return found

    def AppendToTimeline(self, clipInfo: list[dict[str, Any]]) -> list[TimelineItem]:
        timeline = self.project.current
        placed = []
        for info in clipInfo:
            clip, track = info.get("mediaPoolItem"), int(info.get("trackIndex", 1))
            if timeline is None or not isinstance(clip, MediaPoolItem) or \
                    not 1 <= track <= len(timeline.tracks):
                return []
            first, last = int(info["startFrame"]), int(info["endFrame"])
            lo, hi = clip.span()
            if not lo <= first < last <= hi:
                return []
            last -= self.short_by
            record = int(info.get("recordFrame", timeline.start_frame))
            item = TimelineItem(clip.GetName(), record, last - first, first - lo, clip, track)
            if timeline.locked[track - 1] or timeline.busy(track, record, record + last - first):
                placed.append(TimelineItem("", 0, 0, 0, None, 0))  # dropped: an empty shell
                continue
            placed.append(timeline.add(item))
        return placed


def _import(entry: Any, individual_frames: bool) -> list[MediaPoolItem]:
    """The pool items for a file path, or for {"FilePath": "x.%04d.png", "StartIndex",
    "EndIndex"}; [] when a file is missing (Resolve then imports nothing)."""
    if isinstance(entry, dict):
        pattern, first, last = entry["FilePath"], int(entry["StartIndex"]), int(entry["EndIndex"])
        paths = [Path(pattern % n) for n in range(first, last + 1)]
        if not paths or not all(p.is_file() for p in paths):
            return []
        if individual_frames:
            return [MediaPoolItem({"File Path": str(p), "Clip Name": p.name, "Type": "Still",
                                   "Frames": "1", "Start": "0", "End": "0"}) for p in paths]
        shown = re.sub(r"%0(\d)d", lambda m: f"[{first:0{m[1]}d}-{last:0{m[1]}d}]", pattern)
        return [MediaPoolItem({"File Path": shown, "Clip Name": Path(shown).name,
                               "Type": "Video", "Frames": str(len(paths)), "FPS": 24.0,
                               "Start": str(first), "End": str(last)})]
    path = Path(entry)
    if not path.is_file():
        return []
    with av.open(str(path)) as container:
        stream = container.streams.video[0]
        frames = stream.frames or sum(1 for _ in container.decode(stream))
        fps = stream.average_rate
    return [MediaPoolItem({"File Path": str(path), "Clip Name": path.name, "Type": "Video",
                           "Frames": str(frames), "FPS": float(fps), "Start": "0",
                           "End": str(frames - 1)})]


class Project:
    def __init__(self, name: str, timeline: Timeline | None) -> None:
        self.name = name
        self.timelines = [timeline] if timeline is not None else []
        self.current = timeline
        self.pool = MediaPool(self)

    @property
    def timeline(self) -> Timeline | None:
        return self.current

    def GetName(self) -> str:
        return self.name

    def GetMediaPool(self) -> MediaPool:
        return self.pool

    def GetCurrentTimeline(self) -> Timeline | None:
        return self.current

    def GetTimelineCount(self) -> int:
        return len(self.timelines)

    def GetTimelineByIndex(self, idx: int) -> Timeline | None:
        return self.timelines[idx - 1] if 1 <= idx <= len(self.timelines) else None

    def SetCurrentTimeline(self, timeline: Timeline) -> bool:
        if timeline not in self.timelines:
            return False
        self.current = timeline
        return True


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
        self.page = ["edit"]
        for timeline in project.timelines if project else ():
            timeline.page = self.page

    def GetProductName(self) -> str:
        return self.product

    def GetVersion(self) -> list[Any]:
        return [int(v) for v in self.version.split(".")] + [""]

    def GetVersionString(self) -> str:
        return self.version

    def GetProjectManager(self) -> ProjectManager:
        return self.manager

    def GetCurrentPage(self) -> str:
        return self.page[0]

    def OpenPage(self, pageName: str) -> bool:
        self.page[0] = pageName
        return True


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


def media_item(path: Path | str, frames: int, fps: float | str = 24.0,
               kind: str = "Video + Audio", name: str | None = None) -> MediaPoolItem:
    """A media pool item for a clip as Resolve describes it (strings, FPS a number)."""
    rate: Any = fps
    if isinstance(fps, str):
        try:
            rate = float(fps)
        except ValueError:
            rate = fps
    return MediaPoolItem({"File Path": str(path), "Type": kind, "FPS": rate,
                          "Frames": str(frames), "Start": "0", "End": str(frames - 1),
                          "Clip Name": name or Path(path).name})


def world(clip: Path | None, *, frames: int = 20, start: int = 86448, duration: int = 10,
          left_offset: int = 3, rate: str = "24", drop: str = "0", clip_fps: str | None = None,
          product: str = "DaVinci Resolve Studio", start_frame: int = 86400,
          start_timecode: str = "01:00:00:00", playhead: int | None = None,
          current_timecode: str = "01:00:02:02", tracks: int = 1,
          speed: float = 1.0) -> Resolve:
    """A running Resolve with one project, one timeline and the item on V1 (clip None: a title
    without media), the playhead on the item. speed: a retime (2.0: 200%)."""
    timeline = Timeline(start_frame=start_frame, start_timecode=start_timecode, rate=rate,
                        drop=drop, tracks=tracks)
    fps = clip_fps or rate.removesuffix(" DF")
    media = media_item(clip, frames, fps) if clip is not None else None
    timeline.add(TimelineItem(clip.name if clip else "Text+", start, duration, left_offset, media,
                              1, speed=speed))
    timeline.playhead = playhead if playhead is not None else start + 2
    timeline.current_timecode = current_timecode
    return Resolve(Project("Project 1", timeline), product=product)


def timeline_of(resolve: Resolve) -> Timeline:
    """The timeline the world was built with (whichever is current now)."""
    project = resolve.GetProjectManager().GetCurrentProject()
    assert project is not None and project.timelines
    return project.timelines[0]


def second_timeline(resolve: Resolve, name: str = "Timeline 2") -> Timeline:
    """Another timeline in the project, made current (the user switched to it)."""
    project = resolve.GetProjectManager().GetCurrentProject()
    assert project is not None
    other = Timeline(name=name, tracks=3)
    other.page = resolve.page
    project.timelines.append(other)
    project.SetCurrentTimeline(other)
    return other
