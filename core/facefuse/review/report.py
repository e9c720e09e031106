"""report.json: what a review found, as data (the contract for hosts and farms; docs/review.md
describes every field), built from a shot plan and its flags, and read back checked.

The page (review.page) is made from this JSON alone, and `--frames flagged:report.json` reads
its ``flagged_frames`` (``load_report(path).flagged_frames``).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import InputError
from ..io import small_files
from ..shot.contract.request import RenderRequest
from ..shot.output.provenance import file_name
from ..version import __version__
from .records import Flag, flag_sample, flagged_ranges, ranges

if TYPE_CHECKING:  # these load OpenCV: types only here
    from ..shot.plan.consent import Consented
    from ..shot.plan.plan import ShotPlan
    from .flags import Thresholds
    from .measures import Series

SCHEMA = "facefuse.review/1"
REPORT_NAME = "report.json"
PAGE_NAME = "index.html"


@dataclass(frozen=True, slots=True)
class Sample:
    """One frame of the before/after contact sheet: why it was picked ("sampled" or
    "flagged"), and its two pictures (file names relative to the report folder); after is None
    where the frame swaps people who have no source yet (`unsourced`, their ids)."""

    frame: int
    why: str
    before: str
    after: str | None
    unsourced: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Timings:
    """Seconds spent analysing and planning the shot (0 when the analysis was cached), and
    making the report (flags, stills, thumbnails, page)."""

    analysis_s: float
    report_s: float
    analysis_cached: bool


@dataclass(frozen=True, slots=True)
class LoadedReport:
    """A report read back: the whole JSON, and the fields a command line reads from it."""

    data: Mapping[str, Any]
    shot_id: str
    frames: tuple[int, int]
    flagged_frames: tuple[tuple[int, int], ...]


def settings_record(request: RenderRequest, swapper_size_px: int) -> dict[str, Any]:
    """The options that decide the plan and what the flags measure."""
    s = request.settings
    return {"selector": s.selector, "similarity": s.similarity,
            "reference_images": [str(p) for p in s.reference_images],
            "sources": [str(p) for p in request.sources], "detector": s.detector,
            "detector_size_px": s.detector_size_px, "detector_score": s.detector_score,
            "recogniser": s.recogniser, "swapper": s.swapper,
            "swapper_size_px": swapper_size_px, "enhancer": s.enhancer,
            "smoothing": request.plan.smoothing, "colorspace": request.input.colorspace}


def build_report(plan: ShotPlan, request: RenderRequest, flags: Sequence[Flag],
                 series: Sequence[Series], samples: Sequence[Sample],
                 thumbnails: Mapping[str, str], timings: Timings, limits: Thresholds,
                 render: Mapping[str, Any] | None = None,
                 consented: Sequence[Consented] = ()) -> dict[str, Any]:
    """The report's JSON (see docs/review.md); `consented`: who is swapped under which
    consent record, when the request gives records."""
    return {
        "schema": SCHEMA, "facefuse": __version__, "input": request.input.path,
        "shot_id": plan.shot_id,
        "frames": {"first": plan.frames[0], "last": plan.frames[-1],
                   "count": len(plan.frames)} if plan.frames else None,
        "cuts": list(plan.cuts),
        "settings": settings_record(request, limits.swapper_size_px),
        "thresholds": asdict(limits),
        "people": [_person(plan, p.person_id, thumbnails.get(p.person_id))
                   for p in plan.people],
        "strip": _strip(plan, flags),
        "flags": [{"kind": f.kind, "first": f.first, "last": f.last, "person": f.person_id,
                   "reason": f.reason, "value": _number(f.value),
                   "sample": flag_sample(f, plan.frames)} for f in flags],
        "samples": [asdict(s) for s in samples],
        "series": [{"person": s.person_id, "frames": list(s.frames),
                    "jitter": [_number(v) for v in s.jitter],
                    "mask_area_change": [_number(v) for v in s.mask_area_change]}
                   for s in series],
        "timings": {"analysis_s": round(timings.analysis_s, 3),
                    "report_s": round(timings.report_s, 3),
                    "analysis_cached": timings.analysis_cached},
        "render": dict(render) if render is not None else None,
        "flagged_frames": [list(r) for r in flagged_ranges(flags, plan.frames)],
        "consent": [_consented(item) for item in consented],
    }


def _consented(item: Consented) -> dict[str, Any]:
    record = item.record
    return {"person": item.person_id, "source": file_name(item.source),
            "performer": record.performer if record else None,
            "record": record.path.name if record else None,
            "record_sha256": record.sha256 if record else None, "problem": item.problem}


def _number(value: float | None) -> float | None:
    if value is None or not math.isfinite(value):
        return None
    return round(float(value), 5)


def _person(plan: ShotPlan, person_id: str, thumbnail: str | None) -> dict[str, Any]:
    planned = plan.person(person_id)
    person = planned.person
    filled = sorted(f for f, faces in plan.planned.items() if f not in plan.analysis.failures
                    and any(p.person_id == person_id and not p.detected for p in faces))
    return {"id": person_id, "frames": [list(r) for r in ranges(person.frames)],
            "frame_count": len(person.frames), "filled_frames": len(filled),
            "tracks": len(person.tracks), "presence": round(person.presence, 1),
            "swapped": planned.swapped, "source": planned.source, "why": planned.why,
            "thumbnail": thumbnail}


def _strip(plan: ShotPlan, flags: Sequence[Flag]) -> list[dict[str, Any]]:
    """Per analysed frame: faces found, people swapped, people filled in, flag kinds (a frame
    the render fails swaps no one)."""
    position = {frame: i for i, frame in enumerate(plan.frames)}
    marks: dict[int, set[str]] = {}
    for flag in flags:
        for frame in plan.frames[position[flag.first]:position[flag.last] + 1]:
            marks.setdefault(frame, set()).add(flag.kind)
    rows = []
    for frame in plan.frames:
        planned = plan.planned.get(frame, ()) if frame not in plan.analysis.failures else ()
        rows.append({"frame": frame, "found": len(plan.analysis.faces.get(frame, ())),
                     "swapped": [p.person_id for p in planned],
                     "filled": [p.person_id for p in planned if not p.detected],
                     "flags": sorted(marks.get(frame, ()))})
    return rows


def report_json(report: Mapping[str, Any]) -> bytes:
    return (json.dumps(report, indent=1, ensure_ascii=False) + "\n").encode("utf-8")


# -- reading back --------------------------------------------------------------------------------

def load_report(path: Path | str) -> LoadedReport:
    """A report.json (or a report folder) read back and checked; InputError, one sentence,
    when it cannot be read, is not JSON or is not a facefuse review report."""
    path = Path(path)
    if path.is_dir():
        path = path / REPORT_NAME
    data = small_files.load_json_file(path, f"the review report {path}",
                                      small_files.REPORT_LIMIT)
    problem = report_problem(data)
    if problem is not None:
        raise InputError(f"the review report {path} {problem}")
    return LoadedReport(data, data["shot_id"], (data["frames"]["first"], data["frames"]["last"]),
                        tuple((a, b) for a, b in data["flagged_frames"]))


def report_problem(data: Any) -> str | None:
    """Why `data` is not a report of this schema (words that follow "the report ..."), or
    None."""
    if not isinstance(data, dict):
        return "is not a JSON object"
    if data.get("schema") != SCHEMA:
        return (f"has schema {data.get('schema')!r}, not {SCHEMA!r} (it was not written by "
                "`facefuse review` or `render --report`, or by another version)")
    missing = [key for key in _REQUIRED if key not in data]
    if missing:
        return f"lacks {', '.join(missing)}"
    if not isinstance(data["shot_id"], str):
        return "has a shot_id that is not a string"
    frames = data["frames"]
    if not (isinstance(frames, dict) and _is_int(frames.get("first"))
            and _is_int(frames.get("last")) and frames["first"] <= frames["last"]):
        return "has no analysed range (frames.first and frames.last)"
    if not _pairs(data["flagged_frames"], frames["first"], frames["last"]):
        return ("has flagged_frames that are not [first, last] frame pairs inside the "
                "analysed range")
    for key in ("people", "flags", "strip", "samples", "series", "cuts"):
        if not isinstance(data[key], list):
            return f"has {key} that is not a list"
    return None


_REQUIRED = ("shot_id", "input", "frames", "cuts", "people", "strip", "flags", "samples",
             "series", "timings", "flagged_frames")


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _pairs(value: Any, first: int, last: int) -> bool:
    return isinstance(value, list) and all(
        isinstance(p, list) and len(p) == 2 and all(_is_int(v) for v in p)
        and first <= p[0] <= p[1] <= last for p in value)
