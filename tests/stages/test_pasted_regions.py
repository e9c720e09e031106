"""FrameResult.pasted says where a frame changed: every pixel that differs from the input lies
under a pasted mask > 0, for two overlapping faces and with the enhancer pasting too; the
masks are ROI-sized float32, never full-frame arrays."""

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


@pytest.mark.parametrize("enhancer", [False, True])
def test_every_changed_pixel_lies_under_a_pasted_mask(settings: Settings, contract_dir: Path,
                                                      testdata: Path, enhancer: bool) -> None:
    if enhancer:
        settings = replace(settings, enhancer=str(contract_dir / "identity_restorer.onnx"))
    frame = read_image(testdata / "media" / "astronaut.png")
    with Pipeline(settings) as pipeline:
        identity = pipeline.source_identity([testdata / "media" / "obama.jpg"])
        face = pipeline.detect(frame)[0]
        targets = [face, _shifted(face, 0.4 * float(face.bbox_xyxy[2] - face.bbox_xyxy[0]))]
        result = pipeline.swap_faces(frame, identity, targets, matte=False)
    assert len(result.pasted) == (4 if enhancer else 2)  # a swap (and a restoration) a face
    covered = np.zeros(frame.shape[:2], bool)
    for paste in result.pasted:
        assert paste.mask.dtype == np.float32
        assert paste.mask.shape == (paste.roi.y1 - paste.roi.y0, paste.roi.x1 - paste.roi.x0)
        assert paste.mask.shape != frame.shape[:2]
        covered[paste.roi.slices()] |= paste.mask > 0
    changed = np.any(result.frame != frame, axis=2)
    assert changed.sum() > 1000
    assert not (changed & ~covered).any(), "pixels changed outside every pasted mask"
