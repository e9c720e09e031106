"""The Qt panel walked the way an artist uses it, offscreen with pytest-qt: open an image
sequence numbered from 1001 with eight people in every frame, scrub, Find people, step to the
flag, give one person their own source and skip another, Preview, set in/out, render, step and
play through the result beside the original, re-render the flagged frames, skip one more person
and render again (only the frames that change are written), skip one over two frames only (an
override), open the folder. Asserts on the
pictures shown and the files written; the window is grabbed at each step into
$FACEFUSE_PANEL_SHOTS (default: the test's tmp folder) to be looked at.

Real YuNet, the contract recogniser and the colour contract swapper (a swapped face becomes a
flat colour that depends on its source), as tests/render_media.render_settings."""

from __future__ import annotations

import os
from pathlib import Path

import cv2
import numpy as np
import pytest
from PySide6.QtCore import QPoint, Qt, QUrl
from PySide6.QtGui import QDesktopServices, QImage

from addon.panel.host import FileHost
from addon.panel.window import PanelWindow
from facefuse import PersonId, RenderRequest, plan_shot
from tests.hosts.panel_helpers import WAIT_MS, wait_idle
from tests.media_factory import marked_frame
from tests.render_media import face_photo, render_settings

FIRST, COUNT = 1001, 10
SIZE = (960, 340)  # width, height
FACE = (112, 140)
MISSING = range(1004, 1008)  # person 8's face is out of these frames


