"""The Qt panel's settings that stay, its timeline on its own, and the small things: the wheel
over the settings, one name for the default selection, downloads with size and time left, a
re-render of finished frames, no display. Offscreen with pytest-qt (QSettings in a folder of
the test's own: tests/hosts/conftest.py)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from PySide6.QtCore import QPoint, QPointF, Qt
from PySide6.QtGui import QColor, QWheelEvent
from PySide6.QtWidgets import QApplication

from addon.panel import downloads, looks
from addon.panel.app import debian_package, display_problem
from addon.panel.host import FileHost
from addon.panel.review import FlagRow, FrameMarks, PersonRow, ShotReview
from addon.panel.timeline import FLAG, MARGIN_PX, PERSON_PX, ROW_PX, RULER_PX, Timeline
from addon.panel.window import PanelWindow
from tests.hosts.panel_helpers import shown_window, wait_idle
from tests.hosts.test_panel import _close_panels_soon
from tests.render_media import YUNET_NAME, face_photo, make_face_clip

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def face_clip(testdata: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_face_clip(tmp_path_factory.mktemp("settings-clip") / "plate.mp4",
                          face_photo(testdata), frames=8)


@pytest.fixture()
def clips(face_clip: Path, tmp_path: Path) -> tuple[Path, Path]:
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    return (Path(shutil.copy2(face_clip, tmp_path / "a" / "one.mp4")),
            Path(shutil.copy2(face_clip, tmp_path / "b" / "two.mp4")))


def test_settings_sources_output_and_folder_stay_and_the_command_line_wins(
        qtbot, clips, base, source: Path, tmp_path: Path):
    one, two = clips
    window = shown_window(qtbot, FileHost(one), base)
    form = window.ui.form
    form.set_value("similarity", 0.65)
    form.set_value("selector", "many")
    form.set_value("mask_regions", ("skin",))
    window.ui.sources.add([source])
    window.ui.output.setCurrentIndex(window.ui.output.findData("exr"))
    window.ui.folder.setText(str(tmp_path / "renders"))
    window.ui.folder.editingFinished.emit()
    wait_idle(qtbot, window)
    window.close()
    again = shown_window(qtbot, FileHost(two), base)  # another clip, the next day
    values = again.ui.form.values()
    assert (values["similarity"], values["selector"], values["mask_regions"]) == \
        (0.65, "many", ("skin",))
    assert values["swapper"] == base.swapper  # the command line's model, not a remembered one
    assert again.ui.sources.paths() == [source]
    assert again.ui.output.currentData() == "exr"
    assert again.ui.folder.text() == str(tmp_path / "renders")
    again.close()
    explicit = shown_window(qtbot, FileHost(two), base.__class__(**{
        **{f: getattr(base, f) for f in base.__dataclass_fields__}, "similarity": 0.2}))
    assert explicit.ui.form.values()["similarity"] == 0.2  # given on the command line: wins
    assert explicit.ui.form.values()["selector"] == "many"  # not given: remembered
    explicit.close()


def test_a_new_clip_resets_its_pictures_people_and_status_and_keeps_the_settings(
        qtbot, clips, base, source: Path):
    one, two = clips
    window = shown_window(qtbot, FileHost(one), base)
    window.ui.sources.add([source])
    window.ui.form.set_value("similarity", 0.3)
    looks.find_people(window.act)
    wait_idle(qtbot, window)
    window.ui.timeline.set_frame(3)
    looks.preview(window.act)
    wait_idle(qtbot, window)
    assert len(window.ui.people.cards) == 1 and window.ui.view.after is not None
    window.ui.status.setText("8 of 8 frames swapped")
    window.open(two)
    assert window.ui.clip_label.text() == "Clip: two.mp4"
    assert window.ui.people.cards == [] and window.ui.view.after is None
    assert window.ui.status.text() == "" and window.act.result is None
    assert window.ui.people.hint.text().startswith("Find people")
    wait_idle(qtbot, window)
    assert window.ui.view.before is not None  # the new clip's first frame, at once
    assert window.ui.timeline.frame == 1 and (window.review.first, window.review.last) == (1, 8)
    assert window.ui.sources.paths() == [source]
    assert window.ui.form.values()["similarity"] == 0.3
    window.close()


def test_the_wheel_scrolls_the_settings_instead_of_changing_the_value_under_it(
        qtbot, clips, base):
    window = shown_window(qtbot, FileHost(clips[0]), base)
    window.resize(1280, 600)
    scroll = window.ui.form_scroll
    spin = window.ui.form.controls["swapper_weight"]  # near the top of the list
    qtbot.waitUntil(lambda: scroll.verticalScrollBar().maximum() > 0)
    scroll.verticalScrollBar().setValue(0)
    before_value, before_scroll = spin.value(), scroll.verticalScrollBar().value()

    def wheel() -> None:
        centre = QPointF(spin.width() / 2, spin.height() / 2)
        event = QWheelEvent(centre, spin.mapToGlobal(centre), QPoint(0, 0), QPoint(0, -120),
                            Qt.MouseButton.NoButton, Qt.KeyboardModifier.NoModifier,
                            Qt.ScrollPhase.NoScrollPhase, False)
        QApplication.sendEvent(spin, event)
    wheel()
    assert spin.value() == before_value
    assert scroll.verticalScrollBar().value() > before_scroll  # the list scrolled instead
    window.activateWindow()
    spin.setFocus()
    qtbot.waitUntil(spin.hasFocus)
    wheel()  # clicked into: the wheel is the spin box's
    assert spin.value() != before_value
    combo = window.ui.form.controls["selector"]
    assert [combo.itemText(i) for i in range(combo.count())] == ["Main Person", "All",
                                                                  "Reference"]
    window.close()


def test_model_downloads_show_their_size_and_time_left_then_the_look_runs(
        qtbot, clips, base, monkeypatch: pytest.MonkeyPatch):
    online = base.__class__(**{**{f: getattr(base, f) for f in base.__dataclass_fields__},
                               "offline": False})
    fetched: list[str] = []
    total = 40_000_000

    def absent(settings, roles=()):
        return [] if fetched else [("swapper", "inswapper_128")]

    def fetch(settings, names, on_progress=None):
        for done in range(0, total + 1, total // 8):
            on_progress(names[0], done, total)
            time.sleep(0.08)
        fetched.extend(names)
        return [Path("/models/inswapper_128.onnx")]
    monkeypatch.setattr(downloads, "absent_models", absent)
    monkeypatch.setattr(downloads, "fetch_models", fetch)
    window = shown_window(qtbot, FileHost(clips[0]), online)
    wait_idle(qtbot, window)
    seen: list[str] = []
    window.ui.activity.valueChanged.connect(lambda _: seen.append(window.ui.activity.format()))
    looks.find_people(window.act)
    wait_idle(qtbot, window)
    assert fetched == ["inswapper_128"]
    assert any("MB" in text and "left" in text for text in seen), seen
    assert any(text.startswith("Downloading inswapper_128: 40.0 of 40.0 MB") for text in seen)
    assert len(window.ui.people.cards) == 1  # the look ran once the model was there
    assert "Downloading the models these settings need: inswapper_128" in \
        window.ui.log.toPlainText()
    window.close()


def test_a_render_of_finished_frames_says_they_were_already_rendered(qtbot, clips, base,
                                                                    source: Path):
    window = shown_window(qtbot, FileHost(clips[0]), base)
    window.ui.sources.add([source])
    window.act.start_render()
    wait_idle(qtbot, window)
    assert "8 of 8 frames swapped" in window.ui.status.text()
    window.act.start_render()
    wait_idle(qtbot, window)
    assert window.ui.status.text() == \
        "Nothing to render: all 8 frames were already rendered with these settings"
    assert "Warning" not in window.ui.log.toPlainText()
    window.close()


def _review() -> ShotReview:
    people = (PersonRow("p1", ((1001, 1020),), 20, 10.0, True, "default", "main person"),
              PersonRow("p2", ((1005, 1012),), 8, 5.0, False, None, "not the main person"))
    marks = {n: FrameMarks(1 + (1005 <= n <= 1012), ("p1",), ("missed",) if 1010 <= n <= 1012
                           else ()) for n in range(1001, 1021)}
    flags = (FlagRow("missed", 1010, 1012, "p1", "lost for 3 frames"),
             FlagRow("too_small", 1016, 1017, "p1", "upscaled 3x"))
    return ShotReview(1001, 1020, (1015,), people, marks, flags, ((1010, 1012), (1016, 1017)),
                      Path("/review"), True)


def test_the_timeline_steps_by_frame_and_flag_and_draws_the_review(qtbot, tmp_path: Path):
    timeline = Timeline()
    qtbot.addWidget(timeline)
    timeline.resize(420, timeline.height())
    timeline.show()
    timeline.set_review(_review())
    moved: list[int] = []
    ranges: list[tuple[int, int]] = []
    timeline.frame_changed.connect(moved.append)
    timeline.range_changed.connect(lambda a, b: ranges.append((a, b)))
    timeline.set_frame(1001)
    qtbot.keyClick(timeline, Qt.Key.Key_Right)
    qtbot.keyClick(timeline, Qt.Key.Key_Right, Qt.KeyboardModifier.ShiftModifier)
    assert timeline.frame == 1010
    qtbot.keyClick(timeline, Qt.Key.Key_I)
    qtbot.keyClick(timeline, Qt.Key.Key_Right, Qt.KeyboardModifier.ShiftModifier)
    qtbot.keyClick(timeline, Qt.Key.Key_O)
    assert (timeline.in_point, timeline.out_point) == (1010, 1016)
    assert not timeline.step_flag(1) and timeline.frame == 1016
    qtbot.keyClick(timeline, Qt.Key.Key_Left, Qt.KeyboardModifier.ShiftModifier)
    assert timeline.frame == 1010 and moved == [1002, 1010, 1016, 1010]
    assert ranges == [(1010, 1020), (1010, 1016)]
    timeline.set_frame(1001)
    image = timeline.grab().toImage()
    image.save(str(tmp_path / "timeline.png"))
    flags_y = RULER_PX + MARGIN_PX + ROW_PX + 8 * PERSON_PX + MARGIN_PX + ROW_PX // 2
    column = round(timeline.x_of(1011.5))
    assert image.pixelColor(column, flags_y) == FLAG  # flagged, inside in..out
    clean = image.pixelColor(round(timeline.x_of(1013.5)), flags_y)
    assert clean != FLAG
    cut = round(timeline.x_of(1015))
    assert image.pixelColor(cut, flags_y - 2) == QColor(255, 255, 255)  # the cut
    p2_y = RULER_PX + MARGIN_PX + ROW_PX + PERSON_PX + PERSON_PX // 2
    seen_only = image.pixelColor(round(timeline.x_of(1011.5)), p2_y)
    absent = image.pixelColor(round(timeline.x_of(1011.5)), p2_y + PERSON_PX)
    assert seen_only != absent  # p2 is seen (dim: not swapped) in 1005-1012


def test_facefuse_panel_takes_the_render_options(qtbot, clips, render_models: Path,
                                                 source: Path, tmp_path: Path):
    from facefuse.cli.main import main

    seen: list[PanelWindow] = []
    _close_panels_soon(qtbot, seen)
    assert main(["panel", str(clips[0]), "-s", str(source), "--detector", YUNET_NAME,
                 "--detector-score", "0.7", "--models-dir", str(render_models), "--offline",
                 "--cache-dir", str(tmp_path / "cache")]) == 0
    form = seen[-1].ui.form.values()
    assert (form["detector"], form["detector_score"]) == (YUNET_NAME, 0.7)
    assert seen[-1].ui.sources.paths() == [source]
    assert seen[-1].base.models_dir == render_models and seen[-1].base.offline


def test_without_a_display_the_panel_says_so_in_one_sentence(clips, tmp_path: Path,
                                                             monkeypatch: pytest.MonkeyPatch):
    assert display_problem({}, "darwin") is None
    assert display_problem({"QT_QPA_PLATFORM": "offscreen"}, "linux") is None
    assert "needs a display" in display_problem({}, "linux")
    # Qt names only libxcb-cursor whatever is missing; the panel names each missing library
    absent = {"libxcb-icccm.so.4", "libxcb-keysyms.so.1", "libxkbcommon-x11.so.0"}
    problem = display_problem({"DISPLAY": ":0"}, "linux", lambda name: name not in absent)
    assert problem is not None and "libxcb-cursor" not in problem
    assert "sudo apt install libxcb-icccm4 libxcb-keysyms1 libxkbcommon-x11-0" in problem
    assert display_problem({"DISPLAY": ":0"}, "linux", lambda name: True) is None
    assert display_problem({"WAYLAND_DISPLAY": "wayland-0"}, "linux", lambda name: False) is None
    assert debian_package("libX11-xcb.so.1") == "libx11-xcb1"
    env = {k: v for k, v in os.environ.items()
           if k not in ("DISPLAY", "WAYLAND_DISPLAY", "QT_QPA_PLATFORM")}
    env["PYTHONPATH"] = os.pathsep.join([str(REPO / "core"), str(REPO)])
    done = subprocess.run([sys.executable, "-m", "facefuse", "panel", str(clips[0])], env=env,
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("facefuse: error: the panel needs a display")
