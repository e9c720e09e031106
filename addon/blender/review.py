"""A strip's review on the timeline, its people, and its corrections (main thread, bpy data).

After a review (facefuse.write_review into <output>/review/), each flag becomes a timeline
marker named `kind:person` (`kind` for a flag of no one) at the first timeline frame it covers;
the strip remembers the markers it made (strip.facefuse.review_markers) and removes only those
on the next review. The report's people fill strip.facefuse.people, keeping each person's own
source and skip across reviews. Corrections (strip.facefuse.corrections) are kept on the strip
in the engine's numbers and written, for each request, as the engine's overrides file. Frame
numbers: the report speaks the engine's numbers (the media's), the timeline its own;
frames.StripSwap maps between them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from facefuse import (
    FacefuseError,
    Override,
    Overrides,
    load_overrides,
    load_report,
    write_overrides,
)

from .frames import StripSwap, movie_span
from .strips import StripError

ACTIONS = ('skip', 'keep', 'hold', 'swap')
CORRECTED, SKIPPED = "(corrected)", "(skipped)"  # what a review marker's name ends with
REPORT_PAGE = "index.html"  # beside report.json (facefuse.write_review)


def apply_report(plan: StripSwap, scene: Any, strip: Any, report: Mapping[str, Any]) -> int:
    """Put a review's flags on the timeline and its people on the strip; the markers made."""
    props = strip.facefuse
    remove_markers(scene, strip)
    for flag in report["flags"]:
        frames = plan.timeline_frames(flag["first"], flag["last"])
        if not frames:
            continue
        name = f"{flag['kind']}:{flag['person']}" if flag.get("person") else str(flag["kind"])
        scene.timeline_markers.new(name, frame=frames[0])
        record = props.review_markers.add()
        record.name, record.frame, record.label = name, frames[0], name
        record.person, record.first, record.last = flag.get("person") or "", *_span(flag)
    update_people(plan, props, report["people"])
    props.flagged = sum(b - a + 1 for a, b in report["flagged_frames"])
    mark_corrected(scene, props)
    return len(props.review_markers)


def _span(flag: Mapping[str, Any]) -> tuple[int, int]:
    return int(flag["first"]), int(flag["last"])


def mark_corrected(scene: Any, props: Any) -> int:
    """Name each of the strip's review markers after whether the user has dealt with its flag:
    "profile:p1 (skipped)" when its person is skipped, "profile:p1 (corrected)" when a
    correction covers all its frames (for its person or everyone); how many are."""
    skipped = {person.person_id for person in props.people if person.skip}
    dealt = 0
    for record in props.review_markers:
        fixed = any(item.person in ("", record.person) and item.first <= record.first
                    and record.last <= item.last for item in props.corrections)
        status = SKIPPED if record.person and record.person in skipped else \
            CORRECTED if fixed else ""
        name = f"{record.label} {status}" if status else record.label
        dealt += bool(status)
        if not record.label or name == record.name:
            continue
        for marker in scene.timeline_markers:
            if marker.name == record.name and marker.frame == record.frame:
                marker.name = name
                break
        record.name = name
    return dealt


def remove_markers(scene: Any, strip: Any) -> None:
    """Remove the timeline markers the strip's last review made (and no other)."""
    props = strip.facefuse
    for record in props.review_markers:
        for marker in list(scene.timeline_markers):
            if marker.name == record.name and marker.frame == record.frame:
                scene.timeline_markers.remove(marker)
                break
    props.review_markers.clear()


def update_people(plan: StripSwap, props: Any, people: Sequence[Mapping[str, Any]]) -> None:
    """The report's people on the strip; a person's own source, skip and consent record
    stay."""
    kept = {p.person_id: (p.source, p.skip, p.consent) for p in props.people}
    props.people.clear()
    for person in people:
        item = props.people.add()
        item.person_id = person["id"]
        item.source, item.skip, item.consent = kept.get(person["id"], ("", False, ""))
        item.frames = int(person["frame_count"])
        ranges = person["frames"]
        seen = plan.timeline_frames(ranges[0][0], ranges[-1][1]) if ranges else []
        item.first, item.last = (seen[0], seen[-1]) if seen else (0, 0)
        item.swapped, item.why = bool(person["swapped"]), str(person["why"] or "")
    props.person_index = max(0, min(props.person_index, len(props.people) - 1))


def marked_range(scene: Any) -> tuple[int, int] | None:
    """(first, last) timeline frames of the selected markers, None when none is selected."""
    frames = [m.frame for m in scene.timeline_markers if m.select]
    return (min(frames), max(frames)) if frames else None