def face_box(k: int) -> tuple[int, int, int, int]:
    """x, y, w, h of face k's photo in every frame."""
    return 40 + (k % 4) * 235, 20 + (k // 4) * 165, *FACE


@pytest.fixture(scope="module")
def crowd(testdata: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """crowd.1001.png ... crowd.1010.png: eight faces (the same photo, each tinted); the
    eighth is missing from MISSING."""
    folder = tmp_path_factory.mktemp("crowd") / "plates"
    folder.mkdir()
    face = face_photo(testdata, FACE)
    for n in range(FIRST, FIRST + COUNT):
        frame = marked_frame(n - FIRST, SIZE)
        for k in range(8):
            if k == 7 and n in MISSING:
                continue
            x, y, w, h = face_box(k)
            frame[y:y + h, x:x + w] = np.clip(face.astype(np.int16) + (k * 9 - 30), 0, 255)
        cv2.imwrite(str(folder / f"crowd.{n}.png"), frame)
    return folder


@pytest.fixture()
def base(render_models: Path, render_cache: Path):
    return render_settings(render_models, render_cache.parent, swapper="colour",
                           selector="many")


class Shots:
    """Grabs of the window, numbered in the order taken."""

    def __init__(self, folder: Path) -> None:
        self.folder = Path(os.environ.get("FACEFUSE_PANEL_SHOTS", folder))
        self.folder.mkdir(parents=True, exist_ok=True)
        self.count = 0

    def grab(self, qtbot, window: PanelWindow, name: str) -> Path:
        qtbot.wait(30)  # let Qt lay out and paint what the last step changed
        self.count += 1
        path = self.folder / f"{self.count:02d}-{name}.png"
        assert window.grab().save(str(path))
        return path


def _rgb(image: QImage, x: int, y: int) -> tuple[int, int, int]:
    colour = image.pixelColor(x, y)
    return colour.red(), colour.green(), colour.blue()


def _file_rgb(path: Path, x: int, y: int) -> tuple[int, int, int]:
    b, g, r = cv2.imread(str(path))[y, x]
    return int(r), int(g), int(b)


def _shows_frame(window: PanelWindow, plate: Path) -> bool:
    """The view's before picture is `plate` (sampled on the marker and the faces)."""
    before = window.ui.view.before
    if before is None:
        return False
    image = before.toImage()
    points = [(12, 12), (60, 12), (120, 200), (500, 300), (900, 100)]
    return all(_rgb(image, x, y) == _file_rgb(plate, x, y) for x, y in points)


def _centre(k: int) -> tuple[int, int]:
    x, y, w, h = face_box(k)
    return x + w // 2, y + h // 2 + 10


def _person_of_face(request: RenderRequest) -> dict[int, str]:
    """face index -> person id, from the engine's own plan of the shot (cached analysis)."""
    plan = plan_shot(request)
    found = {}
    for person in plan.people:
        face = person.person.tracks[0].faces[0]
        cx = float(face.bbox_xyxy[0] + face.bbox_xyxy[2]) / 2
        cy = float(face.bbox_xyxy[1] + face.bbox_xyxy[3]) / 2
        found[min(range(8), key=lambda k: abs(_centre(k)[0] - cx) + abs(_centre(k)[1] - cy))] \
            = person.person_id
    return found


def test_the_artists_path_through_the_panel(qtbot, crowd: Path, base, testdata: Path,
                                            tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    shots = Shots(tmp_path / "shots")
    pattern = crowd / "crowd.####.png"
    window = PanelWindow(FileHost(pattern), base)
    qtbot.addWidget(window)
    window.show()
    ui = window.ui
    # 1. opened: the first frame and the timeline, before anything is analysed
    qtbot.waitUntil(lambda: _shows_frame(window, crowd / "crowd.1001.png"), timeout=WAIT_MS)
    assert (ui.timeline.review.first, ui.timeline.review.last) == (1001, 1010)
    assert (ui.frame.minimum(), ui.frame.maximum(), ui.frame.value()) == (1001, 1010, 1001)
    view_height = ui.view.height()
    shots.grab(qtbot, window, "opened")
    # 2. scrub with the keys: each frame as decoded
    ui.timeline.setFocus()
    for _ in range(3):
        qtbot.keyClick(ui.timeline, Qt.Key.Key_Right)
    qtbot.waitUntil(lambda: _shows_frame(window, crowd / "crowd.1004.png"), timeout=WAIT_MS)
    assert ui.frame.value() == 1004
    qtbot.mouseClick(ui.timeline, Qt.MouseButton.LeftButton,
                     pos=QPoint(round(ui.timeline.x_of(1001.5)), 30))
    qtbot.waitUntil(lambda: _shows_frame(window, crowd / "crowd.1001.png"), timeout=WAIT_MS)
    # 3. Find people: eight cards, the flag on the timeline, the preview not squeezed
    ui.sources.add([testdata / "media" / "astronaut.png"])
    qtbot.mouseClick(ui.people.find_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: ui.activity.format().startswith("Finding people"), timeout=WAIT_MS)
    wait_idle(qtbot, window)
    review = window.review
    assert review.folder is not None and len(ui.people.cards) == 8
    assert [c.person_id for c in ui.people.cards] == [f"p{n}" for n in range(1, 9)]
    assert all(" · swapped" in c.status.text() for c in ui.people.cards)
    assert all(not c.picture.pixmap().isNull() for c in ui.people.cards)  # thumbnails
    assert review.flagged and all(first >= 1004 and last <= 1007
                                  for first, last in review.flagged), review.flagged
    assert ui.view.height() == view_height  # the cards scroll, the preview keeps its size
    assert ui.people.area.verticalScrollBar().maximum() > 0
    shots.grab(qtbot, window, "people")
    # 4. step to the flag
    qtbot.mouseClick(ui.next_flag, Qt.MouseButton.LeftButton)
    assert ui.timeline.frame == review.flagged[0][0]
    assert "missed" in ui.flag_label.text() or "dropout" in ui.flag_label.text()
    qtbot.waitUntil(lambda: _shows_frame(window, crowd / f"crowd.{ui.timeline.frame}.png"),
                    timeout=WAIT_MS)
    shots.grab(qtbot, window, "flag")
    # 5. people: p3 gets their own source, p2 is skipped
    window.assign_source("p3", testdata / "media" / "biden.jpg")
    qtbot.waitUntil(lambda: ui.people.card("p2").skip.isVisible())
    skip = ui.people.card("p2").skip
    qtbot.mouseClick(skip, Qt.MouseButton.LeftButton, pos=QPoint(8, skip.height() // 2))
    wait_idle(qtbot, window)
    assert ui.people.card("p2").status.text() == "10 frames · skipped: left as filmed"
    assert ui.people.card("p3").status.text() == "10 frames · own source: biden.jpg"
    assert "p2" not in window.review.marks[1002].swapped
    assert "p3" in window.review.marks[1002].swapped
    # 6. Preview a frame: the render's pixels for it, people as chosen
    ui.timeline.set_frame(1003)
    qtbot.mouseClick(ui.preview_button, Qt.MouseButton.LeftButton)
    wait_idle(qtbot, window)
    assert ui.view.after is not None and ui.view.labels == ("Original", "Swapped")
    previewed = ui.view.after.toImage()
    shots.grab(qtbot, window, "preview")
    # 7. in/out, render: only that range is written, each person as chosen
    ui.timeline.set_frame(1002)
    qtbot.mouseClick(ui.set_in, Qt.MouseButton.LeftButton)
    ui.timeline.set_frame(1006)
    qtbot.keyClick(ui.timeline, Qt.Key.Key_O)
    assert ui.range_label.text() == "Render: 1002-1006 (5 frames)"
    shots.grab(qtbot, window, "range")
    qtbot.mouseClick(ui.render_button, Qt.MouseButton.LeftButton)
    wait_idle(qtbot, window)
    out = crowd / "facefuse"
    written = sorted(p.name for p in out.glob("crowd.*.png"))
    assert written == [f"crowd.{n:04d}.png" for n in range(1002, 1007)], ui.log.toPlainText()
    request = window.last_request
    assert request is not None
    assert dict(request.plan.assign) == {PersonId("p3"): testdata / "media" / "biden.jpg"}
    assert request.plan.skip == (PersonId("p2"),)
    person = _person_of_face(request)
    colours = {person[k]: _file_rgb(out / "crowd.1003.png", *_centre(k)) for k in range(8)}
    plate = {person[k]: _file_rgb(crowd / "crowd.1003.png", *_centre(k)) for k in range(8)}
    assert colours["p2"] == plate["p2"]  # skipped: as filmed
    default = {colours[p] for p in colours if p not in ("p2", "p3")}
    assert len(default) == 1 and colours["p3"] not in default  # own source, own colour
    assert all(colours[p] != plate[p] for p in colours if p != "p2")
    assert all(_rgb(previewed, *_centre(k)) == colours[person[k]] for k in range(8))
    # 8. the result beside the original, stepping through it
    assert ui.show_result.isChecked() and "1002-1006" not in ui.status.text()
    ui.timeline.set_frame(1003)
    qtbot.waitUntil(lambda: ui.view.after is not None and window.ui.view.labels[1] == "Rendered"
                    and _shows_frame(window, crowd / "crowd.1003.png"), timeout=WAIT_MS)
    after = ui.view.after.toImage()
    x, y = _centre(0)
    assert _rgb(after, x, y) == _file_rgb(out / "crowd.1003.png", x, y)
    shots.grab(qtbot, window, "result")
    played: list[int] = []
    ui.timeline.frame_changed.connect(played.append)
    qtbot.mouseClick(ui.play, Qt.MouseButton.LeftButton)  # play the result to out
    qtbot.waitUntil(lambda: not ui.play.isChecked(), timeout=WAIT_MS)
    assert played == [1004, 1005, 1006] and ui.play.text() == "Play"
    qtbot.waitUntil(lambda: _shows_frame(window, crowd / "crowd.1006.png")
                    and ui.view.after is not None, timeout=WAIT_MS)
    ui.timeline.frame_changed.disconnect(played.append)
    # 9. re-render the flagged frames: those files, and only those, are written again
    stamps = {p.name: p.stat().st_mtime_ns for p in out.glob("crowd.*.png")}
    qtbot.mouseClick(ui.rerender_button, Qt.MouseButton.LeftButton)
    wait_idle(qtbot, window)
    again = {p.name for p in out.glob("crowd.*.png") if p.stat().st_mtime_ns != stamps.get(p.name)}
    flagged = {f"crowd.{n:04d}.png" for a, b in review.flagged for n in range(a, b + 1)}
    assert again == flagged, (again, flagged)
    # 10. skip p8, render again: only the frames where p8 was swapped are written again
    stamps = {p.name: p.stat().st_mtime_ns for p in out.glob("crowd.*.png")}
    window.skip_person("p8", True)
    wait_idle(qtbot, window)
    qtbot.mouseClick(ui.render_button, Qt.MouseButton.LeftButton)
    wait_idle(qtbot, window)
    again = {p.name for p in out.glob("crowd.*.png") if p.stat().st_mtime_ns != stamps.get(p.name)}
    assert again == {f"crowd.{n}.png" for n in range(1002, 1007) if n not in MISSING}, again
    assert "already rendered" in ui.status.text()
    # 11. skip p1 over 1002-1003 only (an override): those two frames, and only they, change
    ui.timeline.set_in(1002)
    ui.timeline.set_out(1003)
    menu = ui.people.card("p1").range_button.menu()
    next(a for a in menu.actions() if a.text() == "Skip in in..out").trigger()
    wait_idle(qtbot, window)
    assert "skip 1002-1003" in ui.people.card("p1").status.text()
    ui.timeline.set_out(1006)
    stamps = {p.name: p.stat().st_mtime_ns for p in out.glob("crowd.*.png")}
    qtbot.mouseClick(ui.render_button, Qt.MouseButton.LeftButton)
    wait_idle(qtbot, window)
    again = {p.name for p in out.glob("crowd.*.png") if p.stat().st_mtime_ns != stamps.get(p.name)}
    assert again == {"crowd.1002.png", "crowd.1003.png"}, again
    p1 = next(k for k in range(8) if person[k] == "p1")
    assert _file_rgb(out / "crowd.1003.png", *_centre(p1)) == \
        _file_rgb(crowd / "crowd.1003.png", *_centre(p1))
    assert _file_rgb(out / "crowd.1004.png", *_centre(p1)) == colours["p1"]
    assert window.last_request is not None and window.last_request.plan.overrides is not None
    shots.grab(qtbot, window, "override")
    opened: list[QUrl] = []
    monkeypatch.setattr(QDesktopServices, "openUrl", opened.append)
    qtbot.mouseClick(ui.open_folder, Qt.MouseButton.LeftButton)
    assert opened and Path(opened[0].toLocalFile()) == out
    shots.grab(qtbot, window, "rerendered")
    assert window.width() == 1280  # no label widened the window
    assert "Error" not in ui.log.toPlainText(), ui.log.toPlainText()
    window.close()
