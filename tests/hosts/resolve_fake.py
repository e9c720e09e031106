"""A fake DaVinciResolveScript module that behaves as a live Resolve 19.1-21 was measured to behave.

Only methods that fusionscript-stubs (the typed surface of the real API) lists exist here, with
its parameter names (test_resolve_bridge checks this against the stub file). The behaviour is the
measured one, row by row of the facts table tests/hosts/resolve_facts.json (FACTS; the rows'
`fake` parameters are read here and by resolve_fake.lua), not the documentation's reading of it:

- hasattr() is True for every name and an absent method (`absent`: an older build) is listed by
  no dir() and returns None when called (SESSION.fabricated records each such call).
- A Studio-only call on Free returns False and raises the modal: every later call fails.
- Source side: GetSourceEndFrame is exclusive when the media's rate equals the timeline's and
  inclusive when they differ; GetSourceStartTime/EndTime count in the media's timecode space
  (`MediaPoolItem.start_seconds`); under a retime (item `speed`) the source span shows it while
  GetLeftOffset/GetRightOffset follow the warped timing; a reversed item reads start > end; an
  item of a timeline imported from XML reads 0/0; `hair` reads whole frames a hair under.
- AppendToTimeline appends to the project's *current* timeline; `endFrame` is exclusive; the
  frames are those of the clip's own frame space, `Start`..`End` of its clip properties (0..N-1
  for a movie, the file numbers for an image sequence); a clip at another rate than the
  timeline's lands floor(frames x timeline fps / clip fps) long; over an occupied range, or on a
  locked track, the append is dropped and the returned item is an empty shell (no GetUniqueId)
  on no track; `MediaPool.short_by` makes a build that places fewer frames than asked (a
  placement that reads back wrong for a reason not modelled).
- Clip properties are strings except `FPS`, a number; a timeline rate may read "29.97 DF"; an
  image sequence is imported at the current timeline's rate (assumed; `MediaPool.sequence_fps`
  another).
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
import json
import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import av

FACTS = {row["id"]: row for row in json.loads(
    (Path(__file__).with_name("resolve_facts.json")).read_text(encoding="utf-8"))["rows"]}
_IDS = itertools.count(1)
EDIT_PAGES = ("cut", "edit", "color", "fairlight", "deliver")
RATE_TOLERANCE = 0.01  # fps: 23.976 and 24000/1001 are one rate, 23.976 and 24 are not
INSPECTOR_DEFAULTS = {"Pan": 0.0, "Tilt": 0.0, "ZoomX": 1.0, "ZoomY": 1.0, "ZoomGang": True,
                      "RotationAngle": 0.0, "AnchorPointX": 0.0, "AnchorPointY": 0.0,
                      "Pitch": 0.0, "Yaw": 0.0, "FlipX": False, "FlipY": False,
                      "CropLeft": 0.0, "CropRight": 0.0, "CropTop": 0.0, "CropBottom": 0.0,
                      "CropSoftness": 0.0, "CropRetain": False, "DynamicZoomEase": 0,
                      "CompositeMode": 0, "Opacity": 100.0, "Distortion": 0.0,
                      "RetimeProcess": 0, "MotionEstimation": 0, "Scaling": 0,
                      "ResizeFilter": 0}


def fact(row: str) -> dict[str, Any]:
    """The fake parameters of a row of the facts table."""
    return dict(FACTS[row]["fake"])


@dataclass
class Session:
    """What the running Resolve shares between its objects: its edition, the modal a
    Studio-only call raises on Free, the calls made to methods it does not have."""

    studio: bool = True
    modal: bool = False
    fabricated: list[str] = field(default_factory=list)

    def reset(self) -> None:
        self.studio, self.modal, self.fabricated = True, False, []


SESSION = Session()


def _fabricated(name: str) -> Any:
    def call(*args: Any) -> Any:
        SESSION.fabricated.append(name)
        return fact("hasattr_constant_true")["absent_call_returns"]
    return call


def _blocked(*args: Any) -> Any:
    return fact("studio_only_modal")["returns"]


class _Api:
    """A Resolve object: hasattr() is True for every name, dir() lists only the methods it has
    (not those named in `absent`), a call to any other name returns None."""

    absent: frozenset[str] = frozenset()

    def __getattribute__(self, name: str) -> Any:
        if name[:1].isupper():
            if SESSION.modal:
                return _blocked
            if name in object.__getattribute__(self, "absent"):
                return _fabricated(name)
        return object.__getattribute__(self, name)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        return _fabricated(name)

    def __dir__(self) -> list[str]:
        return [name for name in dir(type(self)) if name not in self.absent]

    def _studio_only(self) -> bool:
        """A Studio-only call: False and the modal on Free."""
        if not SESSION.studio:
            SESSION.modal = True
            return bool(fact("studio_only_modal")["returns"])
        return True


def fps_of(rate: Any) -> float:
    """A rate as Resolve writes it ("29.97 DF", "24", 23.976) as a number."""
    return float(str(rate).split()[0])


def _uid() -> str:
    return f"fake-{next(_IDS)}"


class MediaPoolItem(_Api):
    def __init__(self, properties: dict[str, Any], start_seconds: float = 0.0) -> None:
        kept = fact("clip_property_types")["strings_but"]
        self._properties = {k: (v if k in kept else str(v)) for k, v in properties.items()}
        self._id = _uid()
        self.start_seconds = start_seconds  # where its timecode starts, in seconds

    def GetName(self) -> str:
        return str(self._properties.get("Clip Name", ""))

    def GetClipProperty(self, propertyName: str | None = None) -> Any:
        if propertyName is None:
            return dict(self._properties)
        return self._properties.get(propertyName, "")

    def GetUniqueId(self) -> str:
        return self._id

    def TranscribeAudio(self, useSpeakerDetection: bool = False) -> bool:
        return self._studio_only()

    def fps(self) -> float | None:
        rate = self._properties.get("FPS")
        return fps_of(rate) if rate not in (None, "") else None

    def span(self) -> tuple[int, int]:
        """The clip's frame space: (Start, End + 1)."""
        start = int(self._properties.get("Start") or 0)
        end = self._properties.get("End")
        last = int(end) if end not in (None, "") else start + int(
            self._properties.get("Frames") or 0) - 1
        return start, last + 1


