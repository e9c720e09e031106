"""The job file a DaVinci Resolve host hands to facefuse, read into checked clip facts.

The Lua menu script (addon/resolve/facefuse.lua) and the Studio bridge (addon/resolve/bridge.py)
only collect raw facts of the timeline item under the playhead and write them as JSON:

    {"schema": "facefuse-resolve-job", "version": 3,
     "product": "DaVinci Resolve" | "DaVinci Resolve Studio", "resolve_version": "19.1.3.7",
     "platform": "Linux" | "Windows" | "Mac", "sandboxed": false, "project": "name",
     "timeline": {"name", "id", "start_frame": 86400, "start_timecode": "01:00:00:00",
                  "current_timecode": "01:00:02:10" | "",          # "" off the edit pages
                  "frame_rate": "23.976" | "29.97 DF", "drop_frame": "0", "video_tracks": 2,
                  "busy": {"2": [[86400, 86450], ...], ...},     # item [start, end) per track
                  "locked": [3], "disabled": [2]},               # video tracks, optional
     "item": null | {"name", "id", "start", "end", "duration", "left_offset", "track",
                     "source_start", "source_end",            # optional: GetSource*Frame
                     "source_start_time", "source_end_time",  # optional: GetSource*Time (s)
                     "media": null | {"File Path", "Type", "FPS", "Frames", "Start", "End",
                                      "Clip Name"}},
     "review_report": "/path/report.json"}                        # optional: markers

The source readers are written as Resolve gives them (source_frames.py says what they mean);
version 2 jobs (no seconds) are read too. Numbers may arrive as numbers or strings (Resolve gives
clip properties as strings but FPS as a number, Lua writes what it gets), a hair off a whole
frame (1299.9999: read as 1300), "drop_frame" as "0"/"1" or a bool. Everything a user can get
wrong (no timeline, no clip under the playhead, a title or generator, an offline clip, a clip
whose rate differs from the timeline's, a speed change or a reversed clip) is a ClipError: one
sentence, nothing placed; a field that is not a finite whole number in range is an InputError.
Where Resolve gives no source frames (0/0 on timelines imported from FCP7 or Premiere XML) the
retime check cannot be made: the clip is swapped from its left offset and ClipFacts.caveats says
so. The swap built from these facts is in swaps.py.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import Any

from facefuse import (
    InputError,
    TimecodeRate,
    load_json_file,
    parse_rate,
    rate_text,
    same_rate,
    says_drop_frame,
)

from .source_frames import (
    HAIR,
    NORMAL,
    REVERSED,
    UNKNOWN,
    SourceReadback,
    speed_verdict,
    whole_frame,
)
from .timeline import ENGINE_START_NUMBER, ItemSpan

JOB_SCHEMA = "facefuse-resolve-job"
JOB_VERSION = 3
READABLE_VERSIONS = (2, 3)
# frame numbers and counts beyond this are not a real timeline's (Resolve counts in 32 bits)
FRAME_LIMIT = 2 ** 31
TRACK_LIMIT = 10_000
STUDIO = "studio"
FREE = "free"
VIDEO_TYPES = ("video", "video + audio")
_SEQUENCE = re.compile(r"^(?P<prefix>.*?)\[(?P<first>\d+)-(?P<last>\d+)\](?P<suffix>\.[^.\\/]+)$")


class ClipError(InputError):
    """The timeline item under the playhead cannot be swapped; the message says why."""


@dataclass(frozen=True, slots=True)
class Edition:
    """Which Resolve runs: `kind` is STUDIO or FREE; version as (major, minor, patch)."""

    product: str
    version: tuple[int, ...]
    platform: str
    sandboxed: bool

    @property
    def kind(self) -> str:
        return STUDIO if "studio" in self.product.lower() else FREE

    @property
    def label(self) -> str:
        shown = ".".join(str(v) for v in self.version) or "unknown version"
        return f"{self.product or 'DaVinci Resolve'} {shown}"


@dataclass(frozen=True, slots=True)
class ClipFacts:
    """The checked facts of one timeline item: what to render and where the result goes.

    input: the media as the engine reads it (a movie path, or a name.####.ext pattern for an
    image sequence). span: record frames <-> source frames. track: its 1-based video track.
    busy: the [start, end) record ranges already used on each video track above it; locked,
    disabled: video tracks Resolve will not take an append on, or does not show.
    current_timecode: "" when Resolve gave none (a page without a playhead). timeline_id,
    item_id: Resolve's unique ids ("" when it gave none). review_report: a review report whose
    flags become markers on the placed swap. caveats: sentences the user is told with the
    result (the retime check could not be made).
    """

    edition: Edition
    project: str
    timeline: str
    rate: TimecodeRate
    start_frame: int
    start_timecode: str
    current_timecode: str
    video_tracks: int
    busy: dict[int, tuple[tuple[int, int], ...]]
    name: str
    input: str
    media: Path
    span: ItemSpan
    track: int
    locked: frozenset[int] = frozenset()
    disabled: frozenset[int] = frozenset()
    timeline_id: str = ""
    item_id: str = ""
    review_report: Path | None = None
    caveats: tuple[str, ...] = ()

    @property
    def caveat_note(self) -> str:
        """The caveats as they close a sentence ("; note: ..."), "" without any."""
        return "".join(f"; note: {caveat}" for caveat in self.caveats)

    @property
    def is_sequence(self) -> bool:
        return self.input != str(self.media)


def read_job(path: Path) -> ClipFacts:
    """Read and check a job file; ClipError (or InputError for a broken file) otherwise."""
    return parse_job(load_json_file(path, f"the Resolve job file {path}"))


def parse_job(data: Any) -> ClipFacts:
    """Check the job's facts (see the module docstring) and build ClipFacts from them."""
    if not isinstance(data, dict) or data.get("schema") != JOB_SCHEMA:
        raise InputError(f"not a facefuse Resolve job (schema {JOB_SCHEMA!r} expected)")
    if _integer(data.get("version"), "version") not in READABLE_VERSIONS:
        raise InputError(f"Resolve job version {data.get('version')} is not supported "
                         f"(this facefuse reads version {JOB_VERSION}): reinstall the launcher "
                         "with `facefuse resolve install`")
    edition = _edition(data)
    timeline = data.get("timeline")
    if not isinstance(timeline, dict):
        raise ClipError("No timeline is open in Resolve: open the timeline with the clip to swap")
    rate_text = _text(timeline.get("frame_rate"), "timeline frame rate")
    rate = TimecodeRate(parse_rate(rate_text),
                        _flag(timeline.get("drop_frame")) or says_drop_frame(rate_text))
    item = data.get("item")
    if not isinstance(item, dict):
        raise ClipError("No clip under the playhead: move the playhead over a video clip on an "
                        "enabled video track and run facefuse again")
    name = str(item.get("name") or "clip")
    media_path, input_spec, first_number = _media(item.get("media"), name, rate)
    span = _span(item, name, first_number)
    _check_frames(item.get("media") or {}, span, name)
    caveats = _check_speed(item, span, name, rate)
    tracks = _integer(timeline.get("video_tracks"), "video track count", 1, TRACK_LIMIT)
    report = data.get("review_report")
    return ClipFacts(
        edition=edition, project=str(data.get("project") or ""),
        timeline=str(timeline.get("name") or ""), rate=rate,
        start_frame=_integer(timeline.get("start_frame"), "timeline start frame"),
        start_timecode=_text(timeline.get("start_timecode"), "timeline start timecode"),
        current_timecode=str(timeline.get("current_timecode") or "").strip(),
        video_tracks=tracks, busy=_busy(timeline.get("busy")), name=name, input=input_spec,
        media=media_path, span=span, track=_integer(item.get("track"), "track", 1, tracks),
        locked=_tracks(timeline.get("locked"), "locked tracks"),
        disabled=_tracks(timeline.get("disabled"), "disabled tracks"),
        timeline_id=str(timeline.get("id") or ""), item_id=str(item.get("id") or ""),
        review_report=Path(str(report)) if report else None, caveats=caveats)


