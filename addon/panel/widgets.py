"""The panel's widgets: they show what they are given and emit signals; they run no engine work.

SourceList: source photos (add, remove, drop files) with the engine's outlined thumbnails.
SplitView: before | after, split at a divider the user drags; pictures drawn at most 1:1; the
before alone (the clip's frame) until there is an after (a preview or the rendered result).
LogPane: plain-words messages, errors marked.
"""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QPoint, QRect, QSize, Qt, Signal
from PySide6.QtGui import QColor, QIcon, QMouseEvent, QPainter, QPaintEvent, QPen, QPixmap
from PySide6.QtWidgets import (
    QHBoxLayout,
    QListWidget,
    QListWidgetItem,
    QPlainTextEdit,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

THUMB_PX = 96
DIVIDER_PX = 2
DIVIDER_COLOUR = QColor(255, 210, 0)


class SourceList(QWidget):
    """Source photos; `changed(paths)` when the list changes, `add_requested` for the Add
    button (the window shows the file dialog)."""

    changed = Signal(list)
    add_requested = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.list = QListWidget(self)
        self.list.setViewMode(QListWidget.ViewMode.IconMode)
        self.list.setIconSize(QSize(THUMB_PX, THUMB_PX))
        self.list.setFixedHeight(THUMB_PX + 44)
        self.setAcceptDrops(True)
        add, remove = QPushButton("Add…", self), QPushButton("Remove", self)
        add.clicked.connect(self.add_requested)
        remove.clicked.connect(self._remove_selected)
        buttons = QHBoxLayout()
        buttons.addWidget(add)
        buttons.addWidget(remove)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.list)
        layout.addLayout(buttons)

    def paths(self) -> list[Path]:
        return [Path(self.list.item(i).data(Qt.ItemDataRole.UserRole))
                for i in range(self.list.count())]

    def add(self, paths: list[Path]) -> None:
        known = set(self.paths())
        for path in paths:
            if path in known:
                continue
            item = QListWidgetItem(path.name)
            item.setData(Qt.ItemDataRole.UserRole, str(path))
            item.setToolTip(str(path))
            self.list.addItem(item)
        self.changed.emit(self.paths())

    def set_thumbnail(self, path: Path, thumbnail: Path, faces: int) -> None:
        """Show the engine's outlined thumbnail of source `path` and its face count."""
        for i in range(self.list.count()):
            item = self.list.item(i)
            if Path(item.data(Qt.ItemDataRole.UserRole)) == path:
                item.setIcon(QIcon(str(thumbnail)))
                item.setText(f"{path.name}\n{faces} face(s)" if faces else
                             f"{path.name}\nno face")

    def _remove_selected(self) -> None:
        for item in self.list.selectedItems():
            self.list.takeItem(self.list.row(item))
        self.changed.emit(self.paths())

    def dragEnterEvent(self, event):
        if event.mimeData().hasUrls():
            event.acceptProposedAction()

    def dropEvent(self, event):
        self.add([Path(url.toLocalFile()) for url in event.mimeData().urls()
                  if url.isLocalFile()])