@dataclass(eq=False)
class TimelineItem(_Api):
    name: str
    start: int
    duration: int
    left_offset: int
    media: MediaPoolItem | None
    track: int
    speed: float = 1.0
    source_start: int | None = None
    reverse: bool = False
    xml_imported: bool = False  # on a timeline imported from FCP7 / Premiere XML
    hair: bool = False  # whole source frames read back a hair under
    absent: frozenset[str] = frozenset()
    uid: str = field(default_factory=_uid)
    properties: dict[str, Any] = field(default_factory=lambda: dict(INSPECTOR_DEFAULTS))
    markers: dict[float, dict[str, Any]] = field(default_factory=dict)
    graded_onto: list[TimelineItem] = field(default_factory=list)
    timeline_fps: float | None = None  # set by the timeline it is on

    def GetName(self) -> str:
        return self.name

    def GetStart(self, subframe_precision: bool = False) -> int:
        return self.start

    def GetEnd(self, subframe_precision: bool = False) -> int:
        return self.start + self.duration

    def GetDuration(self, subframe_precision: bool = False) -> int:
        return self.duration

    def GetLeftOffset(self, subframe_precision: bool = False) -> int:
        return round(self._source_start() / self.speed)  # warped (left_offset_warped)

    def GetRightOffset(self, subframe_precision: bool = False) -> int:
        return self.GetLeftOffset() + self.duration

    def GetSourceStartFrame(self) -> float:
        return self._source_frames()[0]

    def GetSourceEndFrame(self) -> float:
        return self._source_frames()[1]

    def GetSourceStartTime(self) -> float:
        return self._source_times()[0]

    def GetSourceEndTime(self) -> float:
        return self._source_times()[1]

    def _rates(self) -> tuple[float, float]:
        """(media fps, timeline fps)."""
        timeline = self.timeline_fps or 24.0
        media = self.media.fps() if self.media is not None else None
        if media is None or abs(media - timeline) < RATE_TOLERANCE:
            return timeline, timeline
        return media, timeline

    def _shown(self) -> float:
        """The source frames the item shows (retime_source_span)."""
        media, timeline = self._rates()
        return self.duration * self.speed * media / timeline

    def _source_frames(self) -> tuple[float, float]:
        if self.xml_imported:
            first, last = fact("xml_import_zero")["frames"]
            return first, last
        media, timeline = self._rates()
        row = "source_end_equal_rates" if media == timeline else "source_end_differing_rates"
        first = self._source_start()
        last = math.ceil(first + self._shown() - 1e-9) - fact(row)["end_minus"]
        if self.reverse:
            first, last = last, first
        under = fact("hair_under_whole_frame")["under_by"] if self.hair else 0.0
        return first - under, last - under

    def _source_times(self) -> tuple[float, float]:
        if self.xml_imported:
            first, last = fact("xml_import_zero")["seconds"]
            return first, last
        media, _ = self._rates()
        origin = self.media.start_seconds if self.media is not None and \
            fact("source_time_origin")["origin"] == "media_start_timecode" else 0.0
        first = self._source_start()
        times = (origin + first / media, origin + (first + self._shown()) / media)
        return times[::-1] if self.reverse else times

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