def _edition(data: dict[str, Any]) -> Edition:
    version = tuple(int(v) for v in re.findall(r"\d+", str(data.get("resolve_version") or "")))
    return Edition(product=str(data.get("product") or ""), version=version[:3],
                   platform=str(data.get("platform") or ""),
                   sandboxed=_flag(data.get("sandboxed")))


def _media(media: Any, name: str, rate: TimecodeRate) -> tuple[Path, str, int]:
    """(media path, engine input, engine number of source index 0) of a video clip."""
    if not isinstance(media, dict):
        raise ClipError(f"'{name}' is a generator, title or effect with no media file: facefuse "
                        "swaps video clips from files")
    kind = str(media.get("Type") or "").strip()
    if kind.lower() not in VIDEO_TYPES:
        what = kind.lower() or "clip without a type"
        raise ClipError(f"'{name}' is a {what} clip: facefuse swaps video clips from files "
                        "(decompose compound clips and swap the clips inside)")
    path_text = str(media.get("File Path") or "").strip()
    if not path_text:
        raise ClipError(f"Clip '{name}' is offline (it has no media file): relink it in the "
                        "Media Pool")
    sequence = _SEQUENCE.match(path_text)
    if sequence is not None:
        first = int(sequence["first"])
        digits = len(sequence["first"])
        pattern = f"{sequence['prefix']}{'#' * digits}{sequence['suffix']}"
        media_path = Path(f"{sequence['prefix']}{sequence['first']}{sequence['suffix']}")
        input_spec, number = pattern, first
    else:
        media_path, input_spec, number = Path(path_text), path_text, ENGINE_START_NUMBER
    if not media_path.is_file():
        raise ClipError(f"Clip '{name}' is offline: its media {path_text} is missing; relink it "
                        "in the Media Pool")
    clip_rate = _clip_rate(media, name)
    if clip_rate is not None and not same_rate(clip_rate, rate.fps):
        raise ClipError(
            f"Clip '{name}' runs at {rate_text(clip_rate)} fps but the timeline at "
            f"{rate_text(rate.fps)} fps: facefuse swaps clips whose rate matches the timeline "
            "(set the clip's frame rate in Clip Attributes, or use a timeline of its rate)")
    return media_path, input_spec, number


