"""Per-frame, per-person corrections of a shot plan: the `--overrides` file (docs/overrides.md).

A file holds entries in order, each a frame range, an optional person id ("p1", "p2", ... as
the shot plan names them) and an action:

- skip: that person is not swapped in those frames;
- keep: those frames keep the original (no face swapped); with a person, that person only
  (the same as skip);
- swap: that person is swapped there although the selector did not choose them;
- hold: that person is swapped there, and every frame of the range where their face was not
  found is filled from the nearest faces found before and after it in the same shot (never
  across a cut), interpolated, or held where only one side has one, however long the gap.

A later entry wins over an earlier one for the same frame and person. `load_overrides` reads
and checks a file on its own (InputError, one sentence: missing, not JSON, another schema, an
unknown action or key, a bad range); `Overrides.check` checks it against the shot it is
applied to (its people and its shot id) before anything is written. Entries, or parts of them,
outside the frames a render covers change nothing there; `Overrides.outside_note` names them.
"""

from __future__ import annotations

import bisect
import hashlib
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Protocol, TypeVar

import numpy as np

from ...errors import InputError
from ...io import small_files
from ...io.files import atomic_write_bytes, write_error
from ...types import Face
from ..contract.frames import format_frame_list, parse_frame_list

SCHEMA = "facefuse.overrides/1"
ACTIONS = ("skip", "keep", "swap", "hold")
NEEDS_PERSON = ("skip", "swap", "hold")
SWAPPED = ("swap", "hold")  # the actions after which the person is swapped in the frame
ENTRY_KEYS = ("frames", "person", "action", "note")
FILE_KEYS = ("schema", "shot", "analysed", "overrides", "note")


@dataclass(frozen=True, slots=True)
class Override:
    """One entry: `action` over the inclusive frame ranges `frames`, for `person` (None: every
    person; keep only)."""

    frames: tuple[tuple[int, int], ...]
    person: str | None
    action: str

    def covers(self, frame: int) -> bool:
        return any(first <= frame <= last for first, last in self.frames)


@dataclass(frozen=True, slots=True)
class Overrides:
    """The entries of one overrides file, in order; shot: the shot id it is for (None: any);
    analysed: the analysed range (inclusive) that shot id names, where the file says (a render
    of part of that range plans on all of it: shot.plan.override_fit); sha256: of the file's bytes
    (what a render records); label: the file, for messages."""

    entries: tuple[Override, ...]
    shot: str | None = None
    sha256: str = ""
    label: str = "overrides"
    analysed: tuple[int, int] | None = None

    def check(self, analysed: tuple[int, int], people: Sequence[str], shot_id: str) -> None:
        """InputError, one sentence, when the file is for another shot or an entry names a
        person not in `people`. Frames outside `analysed` change nothing (outside_note says
        which)."""
        if self.shot is not None and self.shot != shot_id:
            raise InputError(f"{self.label} is for shot {self.shot}, not this one ({shot_id}): "
                             "another clip, or other detection options; make the overrides "
                             "from this shot's review report")
        for number, entry in enumerate(self.entries, 1):
            if entry.person is not None and entry.person not in people:
                known = ", ".join(people) if people else "none"
                raise InputError(f"{self.label} entry {number} names person {entry.person}, "
                                 f"whom this shot does not have (its people: {known})")

    def outside_note(self, span: tuple[int, int]) -> str | None:
        """One sentence naming the entries, or parts of them, outside the inclusive frames
        `span` (they change nothing there); None when every entry lies inside."""
        first, last = span
        wholly: list[str] = []
        partly: list[str] = []
        for entry in self.entries:
            outside = _outside(entry.frames, first, last)
            if outside:
                inside = any(a <= last and b >= first for a, b in entry.frames)
                (partly if inside else wholly).append(format_frame_list(outside))
        if not wholly and not partly:
            return None
        said = [f"{len(wholly)} {_entries(len(wholly))} wholly ({', '.join(wholly)})"] \
            if wholly else []
        said += [f"{len(partly)} in part ({', '.join(partly)})"] if partly else []
        return (f"{self.label}: the corrections outside frames {first}-{last} are ignored "
                f"here: {' and '.join(said)}")

    def actions(self, frames: Iterable[int], people: Sequence[str]
                ) -> dict[str, dict[int, str]]:
        """person -> frame -> the action that holds there (the last entry covering it), for
        the frames and people some entry covers."""
        table: dict[str, dict[int, str]] = {}
        numbers = tuple(frames)
        for entry in self.entries:
            covered = [n for n in numbers if entry.covers(n)]
            for person in (people if entry.person is None else (entry.person,)):
                table.setdefault(person, {}).update(dict.fromkeys(covered, entry.action))
        return table


def _outside(ranges: tuple[tuple[int, int], ...], first: int, last: int
             ) -> tuple[tuple[int, int], ...]:
    """The parts of inclusive `ranges` outside first-last."""
    parts: list[tuple[int, int]] = []
    for a, b in ranges:
        if a < first:
            parts.append((a, min(b, first - 1)))
        if b > last:
            parts.append((max(a, last + 1), b))
    return tuple(parts)


