"""The review on the timeline, with bpy 5.0 as a module: Review puts the flags on the timeline
as markers (only the strip's own, replaced on re-review) and the people on the strip; each
person's own source and skip reach the RenderRequest; corrections made in Blender are kept on
the strip in the media's numbers, written as the request's overrides file and used by the swap
(a marker whose flag they cover says so); Re-render Flagged renders only the report's flagged
frames; Open Report shows the review's page; model messages name the add-on's button; the
preferences offer the download.

Fixtures in tests/hosts/addon/conftest.py (`shot`: a saved .blend with a trimmed plate strip
whose timeline frame f shows media frame f - FIRST + TRIM_START + 1).
"""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest

# tests/hosts/conftest.py points BLENDER_USER_* at a temporary folder before bpy is imported.
bpy = pytest.importorskip("bpy", reason="bpy (Blender as a Python module) is not installed")

from facefuse import PersonId
from tests.hosts.addon.blender_helpers import (
    ADDON,
    FIRST,
    TRIM_START,
    TRIMMED,
    FakeLayout,
    add_source,
    drain_until_idle,
    last_message,
    module,
    operator_error,
)

MEDIA_FIRST = TRIM_START + 1  # the media number at timeline frame FIRST


def _reviewed(shot: SimpleNamespace, testdata: Path) -> None:
    add_source(shot.strip, testdata / "media" / "obama.jpg")
    assert bpy.ops.facefuse.review_strip() == {'FINISHED'}, last_message()


