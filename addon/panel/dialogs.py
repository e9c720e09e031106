"""The panel's file dialogs and the files it opens for the user: a clip (a movie, one frame of a
plate sequence, or a typed pattern), source photos, a person's own photo, the output folder,
and the result folder and review page in the desktop's own viewers."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Protocol

from PySide6.QtCore import QUrl
from PySide6.QtGui import QDesktopServices
from PySide6.QtWidgets import QFileDialog, QWidget

from facefuse import SEQUENCE_SUFFIXES

from .host import Host

IMAGES = "Images (*.png *.jpg *.jpeg *.tif *.tiff *.exr)"
VIDEO_TYPES = "*.mov *.mp4 *.mxf *.mkv *.avi *.webm *.m4v"
PLATE_TYPES = " ".join(f"*{suffix}" for suffix in SEQUENCE_SUFFIXES)
CLIP_FILTERS = (f"Clips and plates ({VIDEO_TYPES} {PLATE_TYPES})", f"Video ({VIDEO_TYPES})",
                f"Image sequences: pick one frame ({PLATE_TYPES})", "All files (*)")


class PanelWindow(Protocol):
    """What the dialogs use of the panel window (window.PanelWindow, a QWidget)."""

    host: Host
    ui: Any
    act: Any
    review: Any

    def open(self, path: Path) -> None: ...

    def assign_source(self, person_id: str, path: Path | None) -> None: ...

    def remember(self) -> None: ...


def _parent(window: PanelWindow) -> QWidget:
    assert isinstance(window, QWidget)
    return window


def clip_dialog(window: PanelWindow) -> QFileDialog:
    """Open clip…: a movie, one frame of an image sequence (the sequence is opened), or a
    pattern typed (plate.####.exr)."""
    dialog = QFileDialog(_parent(window), "Open a clip, or one frame of a plate sequence")
    dialog.setAcceptMode(QFileDialog.AcceptMode.AcceptOpen)
    dialog.setFileMode(QFileDialog.FileMode.AnyFile)  # a typed pattern names no file
    dialog.setOption(QFileDialog.Option.DontUseNativeDialog)  # the same on every desktop
    dialog.setNameFilters(CLIP_FILTERS)
    dialog.setLabelText(QFileDialog.DialogLabel.FileName, "Clip, frame or pattern:")
    clip = window.host.clip
    if clip is not None:
        dialog.setDirectory(str(Path(clip.input).parent))
    return dialog


def choose_clip(window: PanelWindow) -> None:
    dialog = clip_dialog(window)
    if dialog.exec() and dialog.selectedFiles():
        window.open(Path(dialog.selectedFiles()[0]))


def choose_sources(window: PanelWindow) -> None:
    names, _ = QFileDialog.getOpenFileNames(_parent(window), "Source photos", "", IMAGES)
    window.ui.sources.add([Path(n) for n in names])


def choose_person_source(window: PanelWindow, person_id: str) -> None:
    name, _ = QFileDialog.getOpenFileName(_parent(window), f"Source photo for {person_id}", "",
                                          IMAGES)
    if name:
        window.assign_source(person_id, Path(name))


def choose_folder(window: PanelWindow) -> None:
    name = QFileDialog.getExistingDirectory(_parent(window), "Output folder",
                                            window.ui.folder.text())
    if name:
        window.ui.folder.setText(name)
        window.remember()


def open_result_folder(window: PanelWindow) -> None:
    result = window.act.result
    if result is not None:
        QDesktopServices.openUrl(QUrl.fromLocalFile(str(result.folder)))


def open_review_page(window: PanelWindow) -> None:
    page = window.review.page
    if page is not None and page.is_file():
        QDesktopServices.openUrl(QUrl.fromLocalFile(str(page)))
