"""Consent records in the panel's casting: one attached to a person on their card ("Consent"
menu), what the card says of it, and the request's policy.

A record (a JSON file of docs/consent.md's format) is attached to a person of the shot plan (p1,
p2, ...) and goes into every request the panel makes as `PolicyChoices.consent` ((PersonId,
record file) pairs), with the Consent box's `require_consent` and `project` (widgets.PolicyBox).
The engine checks the records whenever it renders, Preview and the live swap included (they
are the render's own pixels): under require consent, a person swapped without a record that
holds is refused in one sentence, shown as any engine error. Attaching reads the record
(facefuse.load_consent) so the card can name the performer; a file that is not a record is said
in one line and not attached. A record changes who may be swapped, not who is: the plan stays,
the playhead's swap is asked for again.
"""

from __future__ import annotations

from pathlib import Path

from PySide6.QtWidgets import QFileDialog

from facefuse import FacefuseError, PolicyChoices, load_consent, parse_person

from .frames import show_frame
from .roles import Controller, Shot

RECORD_FILTER = "Consent records (*.json);;All files (*)"


def record_words(path: Path) -> tuple[str, str]:
    """What a card says of the consent record at `path` and its tooltip: ("consent: Jane Doe",
    the file), or ("consent: NAME unreadable", the engine's sentence) for a file that is not a
    readable record."""
    try:
        record = load_consent(path)
    except FacefuseError as exc:
        return f"consent: {path.name} unreadable", str(exc)
    return f"consent: {record.performer}", str(path)


def card_words(consent: dict[str, Path]) -> dict[str, tuple[str, str]]:
    """record_words of each person's record, by person."""
    return {person: record_words(path) for person, path in consent.items()}


def attach(act: Controller, person_id: str, path: Path | None) -> None:
    """Attach the consent record at `path` to `person_id` (None: clear theirs); a file that is
    not a readable record is said in one line and not attached."""
    w = act.w
    if path is None:
        w.consent.pop(person_id, None)
    else:
        try:
            record = load_consent(Path(path))
        except FacefuseError as exc:
            w.ui.log.say(str(exc), "ERROR")
            return
        w.consent[person_id] = Path(path)
        w.ui.log.say(f"{person_id}: the consent record of {record.performer} ({Path(path).name})")
    w.show_people()
    w.remember()
    show_frame(act)  # the live swap under the new policy


def choose(act: Controller, person_id: str) -> None:
    """The file dialog for `person_id`'s consent record, then attach it."""
    name, _ = QFileDialog.getOpenFileName(act.ui.people.window(),
                                          f"Consent record of {person_id}", "", RECORD_FILTER)
    if name:
        attach(act, person_id, Path(name))


def policy_choices(w: Shot) -> PolicyChoices:
    """The records on the cards and the Consent box as a request's policy."""
    return PolicyChoices(consent=tuple((parse_person(person), path)
                                       for person, path in sorted(w.consent.items())),
                         require_consent=w.ui.policy.require.isChecked(),
                         project=w.ui.policy.project_name())