def test_review_marks_its_flags_and_lists_its_people(shot: SimpleNamespace, testdata: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    scene, props = shot.scene, shot.strip.facefuse
    mine = scene.timeline_markers.new("mine", frame=FIRST)  # the user's: never touched
    _reviewed(shot, testdata)
    assert props.report.startswith("//") and props.flagged >= 0
    assert Path(bpy.path.abspath(props.report)).is_file()
    assert [p.person_id for p in props.people] == ["p1"]
    person = props.people[0]
    assert person.swapped and person.frames == TRIMMED
    assert (person.first, person.last) == (FIRST, FIRST + TRIMMED - 1)

    # a flag of the report, put on the timeline in timeline frames; re-review replaces it
    report = json.loads(Path(bpy.path.abspath(props.report)).read_text())
    report["flags"] = [{"kind": "profile", "first": MEDIA_FIRST + 2, "last": MEDIA_FIRST + 4,
                        "person": "p1", "reason": "turned away"}]
    report["flagged_frames"] = [[MEDIA_FIRST + 2, MEDIA_FIRST + 4]]
    review, plan = module("review"), module("convert").strip_swap(scene, shot.strip)
    assert review.apply_report(plan, scene, shot.strip, report) == 1
    assert {(m.name, m.frame) for m in scene.timeline_markers} == {
        ("mine", FIRST), ("profile:p1", FIRST + 2)}
    assert props.flagged == 3
    assert review.apply_report(plan, scene, shot.strip, report) == 1  # no duplicate
    assert len(scene.timeline_markers) == 2

    # a correction over the flag's frames marks its marker; removing it unmarks it
    scene.frame_start, scene.frame_end = FIRST + 1, FIRST + 5
    assert bpy.ops.facefuse.add_override(action='hold') == {'FINISHED'}
    assert {m.name for m in scene.timeline_markers} == {"mine", "profile:p1 (corrected)"}
    assert review.apply_report(plan, scene, shot.strip, report) == 1  # a re-review keeps it
    assert {m.name for m in scene.timeline_markers} == {"mine", "profile:p1 (corrected)"}
    assert bpy.ops.facefuse.remove_override() == {'FINISHED'}
    assert {m.name for m in scene.timeline_markers} == {"mine", "profile:p1"}
    props.people[0].skip = True  # the flags of a skipped person are dealt with too
    assert {m.name for m in scene.timeline_markers} == {"mine", "profile:p1 (skipped)"}
    props.people[0].skip = False
    assert {m.name for m in scene.timeline_markers} == {"mine", "profile:p1"}

    # the review's page opens in the browser
    opened = []
    monkeypatch.setattr(module("review_operators"), "open_page", opened.append)
    assert bpy.ops.facefuse.open_report() == {'FINISHED'}
    assert opened == [Path(bpy.path.abspath(props.report)).with_name("index.html")]
    assert opened[0].is_file()
    review.remove_markers(scene, shot.strip)
    assert list(scene.timeline_markers) == [mine]

    # each person's own source and skip go into the request
    person.source = str(testdata / "media" / "biden.jpg")
    request = module("convert").strip_swap(scene, shot.strip).request
    assert request.plan.assign == ((PersonId("p1"), testdata / "media" / "biden.jpg"),)
    assert request.plan.skip == ()
    person.skip = True
    request = module("convert").strip_swap(scene, shot.strip).request
    assert request.plan.assign == () and request.plan.skip == (PersonId("p1"),)

    layout = FakeLayout()
    module("panels").SEQUENCER_PT_facefuse_people.draw(SimpleNamespace(layout=layout),
                                                       bpy.context)
    assert f"p1: {TRIMMED} frames, skipped" in layout.texts()
    assert {c["idname"] for c in layout.calls_of("operator")} >= {
        "facefuse.review_strip", "facefuse.rerender_flagged", "facefuse.add_override",
        "facefuse.open_report"}


def test_overrides_from_blender_and_rerender_flagged(shot: SimpleNamespace,
                                                     testdata: Path) -> None:
    scene, strip = shot.scene, shot.strip
    _reviewed(shot, testdata)
    assert bpy.ops.facefuse.swap_strip() == {'FINISHED'}, last_message()

    scene.frame_start, scene.frame_end = FIRST + 1, FIRST + 3
    assert bpy.ops.facefuse.add_override(action='keep') == {'FINISHED'}
    assert not (shot.out / "corrections.json").exists()  # kept on the strip
    scene.timeline_markers.new("a", frame=FIRST + 5).select = True
    scene.timeline_markers.new("b", frame=FIRST + 6).select = True
    assert bpy.ops.facefuse.add_override(action='hold', frames='MARKERS') == {'FINISHED'}
    path = shot.out / "corrections.json"
    assert module("convert").strip_swap(scene, strip).request.plan.overrides == path
    entries = json.loads(path.read_text())  # written for the engine by each request
    assert entries["schema"] == "facefuse.overrides/1"
    assert entries["overrides"] == [
        {"frames": f"{MEDIA_FIRST + 1}-{MEDIA_FIRST + 3}", "action": "keep"},
        {"frames": f"{MEDIA_FIRST + 5}-{MEDIA_FIRST + 6}", "action": "hold", "person": "p1"}]

    # the swap re-renders only the frames the corrections changed: the strip's own swap made
    # them, so it does not ask
    assert bpy.ops.facefuse.swap_strip() == {'FINISHED'}, last_message()
    assert "0 swapped, 3 left as they are by your corrections, 0 without a face, 10 already " \
        "done; 3 made with other choices replaced" in last_message().text  # not failures
    assert strip.facefuse.replace_asked == ""

    # Re-render Flagged: the report's flagged frames only
    report_path = Path(bpy.path.abspath(strip.facefuse.report))
    report = json.loads(report_path.read_text())
    report["flagged_frames"] = [[MEDIA_FIRST + 7, MEDIA_FIRST + 8]]
    report_path.write_text(json.dumps(report))
    strip_swap = module("convert").strip_swap
    flagged = module("review").flagged_numbers(str(report_path))
    assert strip_swap(scene, strip, only=flagged[1]).todo() == (MEDIA_FIRST + 7, MEDIA_FIRST + 8)
    assert bpy.ops.facefuse.rerender_flagged() == {'FINISHED'}, last_message()
    assert "(2 swapped, 0 without a face, 0 already done)" in last_message().text

    report["flagged_frames"] = []
    report_path.write_text(json.dumps(report))
    assert "flagged no frame" in operator_error(bpy.ops.facefuse.rerender_flagged)
    scene.frame_start, scene.frame_end = 1, 2
    assert "miss strip" in operator_error(bpy.ops.facefuse.add_override, action='keep')


def test_model_messages_name_the_preferences_button(addon: object) -> None:
    settings = module("settings")
    engine = ("model yunet (0.2 MB) is missing from /m; fetch it with "
              "`facefuse models fetch yunet`, or put yunet.onnx in that folder by hand")
    said = settings.in_blender(engine)
    assert "facefuse models fetch" not in said and settings.FETCH_HINT in said
    assert "run: facefuse" not in settings.in_blender("corrupt; delete it and run: facefuse "
                                                      "models fetch yunet")
    refused = ("p2 is swapped to jane.jpg without valid consent (no consent record), and this "
               "render requires consent: give --consent p2=RECORD.json (see docs/consent.md) "
               "or --skip p2")
    assert settings.in_blender(refused).endswith(
        "requires consent: give p2 a Consent Record or Skip (Face Swap > People)")
    layout = FakeLayout()
    module("preferences").FacefusePreferences.draw(SimpleNamespace(layout=layout), bpy.context)
    assert layout.calls_of("operator") or "downloaded" in layout.texts()


class _Cursor:
    """Records window_manager.progress_begin/update/end."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, tuple[int, ...]]] = []

    def progress_begin(self, low: int, high: int) -> None:
        self.calls.append(("begin", (low, high)))

    def progress_update(self, value: int) -> None:
        self.calls.append(("update", (value,)))

    def progress_end(self) -> None:
        self.calls.append(("end", ()))


def test_download_models_shows_blenders_progress(addon: object,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    from facefuse import Settings

    tasks, jobs = module("tasks"), module("jobs")
    assert type(bpy.context.preferences.addons[ADDON].preferences).__name__ == \
        "FacefusePreferences"
    monkeypatch.setattr(tasks, "absent_models", lambda _settings: [("detector", "yunet")])

    def fetch(_settings: object, names: list[str], on_progress: object) -> list[Path]:
        for done in (0, 50, 100):
            on_progress("yunet", done * 10_000, 1_000_000)  # type: ignore[operator]
        return [Path("/m/yunet.onnx")]

    monkeypatch.setattr(tasks, "fetch_models", fetch)
    cursor = _Cursor()
    outcome = jobs.submit(tasks.fetch_job(Settings(), cursor))
    assert outcome.text == "1 model(s) downloaded"
    assert cursor.calls == [("begin", (0, 1000)), ("update", (0,)), ("update", (500,)),
                            ("update", (1000,)), ("end", ())]

    def fail(*_args: object, **_kwargs: object) -> list[Path]:
        from facefuse import FacefuseError

        raise FacefuseError("no network")

    monkeypatch.setattr(tasks, "fetch_models", fail)
    cursor = _Cursor()
    outcome = jobs.submit(tasks.fetch_job(Settings(), cursor))
    assert outcome.level == 'ERROR' and "no network" in outcome.text
    assert cursor.calls[-1] == ("end", ())  # the cursor's progress ends on a failure too


def test_review_on_a_worker_returns_at_once_and_lands_on_the_main_thread(
        shot: SimpleNamespace, testdata: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    jobs = module("jobs")
    monkeypatch.setattr(jobs, "runs_blocking", lambda: False)
    add_source(shot.strip, testdata / "media" / "obama.jpg")
    assert bpy.ops.facefuse.review_strip() == {'FINISHED'}  # returns at once
    assert jobs.current().running(jobs.LOOK) is not None
    drain_until_idle(jobs)
    assert last_message().level == 'INFO', last_message()
    assert [p.person_id for p in shot.strip.facefuse.people] == ["p1"]


def test_the_review_status_follows_its_contact_sheet(shot: SimpleNamespace) -> None:
    """The status line of a running review: the analysis, then the contact sheet's steps."""
    from facefuse import PhaseProgress

    words = module("words")
    assert words.phase_line(PhaseProgress("analysis", 4, 60)) == "analysing frame 5 of 60"
    assert words.phase_line(PhaseProgress("pictures", 2, 31)) == "contact sheet: step 3 of 31"
    assert words.phase_line(PhaseProgress("pictures", 31, 31)) == ""
