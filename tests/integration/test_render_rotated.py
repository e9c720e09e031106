"""A phone clip stored sideways (display rotation 90, 180 or 270) rendered to h264: its decoded
pictures pass through to the encoder as an upright clip's do (io.video.passthrough), the pastes
turned back to the stored orientation, and pass 2 converts only the stored box of each face
(io.video.frame). The encoder gets the decoded planes outside the pasted samples and the
whole-frame path's (every frame turned back and converted whole) inside them; region frames
give the same planes as whole-frame reading; the output keeps the display rotation and reads
back upright. The clip's frames are tests/integration/test_render_regions.py's (no face, one,
two, one at the frame edge), stored turned; the planes are captured where VideoSink composes
them, and --crf 0 makes the file hold them.
"""

from __future__ import annotations

from collections.abc import Callable
from fractions import Fraction
from pathlib import Path
from typing import Any

import av
import numpy as np
import pytest

from facefuse.io.video import DecodedFrame, VideoSource
from facefuse.io.video import write as video_write
from facefuse.io.video.yuv import PLANAR_8BIT, picture_planes
from facefuse.io.video.yuv_write import bgr_to_picture
from facefuse.shot.run import pass_two
from facefuse.shot.run.render import render as render_shot
from tests import media_factory
from tests.integration.passthrough_clips import stored_record
from tests.integration.test_render_regions import (
    FRAMES,
    NO_FACE,
    REGIONS_FROM,
    SIZE,
    _assert_same_pixels,
    _frame,
    _request,
)
from tests.media_factory import read_marker
from tests.render_media import arrays, face_photo

_BT709, _LIMITED = 1, 1


def _rotated_clip(path: Path, face: np.ndarray, rotation: int) -> Path:
    """An h264 yuv420p BT.709 clip whose stored pictures are _frame(i) turned by -rotation, with
    a display matrix (counter-clockwise `rotation` degrees) that shows them upright."""
    turns = rotation // 90
    stored_size = SIZE if turns % 2 == 0 else SIZE[::-1]
    with av.open(str(path), "w") as container:
        stream = media_factory._video_stream(container, "h264", Fraction(24), stored_size, 4,
                                             None)
        stream.codec_context.colorspace, stream.codec_context.color_range = _BT709, _LIMITED
        stream.set_display_rotation(rotation)
        for i in range(FRAMES):
            stored = np.ascontiguousarray(np.rot90(_frame(i, face), -turns))
            picture = bgr_to_picture(stored, "yuv420p", _BT709, False)
            assert picture is not None
            picture.pts = i
            container.mux(stream.encode(picture))
        container.mux(stream.encode(None))
    return path


class Capture:
    """Per frame VideoSink composes for the encoder: its planes, the pasted pixels (mask > 0)
    and the whole-frame path's planes (the upright frame, completed as the reader converts it
    where only a region came, turned back and converted whole), both in the stored
    orientation; and the frames pass 2 converted as regions."""

    def __init__(self, patched: pytest.MonkeyPatch) -> None:
        self.planes: list[list[np.ndarray]] = []
        self.pasted: list[np.ndarray] = []
        self.whole: list[list[np.ndarray]] = []
        self.regions: list[int] = []
        compose, timed = video_write.compose, pass_two._timed

        def composing(picture: Any, frame: Any, pasted: Any, target: Any, *rest: Any) -> Any:
            out = compose(picture, frame, pasted, target, *rest)
            planes, mask, whole = stored_record(out, picture, frame, pasted, target, rest,
                                                _BT709, False)
            self.planes.append(planes)
            self.pasted.append(mask)
            self.whole.append(whole)
            return out

        def reading(*args: Any) -> Any:  # the frames left for pass 2 to convert by parts
            for number, frame, ms in timed(*args):
                if getattr(frame, "by_parts", False):
                    self.regions.append(number)
                yield number, frame, ms

        patched.setattr(video_write, "compose", composing)
        patched.setattr(pass_two, "_timed", reading)


def _render(monkeypatch: pytest.MonkeyPatch, request: Any, how: str) -> Capture:
    """render() with the planes captured. how: "regions" (as renders run), "whole-read" (pass 2
    converts whole frames, the writer still passes pictures through)."""
    with monkeypatch.context() as patched:
        if how != "regions":
            patched.setattr(DecodedFrame, "by_parts", property(lambda _: False))
        capture = Capture(patched)
        summary = render_shot(request, lambda _report: None)
    assert summary.swapped == FRAMES - len(NO_FACE) and not summary.failed
    return capture


