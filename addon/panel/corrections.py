"""The user's corrections of the shot plan over frame ranges (skip, swap or hold a person
there), kept as facefuse's overrides file (docs/overrides.md) that every request of the clip
carries (RenderRequest.plan.overrides): the plan, the preview, the review and the render all apply
them, and a render rewrites only the frames they change. No Qt here."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

from facefuse import Override, Overrides, write_overrides

Entry = tuple[str, str, int, int]  # person, action, first, last


@dataclass(frozen=True, slots=True)
class Corrections:
    """Entries in the order given (a later one wins for the same frame and person)."""

    entries: tuple[Entry, ...] = ()

    def added(self, person_id: str, action: str, first: int, last: int) -> Corrections:
        return Corrections((*self.entries, (person_id, action, first, last)))

    def cleared(self, person_id: str) -> Corrections:
        return Corrections(tuple(e for e in self.entries if e[0] != person_id))

    def by_person(self) -> dict[str, tuple[str, ...]]:
        """person -> ("skip 1004-1007", ...), as the cards say them."""
        said: dict[str, list[str]] = {}
        for person, action, first, last in self.entries:
            said.setdefault(person, []).append(f"{action} {first}-{last}")
        return {person: tuple(texts) for person, texts in said.items()}

    def write(self, folder: Path, clip: str) -> Path:
        """The overrides file of `clip` in `folder` (rewritten when it changed); its path."""
        overrides = Overrides(tuple(Override(((first, last),), person, action)
                                    for person, action, first, last in self.entries))
        name = f"overrides-{hashlib.sha256(clip.encode()).hexdigest()[:16]}.json"
        return write_overrides(Path(folder) / name, overrides)
