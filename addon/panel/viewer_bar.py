"""The viewer's bar: the mode toggles, Fit, 100%, 200%, 400%, Face and the zoom in use; and its
keys: \\ flips between Original and the result, Y Split, F fit, 1 2 4 the zooms, + and - zoom,
Z a face."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

from PySide6.QtGui import QKeySequence, QShortcut
from PySide6.QtWidgets import QButtonGroup, QHBoxLayout, QLabel, QPushButton, QWidget

from .viewer import MODE_LABELS, MODES, ZOOM_STEP, ZOOMS, Viewer


class ViewerBar(QWidget):
    """The viewer's mode toggles and zoom buttons, and its keys (see the module docstring)."""

    def __init__(self, viewer: Viewer, window: QWidget) -> None:
        super().__init__(window)
        self.viewer = viewer
        self.flipped_from = "result"
        self.modes = QButtonGroup(self)
        self.mode_buttons: dict[str, QPushButton] = {}
        line = QHBoxLayout(self)
        line.setContentsMargins(0, 0, 0, 0)
        tips = {"original": "The frame as filmed (\\ flips to the result)",
                "result": "The swapped frame: rendered in the background as you scrub (\\)",
                "split": "Original left of the divider, result right of it: drag it (Y)"}
        for mode in MODES:
            button = QPushButton(MODE_LABELS[mode], self)
            button.setCheckable(True)
            button.setToolTip(tips[mode])
            button.clicked.connect(lambda _=False, m=mode: viewer.set_mode(m))
            self.modes.addButton(button)
            self.mode_buttons[mode] = button
            line.addWidget(button)
        line.addSpacing(16)
        self.zoom_buttons: dict[str, QPushButton] = {}
        for scale, text, key in ZOOMS:
            button = QPushButton(text, self)
            button.setToolTip(f"{'Fit the frame in the view' if scale is None else text} ({key})")
            button.clicked.connect(lambda _=False, s=scale: viewer.set_zoom(s))
            self.zoom_buttons[text] = button
            line.addWidget(button)
        self.face_button = QPushButton("Face", self)
        self.face_button.setToolTip("Zoom to a face found by Find people; again for the next (Z)")
        self.face_button.setEnabled(False)
        self.face_button.clicked.connect(viewer.zoom_to_face)
        line.addWidget(self.face_button)
        self.zoom_label = QLabel("", self)
        self.zoom_label.setMinimumWidth(90)
        self.zoom_label.setToolTip("Wheel: zoom around the pointer · drag: pan · double-click: "
                                   "Fit / 100%")
        line.addWidget(self.zoom_label)
        line.addStretch(1)
        viewer.mode_changed.connect(self._mode_shown)
        viewer.zoom_changed.connect(self._zoom_shown)
        viewer.boxes_changed.connect(self.face_button.setEnabled)
        self._keys(window)
        self._mode_shown(viewer.mode)
        self._zoom_shown()

    def _keys(self, window: QWidget) -> None:
        viewer = self.viewer
        keys: dict[str, Callable[[], object]] = {
            "\\": self.flip,
            "Y": lambda: viewer.set_mode("result" if viewer.mode == "split" else "split"),
            "+": lambda: viewer.zoom_by(ZOOM_STEP), "=": lambda: viewer.zoom_by(ZOOM_STEP),
            "-": lambda: viewer.zoom_by(1 / ZOOM_STEP), "Z": viewer.zoom_to_face}
        for scale, _, key in ZOOMS:
            keys[key] = partial(viewer.set_zoom, scale)
        self.shortcuts = [QShortcut(QKeySequence(key), window, action)
                          for key, action in keys.items()]

    def flip(self) -> None:
        """Original, or back to the result (or Split) it was flipped from."""
        viewer = self.viewer
        if viewer.mode != "original":
            self.flipped_from = viewer.mode
            viewer.set_mode("original")
        else:
            viewer.set_mode(self.flipped_from)

    def _mode_shown(self, mode: str) -> None:
        self.mode_buttons[mode].setChecked(True)

    def _zoom_shown(self) -> None:
        viewer = self.viewer
        scale = f"{viewer.scale():.0%}"
        self.zoom_label.setText(f"Fit ({scale})" if viewer.zoom is None else scale)
