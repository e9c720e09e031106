"""`facefuse render` resuming into a folder: finished frames skipped (not rewritten), damaged or
missing ones and changed settings rendered again, frames from another input or an older plate
never kept. (Resume after a killed process: test_farm_signals.py.)

The shot (`media`: a 23.976 fps h264 clip with a face in all but its first frames) and
`cli_cache` come from tests/integration/conftest.py, the models and the session's analysis cache
from tests/conftest.py; frames carry their index as a burned-in marker and a real face
(tests/render_media.py), and pixels are compared with the input decoded independently.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from facefuse.shot.contract.request import OutputSpec
from facefuse.shot.output import prints as prints_module
from tests.integration.render_helpers import Media, read_bgr
from tests.media_factory import read_marker
from tests.render_media import face_frame, render_request, run_render, write_plate_oiio


def _file_state(folder: Path) -> dict[str, tuple[int, int, bytes]]:
    return {p.name: (p.stat().st_mtime_ns, p.stat().st_ino, p.read_bytes())
            for p in sorted(folder.iterdir())}


def test_resume_skips_finished_frames_and_rerenders_on_changes(
        media: Media, render_models: Path, render_cache: Path, tmp_path: Path) -> None:
    plates, out = tmp_path / "plates", tmp_path / "out"
    plates.mkdir(), out.mkdir()
    for n in range(1001, 1006):
        write_plate_oiio(plates / f"p.{n}.png", face_frame(n, media.face)[..., ::-1].copy(),
                         "uint8")

    def go(**changes):
        settings = changes.pop("settings", None)
        request = render_request(render_models, render_cache, media.source,
                                 plates / "p.####.png", out / "o.####.png",
                                 matte=str(out / "m.####.png"), settings=settings, **changes)
        return run_render(request)

    first, _ = go()
    assert (first.swapped, first.skipped) == (5, 0)
    state = _file_state(out)
    assert len(state) == 10

    again, reports = go()
    assert (again.frames, again.swapped, again.no_face, again.skipped) == (5, 0, 0, 5)
    assert sorted((r.frame, r.status) for r in reports) == [(n, "skipped")
                                                           for n in range(1001, 1006)]
    assert _file_state(out) == state  # not rewritten: same mtime, inode and bytes

    (out / "o.1003.png").write_bytes(state["o.1003.png"][2][:200])  # a half-written frame
    (out / "m.1005.png").unlink()  # a missing matte
    repaired, reports = go()
    assert (repaired.swapped, repaired.skipped) == (2, 3)
    assert sorted(r.frame for r in reports if r.status == "swapped") == [1003, 1005]
    after = _file_state(out)
    assert {k: v[2] for k, v in after.items()} == {k: v[2] for k, v in state.items()}
    assert after["o.1001.png"] == state["o.1001.png"]

    blurred, _ = go(settings={"mask_blur": 0.6})  # a pixel-relevant setting: all re-rendered
    assert (blurred.swapped, blurred.skipped) == (5, 0)
    changed_state = _file_state(out)
    for n in range(1001, 1006):
        assert changed_state[f"o.{n}.png"][2] != state[f"o.{n}.png"][2]
        assert changed_state[f"m.{n}.png"][2] != state[f"m.{n}.png"][2]
    assert go(settings={"mask_blur": 0.6})[0].skipped == 5  # the new fingerprint is recorded

    forced, _ = go(settings={"mask_blur": 0.6}, overwrite=True)
    assert (forced.swapped, forced.skipped) == (5, 0)
    rewritten = _file_state(out)
    for name, (mtime, inode, data) in rewritten.items():
        assert data == changed_state[name][2]  # deterministic ...
        assert (mtime, inode) != changed_state[name][:2]  # ... but written again

    # a setting that does not change pixels (the cache folder) does not re-render
    moved = render_request(render_models, tmp_path / "other-cache" / "embeddings", media.source,
                           plates / "p.####.png",
                           OutputSpec(str(out / "o.####.png"), matte=str(out / "m.####.png")),
                           settings={"mask_blur": 0.6})
    assert run_render(moved)[0].skipped == 5


def test_resume_does_not_keep_frames_rendered_from_another_input(
        media: Media, render_models: Path, render_cache: Path, tmp_path: Path) -> None:
    shot_a, shot_b, out = tmp_path / "a", tmp_path / "b", tmp_path / "out"
    for folder in (shot_a, shot_b, out):
        folder.mkdir()
    for n in (1, 2, 3):
        write_plate_oiio(shot_a / f"p.{n}.png", face_frame(n, media.face)[..., ::-1].copy(),
                         "uint8")
        write_plate_oiio(shot_b / f"p.{n}.png", face_frame(n + 100, media.face)[..., ::-1]
                         .copy(), "uint8")
    for shot in (shot_a, shot_b):
        run_render(render_request(render_models, render_cache, media.source, shot / "p.#.png",
                                  out / "o.#.png"))
    assert [read_marker(read_bgr(out / f"o.{n}.png")) for n in (1, 2, 3)] == [101, 102, 103]


def test_resume_rerenders_frames_whose_plate_changed(
        media: Media, render_models: Path, render_cache: Path, tmp_path: Path) -> None:
    plates, out = tmp_path / "plates", tmp_path / "out"
    plates.mkdir(), out.mkdir()
    for n in (1, 2, 3):
        write_plate_oiio(plates / f"p.{n}.png", face_frame(n, media.face)[..., ::-1].copy(),
                         "uint8")
    request = render_request(render_models, render_cache, media.source, plates / "p.#.png",
                             out / "o.#.png")
    run_render(request)
    write_plate_oiio(plates / "p.2.png", face_frame(42, media.face)[..., ::-1].copy(), "uint8")
    summary, _ = run_render(request)  # a new plate version under the same name
    assert summary.skipped < 3
    assert read_marker(read_bgr(out / "o.2.png")) == 42


@pytest.mark.parametrize("version", ["ANALYSIS_VERSION", "PLAN_VERSION", "READER_VERSION"])
def test_a_new_analysis_plan_or_reader_version_rerenders_the_frames(
        media: Media, render_models: Path, render_cache: Path, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch, version: str) -> None:
    """Frames made from another version's detections, plan or decoded pixels are not kept:
    each version is in the render fingerprint."""
    plates, out = tmp_path / "plates", tmp_path / "out"
    plates.mkdir(), out.mkdir()
    for n in (1, 2):
        write_plate_oiio(plates / f"p.{n}.png", face_frame(n, media.face)[..., ::-1].copy(),
                         "uint8")
    request = render_request(render_models, render_cache, media.source, plates / "p.#.png",
                             out / "o.#.png")
    assert run_render(request)[0].swapped == 2
    monkeypatch.setattr(prints_module, version, getattr(prints_module, version) + 1)
    again = run_render(request)[0]
    assert (again.swapped, again.skipped) == (2, 0)