class SplitView(QWidget):
    """Before (left of the divider) and after (right), drawn centred at most 1:1; drag to move
    the divider (`divider` is its x in widget pixels)."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.before: QPixmap | None = None
        self.after: QPixmap | None = None
        self.share = 0.5
        self.labels = ("Original", "Swapped")
        self.empty_text = "Open a clip"
        self.boxes: list[tuple[str, QColor, float, float, float, float]] = []
        self.setMinimumSize(240, 160)

    def show_pair(self, before: Path, after: Path | None, labels: tuple[str, str] = (
            "Original", "Swapped")) -> None:
        """`before` left of the divider and `after` right of it (None: `before` alone)."""
        self.before = QPixmap(str(before))
        self.after = QPixmap(str(after)) if after is not None else None
        self.labels = labels
        self.update()

    def clear(self) -> None:
        self.before = self.after = None
        self.update()

    def picture_rect(self) -> QRect:
        """Where the pictures are drawn: fitted into the widget, never enlarged, centred."""
        if self.before is None:
            return QRect()
        size = self.before.size()
        if size.width() > self.width() or size.height() > self.height():
            size = size.scaled(self.size(), Qt.AspectRatioMode.KeepAspectRatio)
        corner = QPoint((self.width() - size.width()) // 2, (self.height() - size.height()) // 2)
        return QRect(corner, size)

    @property
    def divider(self) -> int:
        area = self.picture_rect()
        return area.left() + round(self.share * area.width())

    def set_divider(self, x: int) -> None:
        area = self.picture_rect()
        if area.width() > 0:
            self.share = min(1.0, max(0.0, (x - area.left()) / area.width()))
            self.update()

    def paintEvent(self, event: QPaintEvent) -> None:
        painter = QPainter(self)
        painter.fillRect(self.rect(), QColor(30, 30, 30))
        if self.before is None:
            painter.setPen(QColor(180, 180, 180))
            painter.drawText(self.rect(), Qt.AlignmentFlag.AlignCenter, self.empty_text)
            return
        if self.after is None:
            painter.drawPixmap(self.picture_rect(), self.before)
            self._boxes(painter)
            return
        area, split = self.picture_rect(), self.divider
        painter.drawPixmap(area, self.before)
        left_px = round((split - area.left()) * self.after.width() / area.width())
        right = QRect(split, area.top(), area.left() + area.width() - split, area.height())
        source = QRect(left_px, 0, self.after.width() - left_px, self.after.height())
        painter.drawPixmap(right, self.after, source)
        painter.setPen(QPen(DIVIDER_COLOUR, DIVIDER_PX))
        painter.drawLine(split, area.top(), split, area.bottom())
        painter.setPen(DIVIDER_COLOUR)
        painter.drawText(QRect(area.left() + 4, area.bottom() - 18, area.width() - 8, 16),
                         Qt.AlignmentFlag.AlignLeft, self.labels[0])
        painter.drawText(QRect(area.left() + 4, area.bottom() - 18, area.width() - 8, 16),
                         Qt.AlignmentFlag.AlignRight, self.labels[1])
        self._boxes(painter)

    def set_boxes(self, boxes: list[tuple[str, QColor, float, float, float, float]]) -> None:
        """Name the people: (label, colour, x1, y1, x2, y2 in picture pixels) each."""
        self.boxes = boxes
        self.update()

    def _boxes(self, painter: QPainter) -> None:
        if self.before is None or not self.boxes:
            return
        area = self.picture_rect()
        scale = area.width() / max(1, self.before.width())
        for label, colour, x1, y1, x2, y2 in self.boxes:
            box = QRect(area.left() + round(x1 * scale), area.top() + round(y1 * scale),
                        round((x2 - x1) * scale), round((y2 - y1) * scale))
            painter.setPen(QPen(colour, 2))
            painter.drawRect(box)
            tag = QRect(box.left(), box.top() - 16, 8 + 8 * len(label), 16)
            painter.fillRect(tag, colour)
            painter.setPen(QColor(0, 0, 0))
            painter.drawText(tag, Qt.AlignmentFlag.AlignCenter, label)

    def mousePressEvent(self, event: QMouseEvent) -> None:
        self.set_divider(round(event.position().x()))

    def mouseMoveEvent(self, event: QMouseEvent) -> None:
        if event.buttons() & Qt.MouseButton.LeftButton:
            self.set_divider(round(event.position().x()))


class LogPane(QPlainTextEdit):
    """What happened, in plain words; errors start with "Error:"."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setReadOnly(True)
        self.setMaximumBlockCount(500)

    def say(self, text: str, level: str = "INFO") -> None:
        prefix = {"ERROR": "Error: ", "WARNING": "Warning: "}.get(level, "")
        self.appendPlainText(prefix + text)
