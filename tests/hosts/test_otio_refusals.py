"""`facefuse timeline swap` refuses what it cannot swap right, each time in one sentence with
exit 2 and nothing written: every clip is checked before the first render, so each bad clip
here comes after a good marked one."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import opentimelineio as otio
import pytest

from facefuse.cli.main import main
from facefuse.hosting.plugins import installed_hosts
from tests.hosts import otio_edits as e
from tests.integration.render_helpers import one_line_error
from tests.media_factory import make_marked_clip

pytestmark = pytest.mark.skipif("otio" not in installed_hosts(), reason="the otio host entry "
                                "point is not installed: pip install -e '.[test]' again")
Bad = Callable[[Path], otio.schema.Clip]


@pytest.fixture(scope="module")
def media(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A 16-frame movie and, beside it, a sequence plate.1001-1008.png with 1004 missing."""
    root = tmp_path_factory.mktemp("otio-refusals")
    make_marked_clip(root / "A001.mp4", frames=16, rate=e.rate_of(e.FILM))
    for number in (1001, 1002, 1003, 1005, 1006, 1007, 1008):
        (root / f"plate.{number}.png").write_bytes(b"")
    return root


def _movie(root: Path, frames: int = 16) -> otio.schema.ExternalReference:
    return e.movie(root / "A001.mp4", e.HOUR_FILM, frames)


def _retimed(effect: otio.schema.Effect) -> Bad:
    def bad(root: Path) -> otio.schema.Clip:
        made = e.clip("bad", _movie(root), e.HOUR_FILM, 4, markers=("swap",))
        made.effects.append(effect)
        return made
    return bad


BAD_CLIPS: dict[str, tuple[Bad, str]] = {
    "missing file": (lambda root: e.clip("bad", e.movie(root / "gone.mp4", 0, 10), 0, 4,
                                         markers=("swap",)), "gone.mp4 does not exist"),
    "missing reference": (lambda root: e.clip("bad", otio.schema.MissingReference(), 0, 4,
                                              markers=("swap",)), "has no media"),
    "generator": (lambda root: e.clip("bad", otio.schema.GeneratorReference(
        generator_kind="SolidColor", available_range=e.span(0, 100)), 0, 4, markers=("swap",)),
        "is a generator (SolidColor)"),
    "still image": (lambda root: e.clip("bad", e.movie(root / "photo.jpg", 0, 100), 0, 4,
                                        markers=("swap",)), "is a still image (photo.jpg)"),
    "no available range": (lambda root: e.clip("bad", otio.schema.ExternalReference(
        target_url=str(root / "A001.mp4")), 0, 4, markers=("swap",)), "has no available range"),
    # 01:00:00:00 at 25 fps is 3456 s, before the media's first frame at 3603.6 s
    "times outside the media": (lambda root: e.clip("bad", _movie(root), e.HOUR_FILM, 4,
                                                    rate=25, markers=("swap",)),
                                "uses frames 82861-82863 of its media"),
    "linear time warp": (_retimed(otio.schema.LinearTimeWarp(time_scalar=2.0)),
                         "is retimed (LinearTimeWarp)"),
    "freeze frame": (_retimed(otio.schema.FreezeFrame()), "is retimed (FreezeFrame)"),
    "a time remap effect": (_retimed(otio.schema.Effect(effect_name="TimeRemap")),
                            "is retimed (TimeRemap)"),
    "outside the media": (lambda root: e.clip("bad", _movie(root), e.HOUR_FILM + 14, 6,
                                              markers=("swap",)),
                          "uses frames 86414-86419 of its media, which has frames 86400-86415"),
    "missing frame": (lambda root: e.clip("bad", e.sequence(root, "plate.", ".png", 1001, 8),
                                          1, 5, markers=("swap",)),
                      "plate.1004.png does not exist"),
    "frame step": (lambda root: _stepped(root), "steps 2 frames at a time"),
}


def _stepped(root: Path) -> otio.schema.Clip:
    ref = e.sequence(root, "plate.", ".png", 1001, 8)
    ref.frame_step = 2
    return e.clip("bad", ref, 0, 2, markers=("swap",))


