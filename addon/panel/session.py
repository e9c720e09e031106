"""A shot's session: the work on one shot the panel keeps between runs, so that closing the
panel (or opening another clip) and coming back restores it. No Qt here.

What is kept: the source photos, each person's own source, the skipped people and each
person's consent record (the casting), the Consent box (require consent, project), the in-out
corrections, the in/out points, the output kind and folder, the last review (its report
folder) and the last render (its output and frames). People are the shot plan's ids (p1, p2,
...), which the same clip with the same settings gives again.

The window keeps its shot's session on every change (`save`) and restores it when a clip is
shown (`restore`); in/out and the review wait for the clip's frames to be counted
(`Pending`, applied by `when_shown`), then who is swapped is planned again for the casting.

A session is keyed by the clip's identity (`shot_key`): its input as an absolute path (a movie,
or an image sequence's pattern) and its frame range (a Resolve item's range of a longer
movie is a shot of its own). PanelStore keeps each as a small JSON file beside the panel's
settings. A source photo or consent record that was moved or deleted since is left out when
the session is restored, and `found` names it (the panel says so in one line). A session file
of an earlier panel, without the consent keys, is read as having no records.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Protocol

from facefuse import FacefuseError, FramePattern, is_frame_pattern, load_report

from . import looks
from .corrections import Corrections, Entry
from .host import Clip
from .review import FlagRow, review_from_report, with_fixed
from .roles import Controller, Result, Shot

SESSION_VERSION = 1
Range = tuple[int, int]
Kept = tuple[str, int, int, tuple[str, ...]]  # a Result: output, first, last, made_by


@dataclass(frozen=True, slots=True)
class Session:
    """One shot's kept work (see the module docstring). span: the clip's frames when in/out
    were kept (in/out are restored on the same span only); result: (output, first, last,
    made_by) of the last render (rendering.Result); consent: (person, record file) pairs."""

    sources: tuple[Path, ...] = ()
    assigned: tuple[tuple[str, Path], ...] = ()
    skipped: tuple[str, ...] = ()
    corrections: Corrections = field(default_factory=Corrections)
    span: Range | None = None
    in_out: Range | None = None
    output: str = ""
    folder: str = ""
    review: Path | None = None
    result: Kept | None = None
    page: Path | None = None
    fixed: tuple[FlagRow, ...] = ()
    consent: tuple[tuple[str, Path], ...] = ()
    require_consent: bool = False
    project: str = ""

    def to_json(self, clip: Clip) -> dict[str, Any]:
        return {"version": SESSION_VERSION, "clip": clip.input, "frames": clip.frames,
                "sources": [str(p) for p in self.sources],
                "assigned": {person: str(path) for person, path in self.assigned},
                "skipped": list(self.skipped),
                "corrections": [list(e) for e in self.corrections.entries],
                "span": self.span, "in_out": self.in_out, "output": self.output,
                "folder": self.folder, "review": str(self.review) if self.review else None,
                "page": str(self.page) if self.page else None,
                "result": [*self.result[:3], list(self.result[3])] if self.result else None,
                "fixed": [[f.kind, f.first, f.last, f.person_id, f.reason] for f in self.fixed],
                "consent": {person: str(path) for person, path in self.consent},
                "require_consent": self.require_consent, "project": self.project}

    @classmethod
    def from_json(cls, data: Any) -> Session | None:
        """The session of a saved file's JSON; None when it is not one this panel wrote."""
        if not isinstance(data, dict) or data.get("version") != SESSION_VERSION:
            return None
        try:
            entries = tuple(_entry(e) for e in data.get("corrections") or ())
            result = data.get("result")
            return cls(sources=tuple(Path(p) for p in data.get("sources") or ()),
                       assigned=_pairs(data.get("assigned")),
                       skipped=tuple(sorted(str(p) for p in data.get("skipped") or ())),
                       corrections=Corrections(entries), span=_range(data.get("span")),
                       in_out=_range(data.get("in_out")), output=str(data.get("output") or ""),
                       folder=str(data.get("folder") or ""),
                       review=Path(data["review"]) if data.get("review") else None,
                       result=_result(result),
                       page=Path(data["page"]) if data.get("page") else None,
                       fixed=tuple(FlagRow(str(k), int(a), int(b), str(p), str(r))
                                   for k, a, b, p, r in data.get("fixed") or ()),
                       consent=_pairs(data.get("consent")),
                       require_consent=data.get("require_consent") is True,
                       project=str(data.get("project") or ""))
        except (TypeError, ValueError, IndexError, KeyError, AttributeError):
            return None

    def found(self) -> tuple[Session, list[str]]:
        """This session without the source photos and consent records that are no longer
        there, and their names ("biden.jpg (p3)" for a person's own source, "jane.json (p3's
        consent)" for a record)."""
        missing = [p.name for p in self.sources if not p.is_file()]
        missing += [f"{path.name} ({person})" for person, path in self.assigned
                    if not path.is_file()]
        missing += [f"{path.name} ({person}'s consent)" for person, path in self.consent
                    if not path.is_file()]
        kept = replace(self, sources=tuple(p for p in self.sources if p.is_file()),
                       assigned=tuple(pair for pair in self.assigned if pair[1].is_file()),
                       consent=tuple(pair for pair in self.consent if pair[1].is_file()))
        return kept, missing


