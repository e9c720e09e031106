"""The scrubber: the clip's frames left to right with the review drawn on it, a playhead, and
the in/out points that set the render range.

Rows, top to bottom: frame numbers; "faces" (grey where the analysis found a face); one row per
person (the first MAX_PERSON_ROWS) in their colour (bright where swapped, dim where only seen);
"flags" (red where a flag covers the frame, green where a correction fixed one). Cuts are white
lines across every row; frames outside in..out are shaded and the in and out points drawn in
blue. Click or drag to move the playhead (yellow); the keys: Left/Right a frame,
Shift+Left/Right the previous/next flag, Home/End, I and O set in and out at the playhead,
Space plays (`play_toggled`). The ruler's numbers never run past its ends.

`frame_changed(frame)` when the playhead moves, `range_changed(first, last)` when in or out do.
"""

from __future__ import annotations

from PySide6.QtCore import QRectF, Qt, Signal
from PySide6.QtGui import QColor, QKeyEvent, QMouseEvent, QPainter, QPaintEvent, QPen
from PySide6.QtWidgets import QSizePolicy, QWidget

from .review import ShotReview, person_rgb

RULER_PX = 16
ROW_PX = 8
PERSON_PX = 6
MAX_PERSON_ROWS = 8
MARGIN_PX = 6
PLAYHEAD = QColor(255, 210, 0)
FLAG = QColor(230, 60, 60)
FIXED = QColor(80, 200, 120)
FACES = QColor(150, 150, 150)
CUT = QColor(255, 255, 255)
BACKGROUND = QColor(36, 36, 36)
OUTSIDE = QColor(0, 0, 0, 150)
RANGE = QColor(110, 190, 255)