def _run(edit: Path, out: Path, capsys: pytest.CaptureFixture[str], *extra: str) -> str:
    code = main(["timeline", "swap", str(edit), "-s", str(edit.parent / "me.jpg"), "-o",
                 str(out), *extra])
    line = one_line_error(capsys.readouterr().err)
    assert code == 2, line
    assert not out.exists(), "a refused swap wrote something"
    return line


@pytest.mark.parametrize("case", BAD_CLIPS, ids=list(BAD_CLIPS))
def test_a_bad_clip_is_refused_in_one_sentence_before_anything_renders(
        case: str, media: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    make, expected = BAD_CLIPS[case]
    good = e.clip("good", _movie(media), e.HOUR_FILM, 4, markers=("swap",))
    made = e.timeline("edit", [e.video_track("V1", [good, e.gap(2), make(media)])])
    line = _run(e.write(made, tmp_path / "edit.otio"), tmp_path / "out", capsys)
    assert expected in line
    assert "'good'" not in line and "clip 'bad' on V1 at 01:00:00:06" in line


def test_a_retime_on_the_track_is_refused(media: Path, tmp_path: Path,
                                          capsys: pytest.CaptureFixture[str]):
    track = e.video_track("V1", [e.clip("A", _movie(media), e.HOUR_FILM, 4, markers=("swap",))])
    track.effects.append(otio.schema.LinearTimeWarp(time_scalar=0.5))
    line = _run(e.write(e.timeline("edit", [track]), tmp_path / "edit.otio"), tmp_path / "out",
                capsys)
    assert "clip 'A' on V1 at 01:00:00:00 is retimed (LinearTimeWarp)" in line


def test_nothing_marked_says_so_and_points_at_a_timeline_marker(
        media: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    made = e.timeline("edit", [e.video_track("V1", [e.clip("A", _movie(media), e.HOUR_FILM, 4,
                                                           markers=("note",))])])
    made.tracks.markers.append(otio.schema.Marker(name="swap", marked_range=e.span(0, 1)))
    line = _run(e.write(made, tmp_path / "edit.otio"), tmp_path / "out", capsys)
    assert "no clip of edit carries a marker named 'swap'" in line
    assert "a marker on the timeline itself names no track" in line
    line = _run(tmp_path / "edit.otio", tmp_path / "out", capsys, "--marker", "note",
                "--handles", "-1")
    assert "--handles must be 0 or more" in line


@pytest.mark.parametrize("content, expected", [
    (None, "does not exist"), ("not json", "cannot read the timeline"),
    (otio.schema.Clip(name="x").to_json_string(), "holds Clip, not a timeline")])
def test_a_file_that_is_not_a_timeline_is_refused(content: str | None, expected: str,
                                                  tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]):
    edit = tmp_path / "edit.otio"
    if content is not None:
        edit.write_text(content, encoding="utf-8")
    assert expected in _run(edit, tmp_path / "out", capsys)


@pytest.mark.parametrize("what", ["source", "edit", "media"])
def test_the_swapped_timeline_is_never_a_file_the_swap_reads(
        what: str, media: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    """OUTDIR/edit.swapped.otio a link to the source photo, the edit or the clip's media:
    refused before anything renders, the file as it was."""
    made = e.timeline("edit", [e.video_track("V1", [e.clip("A", _movie(media), e.HOUR_FILM, 4,
                                                           markers=("swap",))])])
    edit = e.write(made, tmp_path / "edit.otio")
    photo = tmp_path / "me.jpg"
    photo.write_bytes(b"my photo")
    protected = {"source": photo, "edit": edit, "media": media / "A001.mp4"}[what]
    before = protected.read_bytes()
    out = tmp_path / "out"
    out.mkdir()
    (out / "edit.swapped.otio").symlink_to(protected)
    code = main(["timeline", "swap", str(edit), "-s", str(photo), "-o", str(out)])
    line = one_line_error(capsys.readouterr().err)
    assert code == 2 and "which this command reads" in line, line
    assert protected.read_bytes() == before
    assert [p.name for p in out.iterdir()] == ["edit.swapped.otio"]
