"""The Qt panel around a day's work: a clip opened right after a render, a refused clip that
leaves no busy bar, the clip dialog (video and image formats, a pattern typed), a frame of a
plate picked for its sequence, the command line's options given equal to their defaults,
corrections that are not failures, the offline models in one line, and no text cut off at
1280x720. Offscreen with pytest-qt."""

from __future__ import annotations

import dataclasses
import shutil
from pathlib import Path

import cv2
import numpy as np
import pytest
from PySide6.QtWidgets import QAbstractButton, QFileDialog, QLabel

from addon.panel import dialogs
from addon.panel.host import FileHost
from addon.panel.window import PanelWindow
from tests.hosts.panel_helpers import shown_window, wait_idle
from tests.hosts.test_panel import _close_panels_soon
from tests.hosts.test_panel_session import FIRST, pair  # noqa: F401 - the fixture
from tests.render_media import face_photo, make_face_clip


@pytest.fixture(scope="module")
def face_clip(testdata: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_face_clip(tmp_path_factory.mktemp("day-clip") / "plate.mp4",
                          face_photo(testdata), frames=8)


@pytest.fixture()
def clips(face_clip: Path, tmp_path: Path) -> tuple[Path, Path]:
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    return (Path(shutil.copy2(face_clip, tmp_path / "a" / "one.mp4")),
            Path(shutil.copy2(face_clip, tmp_path / "b" / "two.mp4")))


def _log(window: PanelWindow) -> str:
    return window.ui.log.toPlainText()


def test_a_clip_opened_right_after_a_render_opens(qtbot, clips, base, source: Path):
    one, two = clips
    window = shown_window(qtbot, FileHost(one), base)
    window.ui.sources.add([source])
    window.act.start_render()
    qtbot.waitUntil(lambda: not window.jobs.busy("render"), timeout=60000)
    window.jobs.drain()  # the render's end shows its result's frame: a frame job runs
    window.open(two)
    wait_idle(qtbot, window)
    assert "still running" not in _log(window), _log(window)
    assert window.ui.clip_label.text() == "Clip: two.mp4"
    assert (window.review.first, window.review.last) == (1, 8)
    assert window.ui.view.before is not None and not window.ui.activity.isEnabled()
    window.close()


def test_a_refused_clip_leaves_no_busy_bar(qtbot, clips, base, tmp_path: Path):
    still = tmp_path / "still.png"  # one picture, no frame number: not a clip
    cv2.imwrite(str(still), np.zeros((32, 48, 3), np.uint8))
    window = shown_window(qtbot, FileHost(clips[0]), base)
    wait_idle(qtbot, window)
    window.open(still)
    wait_idle(qtbot, window)
    assert "Error" in _log(window)
    assert not window.ui.activity.isEnabled() and window.ui.activity.maximum() == 1
    window.close()


def test_the_clip_dialog_lists_video_and_image_formats_and_takes_a_typed_pattern(
        qtbot, clips, base):
    window = shown_window(qtbot, FileHost(clips[0]), base)
    dialog = dialogs.clip_dialog(window)
    filters = " ".join(dialog.nameFilters())
    assert all(f"*.{kind}" in filters for kind in ("mov", "mp4", "mxf", "exr", "dpx", "png",
                                                     "tif", "jpg"))
    assert dialog.fileMode() == QFileDialog.FileMode.AnyFile  # a pattern can be typed
    window.close()


def test_one_frame_of_a_plate_opens_its_sequence(qtbot, pair: Path, base):  # noqa: F811
    window = shown_window(qtbot, FileHost(None), base)
    window.open(pair / f"pair.{FIRST + 2}.png")
    wait_idle(qtbot, window)
    assert window.host.clip is not None and window.host.clip.input == str(pair / "pair.####.png")
    assert (window.review.first, window.review.last) == (FIRST, FIRST + 8)
    assert window.ui.timeline.frame == FIRST + 2  # the frame picked
    assert _log(window).splitlines()[1:] == [f"pair.####.png: 9 frames ({FIRST}-{FIRST + 8})"]
    window.close()


def test_command_line_options_given_equal_to_their_default_win(qtbot, clips, base,
                                                              render_models: Path,
                                                              tmp_path: Path):
    from facefuse.cli.main import main

    window = shown_window(qtbot, FileHost(clips[0]), base)
    window.ui.form.set_value("detector_score", 0.8)  # remembered
    window.ui.form.set_value("similarity", 0.3)
    window.close()
    seen: list[PanelWindow] = []
    _close_panels_soon(qtbot, seen)
    default_score = dataclasses.replace(base).__class__().detector_score
    assert main(["panel", str(clips[0]), "--detector-score", str(default_score),
                 "--models-dir", str(render_models), "--offline",
                 "--cache-dir", str(tmp_path / "cache")]) == 0
    form = seen[-1].ui.form.values()
    assert form["detector_score"] == default_score  # given: wins, though it is the default
    assert form["similarity"] == 0.3  # not given: remembered


def test_corrections_that_leave_every_face_are_not_a_failure(qtbot, pair: Path,  # noqa: F811
                                                            base, source: Path,
                                                            tmp_path: Path):
    from addon.panel import looks

    window = shown_window(qtbot, FileHost(pair / "pair.####.png"),
                          dataclasses.replace(base, selector="many"))
    window.ui.sources.replace([source])
    window.ui.folder.setText(str(tmp_path / "out"))
    looks.find_people(window.act)
    wait_idle(qtbot, window)
    window.skip_person("p1", True)
    window.skip_person("p2", True)
    wait_idle(qtbot, window)
    window.act.start_render()
    wait_idle(qtbot, window)
    assert window.ui.status.text() == \
        "0 of 9 frames swapped, 9 left as they are by your corrections", _log(window)
    said = [line for line in _log(window).splitlines() if "frames swapped" in line]
    assert said == ["0 of 9 frames swapped, 9 left as they are by your corrections"], said
    window.close()


def _cut(widget) -> str | None:
    """Why `widget`'s text does not show whole (None: it does)."""
    text = widget.text()
    if not text or not widget.isVisible() or text.startswith("<"):
        return None
    if isinstance(widget, QLabel) and widget.wordWrap():
        needed = widget.heightForWidth(widget.width())
        return None if needed <= widget.height() else f"{needed} px tall in {widget.height()}"
    needed = widget.sizeHint().width() if isinstance(widget, QLabel) else \
        widget.fontMetrics().horizontalAdvance(text) + 6  # a button's sizeHint is 80 px at least
    return None if needed <= widget.width() else f"{needed} px wide in {widget.width()}"


def test_no_text_is_cut_off_at_1280x720(qtbot, pair: Path, base, source: Path,  # noqa: F811
                                        testdata: Path):
    from addon.panel import looks

    window = shown_window(qtbot, FileHost(pair / "pair.####.png"),
                          dataclasses.replace(base, selector="many"))
    window.resize(1280, 720)
    window.ui.sources.replace([source])
    looks.find_people(window.act)
    wait_idle(qtbot, window)
    away = window.review.flags[0].person_id
    other = next(p.person_id for p in window.review.people if p.person_id != away)
    window.assign_source(other, testdata / "media" / "astronaut.png")
    for first, last in ((1001, 1002), (1004, 1005), (1008, 1009)):
        window.corrections = window.corrections.added(away, "swap", first, last)
    window.ui.timeline.set_frame(window.review.flags[0].first)
    window.ui.status.setText("0 of 9 frames swapped, 9 left as they are by your corrections")
    wait_idle(qtbot, window)
    window.set_review(window.review)  # the cards with the corrections
    qtbot.wait(50)
    assert window.width() == 1280
    cut = {f"{type(w).__name__} {w.text()!r}": why
           for w in window.findChildren(QLabel) + window.findChildren(QAbstractButton)
           if (why := _cut(w)) is not None}
    assert cut == {}, "\n".join(f"{k}: {v}" for k, v in cut.items())
    timeline = window.ui.timeline
    for frame, _, left in timeline.ruler_labels():
        assert 0 <= left and left + timeline.fontMetrics().horizontalAdvance(str(frame)) \
            <= timeline.width(), frame
    assert timeline.ruler_labels()[-1][0] >= window.review.last - 2  # the end is numbered
    window.close()


def test_offline_missing_models_are_one_line_with_their_sizes(qtbot, clips, base,
                                                             tmp_path: Path):
    from addon.panel import looks

    empty = tmp_path / "no-models"
    empty.mkdir()
    offline = dataclasses.replace(base, models_dir=empty, swapper="inswapper_128",
                                  recogniser="arcface_w600k_r50", offline=True)
    window = shown_window(qtbot, FileHost(clips[0]), offline)
    wait_idle(qtbot, window)
    looks.find_people(window.act)
    wait_idle(qtbot, window)
    errors = [line for line in _log(window).splitlines() if line.startswith("Error")]
    assert len(errors) == 1, errors
    line = errors[0]
    assert "Online Access" not in line and "without --offline" in line
    assert all(f"{name} (" in line for name in ("yunet_2023mar", "arcface_w600k_r50",
                                                 "inswapper_128")), line
    assert " MB" in line and str(empty) in line
    window.close()
