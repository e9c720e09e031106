"""The panel window: wires the widgets (layout.py) to a host (host.py) and to engine jobs
(worker.py, actions.py, frames.py, looks.py).

An artist's path through it: open a clip (its first frame and the timeline at once), scrub
(each frame as decoded, then its swap made in the background: live.py; zoom onto a face),
Find people (the review: the shot's people, their presence, flags and cuts on the timeline;
analysing with progress the first time), give people their own source or skip them (and
their consent records), set in/out, Preview (the render's pixels for the frame), Render, step
through the result beside the original, Re-render flagged. The UI thread only builds
requests, starts jobs and shows what they hand back; every picture comes from facefuse.
"""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QTimer
from PySide6.QtGui import QCloseEvent, QColor, QResizeEvent
from PySide6.QtWidgets import QMainWindow

from facefuse import (
    CacheLayout,
    FacefuseError,
    HostError,
    PlanChoices,
    RenderRequest,
    Settings,
    parse_person,
    tunable_options,
)

from . import consent, dialogs, frames, looks, session
from .actions import Actions
from .corrections import Corrections
from .host import OPEN_HINT, Clip, Host
from .layout import PanelLayout
from .review import ShotReview, person_rgb
from .store import PanelStore
from .worker import Jobs

CANCEL_WAIT_MS = 1000
PLAY_MS = 40  # how often Play looks whether the shown frame is done, to step on
DEFAULTS = Settings()


