"""The Qt panel (addon/panel) for real under QT_QPA_PLATFORM=offscreen with pytest-qt: sources,
face pick, preview (the split view's pixels read back), renders of short clips, cancel, the
Resolve job mode and its result file. Contract models + real YuNet (tests/conftest.py)."""

from __future__ import annotations

import dataclasses
import importlib
import json
import os
import shutil
import tempfile
import time
from pathlib import Path
from types import SimpleNamespace

import cv2
import numpy as np
import pytest
from PySide6.QtCore import QPoint, Qt, QTimer
from PySide6.QtGui import QImage
from PySide6.QtWidgets import (
    QApplication,
    QCheckBox,
    QComboBox,
    QDoubleSpinBox,
    QLineEdit,
    QSpinBox,
)

from addon.panel import looks
from addon.panel.host import FileHost, clip_from_file
from addon.panel.rendering import _progress
from addon.panel.viewer import DIVIDER_PX
from addon.panel.window import PanelWindow
from addon.resolve.panel_job import JobHost
from addon.resolve.swaps import read_result
from facefuse.config import tunable_options
from facefuse.hosting import plugins
from facefuse.shot.contract.request import PhaseProgress
from tests.hosts.panel_helpers import WAIT_MS, shown_window, wait_idle
from tests.render_media import face_photo, make_face_clip
from tests.resolve_facts import job, read_only_folder

LONG_FRAMES = 48


