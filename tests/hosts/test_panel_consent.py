"""Consent in the Qt panel's casting: a record attached on a person's card names the performer
there and goes into Preview's and Render's requests alike with the Consent box (require
consent, project); the shot's session keeps it; a file that is no record is one line; a render
that requires consent refuses a person without one in the engine's one sentence. Offscreen with
pytest-qt (contract models, real YuNet; `consent_record` in tests/hosts/conftest.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from addon.panel import consent, looks
from addon.panel.host import FileHost, clip_from_file
from addon.panel.rendering import render_request
from addon.panel.session import Session
from facefuse import PersonId, PolicyChoices
from tests.hosts.panel_helpers import shown_window, wait_idle
from tests.render_media import face_photo, make_face_clip

FRAMES = 6


@pytest.fixture(scope="module")
def face_clip(testdata: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_face_clip(tmp_path_factory.mktemp("consent-clip") / "plate.mp4",
                          face_photo(testdata), frames=FRAMES)


def _card(window) -> str:
    return window.ui.people.card("p1").status.text()


def _errors(window) -> list[str]:
    return [line for line in window.ui.log.toPlainText().splitlines()
            if line.startswith("Error:")]


def test_a_record_on_a_card_reaches_preview_and_render_alike_and_stays_with_the_shot(
        qtbot, face_clip: Path, base, source: Path, consent_record, tmp_path: Path):
    record = consent_record(project="NIGHTFALL")
    window = shown_window(qtbot, FileHost(face_clip), base)
    window.ui.sources.replace([source])
    window.ui.folder.setText(str(tmp_path / "out"))
    looks.find_people(window.act)
    wait_idle(qtbot, window)
    assert [c.person_id for c in window.ui.people.cards] == ["p1"]
    window.ui.policy.require.setChecked(True)
    window.ui.policy.project.setText(" NIGHTFALL ")
    window.ui.policy.project.editingFinished.emit()
    consent.attach(window.act, "p1", record)
    assert _card(window).endswith("consent: Jane Doe"), _card(window)
    assert window.ui.people.card("p1").clear_consent.isEnabled()
    expected = PolicyChoices(consent=((PersonId("p1"), record),), require_consent=True,
                             project="NIGHTFALL")
    before = render_request(window.act)[0]
    assert before.policy == window.act.request().policy == expected  # Render's, Preview's

    broken = tmp_path / "broken.json"
    broken.write_text('{"schema": "facefuse.consent/1"}', encoding="utf-8")
    consent.attach(window.act, "p1", broken)  # said in one line, the record stays
    (said,) = _errors(window)  # the engine's sentence
    assert said.startswith(f"Error: the consent record {broken}: ") and \
        said.endswith("(see docs/consent.md)"), said
    assert render_request(window.act)[0].policy == expected
    window.close()

    again = shown_window(qtbot, FileHost(face_clip), base)  # the panel started again
    wait_idle(qtbot, again)
    assert render_request(again.act)[0] == before
    assert _card(again).endswith("consent: Jane Doe")
    assert again.ui.policy.require.isChecked() and again.ui.policy.project.text() == "NIGHTFALL"
    consent.attach(again.act, "p1", None)  # cleared
    assert render_request(again.act)[0].policy == PolicyChoices(require_consent=True,
                                                                project="NIGHTFALL")
    assert "consent" not in _card(again)
    again.close()


def test_a_session_of_an_earlier_panel_has_no_records_and_a_moved_record_is_named(
        tmp_path: Path):
    earlier = {"version": 1, "clip": "plate.mp4", "frames": None, "sources": [],
               "assigned": {"p2": str(tmp_path / "own.jpg")}, "skipped": ["p3"]}
    kept = Session.from_json(earlier)
    assert kept is not None and kept.skipped == ("p3",)
    assert (kept.consent, kept.require_consent, kept.project) == ((), False, "")
    record = tmp_path / "jane.consent.json"
    written = Session(consent=(("p1", record),), require_consent=True, project="NIGHTFALL")
    from_file = Session.from_json(written.to_json(clip_from_file(tmp_path / "plate.mov")))
    assert from_file == written
    found, missing = written.found()
    assert found.consent == () and missing == ["jane.consent.json (p1's consent)"]


def test_a_render_requiring_consent_refuses_a_person_without_a_record_in_one_sentence(
        qtbot, face_clip: Path, base, source: Path, consent_record, tmp_path: Path):
    out = tmp_path / "out"
    window = shown_window(qtbot, FileHost(face_clip), base)
    window.ui.sources.replace([source])
    window.ui.folder.setText(str(out))
    window.ui.policy.require.setChecked(True)
    wait_idle(qtbot, window)
    window.act.start_render()
    wait_idle(qtbot, window)
    errors = _errors(window)  # the engine's sentence, as the panel shows its errors
    assert len(errors) == 1 and errors[0].startswith("Error: p1 is swapped to "), errors
    assert "without valid consent (no consent record), and this render requires consent" \
        in errors[0] and errors[0].count(". ") == 0
    assert window.ui.status.text() == errors[0].removeprefix("Error: ")
    assert not list(out.glob("*.png"))  # nothing written

    consent.attach(window.act, "p1", consent_record())
    window.act.start_render()
    wait_idle(qtbot, window)
    assert len(list(out.glob("*.png"))) == FRAMES, window.ui.log.toPlainText()
    assert len(_errors(window)) == 1
    window.close()
