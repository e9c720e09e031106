"""The Qt panel's viewer, offscreen with pytest-qt: scrubbing shows the swap (preview_frame's
pixels, no button pressed), the newest frame wins over a swap that was running, a cached frame
shows at once without a job, a missing model is named and never downloaded by a scrub, and the
modes and zooms change what is drawn (pixels of the view's grab read back).

Real YuNet, the contract recogniser and the colour contract swapper (tests/hosts/conftest.py)."""

from __future__ import annotations

import dataclasses
import threading
from pathlib import Path

import cv2
import numpy as np
import pytest
from PySide6.QtCore import QPoint, QPointF, Qt
from PySide6.QtGui import QColor, QImage

from addon.panel import downloads, live
from addon.panel.host import FileHost
from addon.panel.viewer import DIVIDER_PX
from facefuse import preview_frame
from tests.hosts.panel_helpers import shown_window, wait_idle
from tests.render_media import FACE_SIZE, FACE_XY, face_photo, make_face_clip

SWAP_MS = 30000
FACE_CENTRE = (FACE_XY[0] + FACE_SIZE[0] // 2, FACE_XY[1] + FACE_SIZE[1] // 2)


@pytest.fixture(scope="module")
def face_clip(testdata: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_face_clip(tmp_path_factory.mktemp("viewer-clip") / "plate.mp4",
                          face_photo(testdata), frames=12)


def _rgb(image: QImage, x: int, y: int) -> tuple[int, int, int]:
    colour = image.pixelColor(x, y)
    return colour.red(), colour.green(), colour.blue()


def _swapped(window, frame: int) -> bool:
    view = window.ui.view
    return view.after is not None and view.after_frame == frame


def _opened(qtbot, face_clip: Path, base, source: Path):
    window = shown_window(qtbot, FileHost(face_clip), base)
    window.ui.sources.add([source])
    qtbot.waitUntil(lambda: window.ui.timeline.review.last == 12, timeout=SWAP_MS)  # counted
    return window


def test_scrubbing_shows_the_swap_without_a_button_and_it_is_preview_frames_pixels(
        qtbot, face_clip: Path, base, source: Path, tmp_path: Path):
    window = _opened(qtbot, face_clip, base, source)
    view = window.ui.view
    assert view.mode == "result"
    for frame in (2, 3, 4, 7):  # a drag across the timeline, stopping at 7
        window.ui.timeline.set_frame(frame)
    qtbot.waitUntil(lambda: _swapped(window, 7), timeout=SWAP_MS)
    expected = cv2.imread(str(preview_frame(window.act.request(), 7, out_dir=tmp_path)))
    shown = view.after.toImage().convertToFormat(QImage.Format.Format_RGB888)
    pixels = np.frombuffer(shown.constBits(), np.uint8).reshape(
        shown.height(), shown.bytesPerLine())[:, :shown.width() * 3]
    assert np.array_equal(pixels.reshape(shown.height(), shown.width(), 3)[..., ::-1], expected)
    view.set_zoom(1.0)
    qtbot.wait(50)
    grabbed = view.grab().toImage()
    area = view.picture_rect()
    x, y = FACE_CENTRE
    assert _rgb(grabbed, area.left() + x, area.top() + y) == _rgb(shown, x, y)
    assert _rgb(shown, x, y) != _rgb(view.before.toImage(), x, y)  # the face is swapped
    assert "Error" not in window.ui.log.toPlainText()


def test_the_newest_frame_wins_and_a_stale_swap_is_never_shown(
        qtbot, face_clip: Path, base, source: Path, monkeypatch: pytest.MonkeyPatch):
    release = threading.Event()
    swapped: list[int] = []

    def slow_preview(request, frame, pipeline=None, out_dir=None, on_phase=None):
        swapped.append(frame)
        if frame == 3:
            assert release.wait(SWAP_MS / 1000)
        return preview_frame(request, frame, pipeline, out_dir, on_phase)
    monkeypatch.setattr(live, "preview_frame", slow_preview)
    window = _opened(qtbot, face_clip, base, source)
    view, timeline = window.ui.view, window.ui.timeline
    wait_idle(qtbot, window)  # the first frame's swap (and the shot's plan) done
    timeline.set_frame(3)
    qtbot.waitUntil(lambda: swapped[-1:] == [3], timeout=SWAP_MS)
    for frame in (4, 5, 6, 9):  # while the swap of 3 runs
        timeline.set_frame(frame)
    # the original under the playhead still comes (the frame job is not held up by the swap)
    qtbot.waitUntil(lambda: view.before_frame == 9, timeout=SWAP_MS)
    assert view.after is None and "Swapping frame 9" in view.note
    release.set()
    qtbot.waitUntil(lambda: _swapped(window, 9), timeout=SWAP_MS)
    assert swapped == [1, 3, 9]  # 4, 5, 6 were left before their swap started
    assert 3 not in view.painted  # finished after 9 was asked for: kept, never drawn
    timeline.set_frame(3)
    assert _swapped(window, 3)  # from the cache, at once


def test_a_cached_frame_shows_at_once_without_a_job(qtbot, face_clip: Path, base,
                                                      source: Path):
    window = _opened(qtbot, face_clip, base, source)
    timeline = window.ui.timeline
    for frame in (5, 8):
        timeline.set_frame(frame)
        qtbot.waitUntil(lambda f=frame: _swapped(window, f), timeout=SWAP_MS)
    wait_idle(qtbot, window)
    before = window.ui.view.before.toImage()
    timeline.set_frame(5)
    view = window.ui.view
    assert not window.jobs.runner.jobs  # no frame job, no swap job
    assert (view.before_frame, view.after_frame) == (5, 5)
    assert view.before.toImage() != before  # the original of frame 5, not of 8
    qtbot.wait(30)
    assert 5 in view.painted


def test_without_the_models_a_scrub_names_them_and_downloads_nothing(
        qtbot, face_clip: Path, base, source: Path, monkeypatch: pytest.MonkeyPatch):
    fetched: list[object] = []
    monkeypatch.setattr(downloads, "fetch_models", lambda *a, **k: fetched.append(a) or [])
    online = dataclasses.replace(base, swapper="inswapper_128", offline=False)
    window = _opened(qtbot, face_clip, online, source)
    for frame in (2, 3, 4):
        window.ui.timeline.set_frame(frame)
    wait_idle(qtbot, window)
    view = window.ui.view
    assert "inswapper_128 not on this computer" in view.note
    assert fetched == [] and view.after is None
    assert not any(job.kind == "download" for job in window.jobs.runner.jobs)


def test_the_modes_and_zooms_change_what_is_drawn(qtbot, face_clip: Path, base, source: Path):
    window = _opened(qtbot, face_clip, base, source)
    window.activateWindow()  # the keys are the window's shortcuts
    qtbot.waitUntil(window.isActiveWindow)
    view = window.ui.view
    window.ui.timeline.set_frame(6)
    qtbot.waitUntil(lambda: _swapped(window, 6), timeout=SWAP_MS)
    wait_idle(qtbot, window)
    before, after = view.before.toImage(), view.after.toImage()
    x, y = FACE_CENTRE
    assert _rgb(before, x, y) != _rgb(after, x, y)

    def drawn(px: int, py: int) -> tuple[int, int, int]:
        """The grab's pixel showing picture pixel (px, py), at the present zoom."""
        qtbot.wait(10)
        area, scale = view.picture_rect(), view.scale()
        return _rgb(view.grab().toImage(), area.left() + int((px + 0.5) * scale),
                    area.top() + int((py + 0.5) * scale))
    fit = min(view.width() / 320, view.height() / 240)
    assert view.zoom is None and view.scale() == pytest.approx(fit)  # Fit: the whole frame
    area = view.picture_rect()
    assert round(fit * 320) - 1 <= area.width() <= round(fit * 320) + 1
    assert area.height() <= view.height() and area.width() <= view.width()
    qtbot.keyClick(window, Qt.Key.Key_1)
    assert view.picture_rect().size().toTuple() == (320, 240)
    assert drawn(x, y) == _rgb(after, x, y)  # Result
    qtbot.keyClick(window, Qt.Key.Key_Backslash)
    assert view.mode == "original" and drawn(x, y) == _rgb(before, x, y)
    qtbot.keyClick(window, Qt.Key.Key_Y)
    assert view.mode == "split"
    view.set_divider(view.picture_rect().left() + x)  # through the face
    assert drawn(x - 3 * DIVIDER_PX, y) == _rgb(before, x - 3 * DIVIDER_PX, y)
    assert drawn(x + 3 * DIVIDER_PX, y) == _rgb(after, x + 3 * DIVIDER_PX, y)
    view.set_mode("result")
    for key, scale in ((Qt.Key.Key_2, 2.0), (Qt.Key.Key_4, 4.0), (Qt.Key.Key_1, 1.0)):
        qtbot.keyClick(window, key)
        assert view.scale() == scale
        area = view.picture_rect()
        assert (area.width(), area.height()) == (round(320 * scale), round(240 * scale))
        for px, py in ((x, y), (x - 20, y + 15), (x + 17, y - 30)):
            assert drawn(px, py) == _rgb(after, px, py), (scale, px, py)
    qtbot.keyClick(window, Qt.Key.Key_4)
    grabbed = view.grab().toImage()  # 400%: one picture pixel is 4x4 screen pixels
    area = view.picture_rect()
    cell = (area.left() + 4 * x, area.top() + 4 * y)
    assert len({_rgb(grabbed, cell[0] + i, cell[1] + j) for i in range(4) for j in range(4)}) == 1
    # the wheel zooms around the pointer: the picture point under it stays under it
    pointer = QPointF(view.width() / 2 + 40, view.height() / 2 - 25)
    under = (pointer - QPointF(view.picture_rect().topLeft())) / view.scale()
    view.zoom_by(1.25 ** 2, pointer)
    now = (pointer - QPointF(view.picture_rect().topLeft())) / view.scale()
    assert view.scale() == pytest.approx(4 * 1.25 ** 2)
    assert abs(now.x() - under.x()) < 0.5 and abs(now.y() - under.y()) < 0.5
    # a drag pans
    start = view.picture_rect().topLeft()
    middle = QPoint(view.width() // 2, view.height() // 2)
    qtbot.mousePress(view, Qt.MouseButton.LeftButton, pos=middle)
    qtbot.mouseMove(view, middle + QPoint(30, 20))
    qtbot.mouseRelease(view, Qt.MouseButton.LeftButton, pos=middle + QPoint(30, 20))
    assert view.picture_rect().topLeft() - start == QPoint(30, 20)
    qtbot.keyClick(window, Qt.Key.Key_F)
    assert view.zoom is None and view.scale() == pytest.approx(fit)
    # zoom to a face: centred, a face of 120 px made 60% of the view's height
    view.set_boxes([("p1", QColor(255, 0, 0), FACE_XY[0], FACE_XY[1],
                     FACE_XY[0] + FACE_SIZE[0], FACE_XY[1] + FACE_SIZE[1])])
    qtbot.keyClick(window, Qt.Key.Key_Z)
    assert view.scale() == pytest.approx(max(1.0, 0.6 * view.height() / FACE_SIZE[1]))
    assert drawn(x, y) == _rgb(after, x, y)
    window.close()


def test_the_cache_keeps_its_bound_and_drops_the_least_recently_shown_first(qtbot):
    from PySide6.QtGui import QPixmap

    picture = 100 * 50 * 4  # bytes of a 100x50 picture
    cache = live.FrameCache(limit=3 * picture)
    for n in range(3):
        cache.put(("swap", "k", n), QPixmap(100, 50))
    assert cache.get(("swap", "k", 0)) is not None  # shown again: now the most recent
    cache.put(("swap", "k", 3), QPixmap(100, 50))
    assert cache.used == 3 * picture
    assert [key[2] for key in cache.pictures] == [2, 0, 3]  # 1 went first
    assert live.CACHE_BYTES == 2**30


def test_play_shows_each_frames_swap_before_it_steps_on(qtbot, face_clip: Path, base,
                                                        source: Path):
    window = _opened(qtbot, face_clip, base, source)
    timeline, view = window.ui.timeline, window.ui.view
    timeline.set_in(9)
    timeline.set_frame(9)
    qtbot.waitUntil(lambda: _swapped(window, 9), timeout=SWAP_MS)
    steps: list[tuple[int, bool]] = []  # (frame, the frame before it was drawn swapped)
    timeline.frame_changed.connect(lambda frame: steps.append((frame, frame - 1 in view.painted)))
    qtbot.mouseClick(window.ui.play, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: not window.ui.play.isChecked(), timeout=SWAP_MS)
    assert steps == [(10, True), (11, True), (12, True)]
    qtbot.waitUntil(lambda: 12 in view.painted, timeout=SWAP_MS)
