"""`--keep-yuv`: an ffv1 or rawvideo render keeps the input video's own planar YUV pictures.

Real renders (YuNet, the colour swapper) of 4:2:0, full-range 4:2:0 (yuvj420p), 4:2:2, 4:4:4
and 10-bit clips, upright and sideways (a phone clip, a rotated HEVC Main10 one): the file's
planes are the decoded input's exactly outside the pasted footprints and, inside them, what the
h264 passthrough writer's conversion gives (io.video.yuv_write.bgr_to_picture of the frame the
writer was given, as tests/integration/test_render_passthrough.py holds h264 renders to); the
stream reads back with the input's layout, colour tags and display rotation. Each refusal is one
sentence and exit 2 through the command line; a render killed mid-write leaves no file under the
final name, and the render run again writes a complete one.
"""

from __future__ import annotations

import logging
import signal
from pathlib import Path
from typing import Any

import av
import cv2
import numpy as np
import pytest

from facefuse.cli import main as cli  # imported here, while sys.stderr is pytest's own stream
from facefuse.errors import ExitCode
from facefuse.io.video import VideoSink, VideoSource
from facefuse.io.video import write as video_write
from facefuse.io.video.yuv import PLANAR, picture_planes
from facefuse.shot.contract.request import OutputSpec
from tests.integration.farm_helpers import (
    CLIP_FRAMES,
    Farm,
    collect,
    run,
    start,
    wait_for_lines,
)
from tests.integration.passthrough_clips import (
    BT709,
    DEEP_FRAMES,
    DEEP_WITHOUT_FACE,
    FRAMES,
    FULL,
    WITHOUT_FACE,
    bt709_clip,
    deep_clip,
    planes_of,
    stored_record,
)
from tests.integration.render_helpers import Media, one_line_error
from tests.integration.test_footage import PHONE_FRAMES, phone_clip
from tests.render_media import cli_args, face_frame, face_photo, render_request, run_render


