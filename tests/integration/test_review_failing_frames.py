"""The review flags every frame the render will fail, with the render's own reason (`will_fail`):
a sequence frame of another size or channel count, a truncated, empty or undecodable frame, a
damaged frame of a video, whether the analysis is fresh or cached. The render's and the
review's frames are compared on the same input; a frame the render accepts (another bit depth)
is not flagged, and a sequence with a gap is refused by both alike.

The shot (`media`) and `cli_cache` come from tests/integration/conftest.py.
"""

from __future__ import annotations

import json
from pathlib import Path

import av
import numpy as np
import pytest

from facefuse.cli import main as cli
from facefuse.errors import ExitCode
from facefuse.review.report import load_report
from tests.integration.render_helpers import Media
from tests.render_media import (
    cli_args,
    face_frame,
    make_face_clip,
    render_request,
    run_render,
    write_plate_oiio,
)

ODD = 3  # the frame made odd


def _plates(media: Media, root: Path, odd: str, count: int = 6) -> Path:
    """p.1..count.png (8-bit RGB, 320x240) with frame ODD (or, for "first", frame 1) made
    `odd`; the pattern."""
    root.mkdir()
    for n in range(1, count + 1):
        picture, kind = face_frame(n, media.face)[..., ::-1].copy(), "uint8"
        path = root / f"p.{n}.png"
        special = n == (1 if odd == "first" else ODD)
        if special and odd in ("size", "first"):
            picture = np.ascontiguousarray(picture[:-2, :-4])
        elif special and odd == "channels":
            picture = np.dstack([picture, np.full(picture.shape[:2], 255, np.uint8)])
        elif special and odd == "grey":
            picture = np.ascontiguousarray(picture[..., :1])
        elif special and odd == "uint16":
            picture, kind = picture.astype(np.uint16) * 257, "uint16"
        if not (special and odd == "gap"):
            write_plate_oiio(path, picture, kind)
        if special and odd == "truncated":
            path.write_bytes(path.read_bytes()[:path.stat().st_size // 2])
        elif special and odd == "garbage":
            path.write_bytes(b"not a picture " * 64)
        elif special and odd == "empty":
            path.write_bytes(b"")
    return root / "p.#.png"


def _damaged_video(media: Media, path: Path) -> Path:
    """An 8-frame MJPEG clip whose frame 4 (the engine numbers from 1) has its JPEG wiped."""
    clip = make_face_clip(path.with_name("whole.mkv"), media.face, frames=8, codec="mjpeg",
                          audio=None, timecode=None)
    data = bytearray(clip.read_bytes())
    with av.open(str(clip)) as container:
        packets = [p for p in container.demux(container.streams.video[0]) if p.size]
    victim = packets[ODD]
    assert victim.pos is not None
    soi = bytes(data).index(b"\xff\xd8", victim.pos)
    data[soi:victim.pos + victim.size] = bytes(victim.pos + victim.size - soi)
    path.write_bytes(bytes(data))
    return path


def _review(media: Media, render_models: Path, shot: Path | str, folder: Path,
            capsys: pytest.CaptureFixture[str]) -> dict:
    args = cli_args(render_models, media.source, shot, folder)
    rc = cli.main(["review", *args[1:]])
    captured = capsys.readouterr()
    assert rc == ExitCode.OK, captured.err
    assert "Traceback" not in captured.err
    return json.loads((folder / "report.json").read_text(encoding="utf-8"))


def _will_fail(report: dict) -> dict[int, str]:
    """frame -> the reason of the will_fail flag covering it."""
    return {n: f["reason"] for f in report["flags"] if f["kind"] == "will_fail"
            for n in range(f["first"], f["last"] + 1)}


def _quoted(report: dict) -> set[int]:
    """The frames whose own reason their will_fail flag quotes: the first three of a run."""
    return {n for f in report["flags"] if f["kind"] == "will_fail"
            for n in range(f["first"], min(f["last"], f["first"] + 2) + 1)}


def _check_review(report: dict, folder: Path, failed: dict[int, str]) -> None:
    """The review flags exactly the frames the render failed, quoting the render's reasons,
    swaps no one there, raises no other flag there, and the page says so."""
    flagged = _will_fail(report)
    assert set(flagged) == set(failed), (flagged, failed)
    for frame in _quoted(report):
        assert failed[frame] in flagged[frame]
    for flag in report["flags"]:
        if flag["kind"] == "will_fail":
            assert flag["person"] is None and flag["sample"] is None
        else:
            assert not set(range(flag["first"], flag["last"] + 1)) & set(failed), flag
    for row in report["strip"]:
        if row["frame"] in failed:
            assert row["swapped"] == [] and row["filled"] == [] and row["flags"] == [
                "will_fail"]
    flagged_frames = {n for a, b in report["flagged_frames"] for n in range(a, b + 1)}
    assert set(failed) <= flagged_frames
    assert set(failed).isdisjoint(s["frame"] for s in report["samples"])
    page = (folder / "index.html").read_text(encoding="utf-8")
    assert "will_fail" in page and ">None<" not in page
    assert load_report(folder).flagged_frames  # what --frames flagged: reads back


@pytest.mark.parametrize("odd", ["size", "channels", "grey", "truncated", "garbage", "empty",
                                 "first"])
def test_the_review_flags_each_frame_the_render_fails_with_its_reason(
        media: Media, render_models: Path, render_cache: Path, cli_cache: Path,
        tmp_path: Path, capsys: pytest.CaptureFixture[str], odd: str) -> None:
    shot = _plates(media, tmp_path / "plates", odd)
    out = tmp_path / "out"
    out.mkdir()
    summary, _ = run_render(render_request(render_models, render_cache, media.source, shot,
                                           out / "o.#.png"))
    failed = dict(summary.failed)
    assert failed and (ODD in failed or odd == "first")
    report = _review(media, render_models, shot, tmp_path / "review", capsys)
    _check_review(report, tmp_path / "review", failed)


def test_a_long_shot_whose_odd_frame_is_not_sampled_is_still_flagged(
        media: Media, render_models: Path, render_cache: Path, cli_cache: Path,
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The issue's case: the odd frame between swapped frames, not on the contact sheet, was
    reported as swapped and filled in, with no flag."""
    shot = _plates(media, tmp_path / "plates", "size", count=26)
    out = tmp_path / "out"
    out.mkdir()
    summary, _ = run_render(render_request(render_models, render_cache, media.source, shot,
                                           out / "o.#.png"))
    assert [n for n, _ in summary.failed] == [ODD]
    report = _review(media, render_models, shot, tmp_path / "review", capsys)
    _check_review(report, tmp_path / "review", dict(summary.failed))
    person = next(p for p in report["people"] if p["swapped"])
    assert person["filled_frames"] == 0


def test_a_damaged_video_frame_is_flagged(media: Media, render_models: Path,
                                          render_cache: Path, cli_cache: Path, tmp_path: Path,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    clip = _damaged_video(media, tmp_path / "damaged.mkv")
    out = tmp_path / "out"
    out.mkdir()
    summary, _ = run_render(render_request(render_models, render_cache, media.source, clip,
                                           out / "o.#.png"))
    assert [n for n, _ in summary.failed] == [ODD + 1]
    report = _review(media, render_models, clip, tmp_path / "review", capsys)
    _check_review(report, tmp_path / "review", dict(summary.failed))


def test_render_report_flags_the_frames_it_failed(media: Media, render_models: Path,
                                                  cli_cache: Path, tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    """After a render (the analysis cached, the failed frames read again) its report flags
    what its summary lists as failed; a review run again from the cache does the same."""
    shot = _plates(media, tmp_path / "plates", "truncated")
    out = tmp_path / "out"
    out.mkdir()
    rc = cli.main(cli_args(render_models, media.source, shot, out / "o.#.png", "--report",
                           str(tmp_path / "report"), "--json"))
    captured = capsys.readouterr()
    assert rc == ExitCode.FRAMES_FAILED, captured.err
    summary = json.loads(captured.out.splitlines()[-1])["summary"]
    failed = {f["frame"]: f["error"] for f in summary["failed"]}
    report = json.loads((tmp_path / "report" / "report.json").read_text(encoding="utf-8"))
    assert list(failed) == [ODD]
    _check_review(report, tmp_path / "report", failed)
    again = _review(media, render_models, shot, tmp_path / "again", capsys)
    _check_review(again, tmp_path / "again", failed)


def test_what_the_render_accepts_is_not_flagged_and_a_gap_is_refused_by_both(
        media: Media, render_models: Path, render_cache: Path, cli_cache: Path,
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    deeper = _plates(media, tmp_path / "deeper", "uint16")
    out = tmp_path / "out"
    out.mkdir()
    summary, _ = run_render(render_request(render_models, render_cache, media.source, deeper,
                                           out / "o.#.png"))
    assert summary.failed == ()
    assert _will_fail(_review(media, render_models, deeper, tmp_path / "r1", capsys)) == {}
    gap = _plates(media, tmp_path / "gap", "gap")
    for command, target in (("render", tmp_path / "o2.#.png"), ("review", tmp_path / "r2")):
        args = cli_args(render_models, media.source, gap, target)
        assert cli.main([command, *args[1:]]) == ExitCode.USAGE
        assert "has gaps: frame 3 missing" in capsys.readouterr().err
    assert not (tmp_path / "r2").exists()
