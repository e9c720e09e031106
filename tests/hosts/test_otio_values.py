"""`facefuse timeline swap` on timelines whose numbers are no times, and files that are JSON but
not OpenTimelineIO (issue 34, class 4): each is one sentence with exit 2 before anything is
rendered or written, never exit 1 ("internal error") and never a render that cannot go back on
the timeline. Also: a timeline at a rate timecode has no form for (12 fps) still names its clips.
"""

from __future__ import annotations

import json
import math
import os
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
BAD_RATES = {"0": 0.0, "negative": -24.0, "NaN": math.nan, "infinite": math.inf,
             "1e308": 1e308, "1e-300": 1e-300}


@pytest.fixture(scope="module")
def movie(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A 16-frame 23.976 movie (its timecode 01:00:00:00)."""
    return make_marked_clip(tmp_path_factory.mktemp("otio-values") / "A001.mp4", frames=16,
                            rate=e.rate_of(e.FILM))


def _refused(edit: Path, out: Path, capsys: pytest.CaptureFixture[str], *extra: str) -> str:
    code = main(["timeline", "swap", str(edit), "-s", str(edit.parent / "me.jpg"), "-o",
                 str(out), *extra])
    line = one_line_error(capsys.readouterr().err)
    assert code == 2, line
    assert not os.path.exists(out), "a refused swap wrote something"
    return line


def _edit(movie: Path, rate: float = e.FILM, media_rate: float = e.FILM,
          start_rate: float = e.FILM, gap_rate: float = e.FILM, media_start: float = e.HOUR_FILM,
          name: str = "A") -> otio.schema.Timeline:
    ref = otio.schema.ExternalReference(target_url=str(movie),
                                        available_range=e.span(media_start, 16, media_rate))
    clip = e.clip(name, ref, media_start, 4, rate=rate, markers=("swap",))
    return e.timeline("edit", [e.video_track("V1", [e.gap(2, gap_rate), clip])],
                      rate=start_rate)


PLACES: dict[str, Callable[[Path, float], otio.schema.Timeline]] = {
    "the clip's range": lambda movie, rate: _edit(movie, rate=rate),
    "the media's range": lambda movie, rate: _edit(movie, media_rate=rate),
    "the timeline's start": lambda movie, rate: _edit(movie, start_rate=rate),
    "a gap before the clip": lambda movie, rate: _edit(movie, gap_rate=rate),
}


@pytest.mark.parametrize("rate", BAD_RATES, ids=list(BAD_RATES))
@pytest.mark.parametrize("place", PLACES, ids=list(PLACES))
def test_a_rate_that_is_no_frame_rate_is_refused(place: str, rate: str, movie: Path,
                                                 tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    edit = e.write(PLACES[place](movie, BAD_RATES[rate]), tmp_path / "edit.otio")
    line = _refused(edit, tmp_path / "out", capsys)
    assert "which is no frame rate" in line


def test_a_time_too_large_to_count_exactly_is_refused(movie: Path, tmp_path: Path,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    edit = e.write(_edit(movie, media_start=1e20), tmp_path / "edit.otio")
    assert "more than a timeline can number exactly" in _refused(edit, tmp_path / "out", capsys)


def test_a_media_start_no_image_sequence_can_hold_is_refused_before_rendering(
        movie: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Frames numbered from 1e15 rendered as a sequence cannot go back on the timeline (OTIO's
    start_frame is a C int): refused up front, not after the render."""
    edit = e.write(_edit(movie, media_start=1e15), tmp_path / "edit.otio")
    line = _refused(edit, tmp_path / "out", capsys, "--format", "png")
    assert "past the largest number an OpenTimelineIO image sequence holds" in line
    assert "--format mov" in line


def test_a_clip_name_too_long_for_a_file_name_is_refused(movie: Path, tmp_path: Path,
                                                         capsys: pytest.CaptureFixture[str]):
    edit = e.write(_edit(movie, name="A" * 300), tmp_path / "edit.otio")
    line = _refused(edit, tmp_path / "out", capsys)
    assert "the render of clip 'AAAA" in line and "the file system takes names of at most" in line


@pytest.mark.parametrize("content, kind", [
    ({"name": "edit"}, "dictionary"), ([1, 2], "vector"), (42, "int"), ("edit", "str")])
def test_json_that_is_not_opentimelineio_is_refused(content: object, kind: str, tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    edit = tmp_path / "edit.otio"
    edit.write_text(json.dumps(content), encoding="utf-8")
    line = _refused(edit, tmp_path / "out", capsys)
    assert f"is not an OpenTimelineIO file: it holds plain {kind} data" in line


@pytest.mark.parametrize("rate", [12.0, 1000.0])
def test_a_clip_on_a_timeline_at_a_rate_without_timecode_is_named(
        rate: float, movie: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """OpenTimelineIO writes no timecode at 12 fps: the sentence names the clip by frame."""
    ref = e.movie(tmp_path / "gone.mp4", 0, 16, rate)
    made = e.timeline("edit", [e.video_track("V1", [e.clip("A", ref, 0, 4, rate=rate,
                                                           markers=("swap",))])],
                      start=0, rate=rate)
    line = _refused(e.write(made, tmp_path / "edit.otio"), tmp_path / "out", capsys)
    assert f"clip 'A' on V1 at frame 0 at {rate:g} fps" in line and "gone.mp4" in line


@pytest.mark.parametrize("which", ["the edit", "the output folder"])
def test_a_name_too_long_for_the_file_system_is_refused(which: str, movie: Path, tmp_path: Path,
                                                        capsys: pytest.CaptureFixture[str]):
    edit = tmp_path / ("E" * 300 + ".otio" if which == "the edit" else "edit.otio")
    out = tmp_path / ("O" * 300 if which == "the output folder" else "out")
    if which == "the output folder":
        e.write(_edit(movie), edit)
    line = _refused(edit, out, capsys)
    assert "bytes, and the file system takes names of at most" in line
