"""Reference selection with a real recogniser: two people in one image, the right one changes.

MobileFaceNet (128-d, real identities) is padded with zeros to 512-d so that it meets the
inswapper contract; cosine similarities are unchanged by the padding.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import cv2
import numpy as np
import onnx
import pytest
from onnx import helper

from facefuse.config import Settings
from facefuse.pipeline import Pipeline
from tests import contract_models


def padded_recogniser(source: Path, target: Path, width: int = 512) -> Path:
    model = onnx.load(str(source))
    graph = model.graph
    (output,) = graph.output
    dim = output.type.tensor_type.shape.dim[1].dim_value
    pad = helper.make_node("Pad", [output.name], ["embedding_padded"], mode="constant",
                           pads=[0, 0, 0, width - dim])  # opset 10: pads is an attribute
    graph.node.append(pad)
    graph.output.pop()
    graph.output.append(helper.make_tensor_value_info("embedding_padded", onnx.TensorProto.FLOAT,
                                                      [1, width]))
    onnx.save(model, str(target))
    return target


@pytest.fixture(scope="module")
def two_people(testdata: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, int]:
    root = tmp_path_factory.mktemp("two-people")
    left = cv2.imread(str(testdata / "media" / "obama.jpg"))
    right = cv2.imread(str(testdata / "media" / "biden.jpg"))
    height = 400
    left, right = (cv2.resize(im, (int(im.shape[1] * height / im.shape[0]), height))
                   for im in (left, right))
    cv2.imwrite(str(root / "both.png"), np.hstack([left, right]))
    padded_recogniser(testdata / "models" / "mobilefacenet_128d.onnx",
                                   root / "mobilefacenet_512.onnx")
    contract_models.colour_swapper(root / "colour_swapper.onnx")
    return root, left.shape[1]


def _settings(root: Path, testdata: Path, reference: str, similarity: float) -> Settings:
    return Settings(
        detector=str(testdata / "models" / "face_detection_yunet_2023mar.onnx"),
        recogniser=str(root / "mobilefacenet_512.onnx"),
        swapper=str(root / "colour_swapper.onnx"), selector="reference",
        reference_images=(testdata / "media" / reference,), similarity=similarity,
        providers=("CPUExecutionProvider",), models_dir=root, cache_dir=root / "cache",
        offline=True)


@pytest.mark.parametrize("reference,side", [("biden.jpg", "right"), ("obama.jpg", "left")])
def test_reference_picks_the_matching_person(two_people, testdata, reference, side):
    root, split_x = two_people
    frame = cv2.imread(str(root / "both.png"))
    with Pipeline(_settings(root, testdata, reference, 0.4)) as pipeline:
        result = pipeline.process_frame(frame, pipeline.source_identity(
            [testdata / "media" / "astronaut.png"]))
    assert len(result.faces) == 2 and len(result.swapped) == 1
    centre_x = float(result.swapped[0].kps5[:, 0].mean())
    assert (centre_x > split_x) == (side == "right")
    untouched = slice(0, split_x) if side == "right" else slice(split_x, None)
    np.testing.assert_array_equal(result.frame[:, untouched], frame[:, untouched])
    assert not np.array_equal(result.frame, frame)


def test_nobody_is_swapped_when_no_face_is_similar_enough(two_people, testdata):
    root, _ = two_people
    frame = cv2.imread(str(root / "both.png"))
    settings = _settings(root, testdata, "biden.jpg", 0.4)
    with Pipeline(replace(settings, reference_images=(testdata / "media" / "astronaut.png",))) as p:
        result = p.process_frame(frame, p.source_identity([testdata / "media" / "obama.jpg"]))
    assert len(result.faces) == 2 and result.swapped == ()
    np.testing.assert_array_equal(result.frame, frame)


@pytest.mark.parametrize("selector,count", [("many", 2), ("one", 1)])
def test_many_swaps_everyone_and_one_the_largest(two_people, testdata, selector, count):
    root, _ = two_people
    frame = cv2.imread(str(root / "both.png"))
    settings = replace(_settings(root, testdata, "biden.jpg", 0.4), selector=selector,
                       reference_images=())
    with Pipeline(settings) as pipeline:
        result = pipeline.process_frame(frame, pipeline.source_identity(
            [testdata / "media" / "astronaut.png"]))
    assert len(result.faces) == 2 and len(result.swapped) == count
    assert result.swapped[0].area_px == max(face.area_px for face in result.faces)