def _planes(path: Path) -> list[list[np.ndarray]]:
    """Every picture's Y, Cb, Cr planes (copies), in presentation order (stored orientation)."""
    with av.open(str(path)) as container:
        pictures = sorted(container.decode(video=0), key=lambda f: f.pts)
        return [[p.copy() for p in picture_planes(f)] for f in pictures]


def _footprints(changed: np.ndarray) -> np.ndarray:
    sx, sy = PLANAR_8BIT["yuv420p"]
    h, w = changed.shape
    return changed.reshape(h // sy, sy, w // sx, sx).any(axis=(1, 3))


@pytest.fixture(scope="module")
def rotated(tmp_path_factory: pytest.TempPathFactory, testdata: Path) -> Callable[[int], Path]:
    """The clip of a rotation (made once for the module)."""
    made: dict[int, Path] = {}

    def clip(rotation: int) -> Path:
        if rotation not in made:
            folder = tmp_path_factory.mktemp(f"rotated{rotation}")
            made[rotation] = _rotated_clip(folder / "phone.mp4", face_photo(testdata), rotation)
        return made[rotation]

    return clip


@pytest.mark.parametrize("rotation", [90, 180, 270])
def test_a_rotated_clip_passes_through_exact_outside_and_whole_frame_inside(
        rotated: Callable[[int], Path], rotation: int, testdata: Path, render_models: Path,
        render_cache: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    clip = rotated(rotation)
    out = tmp_path / "out.mp4"
    through = _render(monkeypatch, _request(testdata, render_models, render_cache, clip, out),
                      "regions")
    assert set(range(REGIONS_FROM, FRAMES)) <= set(through.regions), through.regions
    assert len(through.planes) == FRAMES
    decoded, written = _planes(clip), _planes(out)
    for n in range(FRAMES):
        for index, (got, plane, source, today) in enumerate(zip(
                through.planes[n], written[n], decoded[n], through.whole[n], strict=True)):
            np.testing.assert_array_equal(plane, got)  # --crf 0 is lossless
            changed = through.pasted[n] if index == 0 else _footprints(through.pasted[n])
            assert got.shape == changed.shape
            np.testing.assert_array_equal(got[~changed], source[~changed])  # the decoded input
            np.testing.assert_array_equal(got[changed], today[changed])  # 0 values differ
            assert changed.any() == (n not in NO_FACE)
            assert not changed.any() or (got[changed] != source[changed]).mean() > 0.5
    # the whole-frame path's round trip changes samples far from the faces; these keep them
    assert any(not np.array_equal(w[1], d[1]) for w, d in zip(through.whole, decoded))
    with VideoSource(out) as source, VideoSource(clip) as original:
        assert source.info.rotation_deg == rotation  # the display matrix is kept
        assert (source.info.width, source.info.height) == SIZE
        for (number, frame), (_, before) in zip(arrays(source.read(range(1, FRAMES + 1))),
                                                arrays(original.read(range(1, FRAMES + 1))),
                                                strict=True):
            assert isinstance(frame, np.ndarray) and frame.shape == (SIZE[1], SIZE[0], 3)
            assert read_marker(frame) == number - 1  # upright
            assert isinstance(before, np.ndarray)
            far = (slice(0, 30), slice(SIZE[0] - 200, SIZE[0]))  # no face comes near
            np.testing.assert_array_equal(frame[far], before[far])


def test_rotated_region_frames_give_the_planes_of_whole_frame_reading(
        rotated: Callable[[int], Path], testdata: Path, render_models: Path,
        render_cache: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """One turn (the others are held to the same references by the test above)."""
    clip = rotated(90)
    runs = {how: _render(monkeypatch, _request(testdata, render_models, render_cache, clip,
                                               tmp_path / f"{how}.mp4", "identity"), how)
            for how in ("regions", "whole-read")}
    assert set(range(REGIONS_FROM, FRAMES)) <= set(runs["regions"].regions)
    assert runs["whole-read"].regions == []
    assert len(runs["regions"].planes) == len(runs["whole-read"].planes) == FRAMES
    for n, (planes, expected) in enumerate(zip(runs["regions"].planes,
                                               runs["whole-read"].planes, strict=True)):
        for plane, reference in zip(planes, expected, strict=True):
            _assert_same_pixels(plane, reference, f"frame {n}")