def _entries(count: int) -> str:
    return "entry" if count == 1 else "entries"


def load_overrides(path: Path) -> Overrides:
    """The overrides file at `path`, checked on its own (see the module docstring)."""
    label = f"overrides file {path}"
    raw = small_files.read_bytes(path, label)
    data = small_files.json_value(raw, label)
    shot, analysed, entries = _file_fields(data, label)
    return Overrides(tuple(_entry(entry, n, label) for n, entry in enumerate(entries, 1)),
                     shot, hashlib.sha256(raw).hexdigest(), label, analysed)


def overrides_bytes(overrides: Overrides) -> bytes:
    """The file `overrides` is (what load_overrides reads back to the same entries): the
    format hosts write (docs/overrides.md)."""
    entries = []
    for entry in overrides.entries:
        record: dict[str, Any] = {"frames": format_frame_list(entry.frames),
                                  "action": entry.action}
        if entry.person is not None:
            record["person"] = entry.person
        entries.append(record)
    shot: dict[str, Any] = {"shot": overrides.shot} if overrides.shot is not None else {}
    if overrides.analysed is not None:
        shot["analysed"] = f"{overrides.analysed[0]}-{overrides.analysed[1]}"
    data = {"schema": SCHEMA, **shot, "overrides": entries}
    return (json.dumps(data, indent=1) + "\n").encode("utf-8")


def write_overrides(path: Path, overrides: Overrides) -> Path:
    """Write `overrides` to `path` atomically (folders made), only when its bytes change, so a
    file that says the same keeps its time; `path`. OutputError naming the file when it
    cannot be written (a full disk, a read-only folder)."""
    data = overrides_bytes(overrides)
    path = Path(path)
    try:
        if not path.is_file() or path.read_bytes() != data:
            path.parent.mkdir(parents=True, exist_ok=True)
            atomic_write_bytes(path, data)
    except OSError as exc:
        raise write_error(path, exc) from exc
    return path


def _file_fields(data: Any, label: str
                 ) -> tuple[str | None, tuple[int, int] | None, list[Any]]:
    if not isinstance(data, dict) or data.get("schema") != SCHEMA:
        schema = data.get("schema") if isinstance(data, dict) else None
        raise InputError(f"{label} is not a {SCHEMA} file (its schema is {schema!r})")
    unknown = sorted(set(data) - set(FILE_KEYS))
    if unknown:
        raise InputError(f"{label} has unknown keys {', '.join(unknown)} (it takes "
                         f"{', '.join(FILE_KEYS)})")
    shot, entries = data.get("shot"), data.get("overrides", [])
    if shot is not None and not isinstance(shot, str):
        raise InputError(f"{label}: shot must be a shot id such as 3fa2c81d09be4e77")
    if not isinstance(entries, list):
        raise InputError(f"{label}: overrides must be a list of entries")
    return shot, _analysed(data.get("analysed"), label), entries


def _analysed(value: Any, label: str) -> tuple[int, int] | None:
    """The file's "analysed" range ("A-B"), if it has one."""
    if value is None:
        return None
    try:
        ranges = parse_frame_list(value) if isinstance(value, str) else ()
    except InputError:
        ranges = ()
    if len(ranges) != 1:
        raise InputError(f"{label}: analysed must be the range the shot id names, such as "
                         "1001-1240")
    return ranges[0]


def _entry(entry: Any, number: int, label: str) -> Override:
    where = f"{label} entry {number}"
    if not isinstance(entry, dict):
        raise InputError(f"{where} is not an object with frames, person and action")
    unknown = sorted(set(entry) - set(ENTRY_KEYS))
    if unknown:
        raise InputError(f"{where} has unknown keys {', '.join(unknown)} (an entry takes "
                         f"{', '.join(ENTRY_KEYS)})")
    action, person = entry.get("action"), entry.get("person")
    if action not in ACTIONS:
        raise InputError(f"{where}: action {action!r} is not one of {', '.join(ACTIONS)}")
    if person is not None and not isinstance(person, str):
        raise InputError(f"{where}: person must be a person id such as p2")
    if person is None and action in NEEDS_PERSON:
        raise InputError(f"{where}: {action} needs a person (keep alone keeps everyone)")
    return Override(_frames(entry.get("frames"), where), person, action)


def _frames(value: Any, where: str) -> tuple[tuple[int, int], ...]:
    """"1001-1010" (or a list, "1001-1010,1035") or [first, last]."""
    if isinstance(value, str):
        try:
            return parse_frame_list(value)
        except InputError:
            pass
    elif (isinstance(value, list) and len(value) == 2
          and all(isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in value)
          and value[0] <= value[1]):
        return ((value[0], value[1]),)
    raise InputError(f"{where}: frames {value!r} are not a range such as \"1001-1010\" or "
                     "[1001, 1010]")


