"""The panel window's widgets and where they sit; window.py wires them to the host and jobs.

Left, a fixed width: the source photos, the people (a scroll area of fixed height) and the
settings area (scrolls: the settings form, then the Consent box). Right: the viewer's bar
(Original / Result / Split, the zooms), the viewer (takes what height there is), the
timeline, the transport row (flags, frames, in/out), the view row (Preview, Show render, Open
folder), the output row, the render row, the progress of the running render, the activity of
the other jobs (opening, analysing, downloading) and the log.
"""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QGroupBox,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QMainWindow,
    QProgressBar,
    QPushButton,
    QScrollArea,
    QSizePolicy,
    QSpinBox,
    QVBoxLayout,
    QWidget,
)

from facefuse import OUTPUT_KINDS, Settings

from .people import PeopleGrid
from .settings import SettingsForm
from .timeline import Timeline
from .viewer import Viewer
from .viewer_bar import ViewerBar
from .widgets import LogPane, PolicyBox, SourceList

OUTPUT_LABELS = {"png": "PNG sequence", "exr": "EXR sequence", "tif": "TIFF sequence",
                 "prores_4444": "ProRes 4444 movie", "dnxhr_444": "DNxHR 444 movie"}
LEFT_PX = 440
LINE_PX = 20  # the status lines keep their height, so the view never jumps