def shot_key(clip: Clip) -> str:
    """The name a clip's session is kept under: its absolute input and its frame range."""
    identity = json.dumps([str(Path(clip.input).expanduser().absolute()), clip.frames])
    return hashlib.sha256(identity.encode()).hexdigest()[:24]


def missing_line(label: str, missing: list[str]) -> str:
    """The one line the panel says when files a session names (source photos, consent
    records) are not found."""
    return (f"The session of {label} names files that are not there any more (moved or "
            f"deleted): {', '.join(missing)}; add them again")


def _pairs(value: Any) -> tuple[tuple[str, Path], ...]:
    """A kept {person: file} object as sorted (person, file) pairs (an absent key: none)."""
    return tuple(sorted((str(k), Path(v)) for k, v in (value or {}).items()))


def _entry(value: Any) -> Entry:
    person, action, first, last = value
    return str(person), str(action), int(first), int(last)


def _result(value: Any) -> Kept | None:
    if not value:
        return None
    output, first, last, *made_by = value
    return str(output), int(first), int(last), tuple(str(f) for f in (made_by or [[]])[0])


def _range(value: Any) -> Range | None:
    if not value:
        return None
    first, last = value
    return int(first), int(last)


@dataclass(frozen=True, slots=True)
class Pending:
    """What of a restored session waits until the clip's frames are known (span)."""

    span: Range | None = None
    in_out: Range | None = None
    review: Path | None = None
    page: Path | None = None
    fixed: tuple[FlagRow, ...] = ()


class SessionStore(Protocol):
    """Where sessions are kept (store.PanelStore)."""

    def session(self, clip: Clip) -> Session | None: ...

    def save_session(self, clip: Clip, session: Session) -> None: ...


class KeptShot(Shot, Protocol):
    """The window as a session is captured from it and restored into it."""

    to_restore: Pending
    restoring: bool

    @property
    def act(self) -> Controller: ...

    @property
    def store(self) -> SessionStore: ...


def capture(w: KeptShot) -> Session:
    """The session of the window's shot as it stands."""
    ui, wait, result = w.ui, w.to_restore, w.act.result
    if wait.span is not None:  # not shown yet: kept as restored
        span, in_out, review, page = wait.span, wait.in_out, wait.review, wait.page
        fixed = wait.fixed
    else:
        timeline = ui.timeline
        span = (w.review.first, w.review.last)
        in_out = None if timeline.whole else (timeline.in_point, timeline.out_point)
        review, page, fixed = w.review.folder, w.review.page, w.review.fixed
    return Session(tuple(ui.sources.paths()), tuple(sorted(w.assigned.items())),
                   tuple(sorted(w.skipped)), w.corrections, span, in_out,
                   str(ui.output.currentData() or ""), ui.folder.text(), review,
                   (result.output, result.first, result.last, result.made_by) if result else None,
                   page, fixed, consent=tuple(sorted(w.consent.items())),
                   require_consent=ui.policy.require.isChecked(),
                   project=ui.policy.project.text().strip())


