"""swap_faces on part of a frame (pass 2's region frames): given just the box
Pipeline.swap_footprint says it reads and writes, it pastes exactly what it pastes into the
whole frame (bit for bit with OpenCV 4; OpenCV 5's crops cut from a box are a level off in
~0.2 % of values), with the pastes in frame pixels; with an enhancer, a pixel boost, a face
the frame edge cuts, and a swapper weight that embeds the target itself. A part smaller than
the footprint is refused."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import cv2
import numpy as np
import pytest

from facefuse.config import Settings
from facefuse.io.images import read_image
from facefuse.pipeline import Pipeline
from facefuse.types import Face, FramePart, Roi


def _moved(face: Face, dx: float, dy: float) -> Face:
    return replace(face, bbox_xyxy=face.bbox_xyxy + (dx, dy, dx, dy), kps5=face.kps5 + (dx, dy),
                   embedding=None)


def _assert_same(got: np.ndarray, want: np.ndarray) -> None:
    if cv2.__version__.startswith("4."):  # shift-invariant warps: bit for bit
        np.testing.assert_array_equal(got, want)
    else:  # OpenCV 5: a level off in ~0.2 % of values
        assert np.mean(got != want) < 0.002
        assert np.abs(got.astype(int) - want).max(initial=0) <= 2


@pytest.mark.parametrize("changes", [
    {}, {"pixel_boost": 256}, {"enhancer": True}, {"swapper_weight": 0.8},
], ids=["plain", "pixel-boost", "enhancer", "own-embedding"])
def test_a_part_as_large_as_the_footprint_swaps_as_the_whole_frame(
        settings: Settings, contract_dir: Path, testdata: Path, changes: dict) -> None:
    if changes.get("enhancer"):
        changes = {"enhancer": str(contract_dir / "identity_restorer.onnx")}
    frame = read_image(testdata / "media" / "astronaut.png")
    height, width = frame.shape[:2]
    with Pipeline(replace(settings, **changes)) as pipeline:
        identity = pipeline.source_identity([testdata / "media" / "obama.jpg"])
        face = pipeline.detect(frame)[0]
        x0, y0 = (float(v) for v in face.bbox_xyxy[:2])
        # one face inside, one moved so its crops reach past the top-left corner
        targets = [_moved(face, 0, 0), _moved(face, -x0 + 5, -y0 + 10)]
        whole = pipeline.swap_faces(frame, identity, targets)
        box = pipeline.swap_footprint(targets, width, height)
        assert box is not None and (box.x0, box.y0) == (0, 0) and box != Roi(0, 0, width, height)
        part = np.ascontiguousarray(frame[box.slices()])
        result = pipeline.swap_faces(part, identity, targets, in_place=True,
                                     part=FramePart(box, width, height))
    assert [p.roi for p in result.pasted] == [p.roi for p in whole.pasted]
    _assert_same(part, whole.frame[box.slices()])
    assert result.matte is not None and whole.matte is not None
    _assert_same(result.matte, whole.matte[box.slices()])
    outside = np.ones(frame.shape[:2], bool)
    outside[box.slices()] = False
    assert np.array_equal(whole.frame[outside], frame[outside]), "the footprint is too small"


def test_a_part_smaller_than_the_footprint_is_refused(settings: Settings,
                                                     testdata: Path) -> None:
    frame = read_image(testdata / "media" / "astronaut.png")
    height, width = frame.shape[:2]
    with Pipeline(settings) as pipeline:
        identity = pipeline.source_identity([testdata / "media" / "obama.jpg"])
        face = pipeline.detect(frame)[0]
        box = pipeline.swap_footprint([face], width, height)
        assert box is not None
        small = Roi(box.x0 + 4, box.y0, box.x1, box.y1)
        with pytest.raises(ValueError, match="outside the frame part"):
            pipeline.swap_faces(np.ascontiguousarray(frame[small.slices()]), identity, [face],
                                in_place=True, part=FramePart(small, width, height))
