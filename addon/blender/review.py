"""A strip's review on the timeline, its people, and its overrides file (main thread, bpy data).

After a review (facefuse.write_review into <output>/review/), each flag becomes a timeline
marker named `kind:person` (`kind` for a flag of no one) at the first timeline frame it covers;
the strip remembers the markers it made (strip.facefuse.review_markers) and removes only those
on the next review. The report's people fill strip.facefuse.people, keeping each person's own
source and skip across reviews. Frame numbers: the report speaks the engine's numbers (the
media's), the timeline its own; frames.SwapPlan maps between them.
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

from .frames import SwapPlan
from .strips import StripError

ACTIONS = ('skip', 'keep', 'hold', 'swap')


def apply_report(plan: SwapPlan, scene: Any, strip: Any, report: Mapping[str, Any]) -> int:
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
        record.name, record.frame = name, frames[0]
    update_people(plan, props, report["people"])
    props.flagged = sum(b - a + 1 for a, b in report["flagged_frames"])
    return len(props.review_markers)


def remove_markers(scene: Any, strip: Any) -> None:
    """Remove the timeline markers the strip's last review made (and no other)."""
    props = strip.facefuse
    for record in props.review_markers:
        for marker in list(scene.timeline_markers):
            if marker.name == record.name and marker.frame == record.frame:
                scene.timeline_markers.remove(marker)
                break
    props.review_markers.clear()


def update_people(plan: SwapPlan, props: Any, people: Sequence[Mapping[str, Any]]) -> None:
    """The report's people on the strip; a person's own source and skip stay."""
    kept = {p.person_id: (p.source, p.skip) for p in props.people}
    props.people.clear()
    for person in people:
        item = props.people.add()
        item.person_id = person["id"]
        item.source, item.skip = kept.get(person["id"], ("", False))
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


def override_entry(plan: SwapPlan, frames: tuple[int, int], action: str,
                   person: str) -> Override:
    """One overrides entry for timeline frames `frames`, in the engine's numbers."""
    numbers = plan.numbers_between(*frames)
    if not numbers:
        raise StripError(f"Frames {frames[0]}-{frames[1]} miss strip '{plan.strip}'")
    if action != 'keep' and not person:
        raise StripError(f"'{action}' needs a person: pick one in Face Swap > People")
    return Override(((numbers[0], numbers[-1]),), person or None, action)


def add_override(path: Path, entry: Override) -> int:
    """Append `entry` to the overrides file at `path` (made when absent), atomically; the
    number of entries it holds now."""
    existing = Overrides(())
    if path.is_file():
        try:
            existing = load_overrides(path)
        except FacefuseError as exc:
            raise StripError(str(exc)) from None
    overrides = Overrides((*existing.entries, entry), existing.shot)
    try:
        write_overrides(path, overrides)
    except FacefuseError as exc:  # one sentence naming the file
        raise StripError(str(exc)) from None
    return len(overrides.entries)


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