class Composed:
    """Per frame VideoSink composed for the encoder (stored orientation): its planes, where
    the pastes' masks are > 0, and the planes of the h264 passthrough writer's conversion of
    the whole frame (bgr_to_picture with the stream's format and tags)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.planes: list[list[np.ndarray]] = []
        self.pasted: list[np.ndarray] = []
        self.whole: list[list[np.ndarray]] = []
        compose = video_write.compose

        def composing(picture: Any, frame: Any, pasted: Any, target: Any, *rest: Any) -> Any:
            out = compose(picture, frame, pasted, target, *rest)
            planes, mask, whole = stored_record(out, picture, frame, pasted, target, rest,
                                                target.colorspace, target.color_range == FULL)
            self.planes.append(planes)
            self.pasted.append(mask)
            self.whole.append(whole)
            return out

        monkeypatch.setattr(video_write, "compose", composing)


def _footprint(mask: np.ndarray, fmt: str, index: int) -> np.ndarray:
    """The samples of plane `index` a paste mask touches."""
    if index == 0:
        return mask
    across, down = PLANAR[fmt]
    height, width = mask.shape
    return mask.reshape(height // down, down, width // across, across).any(axis=(1, 3))


def _clip(kind: str, folder: Path, face: np.ndarray) -> tuple[Path, int, tuple[int, ...]]:
    """(clip, frames, frames without a face) of a kind of source."""
    if kind in ("yuv420p", "yuv422p", "yuv444p"):
        return bt709_clip(folder / "shot.mp4", face, pixel_format=kind), FRAMES, WITHOUT_FACE
    if kind == "yuvj420p":
        return (bt709_clip(folder / "shot.mp4", face, BT709, FULL, "yuvj420p"), FRAMES,
                WITHOUT_FACE)
    if kind == "phone":  # untagged h264 4:2:0 stored sideways
        return phone_clip(folder / "phone.mp4", face), PHONE_FRAMES, ()
    turns = 1 if kind == "hevc10-rotated" else 0
    return (deep_clip(folder / "shot.mkv", face, "prores_422" if kind == "prores10" else "h265",
                      turns=turns), DEEP_FRAMES, DEEP_WITHOUT_FACE)


@pytest.mark.parametrize(("kind", "codec", "fmt"), [
    ("yuv420p", "ffv1", "yuv420p"), ("yuvj420p", "ffv1", "yuv420p"),
    ("yuv422p", "rawvideo", "yuv422p"), ("yuv444p", "ffv1", "yuv444p"),
    ("prores10", "ffv1", "yuv422p10le"), ("phone", "rawvideo", "yuv420p"),
    ("hevc10-rotated", "ffv1", "yuv420p10le"),
])
def test_a_kept_yuv_render_is_the_input_outside_the_faces_and_today_inside(
        testdata: Path, render_models: Path, render_cache: Path, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture, kind: str,
        codec: str, fmt: str) -> None:
    clip, frames, without_face = _clip(kind, tmp_path, face_photo(testdata))
    out = tmp_path / "out.mkv"
    composed = Composed(monkeypatch)
    request = render_request(render_models, render_cache, testdata / "media" / "obama.jpg", clip,
                             OutputSpec(str(out), codec=codec, keep_yuv=True), swapper="colour")
    with caplog.at_level(logging.DEBUG, logger="facefuse.io.video.write"):
        summary, _ = run_render(request)
    assert summary.failed == () and summary.swapped == frames - len(without_face)
    assert not any("whole" in r.getMessage() for r in caplog.records)
    decoded, written = planes_of(clip), planes_of(out)
    assert len(composed.planes) == len(written) == frames
    for n in range(frames):
        for index, (got, plane, source, today) in enumerate(zip(
                written[n], composed.planes[n], decoded[n], composed.whole[n], strict=True)):
            np.testing.assert_array_equal(got, plane)  # lossless: the file holds what was composed
            inside = _footprint(composed.pasted[n], fmt, index)
            assert got.shape == inside.shape == source.shape
            np.testing.assert_array_equal(got[~inside], source[~inside])  # the input, exactly
            np.testing.assert_array_equal(got[inside], today[inside])  # h264's conversion
            assert inside.any() == (n not in without_face)
    with VideoSource(clip) as before, VideoSource(out) as after:
        assert after.info.pixel_format == fmt
        assert after.info.codec == codec
        assert after.info.rotation_deg == before.info.rotation_deg  # plays upright
        assert (after.info.width, after.info.height) == (before.info.width, before.info.height)
        tags, kept = before.info.colour_tags, after.info.colour_tags
        assert tags is not None and kept is not None
        full = FULL if before.info.pixel_format.startswith("yuvj") else tags[1]
        assert kept == (tags[0], full, *tags[2:])  # matrix, range, primaries, transfer


# --- refusals through the command line --------------------------------------------------------

def _ffv1_clip(path: Path, fmt: str) -> Path:
    """A 3-frame FFV1 .mkv in `fmt` (RGB, alpha, 12-bit), written straight with PyAV."""
    with av.open(str(path), "w") as container:
        stream = container.add_stream("ffv1", rate=24)
        stream.width, stream.height, stream.pix_fmt = 64, 48, fmt
        for i in range(3):
            picture = av.VideoFrame.from_ndarray(face_frame(i, None, (64, 48)), format="bgr24")
            picture = picture.reformat(format=fmt)
            picture.pts = i
            container.mux(stream.encode(picture))
        container.mux(stream.encode(None))
    return path


@pytest.fixture()
def refused(media: Media, render_models: Path, cli_cache: Path,
            capsys: pytest.CaptureFixture[str]):
    """run(input, output, *extra) -> the one error line of a render that must exit 2, having
    written nothing."""
    def run(input: str | Path, output: Path, *extra: str) -> str:
        rc = cli.main(cli_args(render_models, media.source, input, output, *extra))
        captured = capsys.readouterr()
        assert rc == ExitCode.USAGE, captured.err
        assert not output.parent.exists() or not any(output.parent.glob(output.stem + "*"))
        return one_line_error(captured.err)
    return run


@pytest.mark.parametrize(("source", "output", "extra", "words"), [
    ("clip", "out.mkv", ("--codec", "h264"), "applies to the lossless codecs ffv1 and rawvideo"),
    ("clip", "out.mov", ("--codec", "ffv1"), "writes ffv1 in .mkv only"),
    ("clip", "out.mov", ("--codec", "rawvideo"), "no tag for planar YUV raw video"),
    ("clip", "out.####.png", ("--codec", "ffv1"), "is an image sequence; leave --keep-yuv out"),
    ("clip", "out.mkv", ("--codec", "ffv1", "--colorspace", "Linear Rec.709 (sRGB)"),
     "colour-transformed"),
    ("sequence", "out.mkv", ("--codec", "ffv1"), "is an image sequence"),
    ("bgr0", "out.mkv", ("--codec", "ffv1"), "is bgr0 (RGB)"),
    ("yuva420p", "out.mkv", ("--codec", "ffv1"), "is yuva420p (with alpha)"),
    ("yuv420p12le", "out.mkv", ("--codec", "ffv1"), "is yuv420p12le (12-bit)"),
    ("yuv444p", "out.mkv", ("--codec", "rawvideo"), "choose --codec ffv1"),
], ids=["h264", "ffv1-mov", "rawvideo-mov", "sequence-output", "colour-transform",
        "sequence-input", "rgb", "alpha", "12-bit", "rawvideo-444"])
def test_what_cannot_keep_yuv_is_refused_in_one_sentence_with_exit_2(
        refused, media: Media, tmp_path: Path, source: str, output: str,
        extra: tuple[str, ...], words: str) -> None:
    if source == "clip":
        clip: str | Path = media.clip
    elif source == "sequence":
        for n in (1, 2):
            cv2.imwrite(str(tmp_path / f"in.{n:04d}.png"), face_frame(n, None))
        clip = str(tmp_path / "in.####.png")
    else:
        clip = _ffv1_clip(tmp_path / f"{source}.mkv", source)
    out = tmp_path / "out" / output
    line = refused(clip, out, "--keep-yuv", *extra)
    assert words in line and "--keep-yuv" in line, line


def test_a_source_whose_first_picture_cannot_pass_through_is_refused_by_the_sink(
        tmp_path: Path) -> None:
    """What only a frame tells (here an engine frame, without its decoded picture)."""
    clip = bt709_clip(tmp_path / "shot.mp4", np.full((64, 64, 3), 128, np.uint8))
    with VideoSource(clip) as source:
        sink = VideoSink(tmp_path / "out.mkv", source.info, codec="ffv1", keep_yuv=True)
        _, frame = next(iter(source.read([1])))
        with pytest.raises(Exception, match="do not come with a decoded planar YUV picture"):
            sink.write(frame.to_ndarray())
    assert sorted(p.name for p in tmp_path.iterdir()) == ["shot.mp4"]


# --- killed, then run again -------------------------------------------------------------------

def test_a_killed_keep_yuv_render_leaves_no_file_and_a_rerun_writes_a_whole_one(
        farm: Farm, tmp_path: Path) -> None:
    """SIGKILL mid-write: only the hidden temporary may remain, never out.mkv; the render run
    again (its analysis cached) sweeps it and writes every frame, the clip's yuvj444p kept as
    yuv444p tagged full range."""
    out = tmp_path / "out"
    out.mkdir()
    command = farm.command(out / "out.mkv", "--codec", "ffv1", "--keep-yuv")
    log = tmp_path / "killed"
    proc = start(farm, command, log)
    wait_for_lines(proc, log, 20)
    assert any(p.name.endswith(".tmp.mkv") for p in out.iterdir()), "being written"
    proc.send_signal(signal.SIGKILL)
    assert proc.wait(timeout=30) == -signal.SIGKILL
    killed = collect(proc.returncode, log)
    assert killed.lines and not any("summary" in line for line in killed.lines)
    assert not (out / "out.mkv").exists()
    again = run(farm, command, tmp_path / "again")
    assert again.returncode == 0, again.stderr
    assert again.summary["frames"] == CLIP_FRAMES and again.summary["failed"] == []
    assert [p.name for p in out.iterdir()] == ["out.mkv"]
    with av.open(str(out / "out.mkv")) as container:
        cc = container.streams.video[0].codec_context
        assert (cc.format.name, cc.color_range) == ("yuv444p", FULL)
        pictures = list(container.decode(video=0))
    assert len(pictures) == CLIP_FRAMES
    with av.open(str(farm.clip)) as container:
        first = picture_planes(next(container.decode(video=0)))
    corner = (slice(0, 8), slice(-8, None))  # no face comes near
    for got, plane in zip(picture_planes(pictures[0]), first, strict=True):
        np.testing.assert_array_equal(got[corner], plane[corner])

