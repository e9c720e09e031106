"""The viewer: the frame under the playhead as the original, the result or a before/after wipe,
zoomed and panned (viewer_bar.py: the buttons and keys that drive it).

Viewer holds two pictures: `before` (the frame as decoded) and `after` (its swap: the live swap,
a Preview or the rendered result's frame), each with the frame it shows; an `after` of another
frame than the playhead's is never drawn. Modes: "original" (before), "result" (after; the
before and a note while the after is on its way) and "split" (before left of a divider, after
right of it). Zoom: `zoom` None fits the whole frame to the view, or a scale (1.0: one
picture pixel per screen pixel). The wheel zooms around the pointer;
a drag pans; in Split a drag on the divider (anywhere while the frame fits) moves it; the middle
button always pans. Qt scales the pixmaps as it draws them (nearest pixel above 1:1, so pixels
stay sharp); nothing here computes pixels.
"""

from __future__ import annotations

import time
from pathlib import Path

from PySide6.QtCore import QPointF, QRect, QRectF, Qt, Signal
from PySide6.QtGui import (
    QColor,
    QMouseEvent,
    QPainter,
    QPaintEvent,
    QPen,
    QPixmap,
    QResizeEvent,
    QWheelEvent,
)
from PySide6.QtWidgets import QWidget

MODES = ("original", "result", "split")
MODE_LABELS = {"original": "Original", "result": "Result", "split": "Split"}
ZOOMS = ((None, "Fit", "F"), (1.0, "100%", "1"), (2.0, "200%", "2"), (4.0, "400%", "4"))
ZOOM_STEP = 1.25  # one wheel notch, or + / -
MIN_SCALE, MAX_SCALE = 0.05, 32.0
GRAB_PX = 8  # a press this near the divider takes it
FACE_SHARE = 0.6  # zoom to a face: its box this share of the view's height
DIVIDER_PX = 2
DIVIDER_COLOUR = QColor(255, 210, 0)
BACKGROUND = QColor(30, 30, 30)
CAPTION_BACK = QColor(0, 0, 0, 170)
Box = tuple[str, QColor, float, float, float, float]


