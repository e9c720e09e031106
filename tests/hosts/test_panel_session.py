"""The Qt panel keeps a session per shot: a plate sequence (two people, numbered from 1001)
cast, corrected and ranged, the panel closed and started again, the clip opened again: the
same casting, the same render request; a source photo moved meanwhile is said in one line.
Offscreen with pytest-qt (QSettings and sessions in a folder of the test's own)."""

from __future__ import annotations

import dataclasses
import json
import shutil
import time
from pathlib import Path

import cv2
import numpy as np
import pytest
from PySide6.QtCore import Qt, QUrl
from PySide6.QtGui import QDesktopServices

from addon.panel import looks, rendering
from addon.panel.host import FileHost
from addon.panel.rendering import render_request
from addon.panel.store import PanelStore
from facefuse import PersonId, render
from tests.hosts.panel_helpers import shown_window, wait_idle
from tests.media_factory import marked_frame
from tests.render_media import face_photo

FIRST, COUNT = 1001, 9
FACE = (112, 140)
AWAY = range(1004, 1008)  # the second face is out of these frames


@pytest.fixture(scope="module")
def pair(testdata: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """pair.1001.png ... pair.1009.png: two faces (the same photo, one tinted); the second is
    out of AWAY."""
    folder = tmp_path_factory.mktemp("pair") / "plates"
    folder.mkdir()
    face = face_photo(testdata, FACE)
    for n in range(FIRST, FIRST + COUNT):
        frame = marked_frame(n - FIRST, (480, 200))
        frame[30:30 + FACE[1], 40:40 + FACE[0]] = face
        if n not in AWAY:
            frame[30:30 + FACE[1], 300:300 + FACE[0]] = np.clip(face.astype(np.int16) - 30, 0,
                                                                255)
        cv2.imwrite(str(folder / f"pair.{n}.png"), frame)
    return folder


def _cards(window) -> dict[str, str]:
    return {card.person_id: card.status.text() for card in window.ui.people.cards}


def test_a_shot_closed_and_opened_again_has_its_casting_and_request_back(
        qtbot, pair: Path, base, source: Path, testdata: Path, tmp_path: Path, capsys):
    pattern = pair / "pair.####.png"
    own = Path(shutil.copy2(testdata / "media" / "biden.jpg", tmp_path / "biden.jpg"))
    window = shown_window(qtbot, FileHost(pattern), base)
    wait_idle(qtbot, window)
    window.ui.sources.add([source])
    looks.find_people(window.act)
    wait_idle(qtbot, window)
    assert [c.person_id for c in window.ui.people.cards] == ["p1", "p2"]
    window.assign_source("p1", own)
    window.skip_person("p2", True)
    window.ui.timeline.set_in(1003)
    window.ui.timeline.set_out(1008)
    window.correct_range("p1", "hold")  # p1 is the one away in AWAY: their flags are fixed
    window.ui.output.setCurrentIndex(window.ui.output.findData("exr"))
    window.ui.folder.setText(str(tmp_path / "renders"))
    window.ui.folder.editingFinished.emit()
    wait_idle(qtbot, window)
    before, cards = render_request(window.act, window.render_ranges())[0], _cards(window)
    flags = (window.review.flags, window.review.fixed, window.review.flagged)
    assert window.review.fixed and not window.review.flags
    assert before.frames.only == ((1003, 1008),) and before.plan.skip == (PersonId("p2"),)
    window.close()

    started = time.perf_counter()  # the panel started again on the same shot
    again = shown_window(qtbot, FileHost(pattern), base)
    wait_idle(qtbot, again)
    restored_s = time.perf_counter() - started
    after = render_request(again.act, again.render_ranges())[0]
    assert after == before  # every field: sources, assign, skip, overrides, only, output
    assert _cards(again) == cards and again.review.reviewed
    assert (again.review.flags, again.review.fixed, again.review.flagged) == flags
    assert not again.ui.sources.list.item(0).icon().isNull()  # its thumbnail, as before
    assert again.ui.open_report.isEnabled()  # the last review's page, as before
    assert (again.ui.timeline.in_point, again.ui.timeline.out_point) == (1003, 1008)
    assert again.corrections.entries == (("p1", "hold", 1003, 1008),)
    with capsys.disabled():
        print(f"\nsession restored in {restored_s:.2f} s (window start to idle, review and "
              "casting shown)")
    # another clip, then this one again in the same window: the session follows the shot
    other = pair.parent / "other"
    other.mkdir(exist_ok=True)
    for n in (1, 2):
        shutil.copy2(pair / f"pair.{FIRST + n}.png", other / f"other.{n:04d}.png")
    again.open(other / "other.####.png")
    wait_idle(qtbot, again)
    assert again.assigned == {} and again.ui.people.cards == []
    again.open(pattern)
    wait_idle(qtbot, again)
    assert render_request(again.act, again.render_ranges())[0] == before
    again.close()

    own.unlink()  # p1's photo moved away: said in one line, the rest restored
    third = shown_window(qtbot, FileHost(pattern), base)
    wait_idle(qtbot, third)
    log = third.ui.log.toPlainText()
    lines = [line for line in log.splitlines() if "biden.jpg" in line]
    assert len(lines) == 1 and lines[0].startswith("Warning:") and "(p1)" in lines[0], log
    assert "Error" not in log
    assert third.assigned == {} and third.skipped == {"p2"}
    third.close()
    kept = json.loads(PanelStore().session_path(third.host.clip).read_text())
    assert kept["skipped"] == ["p2"] and kept["in_out"] == [1003, 1008]


def test_with_no_default_source_each_swapped_person_brings_their_own(
        qtbot, pair: Path, base, testdata: Path, tmp_path: Path):
    window = shown_window(qtbot, FileHost(pair / "pair.####.png"),
                          dataclasses.replace(base, selector="many"))
    window.ui.sources.replace([])
    window.ui.folder.setText(str(tmp_path / "out"))
    wait_idle(qtbot, window)
    looks.find_people(window.act)  # the review needs no source at all
    wait_idle(qtbot, window)
    assert [c.person_id for c in window.ui.people.cards] == ["p1", "p2"]
    assert "Error" not in window.ui.log.toPlainText(), window.ui.log.toPlainText()
    window.assign_source("p1", testdata / "media" / "biden.jpg")
    wait_idle(qtbot, window)
    qtbot.mouseClick(window.ui.preview_button, Qt.MouseButton.LeftButton)
    wait_idle(qtbot, window)  # p2 is swapped too (selector many) and has nothing
    last = window.ui.log.toPlainText().splitlines()[-1]
    assert last.startswith("Error: p2 is swapped but has no source photo"), last
    window.skip_person("p2", True)
    wait_idle(qtbot, window)
    window.ui.timeline.set_frame(1003)
    qtbot.mouseClick(window.ui.preview_button, Qt.MouseButton.LeftButton)
    wait_idle(qtbot, window)
    qtbot.waitUntil(lambda: window.ui.view.after is not None)
    window.act.start_render()
    wait_idle(qtbot, window)
    written = sorted(p.name for p in (tmp_path / "out").glob("pair.*.png"))
    assert written == [f"pair.{n}.png" for n in range(FIRST, FIRST + COUNT)], \
        window.ui.log.toPlainText()
    assert window.ui.log.toPlainText().count("Error") == 1
    window.close()


def test_the_flags_follow_a_change_of_people_and_show_what_a_correction_fixed(
        qtbot, pair: Path, base, source: Path, monkeypatch: pytest.MonkeyPatch):
    window = shown_window(qtbot, FileHost(pair / "pair.####.png"),
                          dataclasses.replace(base, selector="many"))
    window.ui.sources.replace([source])
    wait_idle(qtbot, window)
    assert not window.ui.open_report.isEnabled()
    looks.find_people(window.act)
    wait_idle(qtbot, window)
    opened: list[QUrl] = []
    monkeypatch.setattr(QDesktopServices, "openUrl", opened.append)
    qtbot.mouseClick(window.ui.open_report, Qt.MouseButton.LeftButton)
    assert [Path(u.toLocalFile()).name for u in opened] == ["index.html"]
    assert Path(opened[0].toLocalFile()).parent == window.review.folder
    flags = [(f.person_id, f.first, f.last) for f in window.review.flags]
    away = flags[0][0] if flags else ""  # the person out of AWAY
    assert flags and all(p == away and a >= AWAY[0] - 1 and b <= AWAY[-1] + 1
                         for p, a, b in flags), flags
    first = window.review.flags[0].first
    window.ui.timeline.set_in(AWAY[0])
    window.ui.timeline.set_out(AWAY[-1])
    window.correct_range(away, "hold")  # the face held over the frames it was lost
    wait_idle(qtbot, window)
    assert window.review.flags == () and window.review.flagged == ()
    assert window.review.fixed and window.review.fixed[0].reason == \
        f"fixed by hold {AWAY[0]}-{AWAY[-1]}"
    window.ui.timeline.set_frame(first)
    assert window.ui.flag_label.text().startswith(f"✓ {away} ")
    window.correct_range(away, "clear")
    wait_idle(qtbot, window)
    assert window.review.flags  # flagged again
    window.skip_person(away, True)  # flags concern swapped people only
    wait_idle(qtbot, window)
    assert window.review.flags == () and not window.ui.rerender_button.isEnabled()
    window.close()


def test_a_render_replacing_frames_made_otherwise_asks_first(
        qtbot, pair: Path, base, source: Path, testdata: Path, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch):
    asked: list = []
    answer = [False]

    def ask(parent, replacement) -> bool:
        asked.append(replacement)
        return answer[0]
    monkeypatch.setattr(rendering, "ask_replace", ask)
    out, biden = tmp_path / "out", testdata / "media" / "biden.jpg"
    window = shown_window(qtbot, FileHost(pair / "pair.####.png"), base)
    window.ui.sources.replace([source])
    window.ui.folder.setText(str(out))
    looks.find_people(window.act)
    wait_idle(qtbot, window)
    window.assign_source("p1", biden)
    wait_idle(qtbot, window)
    window.act.start_render()
    wait_idle(qtbot, window)
    assert len(list(out.glob("pair.*.png"))) == COUNT and asked == []
    window.close()
    again = shown_window(qtbot, FileHost(pair / "pair.####.png"), base)  # the next day
    wait_idle(qtbot, again)
    again.act.start_render()
    wait_idle(qtbot, again)
    assert asked == [] and "already rendered" in again.ui.status.text()  # the same casting
    seen = again.review.person("p1").frames
    changed = {f"pair.{n}.png" for a, b in seen for n in range(a, b + 1)}

    # the user changes their own render's casting: their own work, replaced without a question
    stamps = _stamps(out)
    again.assign_source("p1", None)
    wait_idle(qtbot, again)
    again.act.start_render()
    wait_idle(qtbot, again)
    assert asked == [] and _rewritten(out, stamps) == changed
    assert f"This render replaces {len(changed)} finished frames" in again.ui.log.toPlainText()

    # frames made by another render (the command line, a farm: nobody swapped there) are not
    # the session's: the render asks, and Cancel keeps them
    last = again.last_request
    outside = render(dataclasses.replace(last, plan=dataclasses.replace(
        last.plan, skip=(PersonId("p1"), PersonId("p2")))))
    assert outside.unselected > 0
    stamps = _stamps(out)
    again.act.start_render()
    wait_idle(qtbot, again)
    assert len(asked) == 1 and asked[0].made_by == (outside.request_fingerprint,)
    changed = {f"pair.{n}.png" for a, b in asked[0].frames for n in range(a, b + 1)}
    assert asked[0].count == len(changed) == outside.unselected
    assert _stamps(out) == stamps  # kept
    assert again.ui.log.toPlainText().splitlines()[-1] == \
        f"Render not started: the finished frames of {out / 'pair.####.png'} are kept"
    box, replace_button = rendering.replace_box(again, asked[0])
    assert f"replaces {asked[0].count} finished frames" in box.text()
    assert "the plan (people, sources or corrections)" in box.detailedText()
    assert box.defaultButton() is not replace_button and replace_button.text() == "Replace"
    answer[0] = True
    again.act.start_render()
    wait_idle(qtbot, again)
    assert len(asked) == 2 and _rewritten(out, stamps) == changed
    again.close()


def _stamps(folder: Path) -> dict[str, int]:
    return {p.name: p.stat().st_mtime_ns for p in folder.glob("pair.*.png")}


def _rewritten(folder: Path, stamps: dict[str, int]) -> set[str]:
    return {name for name, stamp in _stamps(folder).items() if stamp != stamps[name]}