class PanelWindow(QMainWindow):
    """One clip's swap. host: a Host (FileHost, or the Resolve host's JobHost); base: the
    Settings the panel starts from (the command line's); given: the fields of it the command
    line gave, which win over the remembered ones (None: those that differ from the
    defaults). store: where settings and sessions are remembered."""

    def __init__(self, host: Host, base: Settings | None = None, jobs: Jobs | None = None,
                 store: PanelStore | None = None, given: frozenset[str] | None = None) -> None:
        super().__init__()
        self.host, self.base, self.given = host, base or Settings(), given
        self.store = store or PanelStore()
        self.jobs = jobs or Jobs(parent=self)
        self.setWindowTitle("facefuse")
        self.ui = PanelLayout(self, self.base)
        self.act = Actions(self)
        self.jobs.finished.connect(self.act.job_finished)
        self.review = ShotReview.empty(1, 1)
        self.assigned: dict[str, Path] = {}
        self.skipped: set[str] = set()
        self.consent: dict[str, Path] = {}  # person -> consent record (consent.py)
        self.corrections = Corrections()
        self.last_request: RenderRequest | None = None
        self.to_restore = session.Pending()
        self.player = QTimer(self)
        self.player.setInterval(PLAY_MS)
        self.player.timeout.connect(self._play_step)
        self.restoring = True
        self._connect()
        self._restore()
        self.restoring = False
        self.show_clip(host.clip)
        if host.problem:  # no clip yet is a start, not an error
            self.ui.log.say(host.problem, "INFO" if host.problem == OPEN_HINT else "ERROR")
        if host.clip is not None and host.clip.note:  # e.g. from Resolve: the people at once
            self.ui.log.say(host.clip.note)
            QTimer.singleShot(0, lambda: looks.find_people(self.act))

    # -- remembered settings ----------------------------------------------------------------------
    def _restore(self) -> None:
        keep = self.given if self.given is not None else frozenset(
            o.name for o in tunable_options()
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
        """Save the form, the sources, the output kind, a chosen folder and the shot's
        session."""
        if self.restoring:
            return
        session.save(self)
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
        ui.open_button.clicked.connect(lambda: dialogs.choose_clip(self))
        ui.sources.add_requested.connect(lambda: dialogs.choose_sources(self))
        ui.sources.changed.connect(lambda paths: looks.sources_changed(act, paths))
        ui.sources.changed.connect(lambda _: frames.show_frame(act))  # the live swap
        ui.people.find_requested.connect(lambda: looks.find_people(act))
        ui.people.source_requested.connect(lambda pid: dialogs.choose_person_source(self, pid))
        ui.people.source_cleared.connect(lambda pid: self.assign_source(pid, None))
        ui.people.skip_toggled.connect(self.skip_person)
        ui.people.person_clicked.connect(self._go_to_person)
        ui.people.range_action.connect(self.correct_range)
        ui.people.consent_requested.connect(lambda pid: consent.choose(act, pid))
        ui.people.consent_cleared.connect(lambda pid: consent.attach(act, pid, None))
        ui.policy.changed.connect(self.remember)
        ui.policy.changed.connect(lambda: frames.show_frame(act))  # the live swap under it
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
        ui.preview_button.clicked.connect(lambda: frames.preview(act))
        ui.view.mode_changed.connect(lambda mode: frames.mode_changed(act, mode))
        ui.show_result.toggled.connect(lambda _: frames.show_frame(act))
        ui.open_folder.clicked.connect(lambda: dialogs.open_result_folder(self))
        ui.open_report.clicked.connect(lambda: dialogs.open_review_page(self))
        ui.browse.clicked.connect(lambda: dialogs.choose_folder(self))
        ui.render_button.clicked.connect(lambda: act.start_render())
        ui.rerender_button.clicked.connect(act.rerender_flagged)
        ui.cancel_button.clicked.connect(act.cancel_render)
        ui.form.changed.connect(self.remember)
        ui.form.changed.connect(lambda: frames.show_frame(act))  # the live swap of them
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
        self.assigned, self.skipped, self.consent = {}, set(), {}
        self.corrections = Corrections()
        self.to_restore = session.Pending()
        ui.view.clear()
        ui.view.empty_text = "Opening the clip…" if clip else "Open a clip"
        ui.status.setText("")
        ui.progress.setValue(0)
        if clip is None:
            return
        ui.folder.setText(self.store.folder() or str(clip.folder))
        session.restore(self, clip)
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
        self.show_people()
        ui.rerender_button.setEnabled(bool(review.flagged) and self.act.result is not None)
        ui.open_report.setEnabled(review.page is not None and review.page.is_file())
        self._range_changed(ui.timeline.in_point, ui.timeline.out_point)
        self._frame_flags(ui.timeline.frame)
        self.frame_boxes(ui.timeline.frame)
        session.when_shown(self)

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
        """The flags at `frame` in words under the timeline: each with its reason where that
        fits the label's two lines, else each flag's kind alone (the tooltip has the reasons)."""
        rows = [("⚑", f) for f in self.review.flags_at(frame)] + \
            [("✓", f) for f in self.review.fixed_at(frame)]
        full = "; ".join(f"{mark} {_who(f.person_id)}{f.kind}: {f.reason}" for mark, f in rows)
        label = self.ui.flag_label
        label.setText(full)
        if rows and label.heightForWidth(max(1, label.width())) > label.height():
            label.setText("; ".join(f"{mark} {_who(f.person_id)}{f.kind}" for mark, f in rows)
                          + " (hover for why)")
        label.setToolTip(full.replace("; ", "\n"))

    def resizeEvent(self, event: QResizeEvent) -> None:
        super().resizeEvent(event)
        self._frame_flags(self.ui.timeline.frame)  # the words that fit the new width

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
        self.remember()

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

    def people_choices(self) -> PlanChoices:
        """The user's people choices as a request's plan choices: assign, skip, overrides."""
        clip = self.host.clip
        folder = CacheLayout.at(self.act.settings_or_base().cache_dir).previews
        overrides = None
        if clip is not None and self.corrections.entries:
            overrides = self.corrections.write(folder, clip.input)
        return PlanChoices(
            assign=tuple((parse_person(person), path)
                         for person, path in sorted(self.assigned.items())),
            skip=tuple(parse_person(person) for person in sorted(self.skipped)),
            overrides=overrides)

    def show_people(self) -> None:
        self.ui.people.show_people(self.review, self.assigned, self.skipped,
                                   self.corrections.by_person(), consent.card_words(self.consent))

    def _people_changed(self) -> None:
        self.show_people()
        self.remember()
        looks.replan(self.act)
        frames.show_frame(self.act)  # the live swap of the new choices

    def _go_to_person(self, person_id: str) -> None:
        person = self.review.person(person_id)
        if person is not None and person.frames:
            self.ui.timeline.set_frame(person.frames[0][0])

    def open(self, path: Path) -> None:
        try:
            self.show_clip(self.host.open(path))
        except (FacefuseError, HostError) as exc:
            self.ui.log.say(str(exc), "ERROR")

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


def _who(person_id: str) -> str:
    """A flag's person before its kind ("p1 "), nothing for a flag of the frames themselves."""
    return f"{person_id} " if person_id else ""