def save(w: KeptShot) -> None:
    """Keep the session of the shown clip (none shown: nothing)."""
    clip = w.host.clip
    if clip is not None:
        w.store.save_session(clip, capture(w))


def restore(w: KeptShot, clip: Clip) -> None:
    """Show the kept session of `clip` (if any): sources, casting, corrections, output and
    the last render at once; in/out and the review once the clip's frames are known."""
    kept = w.store.session(clip)
    if kept is None:
        return
    kept, missing = kept.found()
    ui, restoring = w.ui, w.restoring
    w.restoring = True  # nothing is saved while half restored
    try:
        w.assigned, w.skipped = dict(kept.assigned), set(kept.skipped)
        w.consent = dict(kept.consent)
        ui.policy.set_values(kept.require_consent, kept.project)
        w.corrections = kept.corrections
        ui.sources.replace(list(kept.sources))
        index = ui.output.findData(kept.output)
        if index >= 0:
            ui.output.setCurrentIndex(index)
        if kept.folder:
            ui.folder.setText(kept.folder)
    finally:
        w.restoring = restoring
    w.to_restore = Pending(kept.span, kept.in_out, kept.review, kept.page, kept.fixed)
    if kept.result is not None and _exists(kept.result[0]):
        w.act.result = Result(*kept.result)
        ui.show_result.setEnabled(True)
        ui.open_folder.setEnabled(True)
    if missing:
        ui.log.say(missing_line(clip.label, missing), "WARNING")
    ui.log.say(f"{clip.label}: the session kept for this shot is back ({summary(kept)})")


def when_shown(w: KeptShot) -> None:
    """Once the clip's frames are those the session was kept on: its in/out and its review
    (who is swapped then planned again for the casting)."""
    wait, review = w.to_restore, w.review
    if wait.span is None or (review.first, review.last) != wait.span:
        return
    w.to_restore = Pending()
    if wait.in_out is not None:
        w.ui.timeline.set_in(wait.in_out[0])
        w.ui.timeline.set_out(wait.in_out[1])
    if wait.review is not None and not review.reviewed:
        try:
            data = load_report(wait.review).data
        except FacefuseError:
            return  # the cache was cleared: Find people writes it again
        shown = review_from_report(data, wait.review, wait.page)
        before = replace(shown, fixed=wait.fixed)  # the flags fixed as they were shown
        shown = with_fixed(shown, before, w.corrections.entries)
        if (shown.first, shown.last) == wait.span:
            w.set_review(shown, keep_range=True)
            looks.replan(w.act, review=False)  # the kept review has this casting


def summary(kept: Session) -> str:
    """"2 sources, p3 own source, p2 skipped, p3 consent record, 1 correction, in/out
    1002-1006"."""
    parts = [f"{len(kept.sources)} source photo{'s' if len(kept.sources) != 1 else ''}"]
    parts += [f"{person} own source" for person, _ in kept.assigned]
    parts += [f"{person} skipped" for person in kept.skipped]
    parts += [f"{person} consent record" for person, _ in kept.consent]
    if kept.require_consent:
        parts.append("consent required")
    count = len(kept.corrections.entries)
    if count:
        parts.append(f"{count} correction{'s' if count != 1 else ''}")
    if kept.in_out is not None:
        parts.append(f"in/out {kept.in_out[0]}-{kept.in_out[1]}")
    return ", ".join(parts)


def _exists(output: str) -> bool:
    if is_frame_pattern(output):
        return bool(FramePattern.parse(output).scan())
    return Path(output).is_file()
