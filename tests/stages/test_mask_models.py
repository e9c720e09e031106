"""XsegOccluder and BisenetParser against contract models: what they feed, what they return."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from facefuse.errors import InputError
from facefuse.models.manifest import Manifest, load_manifest
from facefuse.runtime.signature import Signature, require
from facefuse.stages.mask import BisenetParser, XsegOccluder
from tests import contract_models as cm
from tests.stages.crops import random_crop


@pytest.fixture(scope="module")
def manifest() -> Manifest:
    return load_manifest()


@pytest.fixture(scope="module")
def models(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("mask-models")


def test_the_contract_models_meet_their_families(models: Path, manifest: Manifest) -> None:
    built = {"xseg": [cm.xseg_rectangle(models / "r.onnx", (0, 0, 8, 8)),
                      cm.xseg_channel(models / "c.onnx")],
             "bisenet": [cm.bisenet_labels(models / "l.onnx", np.zeros((64, 64), int)),
                         cm.bisenet_threshold(models / "t.onnx")]}
    for family, paths in built.items():
        for path in paths:
            require(Signature.of_session(cm.cpu_session(path)), manifest.families[family],
                    path.name)


def test_the_occluder_feeds_nhwc_bgr_over_255(models: Path, manifest: Manifest) -> None:
    family = manifest.families["xseg"]
    for channel in (0, 2):  # B, then R: the family's colour order is BGR
        occluder = XsegOccluder(cm.cpu_session(cm.xseg_channel(models / f"ch{channel}.onnx",
                                                               channel)), family)
        target = random_crop(256, seed=channel)
        mask = occluder.occlude(target)
        assert mask.shape == (256, 256) and mask.dtype == np.float32
        np.testing.assert_allclose(mask, target.image[..., channel] / 255.0, atol=1e-6)


@pytest.mark.parametrize("size_px", [128, 512])
def test_the_occluder_mask_is_resized_to_the_crop(models: Path, manifest: Manifest,
                                                  size_px: int) -> None:
    path = cm.xseg_rectangle(models / "rect.onnx", (64, 96, 192, 160))
    occluder = XsegOccluder(cm.cpu_session(path), manifest.families["xseg"])
    mask = occluder.occlude(random_crop(size_px))
    scale = size_px / 256
    assert mask.shape == (size_px, size_px)
    inner = mask[round(100 * scale):round(156 * scale), round(70 * scale):round(186 * scale)]
    assert inner.max() == 0.0
    assert mask[: round(90 * scale)].min() == 1.0 and mask[round(166 * scale):].min() == 1.0


def test_the_parser_feeds_rgb_with_imagenet_numbers(models: Path, manifest: Manifest) -> None:
    parser = BisenetParser(cm.cpu_session(cm.bisenet_threshold(models / "thr.onnx")),
                           manifest.families["bisenet"])
    target = random_crop(512, seed=3)
    skin = parser.regions(target, ["skin"])
    # class 1 wins where the normalised red channel is above 0: R > 0.485 * 255
    expected = (target.image[..., 2] > 123.675).astype(np.float32)
    assert skin.shape == (512, 512) and skin.dtype == np.float32
    np.testing.assert_array_equal(skin, expected)
    assert parser.regions(target, ["nose", "mouth"]).max() == 0.0


def test_the_parser_marks_exactly_the_chosen_classes(models: Path, manifest: Manifest) -> None:
    labels = np.zeros((64, 64), int)
    labels[10:30, 20:40] = 10  # nose
    labels[40:50, 20:40] = 11  # mouth
    labels[0:8, :] = 1  # skin
    parser = BisenetParser(cm.cpu_session(cm.bisenet_labels(models / "lab.onnx", labels)),
                           manifest.families["bisenet"])
    target = random_crop(512)
    nose = parser.regions(target, ["nose"])
    expected = np.zeros((512, 512), np.float32)
    expected[80:240, 160:320] = 1.0
    np.testing.assert_array_equal(nose, expected)
    both = parser.regions(target, ["nose", "mouth", "skin"])
    assert both[:64].min() == 1.0 and both[320:400, 160:320].min() == 1.0
    assert both[400:].max() == 0.0
    small = parser.regions(random_crop(128), ["nose"])  # resized to the crop, soft on the edge only
    assert small[22:58, 42:78].min() == 1.0 and small[:18].max() == 0.0


def test_a_region_the_parser_does_not_know_is_a_usage_error(models: Path,
                                                            manifest: Manifest) -> None:
    parser = BisenetParser(cm.cpu_session(cm.bisenet_threshold(models / "thr2.onnx")),
                           manifest.families["bisenet"])
    with pytest.raises(InputError, match="no region named ears; it knows skin"):
        parser.regions(random_crop(512), ["skin", "ears"])
