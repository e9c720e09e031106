"""The panel window: wires the widgets to a host (host.py) and to engine jobs (worker.py).

Every picture comes from facefuse's previews (source_preview, face_pictures, reference_face,
frame_picture, preview_frame: the functions Blender uses, plus the two a split view and a face
grid need); every render is facefuse.render on a worker thread. The UI thread only builds
requests, starts jobs and shows what they hand back.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from PySide6.QtCore import QTimer
from PySide6.QtGui import QCloseEvent
from PySide6.QtWidgets import (
    QComboBox,
    QFileDialog,
    QGridLayout,
    QGroupBox,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QMainWindow,
    QProgressBar,
    QPushButton,
    QScrollArea,
    QSpinBox,
    QVBoxLayout,
    QWidget,
)

from facefuse import (
    OUTPUT_KINDS,
    CacheLayout,
    FacefuseError,
    FrameReport,
    HostError,
    Job,
    Message,
    PhaseProgress,
    PhaseRate,
    RenderRequest,
    RenderSummary,
    Settings,
    face_pictures,
    frame_picture,
    preview_frame,
    reference_face,
    source_preview,
)

from .host import Clip, Host
from .settings import SettingsForm
from .widgets import FaceGrid, LogPane, SourceList, SplitView
from .worker import Jobs, look_job, render_job

LOOK = "look"  # the kind of every look job (thumbnails, faces, reference, preview)
CANCEL_WAIT_MS = 1000
OUTPUT_LABELS = {"png": "PNG sequence", "exr": "EXR sequence", "tif": "TIFF sequence",
                 "prores_4444": "ProRes 4444 movie", "dnxhr_444": "DNxHR 444 movie"}


class PanelWindow(QMainWindow):
    """One clip's swap. host: a Host (FileHost, or the Resolve host's JobHost); base: the
    Settings fields the form does not show (models and cache folders, providers, offline)."""

    def __init__(self, host: Host, base: Settings | None = None, jobs: Jobs | None = None
                 ) -> None:
        super().__init__()
        self.host, self.base = host, base or Settings()
        self.jobs = jobs or Jobs(parent=self)
        self.jobs.finished.connect(self._job_finished)
        self.reference: Path | None = None
        self.last_request: RenderRequest | None = None
        self.pending_thumbnails: list[Path] = []
        self.pending_looks: list[Callable[[], None]] = []  # looks asked for while one ran
        self.thumbnailed: set[Path] = set()
        self.render_rates: dict[str, PhaseRate] = {}  # of the running render's phases
        self.render_steps: dict[str, PhaseProgress] = {}
        self.setWindowTitle("facefuse")
        self._build()
        self.show_clip(host.clip)
        if host.problem:
            self.log.say(host.problem, "ERROR")
        if host.clip is not None and host.clip.note:  # e.g. from Resolve: the faces at once
            self.log.say(host.clip.note)
            QTimer.singleShot(0, self.find_faces)

    # -- layout ---------------------------------------------------------------------------------
    def _build(self) -> None:
        self.clip_label = QLabel(self)
        open_clip = QPushButton("Open clip…", self)
        open_clip.clicked.connect(self._choose_clip)
        self.sources = SourceList(self)
        self.sources.add_requested.connect(self._choose_sources)
        self.sources.changed.connect(self._sources_changed)
        self.faces = FaceGrid(self)
        self.faces.picked.connect(self._face_picked)
        self.faces.find_requested.connect(self.find_faces)
        self.form = SettingsForm(self.base, self)
        scroll = QScrollArea(self)
        scroll.setWidget(self.form)
        scroll.setWidgetResizable(True)
        left = QVBoxLayout()
        for title, widget in (("Sources", self.sources), ("Target face", self.faces)):
            box = QGroupBox(title, self)
            QVBoxLayout(box).addWidget(widget)
            left.addWidget(box)
        left.addWidget(scroll, 1)
        self.view = SplitView(self)
        self.frame = QSpinBox(self)
        self.preview_button = QPushButton("Preview", self)
        self.preview_button.clicked.connect(self.preview)
        self.output = QComboBox(self)
        for kind in OUTPUT_KINDS:
            self.output.addItem(OUTPUT_LABELS[kind], kind)
        self.folder = QLineEdit(self)
        browse = QPushButton("…", self)
        browse.clicked.connect(self._choose_folder)
        self.render_button = QPushButton("Render", self)
        self.render_button.clicked.connect(self.start_render)
        self.cancel_button = QPushButton("Cancel", self)
        self.cancel_button.setEnabled(False)
        self.cancel_button.clicked.connect(self.cancel_render)
        self.progress = QProgressBar(self)
        self.status = QLabel("", self)
        self.log = LogPane(self)
        right = QGridLayout()
        right.addWidget(self.view, 0, 0, 1, 4)
        right.addWidget(QLabel("Frame", self), 1, 0)
        right.addWidget(self.frame, 1, 1)
        right.addWidget(self.preview_button, 1, 3)
        right.addWidget(self.output, 2, 0, 1, 2)
        right.addWidget(self.folder, 2, 2)
        right.addWidget(browse, 2, 3)
        right.addWidget(self.render_button, 3, 0, 1, 2)
        right.addWidget(self.cancel_button, 3, 2, 1, 2)
        right.addWidget(self.progress, 4, 0, 1, 4)
        right.addWidget(self.status, 5, 0, 1, 4)
        right.addWidget(self.log, 6, 0, 1, 4)
        right.setRowStretch(0, 3)
        right.setRowStretch(6, 1)
        top = QHBoxLayout()
        top.addWidget(self.clip_label, 1)
        top.addWidget(open_clip)
        body = QHBoxLayout()
        body.addLayout(left, 2)
        body.addLayout(right, 3)
        root = QVBoxLayout()
        root.addLayout(top)
        root.addLayout(body)
        central = QWidget(self)
        central.setLayout(root)
        self.setCentralWidget(central)
        self.resize(1100, 760)

    def show_clip(self, clip: Clip | None) -> None:
        self.clip_label.setText(f"Clip: {clip.label}" if clip else "No clip")
        self.render_button.setEnabled(clip is not None)
        self.preview_button.setEnabled(clip is not None)
        if clip is None:
            return
        first, last = clip.frames or (clip.start_number, 2**31 - 1)
        self.frame.setRange(first, last)
        self.frame.setValue(clip.preview_frame if clip.preview_frame is not None else first)
        self.folder.setText(str(clip.folder))

    # -- requests ---------------------------------------------------------------------------------
    def settings(self) -> Settings:
        """The form's settings on the base ones, with the picked reference face."""
        chosen = self.form.settings(self.base)
        if chosen.selector == "reference" and self.reference is not None:
            return replace(chosen, reference_images=(self.reference,))
        return chosen

    def look_request(self, settings: Settings | None = None) -> RenderRequest:
        clip = self.host.clip
        if clip is None:
            raise HostError("Open a clip to swap (Clip > Open)")
        return RenderRequest(sources=tuple(self.sources.paths()), input=clip.input,
                             output=str(clip.folder / "look.####.png"),
                             settings=settings or self.settings(), frames=clip.frames,
                             start_number=clip.start_number)

    def _checked_look_request(self) -> RenderRequest | None:
        """look_request(), or None after saying why the settings cannot be used."""
        try:
            return self.look_request()
        except (FacefuseError, HostError) as exc:
            self.log.say(str(exc), "ERROR")
            return None

    def _look(self, label: str, look: Any, done: Any, settings: Settings | None = None) -> None:
        """Run look(pipeline) as the one look job: looks share the runner's Pipeline, which is
        not safe to use from two threads (or to replace while another look uses it), so a look
        asked for while another runs waits for it."""
        if self.jobs.busy(LOOK):
            self.pending_looks.append(lambda: self._look(label, look, done, settings))
            return
        try:
            settings = settings or self.settings()
            job = look_job(LOOK, label, self.jobs.runner, settings, look,
                           lambda _job, result: done(result))
            self.jobs.start(job)
        except (FacefuseError, HostError) as exc:
            self.log.say(str(exc), "ERROR")

    # -- sources and faces ------------------------------------------------------------------------
    def _choose_sources(self) -> None:
        names, _ = QFileDialog.getOpenFileNames(self, "Source photos", "",
                                                "Images (*.png *.jpg *.jpeg *.tif *.tiff *.exr)")
        self.sources.add([Path(n) for n in names])

    def _sources_changed(self, paths: list[Path]) -> None:
        self.pending_thumbnails += [p for p in paths if p not in self.thumbnailed
                                    and p not in self.pending_thumbnails]
        self.thumbnailed.update(paths)
        self._next_thumbnail()

    def _next_thumbnail(self) -> None:
        if not self.pending_thumbnails or self.jobs.busy(LOOK):
            return
        path = self.pending_thumbnails.pop(0)

        def shown(result: tuple[Path, int]) -> Message:
            self.sources.set_thumbnail(path, *result)
            return Message("INFO", f"{path.name}: {result[1]} face(s)")
        self._look(f"Thumbnail of {path.name}",
                   lambda p: source_preview(path, p.settings, pipeline=p), shown)

    def find_faces(self) -> None:
        if self.host.clip is None:
            return
        request, frame = self._checked_look_request(), self.frame.value()
        if request is None:
            return

        def shown(tiles: tuple[Path, ...]) -> Message:
            self.faces.show_faces(tiles)
            return Message("INFO" if tiles else "WARNING",
                           f"{len(tiles)} face(s) in frame {frame}" if tiles else
                           f"No face found in frame {frame}: try another frame")
        self._look("Finding faces",
                   lambda p: face_pictures(request, frame, pipeline=p), shown,
                   request.settings)

    def _face_picked(self, mode: str, index: int) -> None:
        if mode != "face":
            self.reference = None
            self.form.set_value("selector", mode)
            return
        request, frame = self._checked_look_request(), self.frame.value()
        if request is None:
            return
        folder = CacheLayout.at(request.settings.cache_dir).previews  # not beside the media

        def chosen(path: Path) -> Message:
            self.reference = path
            self.form.set_value("selector", "reference")
            return Message("INFO", f"Replacing face {index} of frame {frame} (and the same "
                                   "person in every frame)")
        self._look("Picking the face",
                   lambda p: reference_face(request, frame, index,
                                                     folder / "references", p),
                   chosen, request.settings)

    # -- preview ----------------------------------------------------------------------------------
    def preview(self) -> None:
        if not self.sources.paths():
            self.log.say("Add a source photo first (Sources > Add…)", "ERROR")
            return
        request, frame = self._checked_look_request(), self.frame.value()
        if request is None:
            return

        def both(p: Any) -> tuple[Path, Path]:
            return (frame_picture(request, frame),
                    preview_frame(request, frame, pipeline=p))

        def shown(pair: tuple[Path, Path]) -> Message:
            self.view.show_pair(*pair)
            return Message("INFO", f"Preview of frame {frame}: drag the divider to compare")
        self._look("Preview", both, shown, request.settings)

    # -- render -----------------------------------------------------------------------------------
    def start_render(self) -> None:
        clip = self.host.clip
        if clip is None or self.jobs.busy("render"):
            return
        if not self.sources.paths():
            self.log.say("Add a source photo first (Sources > Add…)", "ERROR")
            return
        try:
            request, plan = self.host.build_render(clip, tuple(self.sources.paths()),
                                                   self.settings(), self.output.currentData(),
                                                   Path(self.folder.text()))
            self.last_request = request
            self.jobs.start(render_job(request, self._render_progress,
                                       lambda _job, summary: self._render_done(plan, summary)))
        except (FacefuseError, HostError) as exc:
            self.log.say(str(exc), "ERROR")
            return
        self.render_rates = {}
        self.render_steps = {}  # the last of each phase
        self.progress.setValue(0)
        self.render_button.setEnabled(False)
        self.cancel_button.setEnabled(True)
        self.log.say(f"Rendering to {request.output}")

    def cancel_render(self) -> None:
        if self.jobs.cancel("render"):
            self.status.setText("Cancelling…")

    def _render_progress(self, job: Job, item: Any) -> None:
        if isinstance(item, PhaseProgress) and item.phase == "encode":
            self.status.setText("Finishing the output…")
        elif isinstance(item, PhaseProgress):
            self.render_rates.setdefault(item.phase, PhaseRate(item.done))
            self.render_steps[item.phase] = item
            # pass 1 may run beside pass 2 (selector many): the bar follows the swap then
            shown = self.render_steps.get("swap", item)
            job.total, job.done, job.status = shown.total, shown.done, shown.phase
            self.progress.setMaximum(max(1, shown.total))
            self.progress.setValue(shown.done)
            text = _progress_text(shown, self.render_rates[shown.phase])
            analysis = self.render_steps.get("analysis")
            if shown.phase == "swap" and analysis is not None and analysis.done < analysis.total:
                text += f" · analysis {analysis.done}/{analysis.total}"
            self.status.setText(text)
        elif isinstance(item, FrameReport) and item.status == "failed":
            self.log.say(f"frame {item.frame}: {item.error}", "WARNING")

    def _render_done(self, plan: Any, summary: RenderSummary) -> Message:
        for warning in summary.warnings:
            self.log.say(warning, "WARNING")
        message = self.host.rendered(plan, summary)
        ok = not summary.cancelled and not summary.failed and summary.swapped > 0
        return Message("INFO" if ok else "WARNING", message)

    def _job_finished(self, kind: str, message: Message) -> None:
        self.log.say(message.text, message.level)
        if kind == "render":
            self.render_button.setEnabled(self.host.clip is not None)
            self.cancel_button.setEnabled(False)
            self.status.setText(message.text)
        if kind == LOOK:
            if self.pending_looks:
                self.pending_looks.pop(0)()
            else:
                self._next_thumbnail()

    # -- files and closing ------------------------------------------------------------------------
    def _choose_clip(self) -> None:
        name, _ = QFileDialog.getOpenFileName(self, "Clip", "", "Video (*.mov *.mp4 *.mxf *.mkv "
                                              "*.avi);;All files (*)")
        if name:
            self.show_clip(self.host.open(Path(name)))

    def _choose_folder(self) -> None:
        name = QFileDialog.getExistingDirectory(self, "Output folder", self.folder.text())
        if name:
            self.folder.setText(name)

    def closeEvent(self, event: QCloseEvent) -> None:
        """Closing stops a running render (finished frames stay) and tells the host."""
        message = ""
        if self.jobs.busy("render"):
            self.jobs.cancel("render")
            self.jobs.wait("render", CANCEL_WAIT_MS * 10)
            message = "The panel was closed before the render finished: nothing placed"
        self.jobs.close()
        self.host.finish(message)
        event.accept()


def _progress_text(step: PhaseProgress, rate: PhaseRate) -> str:
    fps, left = rate.fps_eta(step.done, step.total)
    eta = "" if left is None else f" · {int(left) // 60}:{int(left) % 60:02d} left"
    speed = f" · {fps:.1f} fps" if fps else ""
    return f"{step.phase}: {step.done}/{step.total} frames{speed}{eta}"