class PanelLayout:
    """The widgets of one PanelWindow, built into it."""

    def __init__(self, window: QMainWindow, base: Settings) -> None:
        self.clip_label = QLabel("No clip", window)
        self.open_button = QPushButton("Open clip…", window)
        self.sources = SourceList(window)
        self.people = PeopleGrid(window)
        self.form = SettingsForm(base, window)
        self.policy = PolicyBox(window)
        self.form_scroll = QScrollArea(window)
        self.form_scroll.setWidget(self._settings_area(window))
        self.form_scroll.setWidgetResizable(True)
        self.form_scroll.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.view = Viewer(window)
        self.view_bar = ViewerBar(self.view, window)
        self.timeline = Timeline(window)
        self._transport(window)
        self._outputs(window)
        self.progress = QProgressBar(window)
        self.status = QLabel("", window)
        self.activity = QProgressBar(window)
        self.activity.setTextVisible(True)
        self.activity.setFormat("")
        self.activity_label = QLabel("", window)
        for label in (self.status, self.activity_label):
            label.setFixedHeight(LINE_PX)
        self.range_label.setMinimumWidth(170)
        for label in (self.status, self.flag_label, self.range_label):
            # a long sentence is cut, it never widens the window
            label.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Fixed)
        self.log = LogPane(window)
        self.log.setMaximumHeight(120)
        window.setCentralWidget(self._arrange(window))
        window.resize(1280, 820)

    def _settings_area(self, window: QWidget) -> QWidget:
        """The form's groups, then the Consent box, in the one scrolled column."""
        area = QWidget(window)
        column = QVBoxLayout(area)
        column.setContentsMargins(0, 0, 0, 0)
        column.addWidget(self.form)
        column.addWidget(self.policy)
        column.addStretch(1)
        return area

    def _transport(self, window: QWidget) -> None:
        self.prev_flag = QPushButton("◀ flag", window)
        self.prev_frame = QPushButton("◀", window)
        self.frame = QSpinBox(window)
        self.frame.setMinimumWidth(90)
        self.frame.setKeyboardTracking(False)
        self.next_frame = QPushButton("▶", window)
        self.play = QPushButton("Play", window)
        self.play.setCheckable(True)
        self.play.setToolTip("Step through in..out as fast as the frames come (Space)")
        self.next_flag = QPushButton("flag ▶", window)
        self.set_in = QPushButton("Set in", window)
        self.set_out = QPushButton("Set out", window)
        self.clear_range = QPushButton("Whole clip", window)
        self.range_label = QLabel("", window)
        self.flag_label = QLabel("", window)
        self.flag_label.setWordWrap(True)  # two lines: the window says which text fits
        self.flag_label.setFixedHeight(2 * LINE_PX)
        for button in (self.prev_flag, self.next_flag):
            button.setToolTip("The previous / next flagged range (Shift+Left / Shift+Right)")
        for button, width in ((self.prev_frame, 36), (self.next_frame, 36), (self.play, 48),
                              (self.prev_flag, 64),
                              (self.next_flag, 64), (self.set_in, 64), (self.set_out, 64)):
            button.setFixedWidth(width)
        self.set_in.setToolTip("Render from this frame on (I)")
        self.set_out.setToolTip("Render up to this frame (O)")

    def _outputs(self, window: QWidget) -> None:
        self.preview_button = QPushButton("Preview", window)
        self.show_result = QCheckBox("Show render", window)
        self.show_result.setToolTip("Result and Split show the rendered file's frame where "
                                    "there is one (else the live swap)")
        self.show_result.setEnabled(False)
        self.open_folder = QPushButton("Open folder", window)
        self.open_folder.setEnabled(False)
        self.open_report = QPushButton("Review report", window)
        self.open_report.setEnabled(False)
        self.open_report.setToolTip("The review of the shot in the browser: people, flags, "
                                    "contact sheet (Find people writes it)")
        self.output = QComboBox(window)
        for kind in OUTPUT_KINDS:
            self.output.addItem(OUTPUT_LABELS[kind], kind)
        self.folder = QLineEdit(window)
        self.browse = QPushButton("…", window)
        self.browse.setFixedWidth(32)
        self.render_button = QPushButton("Render", window)
        self.rerender_button = QPushButton("Re-render flagged", window)
        self.rerender_button.setEnabled(False)
        self.rerender_button.setToolTip("Render the flagged frames again (after giving someone "
                                        "their own source, or skipping them)")
        self.cancel_button = QPushButton("Cancel", window)
        self.cancel_button.setEnabled(False)

    def _arrange(self, window: QWidget) -> QWidget:
        left = QVBoxLayout()
        boxes: tuple[tuple[str, QWidget], ...] = (("Sources", self.sources),
                                                  ("People", self.people))
        for title, widget in boxes:
            box = QGroupBox(title, window)
            QVBoxLayout(box).addWidget(widget)
            left.addWidget(box)
        left.addWidget(self.form_scroll, 1)
        right = QVBoxLayout()
        right.addWidget(self.view_bar)
        right.addWidget(self.view, 1)
        right.addWidget(self.timeline)
        rows: tuple[tuple[QWidget, ...], ...] = (
                    (self.prev_flag, self.prev_frame, self.frame, self.next_frame,
                     self.play, self.next_flag, self.set_in, self.set_out, self.clear_range,
                     self.range_label),
                    (self.flag_label,),
                    (self.preview_button, self.show_result, self.open_folder,
                     self.open_report, self.output, self.folder, self.browse),
                    (self.render_button, self.rerender_button, self.cancel_button,
                     self.progress),
                    (self.status,), (self.activity_label, self.activity))
        for row in rows:
            line = QHBoxLayout()
            for widget in row:
                line.addWidget(widget, 1 if widget in (self.folder, self.progress,
                                                       self.range_label, self.flag_label,
                                                       self.status, self.activity) else 0)
            right.addLayout(line)
        right.addWidget(self.log)
        top = QHBoxLayout()
        top.addWidget(self.clip_label, 1)
        top.addWidget(self.open_button)
        side = QWidget(window)
        side.setLayout(left)
        side.setFixedWidth(LEFT_PX)
        body = QHBoxLayout()
        body.addWidget(side)
        body.addLayout(right, 1)
        root = QVBoxLayout()
        root.addLayout(top)
        root.addLayout(body, 1)
        central = QWidget(window)
        central.setLayout(root)
        return central