def scene_range(scene: Any) -> tuple[int, int]:
    """The scene's frame range (its preview range when that is on)."""
    if scene.use_preview_range:
        return scene.frame_preview_start, scene.frame_preview_end
    return scene.frame_start, scene.frame_end


def override_entry(plan: StripSwap, frames: tuple[int, int], action: str,
                   person: str) -> Override:
    """One overrides entry for timeline frames `frames`, in the engine's numbers."""
    numbers = plan.numbers_between(*frames)
    if not numbers:
        raise StripError(f"Frames {frames[0]}-{frames[1]} miss strip '{plan.strip}'")
    if action != 'keep' and not person:
        raise StripError(f"'{action}' needs a person: pick one in Face Swap > People")
    return Override(((numbers[0], numbers[-1]),), person or None, action)


def add_correction(props: Any, entry: Override) -> int:
    """Append `entry` to the strip's corrections (the active one now); how many it has."""
    (first, last), = entry.frames
    item = props.corrections.add()
    item.first, item.last, item.action = first, last, entry.action
    item.person = entry.person or ""
    props.correction_index = len(props.corrections) - 1
    return len(props.corrections)


def remove_correction(props: Any, index: int) -> Override:
    """Remove the strip's correction `index`; the entry it was."""
    if not 0 <= index < len(props.corrections):
        raise StripError("No correction selected")
    entry = strip_corrections(props)[index]
    props.corrections.remove(index)
    props.correction_index = max(0, min(index, len(props.corrections) - 1))
    return entry


def strip_corrections(props: Any) -> tuple[Override, ...]:
    """The strip's corrections as overrides entries, in order (a later one wins)."""
    return tuple(correction(item) for item in props.corrections)


def correction(item: Any) -> Override:
    """One of strip.facefuse.corrections as an overrides entry."""
    return Override(((item.first, item.last),), item.person or None, item.action)


def write_corrections(path: Path, made_elsewhere: Path | None, own: tuple[Override, ...],
                      shot: tuple[str, tuple[int, int]] | None = None) -> None:
    """Write the overrides file of a strip's request at `path`: the entries of the file
    `made_elsewhere` (and its shot), then the strip's own (atomic; unchanged bytes are not
    rewritten). shot: (shot id, analysed range) the strip's people were named in, for a
    request of part of the strip (the engine then plans over that range, so p1 stays p1)."""
    try:
        earlier = load_overrides(made_elsewhere) if made_elsewhere else Overrides(())
        named, analysed = shot if shot and earlier.shot is None else \
            (earlier.shot, earlier.analysed)
        write_overrides(path, Overrides((*earlier.entries, *own), named, analysed=analysed))
    except FacefuseError as exc:  # one sentence naming the file
        raise StripError(str(exc)) from None


def review_shot(report_path: str) -> tuple[str, tuple[int, int]] | None:
    """(shot id, analysed range) of a strip's last review; None without a readable one."""
    if not report_path:
        return None
    try:
        report = load_report(report_path)
    except FacefuseError:
        return None
    return report.shot_id, report.frames


def describe_on(strip: Any, entry: Override) -> str:
    """describe(entry) in timeline frames where that needs no reading (a movie strip)."""
    (first, last), = entry.frames
    return describe(entry, movie_span(strip, first, last) if strip.type == 'MOVIE' else None)


def describe(entry: Override, span: tuple[int, int] | None = None) -> str:
    """A correction in words: "skip p1 over frames 14-16" with `span` (timeline frames), else
    "skip p1 over media frames 4-6" (the engine's numbers)."""
    who = f" {entry.person}" if entry.person else " everyone"
    (first, last), = entry.frames
    where = "frames" if span else "media frames"
    first, last = span or (first, last)
    frames = f"{where[:-1]} {first}" if first == last else f"{where} {first}-{last}"
    return f"{entry.action}{who} over {frames}"


def report_page(report_path: str) -> Path:
    """The HTML page beside a strip's last review report (StripError when there is none)."""
    if not report_path:
        raise StripError("No review yet: press Review first")
    page = Path(report_path).with_name(REPORT_PAGE)
    if not page.is_file():
        raise StripError(f"The review's page {page} is missing: press Review again")
    return page


def flagged_numbers(report_path: str) -> tuple[str, tuple[tuple[int, int], ...]]:
    """(shot id, flagged ranges in the engine's numbers) of a strip's last review."""
    if not report_path:
        raise StripError("No review yet: press Review first")
    try:
        report = load_report(report_path)
    except FacefuseError as exc:
        raise StripError(str(exc)) from None
    if not report.flagged_frames:
        raise StripError("The last review flagged no frame: nothing to re-render")
    return report.shot_id, report.flagged_frames