class Timeline(QWidget):
    """The clip's frames first..last and the review on them (see the module docstring)."""

    frame_changed = Signal(int)
    range_changed = Signal(int, int)
    play_toggled = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.review = ShotReview.empty(1, 1)
        self.frame = 1
        self.in_point, self.out_point = 1, 1
        self.setFocusPolicy(Qt.FocusPolicy.StrongFocus)
        self.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Fixed)
        self._fit()

    # -- state ------------------------------------------------------------------------------------
    def set_review(self, review: ShotReview, keep_range: bool = False) -> None:
        """Show `review` (a new clip's empty one, or a review of the shown clip)."""
        span = (review.first, review.last)
        same = span == (self.review.first, self.review.last)
        self.review = review
        if not (keep_range and same):
            self.in_point, self.out_point = span
        self._fit()
        self.set_frame(min(max(self.frame, review.first), review.last), force=not same)
        self.update()

    def set_frame(self, frame: int, force: bool = False) -> None:
        frame = min(max(frame, self.review.first), self.review.last)
        if frame != self.frame or force:
            self.frame = frame
            self.update()
            self.frame_changed.emit(frame)

    def step(self, frames: int) -> None:
        self.set_frame(self.frame + frames)

    def step_flag(self, step: int) -> bool:
        """Move to the next (1) or previous (-1) flagged range; False when there is none."""
        target = self.review.next_flag(self.frame, step)
        if target is not None:
            self.set_frame(target)
        return target is not None

    def set_in(self, frame: int | None = None) -> None:
        at = self.frame if frame is None else frame
        self._set_range(at, max(self.out_point, at))

    def set_out(self, frame: int | None = None) -> None:
        at = self.frame if frame is None else frame
        self._set_range(min(self.in_point, at), at)

    def clear_range(self) -> None:
        self._set_range(self.review.first, self.review.last)

    @property
    def whole(self) -> bool:
        """True when in..out is the whole clip."""
        return (self.in_point, self.out_point) == (self.review.first, self.review.last)

    def _set_range(self, first: int, last: int) -> None:
        first = max(first, self.review.first)
        last = min(last, self.review.last)
        if (first, last) != (self.in_point, self.out_point):
            self.in_point, self.out_point = first, last
            self.update()
            self.range_changed.emit(first, last)

    def _fit(self) -> None:
        """One height whatever the people: the view above never jumps when they are found."""
        self.setFixedHeight(RULER_PX + 2 * ROW_PX + MAX_PERSON_ROWS * PERSON_PX + 3 * MARGIN_PX)

    # -- geometry ---------------------------------------------------------------------------------
    @property
    def count(self) -> int:
        return self.review.last - self.review.first + 1

    def x_of(self, frame: float) -> float:
        """The left edge of `frame`'s column, in widget pixels."""
        width = self.width() - 2 * MARGIN_PX
        return MARGIN_PX + (frame - self.review.first) * width / self.count

    def frame_at(self, x: float) -> int:
        width = max(1, self.width() - 2 * MARGIN_PX)
        return self.review.first + int((x - MARGIN_PX) * self.count / width)

    def column(self, frame: int, top: float, height: float) -> QRectF:
        left = self.x_of(frame)
        return QRectF(left, top, max(1.0, self.x_of(frame + 1) - left), height)

    # -- drawing ----------------------------------------------------------------------------------
    def paintEvent(self, event: QPaintEvent) -> None:
        painter = QPainter(self)
        painter.fillRect(self.rect(), BACKGROUND)
        self._ruler(painter)
        top = RULER_PX + MARGIN_PX
        self._rows(painter, top)
        if not self.review.planned:
            painter.setPen(QColor(150, 150, 150))
            painter.drawText(self.rect().adjusted(0, RULER_PX, 0, 0),
                             Qt.AlignmentFlag.AlignCenter,
                             "Find people: the faces, people, flags and cuts show here")
        for cut in self.review.cuts:
            x = round(self.x_of(cut))
            painter.setPen(QPen(CUT, 1))
            painter.drawLine(x, RULER_PX, x, self.height())
        self._range(painter)
        x = round(self.x_of(self.frame + 0.5))
        painter.setPen(QPen(PLAYHEAD, 2))
        painter.drawLine(x, 0, x, self.height())

    def ruler_labels(self) -> list[tuple[int, int, int]]:
        """The ruler's numbered ticks: (frame, tick x, text x) each, every text whole inside
        the widget and clear of the one before (one that would run past the right edge
        stands left of its tick; one that would overlap is left out)."""
        step = _tick_step(self.count, self.width())
        first = self.review.first - self.review.first % step + step
        metrics = self.fontMetrics()
        labels: list[tuple[int, int, int]] = []
        end = 0  # where the text before ends
        for frame in [self.review.first, *range(first, self.review.last + 1, step)]:
            x = round(self.x_of(frame))
            width = metrics.horizontalAdvance(str(frame))
            left = x + 2 if x + 2 + width <= self.width() - 1 else x - 2 - width
            if left >= end + 4 or not labels:
                labels.append((frame, x, left))
                end = left + width
        return labels

    def _ruler(self, painter: QPainter) -> None:
        painter.setPen(QColor(200, 200, 200))
        for frame, x, left in self.ruler_labels():
            painter.drawLine(x, RULER_PX - 4, x, RULER_PX)
            painter.drawText(left, RULER_PX - 4, str(frame))

    def _rows(self, painter: QPainter, top: float) -> None:
        review = self.review
        people = review.people[:MAX_PERSON_ROWS]
        flags_top = top + ROW_PX + MAX_PERSON_ROWS * PERSON_PX + MARGIN_PX
        for frame, marks in review.marks.items():
            if marks.found:
                painter.fillRect(self.column(frame, top, ROW_PX - 2), FACES)
            if marks.flags and review.flags_at(frame):
                painter.fillRect(self.column(frame, flags_top, ROW_PX), FLAG)
            elif review.fixed_at(frame):
                painter.fillRect(self.column(frame, flags_top, ROW_PX), FIXED)
        for row, person in enumerate(people):
            colour = QColor(*person_rgb(review, person.person_id))
            dim = QColor(colour)
            dim.setAlpha(110)
            y = top + ROW_PX + row * PERSON_PX
            for frame, marks in review.marks.items():
                if person.person_id in marks.swapped:
                    painter.fillRect(self.column(frame, y, PERSON_PX - 1), colour)
                elif person.seen(frame):
                    painter.fillRect(self.column(frame, y, PERSON_PX - 1), dim)

    def _range(self, painter: QPainter) -> None:
        if self.whole:
            return
        height = self.height() - RULER_PX
        left = QRectF(self.x_of(self.review.first), RULER_PX,
                      self.x_of(self.in_point) - self.x_of(self.review.first), height)
        right_x = self.x_of(self.out_point + 1)
        right = QRectF(right_x, RULER_PX, self.x_of(self.review.last + 1) - right_x, height)
        painter.fillRect(left, OUTSIDE)
        painter.fillRect(right, OUTSIDE)
        painter.setPen(QPen(RANGE, 2))
        painter.drawLine(round(left.right()), RULER_PX, round(left.right()), self.height())
        painter.drawLine(round(right_x), RULER_PX, round(right_x), self.height())

    # -- input ------------------------------------------------------------------------------------
    def mousePressEvent(self, event: QMouseEvent) -> None:
        self.setFocus()
        self.set_frame(self.frame_at(event.position().x()))

    def mouseMoveEvent(self, event: QMouseEvent) -> None:
        if event.buttons() & Qt.MouseButton.LeftButton:
            self.set_frame(self.frame_at(event.position().x()))

    def keyPressEvent(self, event: QKeyEvent) -> None:
        key, shift = event.key(), bool(event.modifiers() & Qt.KeyboardModifier.ShiftModifier)
        if key in (Qt.Key.Key_Left, Qt.Key.Key_Right):
            step = 1 if key == Qt.Key.Key_Right else -1
            if shift:
                self.step_flag(step)
            else:
                self.step(step)
        elif key == Qt.Key.Key_Home:
            self.set_frame(self.review.first)
        elif key == Qt.Key.Key_End:
            self.set_frame(self.review.last)
        elif key == Qt.Key.Key_I:
            self.set_in()
        elif key == Qt.Key.Key_O:
            self.set_out()
        elif key == Qt.Key.Key_Space:
            self.play_toggled.emit()
        else:
            super().keyPressEvent(event)


def _tick_step(count: int, width_px: int) -> int:
    """Frames between numbered ticks: about one per 70 pixels, a round number."""
    wanted = max(1, count * 70 // max(1, width_px))
    for step in (1, 2, 5, 10, 20, 25, 50, 100, 200, 250, 500, 1000):
        if step >= wanted:
            return step
    return 1000 * (wanted // 1000 + 1)
