"""Fixing only the bad frames: `--overrides` re-renders only the frames whose plan it changes
(the other files untouched, byte for byte and by mtime), lists of frames and their chunks render
exactly what a whole render makes, a re-render killed part way resumes without touching the rest, a
video is rendered whole again, and bad overrides or reports are refused before anything is
written.

The shot (`media`: 16 frames, 23.976 fps, a face in frames 5-16) and `cli_cache` come from
tests/integration/conftest.py; the colour contract swapper paints every swapped face, so a frame
kept by an override differs from a swapped one.
"""

from __future__ import annotations

import hashlib
import json
import logging
from dataclasses import replace
from pathlib import Path

import pytest

from facefuse.cli.main import main
from facefuse.review.writing import write_review
from facefuse.shot.contract.request import FrameReport, PlanChoices, RenderRequest
from facefuse.shot.run.plan_only import plan_shot
from facefuse.shot.run.render import render
from tests.integration.render_helpers import Media, one_line_error
from tests.render_media import cli_args, render_request, run_render

FACE_FRAMES = range(5, 17)


def _state(folder: Path) -> dict[str, tuple[str, int]]:
    """Every file's sha256 and mtime_ns."""
    return {p.name: (hashlib.sha256(p.read_bytes()).hexdigest(), p.stat().st_mtime_ns)
            for p in sorted(folder.iterdir())}


def _overrides(path: Path, *entries: dict, **extra: object) -> Path:
    path.write_text(json.dumps({"schema": "facefuse.overrides/1", **extra,
                                "overrides": list(entries)}))
    return path


def _request(media: Media, models: Path, cache: Path, out: Path, **fields: object
             ) -> RenderRequest:
    return render_request(models, cache, media.source, media.clip, out / "o.####.png",
                          "colour", matte=str(out / "m.####.png"), **fields)


def _changed(before: dict, after: dict) -> list[int]:
    """The frames whose files changed (in bytes or mtime)."""
    return sorted({int(name.split(".")[1]) for name in after if before.get(name) != after[name]})