@pytest.fixture(scope="module")
def face_clip(testdata: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_face_clip(tmp_path_factory.mktemp("panel-clip") / "plate.mp4",
                          face_photo(testdata), frames=20)


@pytest.fixture(scope="module")
def long_clip(testdata: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_face_clip(tmp_path_factory.mktemp("panel-long") / "long.mp4",
                          face_photo(testdata), frames=LONG_FRAMES)


@pytest.fixture()
def clip(face_clip: Path, tmp_path: Path) -> Path:
    (tmp_path / "media").mkdir()
    return Path(shutil.copy2(face_clip, tmp_path / "media" / "plate.mp4"))


def _log(window: PanelWindow) -> str:
    return window.ui.log.toPlainText()


def test_every_tunable_has_a_control_that_reaches_the_render(qtbot, clip: Path, base,
                                                              source: Path):
    window = shown_window(qtbot, FileHost(clip), base)
    changed = {}
    for option in tunable_options():
        control = window.ui.form.controls[option.name]
        if option.kind == "model":
            assert isinstance(control, QLineEdit)
            control.setText(f"{option.name}.onnx")
            changed[option.name] = f"{option.name}.onnx"
        elif option.kind == "optional-model":
            control.use.setChecked(True)
            control.edit.setText("gfpgan_1.4")
            changed[option.name] = "gfpgan_1.4"
        elif option.kind == "choice":
            assert isinstance(control, QComboBox)
            other = next(c for c in option.choices if c != option.default)
            control.setCurrentIndex(control.findData(other))
            changed[option.name] = other
        elif option.kind == "choices":
            some = option.choices[:2]
            control.choose(some)
            assert control.chosen() == some
            changed[option.name] = some
        elif option.kind in ("float", "int"):
            assert isinstance(control, (QDoubleSpinBox, QSpinBox))
            value = option.maximum if option.maximum != option.default else option.minimum
            control.setValue(value)
            changed[option.name] = value
        else:
            assert isinstance(control, QCheckBox)
            control.setChecked(not option.default)
            changed[option.name] = not option.default
    window.ui.sources.add([source])
    window.act.start_render()
    assert window.last_request is not None
    rendered = window.last_request.settings
    assert {name: getattr(rendered, name) for name in changed} == changed
    assert (rendered.models_dir, rendered.offline) == (base.models_dir, True)  # kept from base
    wait_idle(qtbot, window)
    assert "Error:" in _log(window)  # those made-up models do not exist


def test_sources_get_outlined_thumbnails_and_face_counts(qtbot, clip: Path, base, source: Path,
                                                          tmp_path: Path):
    blank = tmp_path / "blank.png"
    cv2.imwrite(str(blank), np.full((120, 160, 3), 128, np.uint8))
    window = shown_window(qtbot, FileHost(clip), base)
    window.ui.sources.add([source, blank])
    wait_idle(qtbot, window)
    texts = [window.ui.sources.list.item(i).text() for i in range(2)]
    assert texts == ["astronaut.png\n1 face(s)", "blank.png\nno face"]
    assert not window.ui.sources.list.item(0).icon().isNull()


def _pixels(image: QImage, x: int, y: int) -> tuple[int, int, int]:
    colour = image.pixelColor(x, y)
    return colour.red(), colour.green(), colour.blue()


def test_preview_shows_the_original_left_and_the_swap_right_of_the_divider(
        qtbot, clip: Path, base, source: Path, tmp_path: Path):
    window = shown_window(qtbot, FileHost(clip), base)
    window.ui.sources.add([source])
    window.ui.frame.setValue(4)
    window.ui.view.set_mode("split")
    window.ui.view.set_zoom(1.0)
    looks.preview(window.act)
    wait_idle(qtbot, window)
    view = window.ui.view
    assert view.after is not None
    area = view.picture_rect()
    assert (area.width(), area.height()) == (320, 240)  # drawn 1:1
    qtbot.mousePress(view, Qt.MouseButton.LeftButton, pos=QPoint(area.left() + 238, 10))
    assert view.divider == area.left() + 238  # through the face (x 190-286)
    grabbed = view.grab().toImage()
    grabbed.save(str(tmp_path / "split.png"))
    before = view.before.toImage()
    after = view.after.toImage()
    split = view.divider - area.left()
    differs = 0
    for y in range(85, 195, 5):
        for x in range(150, 320, 3):
            if split - DIVIDER_PX <= x <= split + DIVIDER_PX:
                continue
            shown = _pixels(grabbed, area.left() + x, area.top() + y)
            expected = _pixels(before if x < split else after, x, y)
            assert shown == expected, (x, y)
            differs += x > split and _pixels(before, x, y) != expected
    assert differs > 50  # the right side really is the swapped frame


def test_render_of_a_short_testdata_clip_writes_every_frame(qtbot, base, source: Path,
                                                            testdata: Path, tmp_path: Path):
    footage = tmp_path / "asl_yes.mp4"
    shutil.copy2(testdata / "media" / "asl_yes.mp4", footage)
    host = FileHost(footage)
    host.clip = dataclasses.replace(clip_from_file(footage), frames=(1, 8))
    window = shown_window(qtbot, host, base)
    window.ui.sources.add([source])
    window.act.start_render()
    wait_idle(qtbot, window)
    written = sorted((tmp_path / "facefuse").glob("asl_yes.*.png"))
    assert [p.name for p in written] == [f"asl_yes.{n:04d}.png" for n in range(1, 9)]
    assert all(cv2.imread(str(p)).shape == (480, 640, 3) for p in written)
    assert window.ui.progress.value() == window.ui.progress.maximum() == 8
    assert "8 of 8 frames swapped" in _log(window)


def _finished_frames(folder: Path) -> list[Path]:
    return sorted(folder.glob("*.png"))


@pytest.fixture()
def fast_folder(tmp_path: Path):
    """A folder on a RAM disk where there is one (/dev/shm), else under tmp_path: every frame
    is fsync-ed when written, and on a busy shared disk one fsync alone can take longer than the
    second the cancel test allows the worker."""
    shm = Path("/dev/shm")
    if not (shm.is_dir() and os.access(shm, os.W_OK)):
        yield tmp_path / "out"
        return
    folder = Path(tempfile.mkdtemp(prefix="facefuse-panel-", dir=shm))
    yield folder / "out"
    shutil.rmtree(folder, ignore_errors=True)


def test_cancel_stops_within_a_second_and_leaves_only_whole_frames(qtbot, base, source: Path,
                                                                   long_clip: Path,
                                                                   fast_folder: Path):
    window = shown_window(qtbot, FileHost(long_clip), base)
    window.ui.sources.add([source])
    window.ui.folder.setText(str(fast_folder))
    window.act.start_render()
    qtbot.waitUntil(lambda: window.ui.progress.value() >= 3 and "swap" in window.ui.status.text(),
                    timeout=WAIT_MS)
    pressed = time.monotonic()
    qtbot.mouseClick(window.ui.cancel_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: not window.jobs.busy("render"), timeout=5000)
    assert time.monotonic() - pressed < 1.0
    folder = fast_folder
    left = sorted(p.name for p in folder.iterdir())
    frames = _finished_frames(folder)
    assert left == [p.name for p in frames], "a temporary or partial file stayed"
    assert 3 <= len(frames) < LONG_FRAMES
    assert all(cv2.imread(str(p)) is not None for p in frames)
    assert "stopped before the end" in _log(window)


def _job_file(tmp_path: Path, data: dict) -> Path:
    path = tmp_path / "job.json"
    path.write_text(json.dumps(data))
    return path


def test_in_resolve_the_render_is_placed_at_the_items_record_frame(qtbot, clip: Path, base,
                                                                   source: Path, tmp_path: Path):
    result = tmp_path / "result.json"
    host = JobHost(_job_file(tmp_path, job(clip)), result)
    window = shown_window(qtbot, host, base)
    frame = window.ui.frame
    assert frame.value() == 6 and (frame.minimum(), frame.maximum()) == (4, 13)
    assert "plate.mp4 (V1, Timeline 1)" in window.ui.clip_label.text()
    window.ui.sources.add([source])
    window.act.start_render()
    wait_idle(qtbot, window)
    assert len(window.ui.people.cards) == 1  # the people of the item, found at once
    assert "DaVinci Resolve Studio 19.1.3: plate.mp4" in _log(window)
    window.grab().save(str(tmp_path / "panel.png"))
    window.close()
    placement, message = read_result(result)
    assert placement is not None and placement.record_frame == 86448 and placement.track == 2
    assert sorted(p.name for p in (clip.parent / "facefuse").glob("*.png")) == \
        [f"plate_v001.{n:04d}.png" for n in range(4, 14)]
    assert "Swapped 10 of 10 frames" in message


def test_in_resolve_closing_before_the_render_ends_places_nothing(qtbot, base, source: Path,
                                                                  long_clip: Path,
                                                                  tmp_path: Path):
    (tmp_path / "media").mkdir()
    footage = Path(shutil.copy2(long_clip, tmp_path / "media" / "long.mp4"))
    result = tmp_path / "result.json"
    data = job(footage, frames=LONG_FRAMES, duration=LONG_FRAMES - 4, left_offset=2,
               name="long.mp4")
    window = shown_window(qtbot, JobHost(_job_file(tmp_path, data), result), base)
    window.ui.sources.add([source])
    window.act.start_render()
    qtbot.waitUntil(lambda: window.ui.progress.value() >= 2 and "swap" in window.ui.status.text(),
                    timeout=WAIT_MS)
    window.close()
    placement, message = read_result(result)
    assert placement is None and "closed before the render finished" in message


def test_in_resolve_bad_items_are_said_and_the_panel_still_opens_on_files(qtbot, base, clip,
                                                                          tmp_path: Path):
    result = tmp_path / "result.json"
    window = shown_window(qtbot, JobHost(_job_file(tmp_path, {**job(clip), "item": None}), result),
                     base)
    assert "Error: No clip under the playhead" in _log(window)
    assert not window.ui.render_button.isEnabled()
    window.show_clip(window.host.open(clip))
    assert window.ui.render_button.isEnabled()
    window.close()
    placement, message = read_result(result)
    assert placement is None and "No clip under the playhead" in message


def test_in_resolve_a_clip_without_faces_or_a_read_only_folder_places_nothing(
        qtbot, base, source: Path, testdata: Path, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch):
    (tmp_path / "media").mkdir()
    faceless = make_face_clip(tmp_path / "media" / "empty.mp4", face_photo(testdata), frames=6,
                              without_face=range(6))
    result = tmp_path / "result.json"
    data = job(faceless, frames=6, duration=4, left_offset=1, name="empty.mp4")
    window = shown_window(qtbot, JobHost(_job_file(tmp_path, data), result), base)
    window.ui.sources.add([source])
    window.act.start_render()
    wait_idle(qtbot, window)
    assert "No face was swapped in 'empty.mp4'" in _log(window)
    read_only_folder(monkeypatch, tmp_path / "media")
    window.ui.folder.setText(str(tmp_path / "media" / "facefuse-2"))
    window.act.start_render()
    assert "not writable" in _log(window) and "read-only" in _log(window)
    window.close()
    placement, message = read_result(result)
    assert placement is None and "nothing placed" in message


def test_without_pyside_the_launcher_still_gets_a_result(tmp_path: Path, clip: Path,
                                                         monkeypatch: pytest.MonkeyPatch,
                                                         capsys: pytest.CaptureFixture[str]):
    from facefuse.cli.main import main

    real = importlib.import_module

    def missing(name: str, package: str | None = None):  # the panel's Qt is missing
        if name.startswith(("facefuse_panel", "addon.panel")):
            raise ModuleNotFoundError("No module named 'PySide6'", name="PySide6")
        return real(name, package)

    monkeypatch.setattr(plugins.importlib, "import_module", missing)
    result = tmp_path / "result.json"
    code = main(["resolve", "open", "--job", str(_job_file(tmp_path, job(clip))),
                 "--result", str(result)])
    assert code == 2 and "pip install 'facefuse[panel]'" in capsys.readouterr().err
    placement, message = read_result(result)
    assert placement is None and "needs PySide6" in message
    assert main(["panel", str(clip)]) == 2


def _close_panels_soon(qtbot, seen: list[PanelWindow]) -> None:
    """Close the panel a command opens once it is shown (the command blocks until then)."""
    def close() -> None:
        panels = [w for w in QApplication.topLevelWidgets()
                  if isinstance(w, PanelWindow) and w.isVisible()]
        if not panels:
            QTimer.singleShot(50, close)
            return
        seen.extend(panels)
        for panel in panels:
            panel.close()
    QTimer.singleShot(50, close)


def test_the_commands_open_the_panel_and_return_when_it_closes(qtbot, clip: Path,
                                                               tmp_path: Path):
    from facefuse.cli.main import main

    seen: list[PanelWindow] = []
    result = tmp_path / "result.json"
    _close_panels_soon(qtbot, seen)
    assert main(["resolve", "open", "--job", str(_job_file(tmp_path, job(clip))),
                 "--result", str(result)]) == 2  # closed without a render: nothing placed
    assert seen and "plate.mp4 (V1" in seen[0].ui.clip_label.text()
    placement, message = read_result(result)
    assert placement is None and message.startswith("The panel was closed before a render")
    _close_panels_soon(qtbot, seen)
    assert main(["panel", str(clip)]) == 0
    assert seen[-1].ui.clip_label.text() == "Clip: plate.mp4"
    assert main(["panel", str(tmp_path / "missing.mp4")]) == 2


def test_settings_the_engine_refuses_are_said_in_the_log_for_every_look(qtbot, clip: Path, base,
                                                                         source: Path):
    """The form allows unticking every mask region; Settings refuses that. Preview, Find people
    and Render say so in the log (no exception leaves the slot, no job starts)."""
    window = shown_window(qtbot, FileHost(clip), base)
    window.ui.sources.add([source])
    wait_idle(qtbot, window)
    window.ui.form.controls["mask_regions"].choose(())
    looks.preview(window.act)
    looks.find_people(window.act)
    window.act.start_render()
    assert _log(window).count("must name at least one") == 3
    window.ui.sources.add([source.parent / "obama.jpg"])  # thumbnails: said, not raised
    window.ui.timeline.set_frame(3)  # the frames still show
    wait_idle(qtbot, window)
    assert _log(window).count("must name at least one") == 4
    assert window.ui.view.before is not None


def test_the_bar_follows_the_swap_while_the_analysis_runs_beside_it(qtbot, base, clip: Path):
    """selector many: analysis and swap progress arrive interleaved; the bar never jumps back."""
    window = shown_window(qtbot, FileHost(clip), base)
    job = SimpleNamespace(total=0, done=0, status="")
    values = []
    steps = [PhaseProgress("analysis", n, 40) for n in range(20)]
    for n in range(20, 41):
        steps += [PhaseProgress("analysis", n, 40), PhaseProgress("swap", n - 19, 40)]
    steps += [PhaseProgress("swap", n, 40) for n in range(22, 41)]
    for step in steps:
        _progress(window.act, job, step)
        values.append((job.status, window.ui.progress.value()))
    swapping = values[[s for s, _ in values].index("swap"):]
    assert all(status == "swap" for status, _ in swapping)
    assert [v for _, v in swapping] == sorted(v for _, v in swapping)
    status = window.ui.status.text()
    assert status.startswith("swap: 40/40") and "analysis" not in status
    _progress(window.act, job, PhaseProgress("analysis", 39, 40))
    assert window.ui.status.text().endswith("· analysis 39/40")
