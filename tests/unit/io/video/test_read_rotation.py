"""Display-matrix rotation of video inputs (issue 8, item 12): phone footage stored sideways is
delivered upright, its size and rotation are reported (VideoInfo, VideoTiming) for a video output
to re-apply, and a display matrix facefuse cannot follow (mirrored, not a right angle) is refused
with one sentence instead of being analysed the wrong way round.

Clips are written here with PyAV directly: the stored pictures are marked frames turned so that
the display rotation brings them back upright, and every delivered frame is compared with the
upright original (within the codec's loss) and read by its burned-in marker.
"""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path

import av
import numpy as np
import pytest

from facefuse.errors import InputError
from facefuse.io.video import VideoSource
from facefuse.shot.contract.inputs import open_input
from tests import media_factory
from tests.media_factory import marked_frame, read_marker
from tests.render_media import arrays

UPRIGHT = (320, 240)  # (width, height) players show
FRAMES = 4


def sideways_clip(path: Path, rotation: float, codec: str = "mjpeg", hflip: bool = False,
                  turns: int | None = None) -> Path:
    """A clip whose stored pictures are marked_frame(i) turned by -rotation (so the display
    matrix, counter-clockwise `rotation` degrees, shows them upright)."""
    k = -round(rotation / 90) if turns is None else turns
    stored_size = UPRIGHT if k % 2 == 0 else UPRIGHT[::-1]
    with av.open(str(path), "w") as container:
        stream = media_factory._video_stream(container, codec, Fraction(24), stored_size, 2, None)
        stream.set_display_rotation(rotation, hflip=hflip)
        for i in range(FRAMES):
            stored = np.ascontiguousarray(np.rot90(marked_frame(i, UPRIGHT), k))
            picture = av.VideoFrame.from_ndarray(stored, format="bgr24")
            picture = picture.reformat(format=stream.pix_fmt)
            picture.pts = i
            container.mux(stream.encode(picture))
        container.mux(stream.encode(None))
    return path


@pytest.mark.parametrize(("codec", "suffix"), [("mjpeg", ".mov"), ("h264", ".mp4")])
@pytest.mark.parametrize(("rotation", "reported"), [(90, 90), (-90, 270), (180, 180), (0, 0)])
def test_frames_arrive_upright_with_the_rotation_reported(tmp_path: Path, codec: str,
                                                          suffix: str, rotation: int,
                                                          reported: int) -> None:
    path = sideways_clip(tmp_path / f"phone{suffix}", rotation, codec)
    with VideoSource(path) as source:
        info = source.info
        frames = list(arrays(source.read(range(1, FRAMES + 1))))
    assert (info.width, info.height, info.rotation_deg) == (*UPRIGHT, reported)
    assert len(frames) == FRAMES
    for number, frame in frames:
        assert isinstance(frame, np.ndarray)
        assert frame.shape == (UPRIGHT[1], UPRIGHT[0], 3) and frame.flags.c_contiguous
        assert read_marker(frame) == number - 1
        error = np.abs(frame.astype(np.int16) - marked_frame(number - 1, UPRIGHT)).mean()
        assert error < 4, f"frame {number} is not the upright picture (mean error {error:.1f})"


def test_video_timing_carries_the_rotation_for_a_video_output(tmp_path: Path) -> None:
    shot = open_input(str(sideways_clip(tmp_path / "phone.mov", -90)))
    try:
        timing = shot.video_timing(shot.frame_numbers[1:3])
        assert timing.source is not None and timing.source.rotation_deg == 270
        _, frame = next(arrays(shot.read([2])))
        assert isinstance(frame, np.ndarray)
        # what a video output stores: the input's stored picture, under the same display matrix
        turns = timing.source.rotation_deg // 90
        stored = np.rot90(frame, -turns)
        assert stored.shape[:2] == (UPRIGHT[0], UPRIGHT[1])
        assert read_marker(np.ascontiguousarray(np.rot90(stored, turns))) == 1
    finally:
        shot.close()


def test_unrotated_video_reports_no_rotation(tmp_path: Path) -> None:
    path = media_factory.make_marked_clip(tmp_path / "plain.mp4", frames=3)
    with VideoSource(path) as source:
        assert source.info.rotation_deg == 0


@pytest.mark.parametrize(("rotation", "hflip", "word"), [(90, True, "mirrors"),
                                                         (45, False, "turns")])
def test_a_display_matrix_facefuse_cannot_follow_is_refused(tmp_path: Path, rotation: int,
                                                            hflip: bool, word: str) -> None:
    path = sideways_clip(tmp_path / "odd.mov", rotation, hflip=hflip, turns=0)
    with pytest.raises(InputError) as caught:
        VideoSource(path)
    message = str(caught.value)
    assert word in message and "re-encode it upright" in message and "\n" not in message