def test_overrides_rewrite_only_the_frames_whose_plan_they_change(
        media: Media, render_models: Path, render_cache: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    full, _ = run_render(_request(media, render_models, render_cache, out))
    assert full.swapped == len(FACE_FRAMES)
    before = _state(out)

    fix = _overrides(tmp_path / "fix.json", {"frames": "8-9", "action": "keep"},
                     {"frames": [12, 12], "person": "p1", "action": "skip"},
                     {"frames": "2-3", "action": "keep"})  # frames without a face: no change
    fixed, reports = run_render(_request(media, render_models, render_cache, out,
                                         overrides=fix))
    after = _state(out)
    assert _changed(before, after) == [8, 9, 12]
    assert (fixed.skipped, fixed.no_face, fixed.unselected, fixed.corrected, fixed.swapped) == (
        13, 0, 3, 3, 0)
    assert sorted(r.frame for r in reports if r.status != "skipped") == [8, 9, 12]

    again, _ = run_render(_request(media, render_models, render_cache, out, overrides=fix))
    assert again.skipped == 16 and _state(out) == after  # nothing left to do

    back, _ = run_render(_request(media, render_models, render_cache, out))  # overrides gone
    restored = _state(out)
    assert back.swapped == 3 and _changed(after, restored) == [8, 9, 12]
    assert {k: v[0] for k, v in restored.items()} == {k: v[0] for k, v in before.items()}


def test_chunks_of_a_list_give_the_frames_of_a_whole_render(
        media: Media, render_models: Path, render_cache: Path, tmp_path: Path) -> None:
    fix = _overrides(tmp_path / "fix.json", {"frames": "6-7", "person": "p1", "action": "skip"})
    whole = tmp_path / "whole"
    run_render(_request(media, render_models, render_cache, whole, overrides=fix))
    listed = tmp_path / "listed"
    only = ((6, 7), (10, 11), (15, 15))
    done = [run_render(_request(media, render_models, render_cache, listed, overrides=fix,
                                only=only, chunk=(i, 2)))[0] for i in (1, 2)]
    assert [s.frames for s in done] == [3, 2]
    files = _state(listed)
    assert sorted({int(name.split(".")[1]) for name in files}) == [6, 7, 10, 11, 15]
    reference = _state(whole)
    assert {k: v[0] for k, v in files.items()} == {k: reference[k][0] for k in files}


def test_a_killed_rerender_resumes_and_never_touches_the_rest(
        media: Media, render_models: Path, render_cache: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    run_render(_request(media, render_models, render_cache, out))
    before = _state(out)
    fix = _overrides(tmp_path / "fix.json", {"frames": "6-13", "action": "keep"})
    request = _request(media, render_models, render_cache, out, overrides=fix)

    def killed(report: FrameReport) -> None:
        if report.status != "skipped":
            raise KeyboardInterrupt  # the render dies after its first rewritten frame

    with pytest.raises(KeyboardInterrupt):
        render(request, killed)
    middle = _state(out)
    assert set(_changed(before, middle)) <= set(range(6, 14)) and _changed(before, middle)
    resumed, _ = run_render(request)
    assert resumed.skipped == 16 - (8 - len(_changed(before, middle)))
    assert _changed(before, _state(out)) == list(range(6, 14))


def test_a_video_is_rendered_whole_again(media: Media, render_models: Path, render_cache: Path,
                                         tmp_path: Path, caplog: pytest.LogCaptureFixture
                                         ) -> None:
    fix = _overrides(tmp_path / "fix.json", {"frames": "8-9", "action": "keep"})
    request = render_request(render_models, render_cache, media.source, media.clip,
                             tmp_path / "out.mp4", "colour", plan=PlanChoices(overrides=fix))
    with caplog.at_level(logging.INFO, logger="facefuse.shot.run.render"):
        summary, _ = run_render(request)
    assert summary.frames == 16 and summary.swapped == len(FACE_FRAMES) - 2
    assert "is a video, written whole: all 16 frames are rendered again" in caplog.text


@pytest.mark.parametrize("case, needle", [
    ("person", "names person p9, whom this shot does not have (its people: p1)"),
    ("shot", "is for shot 00000000deadbeef, not this one"),
    ("json", "is not JSON"),
    ("action", "action 'blur' is not one of skip, keep, swap, hold"),
    ("report", "were chosen for another shot (shot:abababababababab), not for"),
    ("list", "frames 20,30 of the list are outside the analysed range"),
    ("video", "a list of frames (--frames LIST or flagged:) needs an image-sequence output"),
])
def test_bad_overrides_and_reports_are_one_sentence_and_write_nothing(
        case: str, needle: str, media: Media, render_models: Path, cli_cache: Path,
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    fix = tmp_path / "fix.json"
    entries = {"person": {"frames": "1-2", "person": "p9", "action": "skip"},
               "action": {"frames": "1-2", "person": "p1", "action": "blur"}}
    _overrides(fix, entries.get(case, {"frames": "1-2", "action": "keep"}),
               **({"shot": "00000000deadbeef"} if case == "shot" else {}))
    if case == "json":
        fix.write_text("{nope")
    report = tmp_path / "review"
    report.mkdir()
    (report / "report.json").write_text(json.dumps({
        "schema": "facefuse.review/1", "shot_id": "abababababababab", "input": "other.mov",
        "frames": {"first": 1, "last": 16}, "cuts": [], "people": [], "strip": [],
        "flags": [], "samples": [], "series": [], "timings": {}, "flagged_frames": [[6, 7]]}))
    frames = {"report": f"flagged:{report}", "list": "20,30", "video": "3,5"}.get(case)
    out = tmp_path / "out"
    output = tmp_path / "out.mp4" if case == "video" else out / "o.####.png"
    extra = ["--frames", frames] if frames else ["--overrides", str(fix)]
    code = main(cli_args(render_models, media.source, media.clip, output, *extra,
                         swapper="colour"))
    assert code == 2
    line = one_line_error(capsys.readouterr().err)
    assert needle in line, line
    assert not out.exists() and not (tmp_path / "out.mp4").exists()


def test_a_part_of_the_shot_takes_the_whole_shots_corrections_and_ignores_the_rest(
        media: Media, render_models: Path, render_cache: Path, tmp_path: Path,
        caplog: pytest.LogCaptureFixture) -> None:
    """--frames 5-10 with corrections made for the whole shot (its shot id): frames 5-10 as
    the whole shot's render makes them, the corrections outside them named in one note."""
    whole = _request(media, render_models, render_cache, tmp_path / "whole")
    shot_id = plan_shot(whole).shot_id
    fix = _overrides(tmp_path / "fix.json", {"frames": "8-9", "action": "keep"},
                     {"frames": "12-14", "action": "keep"},
                     {"frames": "10-11", "person": "p1", "action": "skip"}, shot=shot_id)
    reference, _ = run_render(replace(whole, plan=replace(whole.plan, overrides=fix)))
    part = _request(media, render_models, render_cache, tmp_path / "part", frames=(5, 10),
                    overrides=fix)
    with caplog.at_level(logging.INFO, logger="facefuse.shot.run.render"):
        summary, _ = run_render(part)
    assert (summary.frames, summary.swapped, summary.corrected) == (6, 3, 3)
    assert summary.notes == ((f"overrides file {fix}: the corrections outside frames 5-10 are "
                             "ignored here: 1 entry wholly (12-14) and 1 in part (11)"),)
    assert caplog.text.count("the corrections outside frames 5-10") == 1
    made = _state(tmp_path / "part")
    assert {k: v[0] for k, v in made.items()} == {
        k: v[0] for k, v in _state(tmp_path / "whole").items() if 5 <= int(k.split(".")[1]) <= 10}
    assert plan_shot(part).shot_id == shot_id  # previews and reviews plan the same shot
    assert write_review(part, tmp_path / "review").report["shot_id"] == shot_id
    assert reference.corrected == 7


def test_corrections_without_a_shot_id_outside_the_range_are_ignored_with_a_note(
        media: Media, render_models: Path, render_cache: Path, tmp_path: Path) -> None:
    fix = _overrides(tmp_path / "fix.json", {"frames": "6", "action": "keep"},
                     {"frames": "10-40", "action": "keep"})
    summary, _ = run_render(_request(media, render_models, render_cache, tmp_path / "out",
                                     frames=(3, 8), overrides=fix))
    assert (summary.frames, summary.corrected, summary.swapped) == (6, 1, 3)
    assert summary.notes == ((f"overrides file {fix}: the corrections outside frames 3-8 are "
                             "ignored here: 1 entry wholly (10-40)"),)
