"""The panel window: wires the widgets (layout.py) to a host (host.py) and to engine jobs
(worker.py, actions.py, frames.py, looks.py).

An artist's path through it: open a clip (its first frame and the timeline at once), scrub
(each frame as decoded), Find people (the review: the shot's people, their presence, flags and
cuts on the timeline; analysing with progress the first time), give people their own source or
skip them, set in/out, Preview (the render's pixels for the frame), Render, step through the
result beside the original, Re-render flagged. The UI thread only builds requests, starts jobs
and shows what they hand back; every picture comes from facefuse.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from PySide6.QtCore import QTimer, QUrl
from PySide6.QtGui import QCloseEvent, QColor, QDesktopServices
from PySide6.QtWidgets import QFileDialog, QMainWindow

from facefuse import (
    CacheLayout,
    FacefuseError,
    HostError,
    RenderRequest,
    Settings,
    tunable_options,
)

from . import frames, looks
from .actions import Actions
from .corrections import Corrections
from .host import Clip, Host
from .layout import PanelLayout
from .review import ShotReview, person_rgb
from .store import PanelStore
from .worker import Jobs

CANCEL_WAIT_MS = 1000
PLAY_MS = 40  # how often Play looks whether the shown frame is done, to step on
DEFAULTS = Settings()


class PanelWindow(QMainWindow):
    """One clip's swap. host: a Host (FileHost, or the Resolve host's JobHost); base: the
    Settings the panel starts from (the command line's); fields of it that differ from the
    defaults win over the remembered ones. store: where settings are remembered."""

    def __init__(self, host: Host, base: Settings | None = None, jobs: Jobs | None = None,
                 store: PanelStore | None = None) -> None:
        super().__init__()
        self.host, self.base = host, base or Settings()
        self.store = store or PanelStore()
        self.jobs = jobs or Jobs(parent=self)
        self.setWindowTitle("facefuse")
        self.ui = PanelLayout(self, self.base)
        self.act = Actions(self)
        self.jobs.finished.connect(self.act.job_finished)
        self.review = ShotReview.empty(1, 1)
        self.assigned: dict[str, Path] = {}
        self.skipped: set[str] = set()
        self.corrections = Corrections()
        self.last_request: RenderRequest | None = None
        self.player = QTimer(self)
        self.player.setInterval(PLAY_MS)
        self.player.timeout.connect(self._play_step)
        self.restoring = True
        self._connect()
        self._restore()
        self.restoring = False
        self.show_clip(host.clip)
        if host.problem:
            self.ui.log.say(host.problem, "ERROR")
        if host.clip is not None and host.clip.note:  # e.g. from Resolve: the people at once
            self.ui.log.say(host.clip.note)
            QTimer.singleShot(0, lambda: looks.find_people(self.act))

    # -- remembered settings ----------------------------------------------------------------------
    def _restore(self) -> None:
        keep = frozenset(o.name for o in tunable_options()
                         if getattr(self.base, o.name) != getattr(DEFAULTS, o.name))
        refused = self.ui.form.apply(self.store.form(), keep)
        if refused:
            self.ui.log.say(f"Remembered settings not used (out of range): {', '.join(refused)}",
                            "WARNING")
        index = self.ui.output.findData(self.store.output())
        if index >= 0:
            self.ui.output.setCurrentIndex(index)
        sources = [p for p in self.store.sources() if p.is_file()]
        if sources:
            self.ui.sources.add(sources)

    def remember(self) -> None:
        """Save the form, the sources, the output kind and a chosen folder."""
        if self.restoring:
            return
        self.store.save_form(self.ui.form.values())
        self.store.save_sources(self.ui.sources.paths())
        self.store.save_output(self.ui.output.currentData())
        clip = self.host.clip
        folder = self.ui.folder.text()
        if folder and (clip is None or folder != str(clip.folder)):
            self.store.save_folder(folder)
        self.store.sync()

    # -- wiring -----------------------------------------------------------------------------------
    def _connect(self) -> None:
        ui, act = self.ui, self.act
        ui.open_button.clicked.connect(self._choose_clip)
        ui.sources.add_requested.connect(self._choose_sources)
        ui.sources.changed.connect(lambda paths: looks.sources_changed(act, paths))
        ui.people.find_requested.connect(lambda: looks.find_people(act))
        ui.people.source_requested.connect(self._choose_person_source)
        ui.people.source_cleared.connect(lambda pid: self.assign_source(pid, None))
        ui.people.skip_toggled.connect(self.skip_person)
        ui.people.person_clicked.connect(self._go_to_person)
        ui.people.range_action.connect(self.correct_range)
        ui.timeline.frame_changed.connect(self.frame_moved)
        ui.timeline.range_changed.connect(self._range_changed)
        ui.frame.valueChanged.connect(ui.timeline.set_frame)
        ui.prev_frame.clicked.connect(lambda: ui.timeline.step(-1))
        ui.next_frame.clicked.connect(lambda: ui.timeline.step(1))
        ui.play.toggled.connect(self._play)
        ui.timeline.play_toggled.connect(ui.play.toggle)
        ui.prev_flag.clicked.connect(lambda: self._step_flag(-1))
        ui.next_flag.clicked.connect(lambda: self._step_flag(1))
        ui.set_in.clicked.connect(lambda: ui.timeline.set_in())
        ui.set_out.clicked.connect(lambda: ui.timeline.set_out())
        ui.clear_range.clicked.connect(ui.timeline.clear_range)
        ui.preview_button.clicked.connect(lambda: looks.preview(act))
        ui.show_result.toggled.connect(lambda _: frames.show_frame(act))
        ui.open_folder.clicked.connect(self.open_result_folder)
        ui.browse.clicked.connect(self._choose_folder)
        ui.render_button.clicked.connect(lambda: act.start_render())
        ui.rerender_button.clicked.connect(act.rerender_flagged)
        ui.cancel_button.clicked.connect(act.cancel_render)
        ui.form.changed.connect(self.remember)
        ui.output.currentIndexChanged.connect(lambda _: self.remember())
        ui.folder.editingFinished.connect(self.remember)

    # -- the clip ---------------------------------------------------------------------------------
    def show_clip(self, clip: Clip | None) -> None:
        """Show `clip` (None: none): the old clip's pictures, people, result and status go;
        sources and settings stay. A clip with a known range shows it at once, others once
        their frames are counted (the "open" job)."""
        ui = self.ui
        ui.clip_label.setText(f"Clip: {clip.label}" if clip else "No clip")
        for widget in (ui.render_button, ui.preview_button, ui.people.find_button):
            widget.setEnabled(clip is not None)
        self.act.reset()
        self.assigned, self.skipped = {}, set()
        self.corrections = Corrections()
        ui.view.clear()
        ui.view.empty_text = "Opening the clip…" if clip else "Open a clip"
        ui.status.setText("")
        ui.progress.setValue(0)
        if clip is None:
            return
        ui.folder.setText(self.store.folder() or str(clip.folder))
        first, last = clip.frames or (clip.start_number, clip.start_number)
        ui.timeline.blockSignals(True)  # the "open" job shows the first frame
        self.set_review(ShotReview.empty(first, last))
        ui.timeline.set_frame(clip.preview_frame if clip.preview_frame is not None else first)
        ui.timeline.blockSignals(False)
        self.frame_moved(ui.timeline.frame, show=False)
        frames.open_clip(self.act, clip, counted=clip.frames is not None)

    def set_review(self, review: ShotReview, keep_range: bool = False) -> None:
        """Show a review of the clip (or its empty one) on the timeline and the people grid."""
        self.review = review
        ui = self.ui
        ui.frame.blockSignals(True)
        ui.frame.setRange(review.first, review.last)
        ui.frame.blockSignals(False)
        ui.timeline.set_review(review, keep_range)
        ui.people.show_people(review, self.assigned, self.skipped, self.corrections.by_person())
        ui.rerender_button.setEnabled(bool(review.flagged) and self.act.result is not None)
        self._range_changed(ui.timeline.in_point, ui.timeline.out_point)
        self._frame_flags(ui.timeline.frame)
        self.frame_boxes(ui.timeline.frame)

    # -- frames and ranges ------------------------------------------------------------------------
    def frame_moved(self, frame: int, show: bool = True) -> None:
        self.ui.frame.blockSignals(True)
        self.ui.frame.setValue(frame)
        self.ui.frame.blockSignals(False)
        self._frame_flags(frame)
        self.frame_boxes(frame)
        if show:
            frames.show_frame(self.act)

    def frame_boxes(self, frame: int) -> None:
        """Name the people on the view: each one's face box in `frame`, in their colour."""
        marks = self.review.marks.get(frame)
        boxes = [] if marks is None else [
            (pid, QColor(*person_rgb(self.review, pid)), x1, y1, x2, y2)
            for pid, x1, y1, x2, y2 in marks.boxes]
        self.ui.view.set_boxes(boxes)

    def _frame_flags(self, frame: int) -> None:
        flags = self.review.flags_at(frame)
        text = "; ".join(f"⚑ {f.person_id} {f.kind}: {f.reason}" for f in flags)
        self.ui.flag_label.setText(text)
        self.ui.flag_label.setToolTip(text.replace("; ", "\n"))

    def _play(self, on: bool) -> None:
        """Play: from the playhead (from in, when at out) to out, a frame once the last is
        shown."""
        timeline = self.ui.timeline
        if on and timeline.frame >= timeline.out_point:
            timeline.set_frame(timeline.in_point)
        self.ui.play.setText("Stop" if on else "Play")
        if on:
            self.player.start()
        else:
            self.player.stop()

    def _play_step(self) -> None:
        timeline = self.ui.timeline
        if frames.busy_showing(self.act):
            return
        if timeline.frame >= timeline.out_point:
            self.ui.play.setChecked(False)
            return
        timeline.step(1)

    def _step_flag(self, step: int) -> None:
        if not self.ui.timeline.step_flag(step):
            self.ui.log.say("No flagged frames that way" if self.review.reviewed else
                            "Find people first: the flags come with the review")

    def _range_changed(self, first: int, last: int) -> None:
        whole = self.ui.timeline.whole
        count = last - first + 1
        self.ui.range_label.setText("Render: the whole clip" if whole else
                                    f"Render: {first}-{last} ({count} frames)")

    def render_ranges(self) -> tuple[tuple[int, int], ...] | None:
        """The in..out range when it is not the whole clip, else None."""
        timeline = self.ui.timeline
        return None if timeline.whole else ((timeline.in_point, timeline.out_point),)

    # -- people -----------------------------------------------------------------------------------
    def assign_source(self, person_id: str, path: Path | None) -> None:
        """Give `person_id` their own source photo (None: the default sources again)."""
        if path is None:
            self.assigned.pop(person_id, None)
        else:
            self.assigned[person_id] = Path(path)
            self.skipped.discard(person_id)
        self._people_changed()

    def skip_person(self, person_id: str, skipped: bool) -> None:
        if skipped:
            self.skipped.add(person_id)
            self.assigned.pop(person_id, None)
        else:
            self.skipped.discard(person_id)
        self._people_changed()

    def correct_range(self, person_id: str, action: str) -> None:
        """Skip, swap or hold `person_id` over in..out only ("clear": drop their ranges)."""
        if action == "clear":
            self.corrections = self.corrections.cleared(person_id)
        else:
            timeline = self.ui.timeline
            self.corrections = self.corrections.added(person_id, action, timeline.in_point,
                                                      timeline.out_point)
            self.ui.log.say(f"{person_id}: {action} in {timeline.in_point}-{timeline.out_point}"
                            " (Render writes the frames this changes)")
        self._people_changed()

    def people_choices(self) -> dict[str, Any]:
        """RenderRequest fields of the user's people choices: assign, skip, overrides."""
        clip = self.host.clip
        folder = CacheLayout.at(self.act.settings_or_base().cache_dir).previews
        overrides = None
        if clip is not None and self.corrections.entries:
            overrides = self.corrections.write(folder, clip.input)
        return {"assign": tuple(sorted(self.assigned.items())),
                "skip": tuple(sorted(self.skipped)), "overrides": overrides}

    def _people_changed(self) -> None:
        self.ui.people.show_people(self.review, self.assigned, self.skipped,
                                   self.corrections.by_person())
        looks.replan(self.act)

    def _go_to_person(self, person_id: str) -> None:
        person = self.review.person(person_id)
        if person is not None and person.frames:
            self.ui.timeline.set_frame(person.frames[0][0])

    # -- files ------------------------------------------------------------------------------------
    def _choose_clip(self) -> None:
        name, _ = QFileDialog.getOpenFileName(self, "Clip", "", "Video (*.mov *.mp4 *.mxf *.mkv "
                                              "*.avi);;All files (*)")
        if name:
            self.open(Path(name))

    def open(self, path: Path) -> None:
        try:
            self.show_clip(self.host.open(path))
        except (FacefuseError, HostError) as exc:
            self.ui.log.say(str(exc), "ERROR")

    def _choose_sources(self) -> None:
        names, _ = QFileDialog.getOpenFileNames(self, "Source photos", "",
                                                "Images (*.png *.jpg *.jpeg *.tif *.tiff *.exr)")
        self.ui.sources.add([Path(n) for n in names])

    def _choose_person_source(self, person_id: str) -> None:
        name, _ = QFileDialog.getOpenFileName(self, f"Source photo for {person_id}", "",
                                              "Images (*.png *.jpg *.jpeg *.tif *.tiff *.exr)")
        if name:
            self.assign_source(person_id, Path(name))

    def _choose_folder(self) -> None:
        name = QFileDialog.getExistingDirectory(self, "Output folder", self.ui.folder.text())
        if name:
            self.ui.folder.setText(name)
            self.remember()

    def open_result_folder(self) -> None:
        result = self.act.result
        if result is not None:
            QDesktopServices.openUrl(QUrl.fromLocalFile(str(result.folder)))

    def closeEvent(self, event: QCloseEvent) -> None:
        """Closing stops a running render (finished frames stay) and tells the host."""
        self.remember()
        message = ""
        if self.jobs.busy("render"):
            self.jobs.cancel("render")
            self.jobs.wait("render", CANCEL_WAIT_MS * 10)
            message = "The panel was closed before the render finished: nothing placed"
        self.jobs.close()
        self.host.finish(message)
        event.accept()