# -- hold: faces filled from the nearest faces found ---------------------------------------------

def held_faces(found: Mapping[int, Face], frames: Iterable[int], cuts: Sequence[int]
               ) -> dict[int, Face]:
    """A face for each frame of `frames` that has none in `found` (a person's faces, by frame),
    from the nearest found faces before and after it in the same shot (`cuts`: the frames that
    start a shot): interpolated linearly between the two, or the one side's face where only
    one side has one; no face where the frame's shot has none. Each filled face keeps the
    identity (embedding) of the nearer of its neighbours."""
    known = sorted(found)
    bounds = sorted(cuts)
    held: dict[int, Face] = {}
    for frame in frames:
        if frame in found:
            continue
        shot = bisect.bisect_right(bounds, frame)
        at = bisect.bisect_left(known, frame)
        before = known[at - 1] if at and bisect.bisect_right(bounds, known[at - 1]) == shot \
            else None
        after = known[at] if at < len(known) and bisect.bisect_right(bounds, known[at]) == shot \
            else None
        face = _between(found, frame, before, after)
        if face is not None:
            held[frame] = face
    return held


def _between(found: Mapping[int, Face], frame: int, before: int | None, after: int | None
             ) -> Face | None:
    if before is None or after is None:
        side = before if after is None else after
        return found[side] if side is not None else None
    t = (frame - before) / (after - before)
    a, b = found[before], found[after]
    return replace(a if t <= 0.5 else b,
                   bbox_xyxy=((1 - t) * a.bbox_xyxy + t * b.bbox_xyxy).astype(np.float32),
                   kps5=((1 - t) * a.kps5 + t * b.kps5).astype(np.float32),
                   score=min(a.score, b.score))


# -- applied to a shot plan (make.make_plan) -----------------------------------------------------

class PlannedLike(Protocol):
    """What apply_overrides reads of a plan.PlannedFace (it makes new ones with replace)."""

    @property
    def face(self) -> Face: ...

    @property
    def person_id(self) -> str: ...

    @property
    def track_id(self) -> int: ...

    @property
    def detected(self) -> bool: ...


P = TypeVar("P", bound=PlannedLike)


def apply_overrides(overrides: Overrides, planned: Mapping[int, tuple[P, ...]],
                    people: Sequence[str], swapped: Iterable[str], frames: Sequence[int],
                    cuts: Sequence[int], shot_id: str) -> dict[int, tuple[P, ...]]:
    """A plan's faces per frame with the overrides applied.

    planned: the faces of every person (those the plan does not swap too), in paste order;
    people: the shot's person ids; swapped: those the plan swaps; frames: the analysed frames;
    shot_id: the plan's ("" checks no shot id). InputError when the overrides do not fit the
    shot (Overrides.check). A face stays where the last entry covering its frame and person
    swaps or holds them, or no entry covers it and the plan swaps its person; hold adds the
    faces held_faces fills in (detected False), each of the track and source of its nearer
    neighbour, in paste order (by track)."""
    if frames:
        overrides.check((frames[0], frames[-1]), people, shot_id or (overrides.shot or ""))
    table = overrides.actions(frames, people)
    default = frozenset(swapped)

    def kept(frame: int, face: P) -> bool:
        action = table.get(face.person_id, {}).get(frame)
        return face.person_id in default if action is None else action in SWAPPED

    result = {n: [f for f in faces if kept(n, f)] for n, faces in planned.items()}
    for person, actions in table.items():
        holds = [n for n, action in actions.items() if action == "hold"]
        for frame, face in _held(planned, person, holds, cuts).items():
            if all(f.person_id != person for f in result.get(frame, ())):
                result.setdefault(frame, []).append(face)
    return {n: tuple(sorted(faces, key=lambda f: f.track_id))
            for n, faces in sorted(result.items()) if faces}


def _held(planned: Mapping[int, tuple[P, ...]], person: str, frames: Sequence[int],
          cuts: Sequence[int]) -> dict[int, P]:
    """The faces hold fills in for `person` in `frames`, from their detected faces."""
    if not frames:
        return {}
    found = {n: f for n, faces in planned.items() for f in faces
             if f.person_id == person and f.detected}
    have = {n for n, faces in planned.items() for f in faces if f.person_id == person}
    faces = held_faces({n: f.face for n, f in found.items()},
                       [n for n in frames if n not in have], cuts)
    known = sorted(found)
    return {n: replace(found[_nearest(known, n, cuts)],  # type: ignore[type-var]
                       face=face, detected=False) for n, face in faces.items()}


def _nearest(known: Sequence[int], frame: int, cuts: Sequence[int]) -> int:
    """The frame of `known` nearest `frame` in its shot (the earlier one on a tie)."""
    bounds = sorted(cuts)
    shot = bisect.bisect_right(bounds, frame)
    same = [n for n in known if bisect.bisect_right(bounds, n) == shot]
    return min(same, key=lambda n: (abs(n - frame), n))
