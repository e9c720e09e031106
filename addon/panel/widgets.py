"""The panel's widgets: they show what they are given and emit signals; they run no engine work.

SourceList: source photos (add, remove, drop files) with the engine's outlined thumbnails.
PolicyBox: the Consent box of the settings area (Require consent, Project).
LogPane: plain-words messages, errors marked.
"""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QSize, Qt, Signal
from PySide6.QtGui import QIcon
from PySide6.QtWidgets import (
    QCheckBox,
    QFormLayout,
    QGroupBox,
    QHBoxLayout,
    QLineEdit,
    QListWidget,
    QListWidgetItem,
    QPlainTextEdit,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

THUMB_PX = 96


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

    def replace(self, paths: list[Path]) -> None:
        """Hold `paths` instead of the photos there are (a shot's kept sources)."""
        if paths == self.paths():
            return
        self.list.clear()
        self.add(paths)

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


class PolicyBox(QGroupBox):
    """Require consent (refuse to swap anyone without a valid consent record) and the project
    the records' scope names; `changed` when either changes."""

    changed = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__("Consent", parent)
        self.require = QCheckBox(self)
        self.require.setToolTip("Refuse to render anyone swapped without a valid consent record "
                                "(Consent on their card); a studio settings file may require "
                                "it anyway")
        self.project = QLineEdit(self)
        self.project.setPlaceholderText("as the consent records name it")
        self.project.setToolTip("The project this render is for, which a consent record's "
                                "scope may name")
        form = QFormLayout(self)
        form.addRow("Require consent", self.require)
        form.addRow("Project", self.project)
        self.require.toggled.connect(self.changed)
        self.project.editingFinished.connect(self.changed)

    def project_name(self) -> str | None:
        """The project typed (None: none)."""
        return self.project.text().strip() or None

    def set_values(self, require: bool, project: str) -> None:
        """Show kept values without emitting `changed`."""
        self.blockSignals(True)
        self.require.setChecked(require)
        self.project.setText(project)
        self.blockSignals(False)


class LogPane(QPlainTextEdit):
    """What happened, in plain words; errors start with "Error:"."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setReadOnly(True)
        self.setMaximumBlockCount(500)

    def say(self, text: str, level: str = "INFO") -> None:
        prefix = {"ERROR": "Error: ", "WARNING": "Warning: "}.get(level, "")
        self.appendPlainText(prefix + text)
