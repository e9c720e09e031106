"""The people of the shot, one card each: thumbnail, name (p1, p2, ... in the person's timeline
colour), where they are seen, and what the render does with them. Each card lets its person
have their own source photo or be skipped; everyone else is swapped as the settings' "Swap"
choice decides. The cards sit in a scroll area of a fixed height, so many people (eight in one
frame) scroll instead of squeezing the preview; a card grows to show its whole status.

Each card's "In–out" menu corrects the plan over the timeline's in..out range only (the
engine's overrides): skip the person there, swap them there, hold their face over frames where
it was lost, or clear the card's ranges.

Each card's "Consent" menu attaches the performer's consent record (a file of docs/consent.md's
format) or clears it; the card then names the performer ("consent: Jane Doe").

Signals: `find_requested` (Find people), `source_requested(person)` (the window shows the file
dialog), `source_cleared(person)`, `skip_toggled(person, skipped)`, `range_action(person,
action)` (action: "skip", "swap", "hold" or "clear"), `consent_requested(person)` (the window
shows the file dialog), `consent_cleared(person)`, `person_clicked(person)` (the window moves
the playhead to the person's first frame).
"""

from __future__ import annotations

from functools import partial
from pathlib import Path

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QPixmap, QResizeEvent
from PySide6.QtWidgets import (
    QCheckBox,
    QFrame,
    QGridLayout,
    QHBoxLayout,
    QLabel,
    QMenu,
    QPushButton,
    QScrollArea,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from .review import PersonRow, ShotReview, people_text, person_rgb, ranges_text

THUMB_PX = 52
CARD_COLUMNS = 2
VISIBLE_ROWS = 2
CARD_HEIGHT_PX = THUMB_PX + 40


class PersonCard(QFrame):
    """One person: colour bar, thumbnail, name, Consent and In–out menus, frames and status,
    Source…, ×, Skip. consent: what the card says of the person's consent record (its words
    and their tooltip: consent.record_words), None without one."""

    def __init__(self, grid: PeopleGrid, person: PersonRow, rgb: tuple[int, int, int],
                 source: Path | None, skipped: bool, ranges: tuple[str, ...] = (),
                 consent: tuple[str, str] | None = None) -> None:
        super().__init__(grid)
        self.person_id = person.person_id
        self.setObjectName(f"person_{person.person_id}")
        self.setFrameShape(QFrame.Shape.StyledPanel)
        self.setMinimumHeight(CARD_HEIGHT_PX)  # taller when the status needs more lines
        colour = "#{:02x}{:02x}{:02x}".format(*rgb)
        self.setStyleSheet(f"QFrame#person_{person.person_id} {{ border: 1px solid #999; "
                           f"border-left: 6px solid {colour}; }}")
        self.picture = picture = QLabel(self)
        picture.setFixedSize(THUMB_PX, THUMB_PX)
        picture.setAlignment(Qt.AlignmentFlag.AlignCenter)
        if person.thumbnail is not None and person.thumbnail.is_file():
            picture.setPixmap(QPixmap(str(person.thumbnail)).scaled(
                THUMB_PX, THUMB_PX, Qt.AspectRatioMode.KeepAspectRatio,
                Qt.TransformationMode.SmoothTransformation))
        name = QLabel(f"<b style='color:{colour}'>{person.person_id}</b>", self)
        name.setToolTip(f"Seen in frames {ranges_text(person.frames)}; screen presence "
                        f"{person.presence:.0f}")
        words = () if consent is None else (consent[0],)
        self.status = QLabel(f"{person.frame_count} frames · "
                             + status_text(person, source, skipped, (*ranges, *words)), self)
        self.status.setObjectName("status")
        self.status.setWordWrap(True)
        self.status.setToolTip(self.status.text() if consent is None else
                               f"{self.status.text()}\n{consent[1]}")
        self.source_button = QPushButton("Source…", self)
        self.source_button.clicked.connect(lambda: grid.source_requested.emit(self.person_id))
        self.clear_button = QPushButton("×", self)
        self.clear_button.setToolTip("Use the default sources for this person")
        self.clear_button.setFixedWidth(24)
        self.clear_button.setEnabled(source is not None)
        self.clear_button.clicked.connect(lambda: grid.source_cleared.emit(self.person_id))
        self.skip = QCheckBox("Skip", self)
        self.skip.setChecked(skipped)
        self.skip.toggled.connect(lambda on: grid.skip_toggled.emit(self.person_id, on))
        self.range_button = QToolButton(self)
        self.range_button.setText("In–out")
        self.range_button.setAutoRaise(True)
        self.range_button.setToolTip("Correct this person over the in..out range only")
        self.range_button.setPopupMode(QToolButton.ToolButtonPopupMode.InstantPopup)
        menu = QMenu(self.range_button)
        for action, text in RANGE_ACTIONS:
            menu.addAction(text, partial(grid.range_action.emit, self.person_id, action))
        self.range_button.setMenu(menu)
        self.consent_button = QToolButton(self)
        self.consent_button.setText("Consent")
        self.consent_button.setAutoRaise(True)
        self.consent_button.setToolTip("Attach this performer's consent record (a render that "
                                       "requires consent refuses a person without one)")
        self.consent_button.setPopupMode(QToolButton.ToolButtonPopupMode.InstantPopup)
        consent_menu = QMenu(self.consent_button)
        consent_menu.addAction("Consent record…",
                               lambda: grid.consent_requested.emit(self.person_id))
        self.clear_consent = consent_menu.addAction(
            "Clear the consent record", lambda: grid.consent_cleared.emit(self.person_id))
        self.clear_consent.setEnabled(consent is not None)
        self.consent_button.setMenu(consent_menu)
        layout = QGridLayout(self)
        layout.setContentsMargins(10, 2, 4, 2)
        layout.setVerticalSpacing(1)
        layout.addWidget(picture, 0, 0, 2, 1)
        top = QHBoxLayout()
        top.addWidget(name, 1)
        top.addWidget(self.consent_button)
        top.addWidget(self.range_button)
        layout.addLayout(top, 0, 1)
        layout.addWidget(self.status, 1, 1)
        buttons = QHBoxLayout()
        for widget in (self.source_button, self.clear_button, self.skip):
            buttons.addWidget(widget)
        buttons.addStretch(1)
        layout.addLayout(buttons, 2, 0, 1, 2)
        layout.setColumnStretch(1, 1)
        self.grid = grid

    def mousePressEvent(self, event: object) -> None:
        self.grid.person_clicked.emit(self.person_id)

    def resizeEvent(self, event: QResizeEvent) -> None:
        """Taller when the status needs more lines at this width (the scroll area does not ask
        its cards for their height at a width)."""
        super().resizeEvent(event)
        extra = self.status.heightForWidth(self.status.width()) - self.status.height()
        if extra > 0:
            self.setMinimumHeight(self.height() + extra)


RANGE_ACTIONS = (("skip", "Skip in in..out"), ("swap", "Swap in in..out"),
                 ("hold", "Hold the face in in..out"), ("clear", "Clear this person's ranges"))


def status_text(person: PersonRow, source: Path | None, skipped: bool,
                notes: tuple[str, ...] = ()) -> str:
    """What the render does with the person, as the card says it; notes: the person's
    corrections ("skip 1004-1007", ...) and their consent ("consent: Jane Doe")."""
    if skipped:
        text = "skipped: left as filmed"
    elif source is not None:
        text = f"own source: {source.name}"
    elif person.swapped:
        text = f"swapped: {person.why}"
    else:
        text = f"not swapped: {person.why}"
    return "; ".join((text, *notes))


class PeopleGrid(QWidget):
    """The cards of a ShotReview's people (see the module docstring)."""

    find_requested = Signal()
    source_requested = Signal(str)
    source_cleared = Signal(str)
    skip_toggled = Signal(str, bool)
    range_action = Signal(str, str)
    consent_requested = Signal(str)
    consent_cleared = Signal(str)
    person_clicked = Signal(str)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.find_button = QPushButton("Find people", self)
        self.find_button.clicked.connect(self.find_requested)
        self.hint = QLabel("Find people to see who is in the shot", self)
        self.hint.setWordWrap(True)
        self.cards: list[PersonCard] = []
        self.inner = QWidget(self)
        self.layout_grid = QGridLayout(self.inner)
        self.layout_grid.setContentsMargins(0, 0, 0, 0)
        self.layout_grid.setAlignment(Qt.AlignmentFlag.AlignTop)
        self.area = QScrollArea(self)
        self.area.setWidget(self.inner)
        self.area.setWidgetResizable(True)
        self.area.setFixedHeight(VISIBLE_ROWS * (CARD_HEIGHT_PX + 6) + 8)
        self.area.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        top = QHBoxLayout()
        top.addWidget(self.hint, 1)
        top.addWidget(self.find_button)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addLayout(top)
        layout.addWidget(self.area)

    def show_people(self, review: ShotReview, sources: dict[str, Path], skipped: set[str],
                    ranges: dict[str, tuple[str, ...]] | None = None,
                    consent: dict[str, tuple[str, str]] | None = None) -> None:
        """One card per person of `review`; sources, skipped and ranges: the user's choices;
        consent: what each card says of its person's consent record (PersonCard)."""
        for card in self.cards:
            self.layout_grid.removeWidget(card)
            card.hide()  # at once: deleteLater() waits for the event loop
            card.deleteLater()
        self.cards = []
        for index, person in enumerate(review.people):
            card = PersonCard(self, person, person_rgb(review, person.person_id),
                              sources.get(person.person_id), person.person_id in skipped,
                              (ranges or {}).get(person.person_id, ()),
                              (consent or {}).get(person.person_id))
            self.layout_grid.addWidget(card, index // CARD_COLUMNS, index % CARD_COLUMNS)
            card.show()  # at once, not when the event loop gets to it
            self.cards.append(card)
        if not review.planned:
            self.hint.setText("Find people to see who is in the shot")
        elif not review.people:
            self.hint.setText("Nobody found in the analysed frames")
        else:
            swapped = sum(p.swapped for p in review.people)
            self.hint.setText(f"{people_text(len(review.people))}, {swapped} swapped: give one "
                              "their own source or skip them")

    def card(self, person_id: str) -> PersonCard:
        return next(c for c in self.cards if c.person_id == person_id)