def _clip_rate(media: dict[str, Any], name: str) -> Fraction | None:
    text = str(media.get("FPS") or "").strip()
    if not text:
        return None
    try:
        return parse_rate(text)
    except InputError:
        raise ClipError(f"Clip '{name}' has an unreadable frame rate {text!r}") from None


def _span(item: dict[str, Any], name: str, first_number: int) -> ItemSpan:
    start = _integer(item.get("start"), "item start")
    end = _integer(item.get("end"), "item end")
    duration = _integer(item.get("duration", end - start), "item duration")
    if end - start != duration:
        raise ClipError(f"Clip '{name}' spans {end - start} timeline frames but lasts {duration}:"
                        " it is retimed; swap the clip at normal speed, then retime the result")
    return ItemSpan(record_start=start, duration=duration,
                    left_offset=_integer(item.get("left_offset"), "item left offset"),
                    first_number=first_number)


def _check_speed(item: dict[str, Any], span: ItemSpan, name: str,
                 rate: TimecodeRate) -> tuple[str, ...]:
    """ClipError for a retimed or reversed item (source_frames.py says how it shows); the
    caveat to tell the user when Resolve gave no source frames to check."""
    read = SourceReadback(*(_reading(item.get(key), f"item {key.replace('_', ' ')}") for key in
                            ("source_start", "source_end", "source_start_time",
                             "source_end_time")))
    media_fps = _clip_rate(item.get("media") or {}, name)
    verdict, shown = speed_verdict(read, span.duration, media_fps, rate.fps)
    if verdict == NORMAL:
        return ()
    if verdict == UNKNOWN:
        why = ("this Resolve has no source readers" if read == SourceReadback() else
               "0/0, as on timelines imported from FCP7 or Premiere XML")
        caveat = (f"Resolve gave no source frames for '{name}' ({why}), so the retime check "
                  "could not be made: it is swapped from its left offset as if it plays at "
                  "100% speed")
        return (caveat,)
    if verdict == REVERSED:
        frames = "" if read.start_frame is None or read.end_frame is None else (
            f" (Resolve reads its source frames from {whole_frame(read.start_frame)} down to "
            f"{whole_frame(read.end_frame)})")
        raise ClipError(f"Clip '{name}' plays in reverse{frames}: facefuse does not swap "
                        "reversed clips; swap it forwards, then reverse the result")
    raise ClipError(f"Clip '{name}' is retimed (it shows {shown:.4g} source frames over "
                    f"{span.duration} timeline frames): facefuse does not swap retimed clips "
                    "yet; swap the clip at 100% speed, then retime the result")