class Timeline(_Api):
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
        item.timeline_fps = fps_of(self.settings["timelineFrameRate"])
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

    def CreateSubtitlesFromAudio(self, autoCaptionSettings: Any = None) -> bool:
        return self._studio_only()

    def GetCurrentVideoItem(self) -> TimelineItem | None:
        for track in reversed(self.tracks):
            for item in track:
                if item.start <= self.playhead < item.start + item.duration:
                    return item
        return None


class Folder(_Api):
    def __init__(self, name: str) -> None:
        self.name, self.clips, self.subfolders = name, [], []

    def GetName(self) -> str:
        return self.name

    def GetSubFolderList(self) -> list[Folder]:
        return list(self.subfolders)

    def GetClipList(self) -> list[MediaPoolItem]:
        return list(self.clips)


class MediaPool(_Api):
    def __init__(self, project: Project) -> None:
        self.project = project
        self.root = Folder("Master")
        self.current = self.root
        self.individual_frames = False  # the Media Pool's "Show Individual Frames"
        self.short_by = 0  # a build that places fewer frames than asked (readback tests)
        self.sequence_fps: float | None = None  # None: sequences come in at the timeline's rate

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
        timeline = self.project.current
        fps = self.sequence_fps or (fps_of(timeline.settings["timelineFrameRate"])
                                    if timeline is not None else 24.0)
        for entry in items:
            clips = _import(entry, self.individual_frames, fps)
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
            length = _record_length(last - first, clip.fps(), timeline) - self.short_by
            record = int(info.get("recordFrame", timeline.start_frame))
            if timeline.locked[track - 1] or timeline.busy(track, record, record + length):
                placed.append(_shell())
                continue
            placed.append(timeline.add(TimelineItem(clip.GetName(), record, length, first - lo,
                                                    clip, track)))
        return placed


def _record_length(frames: int, clip_fps: float | None, timeline: Timeline) -> int:
    """Timeline frames `frames` source frames of a clip take (append_mixed_rate_floor)."""
    rate = fps_of(timeline.settings["timelineFrameRate"])
    if clip_fps is None or abs(clip_fps - rate) < RATE_TOLERANCE:
        return frames
    assert fact("append_mixed_rate_floor")["record_frames"] == "floor"
    return math.floor(frames * rate / clip_fps + 1e-9)


def _shell() -> TimelineItem:
    """What a dropped append returns (append_returns_shells): on no track, no unique id."""
    kept = set(fact("append_returns_shells")["shell_has"])
    return TimelineItem("", 0, 0, 0, None, 0,
                        absent=frozenset({"GetUniqueId", "GetName"} - kept))


def _import(entry: Any, individual_frames: bool, sequence_fps: float) -> list[MediaPoolItem]:
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
                               "Type": "Video", "Frames": str(len(paths)), "FPS": sequence_fps,
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


class Project(_Api):
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


class ProjectManager(_Api):
    def __init__(self, project: Project | None) -> None:
        self.project = project

    def GetCurrentProject(self) -> Project | None:
        return self.project


class Resolve(_Api):
    def __init__(self, project: Project | None, product: str = "DaVinci Resolve Studio",
                 version: str = "19.1.3.7") -> None:
        SESSION.studio = "studio" in product.lower()
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
               kind: str = "Video + Audio", name: str | None = None,
               start_seconds: float = 0.0) -> MediaPoolItem:
    """A media pool item for a clip as Resolve describes it (strings, FPS a number);
    start_seconds: where the file's timecode starts."""
    rate: Any = fps
    if isinstance(fps, str):
        try:
            rate = float(fps)
        except ValueError:
            rate = fps
    return MediaPoolItem({"File Path": str(path), "Type": kind, "FPS": rate,
                          "Frames": str(frames), "Start": "0", "End": str(frames - 1),
                          "Clip Name": name or Path(path).name}, start_seconds)


def world(clip: Path | None, *, frames: int = 20, start: int = 86448, duration: int = 10,
          left_offset: int = 3, rate: str = "24", drop: str = "0", clip_fps: str | None = None,
          product: str = "DaVinci Resolve Studio", start_frame: int = 86400,
          start_timecode: str = "01:00:00:00", playhead: int | None = None,
          current_timecode: str = "01:00:02:02", tracks: int = 1,
          start_seconds: float = 0.0, **item: Any) -> Resolve:
    """A running Resolve with one project, one timeline and the item on V1 (clip None: a title
    without media), the playhead on the item; `item`: TimelineItem fields (speed 2.0: 200%,
    reverse, xml_imported, hair, absent). start_seconds: where the clip's timecode starts."""
    SESSION.reset()
    timeline = Timeline(start_frame=start_frame, start_timecode=start_timecode, rate=rate,
                        drop=drop, tracks=tracks)
    fps = clip_fps or rate.removesuffix(" DF")
    media = media_item(clip, frames, fps, start_seconds=start_seconds) \
        if clip is not None else None
    timeline.add(TimelineItem(clip.name if clip else "Text+", start, duration, left_offset, media,
                              1, **item))
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