class Viewer(QWidget):
    """Before and after of the playhead's frame (see the module docstring)."""

    mode_changed = Signal(str)
    zoom_changed = Signal()
    boxes_changed = Signal(bool)  # whether there is a face to zoom to

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.before: QPixmap | None = None
        self.after: QPixmap | None = None
        self.frame: int | None = None  # the playhead's
        self.before_frame: int | None = None
        self.after_frame: int | None = None
        self.labels = ("Original", "Swapped")
        self.note = ""
        self.empty_text = "Open a clip"
        self.boxes: list[Box] = []
        self.mode = "result"
        self.zoom: float | None = None
        self.centre = QPointF()  # the picture point at the middle of the view, when zoomed
        self.share = 0.5  # the divider's x as a share of the view's width
        self.painted: dict[int, float] = {}  # frame -> when its after was last drawn (perf_counter)
        self._drag = ""
        self._drag_from = (QPointF(), QPointF())
        self._face = -1
        self.setMinimumSize(240, 160)

    # -- pictures ---------------------------------------------------------------------------------
    def set_frame(self, frame: int) -> None:
        """The playhead is on `frame`: an after of another frame goes."""
        self.frame = frame
        if self.after_frame != frame:
            self.after, self.after_frame = None, None
        self.update()

    def show_before(self, before: QPixmap | Path, frame: int | None = None) -> None:
        self.before = _pixmap(before)
        self.before_frame = self.frame if frame is None else frame
        self._clamp()
        self.update()

    def set_after(self, after: QPixmap | Path | None, label: str = "Swapped",
                  frame: int | None = None) -> None:
        """`after` (None: none) as the swap of `frame` (None: the playhead's)."""
        self.after = None if after is None else _pixmap(after)
        self.after_frame = None if after is None else (self.frame if frame is None else frame)
        self.labels = (self.labels[0], label)
        self.update()

    def show_pair(self, before: QPixmap | Path, after: QPixmap | Path | None,
                  labels: tuple[str, str] = ("Original", "Swapped")) -> None:
        """`before` and `after` (None: none) of the playhead's frame."""
        self.labels = labels
        self.show_before(before)
        self.set_after(after, labels[1])

    def set_note(self, text: str) -> None:
        """Say what the result is waiting for (drawn while it is not there)."""
        if text != self.note:
            self.note = text
            self.update()

    def clear(self) -> None:
        self.before = self.after = None
        self.before_frame = self.after_frame = self.frame = None
        self.note = ""
        self.boxes = []
        self.boxes_changed.emit(False)
        self.set_zoom(None)

    def set_boxes(self, boxes: list[Box]) -> None:
        """Name the people: (label, colour, x1, y1, x2, y2 in picture pixels) each."""
        self.boxes = boxes
        self._face = -1
        self.boxes_changed.emit(bool(boxes))
        self.update()

    def shown(self) -> str:
        """What is drawn now: "before", "after", "split" or "" (nothing)."""
        if self.before is None and self.after is None:
            return ""
        if self.after is None or self.mode == "original" and self.before is not None:
            return "before"
        if self.before is None or self.mode == "result":
            return "after"
        return "split"

    # -- mode and zoom ----------------------------------------------------------------------------
    def set_mode(self, mode: str) -> None:
        if mode not in MODES:
            raise ValueError(mode)
        if mode != self.mode:
            self.mode = mode
            self.update()
            self.mode_changed.emit(mode)

    def scale(self) -> float:
        """Screen pixels per picture pixel now."""
        picture = self._picture()
        if self.zoom is not None or picture is None:
            return self.zoom or 1.0
        return min(self.width() / max(1, picture.width()),
                   self.height() / max(1, picture.height()))

    def set_zoom(self, scale: float | None, around: QPointF | None = None) -> None:
        """Fit (None) or `scale`, keeping the picture point under `around` (widget pixels;
        None: the middle of the view) where it is."""
        if scale is not None:
            scale = min(MAX_SCALE, max(MIN_SCALE, scale))
            middle = QPointF(self.width() / 2, self.height() / 2)
            around = middle if around is None else around
            target = self._target()
            under = (around - target.topLeft()) / self.scale()
            self.centre = under + (middle - around) / scale
        self.zoom = scale
        self._clamp()
        self.update()
        self.zoom_changed.emit()

    def zoom_by(self, factor: float, around: QPointF | None = None) -> None:
        self.set_zoom(self.scale() * factor, around)

    def zoom_to_face(self) -> bool:
        """Centre the next named face and zoom so it fills FACE_SHARE of the view's height;
        False when no face is named in this frame."""
        if not self.boxes or self._picture() is None:
            return False
        self._face = (self._face + 1) % len(self.boxes)
        _, _, x1, y1, x2, y2 = self.boxes[self._face]
        scale = min(MAX_SCALE, max(1.0, FACE_SHARE * self.height() / max(1.0, y2 - y1)))
        self.zoom = scale
        self.centre = QPointF((x1 + x2) / 2, (y1 + y2) / 2)
        self._clamp()
        self.update()
        self.zoom_changed.emit()
        return True

    def picture_rect(self) -> QRect:
        """Where the whole picture is drawn, in widget pixels (beyond the view when zoomed)."""
        return self._target().toAlignedRect() if self._picture() is not None else QRect()

    @property
    def divider(self) -> int:
        return round(self.share * self.width())

    def set_divider(self, x: int) -> None:
        if self.width() > 0:
            self.share = min(1.0, max(0.0, x / self.width()))
            self.update()

    def _picture(self) -> QPixmap | None:
        return self.before if self.before is not None else self.after

    def _target(self) -> QRectF:
        picture, scale = self._picture(), self.scale()
        if picture is None:
            return QRectF()
        width, height = picture.width() * scale, picture.height() * scale
        if self.zoom is None:
            left, top = (self.width() - width) / 2, (self.height() - height) / 2
        else:
            left = self.width() / 2 - self.centre.x() * scale
            top = self.height() / 2 - self.centre.y() * scale
        return QRectF(round(left), round(top), width, height)

    def _clamp(self) -> None:
        """Keep the zoomed picture over the view: centred when it is smaller."""
        picture = self._picture()
        if picture is None or self.zoom is None:
            return
        half_w, half_h = self.width() / (2 * self.zoom), self.height() / (2 * self.zoom)
        self.centre = QPointF(_clamped(self.centre.x(), half_w, picture.width()),
                              _clamped(self.centre.y(), half_h, picture.height()))

    def _pannable(self) -> bool:
        target = self._target()
        return target.width() > self.width() or target.height() > self.height()

    # -- drawing ----------------------------------------------------------------------------------
    def paintEvent(self, event: QPaintEvent) -> None:
        painter = QPainter(self)
        painter.fillRect(self.rect(), BACKGROUND)
        shown = self.shown()
        if not shown:
            painter.setPen(QColor(180, 180, 180))
            painter.drawText(self.rect(), Qt.AlignmentFlag.AlignCenter, self.empty_text)
            return
        target = self._target()
        painter.setRenderHint(QPainter.RenderHint.SmoothPixmapTransform, self.scale() < 1.0)
        if shown in ("before", "split") and self.before is not None:
            painter.drawPixmap(target, self.before, QRectF(self.before.rect()))
        if shown in ("after", "split") and self.after is not None:
            if shown == "split":
                painter.setClipRect(QRect(self.divider, 0, self.width(), self.height()))
            painter.drawPixmap(target, self.after, QRectF(self.after.rect()))
            painter.setClipping(False)
            if self.after_frame is not None:
                self.painted[self.after_frame] = time.perf_counter()
        if shown == "split":
            painter.setPen(QPen(DIVIDER_COLOUR, DIVIDER_PX))
            painter.drawLine(self.divider, 0, self.divider, self.height())
        self._boxes(painter, target)
        self._captions(painter, shown)

    def _captions(self, painter: QPainter, shown: str) -> None:
        bottom = QRect(6, self.height() - 24, self.width() - 12, 20)
        if shown in ("before", "split"):
            _caption(painter, bottom, Qt.AlignmentFlag.AlignLeft,
                     _titled(self.labels[0], self.before_frame))
        if shown in ("after", "split"):
            _caption(painter, bottom, Qt.AlignmentFlag.AlignRight,
                     _titled(self.labels[1], self.after_frame))
        if self.note and self.mode != "original" and shown == "before":
            _caption(painter, QRect(6, 6, self.width() - 12, 20), Qt.AlignmentFlag.AlignLeft,
                     self.note)

    def _boxes(self, painter: QPainter, target: QRectF) -> None:
        scale = self.scale()
        for label, colour, x1, y1, x2, y2 in self.boxes:
            box = QRectF(target.left() + x1 * scale, target.top() + y1 * scale,
                         (x2 - x1) * scale, (y2 - y1) * scale).toRect()
            painter.setPen(QPen(colour, 2))
            painter.drawRect(box)
            tag = QRect(box.left(), box.top() - 16, 8 + 8 * len(label), 16)
            painter.fillRect(tag, colour)
            painter.setPen(QColor(0, 0, 0))
            painter.drawText(tag, Qt.AlignmentFlag.AlignCenter, label)

    # -- input ------------------------------------------------------------------------------------
    def mousePressEvent(self, event: QMouseEvent) -> None:
        x, button = event.position().x(), event.button()
        near = abs(x - self.divider) <= GRAB_PX or not self._pannable()
        if button == Qt.MouseButton.LeftButton and self.shown() == "split" and near:
            self._drag = "divider"
            self.set_divider(round(x))
        elif button in (Qt.MouseButton.LeftButton, Qt.MouseButton.MiddleButton) \
                and self._pannable():
            self._drag = "pan"
            self._drag_from = (event.position(), QPointF(self.centre))
            self.setCursor(Qt.CursorShape.ClosedHandCursor)

    def mouseMoveEvent(self, event: QMouseEvent) -> None:
        if self._drag == "divider":
            self.set_divider(round(event.position().x()))
        elif self._drag == "pan":
            start, centre = self._drag_from
            self.centre = centre - (event.position() - start) / self.scale()
            self._clamp()
            self.update()

    def mouseReleaseEvent(self, event: QMouseEvent) -> None:
        self._drag = ""
        self.unsetCursor()

    def mouseDoubleClickEvent(self, event: QMouseEvent) -> None:
        """Fit when zoomed, else 100% around the pointer."""
        self.set_zoom(None if self.zoom is not None else 1.0, event.position())

    def wheelEvent(self, event: QWheelEvent) -> None:
        notches = event.angleDelta().y() / 120
        if notches and self._picture() is not None:
            self.zoom_by(ZOOM_STEP ** notches, event.position())
        event.accept()

    def resizeEvent(self, event: QResizeEvent) -> None:
        self._clamp()
        super().resizeEvent(event)


def _pixmap(picture: QPixmap | Path) -> QPixmap:
    return picture if isinstance(picture, QPixmap) else QPixmap(str(picture))


def _clamped(centre: float, half_view: float, size: float) -> float:
    if size <= 2 * half_view:
        return size / 2
    return min(max(centre, half_view), size - half_view)


def _titled(label: str, frame: int | None) -> str:
    return label if frame is None else f"{label} · {frame}"


def _caption(painter: QPainter, area: QRect, align: Qt.AlignmentFlag, text: str) -> None:
    width = painter.fontMetrics().horizontalAdvance(text) + 10
    left = area.left() if align == Qt.AlignmentFlag.AlignLeft else area.right() - width
    box = QRect(left, area.top(), width, area.height())
    painter.fillRect(box, CAPTION_BACK)
    painter.setPen(DIVIDER_COLOUR)
    painter.drawText(box, Qt.AlignmentFlag.AlignCenter, text)