def _check_frames(media: dict[str, Any], span: ItemSpan, name: str) -> None:
    """An item that uses more frames than its media has (its "Frames", or the file numbers of an
    image sequence's "File Path") is refused before anything is rendered: only rendered frames
    may be placed."""
    frames_text = str(media.get("Frames") or "").strip()
    sequence = _SEQUENCE.match(str(media.get("File Path") or "").strip())
    if not frames_text.isdigit() and sequence is not None:
        frames_text = str(int(sequence["last"]) - int(sequence["first"]) + 1)
    if frames_text.isdigit() and span.left_offset + span.duration > int(frames_text):
        raise ClipError(f"Clip '{name}' uses frames {span.left_offset}-"
                        f"{span.left_offset + span.duration - 1} of a {frames_text}-frame media:"
                        " it is retimed or its media was replaced; swap it at normal speed")


def _busy(data: Any) -> dict[int, tuple[tuple[int, int], ...]]:
    """{track: ((start, end), ...)}; Lua writes an empty list as {} and a list as a list."""
    if data is None or data == []:
        return {}
    if not isinstance(data, dict):
        raise InputError("the Resolve job's busy ranges are not a table of tracks")
    busy = {}
    for track, ranges in data.items():
        pairs = ranges.values() if isinstance(ranges, dict) else ranges or ()
        if not isinstance(pairs, (list, tuple, type({}.values()))) or not all(
                isinstance(pair, (list, tuple)) and len(pair) == 2 for pair in pairs):
            raise InputError(f"the Resolve job's busy ranges of track {track} are not "
                             "[start, end] pairs")
        busy[_integer(track, "track", 1, TRACK_LIMIT)] = tuple(
            (_integer(pair[0], "item start"), _integer(pair[1], "item end")) for pair in pairs)
    return busy


def _tracks(data: Any, what: str) -> frozenset[int]:
    if data is None or data == {}:
        return frozenset()
    values = data.values() if isinstance(data, dict) else data
    if not isinstance(values, (list, tuple, type({}.values()))):
        raise InputError(f"the Resolve job's {what} are not a list of tracks")
    return frozenset(_integer(v, what, 1, TRACK_LIMIT) for v in values)


def _integer(value: Any, what: str, low: int = -FRAME_LIMIT, high: int = FRAME_LIMIT) -> int:
    """A whole number in [low, high] (a hair off one is that one: 1299.9999 -> 1300);
    InputError for text, NaN, infinity or out of range, ClipError for a fraction."""
    number = _number(value, what)
    if not math.isfinite(number) or not low <= number <= high:
        raise InputError(f"the Resolve job's {what} ({value!r}) is not a number from {low} to "
                         f"{high}")
    if abs(number - whole_frame(number)) >= HAIR:
        raise ClipError(f"the {what} ({number}) is not a whole frame: facefuse works on whole "
                        "frames")
    return whole_frame(number)


def _reading(value: Any, what: str) -> float | None:
    """A source reader's number as Resolve gave it (None: not given); InputError for text,
    NaN or infinity."""
    if value is None or value == "":
        return None
    number = _number(value, what)
    if not math.isfinite(number):
        raise InputError(f"the Resolve job's {what} ({value!r}) is not a finite number")
    return number


def _number(value: Any, what: str) -> float:
    """A job field as a float (NaN and infinity included); InputError for text or a bool."""
    if isinstance(value, bool):
        raise InputError(f"the Resolve job's {what} is not a number: {value!r}")
    try:
        return float(str(value).strip())
    except ValueError:
        raise InputError(f"the Resolve job's {what} is not a number: {value!r}") from None


def _text(value: Any, what: str) -> str:
    if value is None or not str(value).strip():
        raise InputError(f"the Resolve job has no {what}")
    return str(value).strip()


def _flag(value: Any) -> bool:
    return str(value).strip().lower() in ("1", "true", "yes", "on")
