"""Pass 2 pastes into the decoded frame itself and skips the matte when none is written:
the pixels must be exactly those of the copying path, overlapping faces included."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from facefuse.config import Settings
from facefuse.io.images import read_image
from facefuse.pipeline import Pipeline
from facefuse.types import Face


def _shifted(face: Face, dx: float) -> Face:
    return replace(face, bbox_xyxy=face.bbox_xyxy + (dx, 0, dx, 0), kps5=face.kps5 + (dx, 0))


@pytest.fixture()
def swapped(settings: Settings, testdata: Path) -> dict[str, object]:
    frame = read_image(testdata / "media" / "astronaut.png")
    pristine = frame.copy()
    with Pipeline(settings) as pipeline:
        identity = pipeline.source_identity([testdata / "media" / "obama.jpg"])
        face = pipeline.detect(frame)[0]
        targets = [face, _shifted(face, 0.4 * float(face.bbox_xyxy[2] - face.bbox_xyxy[0]))]
        copied = pipeline.swap_faces(frame, identity, targets)
        own = frame.copy()
        in_place = pipeline.swap_faces(own, identity, targets, in_place=True, matte=False)
        one_by_one = frame.copy()  # each face cut after the one before was pasted
        for target in targets:
            pipeline.swap_faces(one_by_one, identity, [target], in_place=True, matte=False)
    return {"frame": frame, "pristine": pristine, "copied": copied, "own": own,
            "in_place": in_place, "one_by_one": one_by_one}


def test_in_place_gives_the_copying_path_s_pixels(swapped: dict) -> None:
    copied, in_place = swapped["copied"], swapped["in_place"]
    assert in_place.frame is swapped["own"]
    np.testing.assert_array_equal(in_place.frame, copied.frame)
    assert not np.array_equal(copied.frame, swapped["pristine"]), "nothing was pasted"
    np.testing.assert_array_equal(swapped["frame"], swapped["pristine"])  # the copy path's input


def test_every_crop_is_cut_before_any_paste(swapped: dict) -> None:
    # the faces overlap: cutting the second after pasting the first would change its pixels
    assert not np.array_equal(swapped["one_by_one"], swapped["copied"].frame)


def test_the_matte_is_made_only_when_asked(swapped: dict) -> None:
    copied = swapped["copied"]
    assert swapped["in_place"].matte is None
    assert copied.matte is not None and copied.matte.dtype == np.float32
    assert copied.matte.shape == swapped["frame"].shape[:2] and copied.matte.max() > 0.99
