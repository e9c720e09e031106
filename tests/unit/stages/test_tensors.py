"""stages.tensors: crops to model tensors and back, bit-identical to the formulas over the
NHWC layout with per-channel broadcasting."""

from __future__ import annotations

import numpy as np
import pytest

from facefuse.models.manifest import Family
from facefuse.stages.tensors import crops_to_nchw, crops_to_nhwc, nchw_to_crop, nchw_to_crops


def _family(colour: str, mean: float, std: float,
            channel_mean: tuple[float, ...] = (),
            channel_std: tuple[float, ...] = ()) -> Family:
    return Family(name="crops", role="swapper", class_name="", input_size=(32, 32),
                  template=None, colour=colour, mean=mean, std=std, inputs=(), outputs=(),
                  channel_mean=channel_mean, channel_std=channel_std)


FAMILIES = {"rgb_0_255": _family("rgb", 0.0, 255.0), "bgr_raw": _family("bgr", 0.0, 1.0),
            "rgb_centred": _family("rgb", 127.5, 127.5),
            "per_channel": _family("rgb", 0.0, 1.0, (123.675, 116.28, 103.53),
                                   (58.395, 57.12, 57.375))}


def _transposed(crops: np.ndarray, family: Family) -> np.ndarray:
    """(x - mean) / std over NHWC with per-channel broadcasting, then transposed to NCHW."""
    pixels = np.asarray(crops, np.float32)
    pixels = pixels[None] if pixels.ndim == 3 else pixels
    pixels = pixels[..., ::-1] if family.colour == "rgb" else pixels
    mean, std = (np.asarray(v, np.float32) for v in family.normalisation())
    return np.ascontiguousarray(((pixels - mean) / std).transpose(0, 3, 1, 2))


@pytest.mark.parametrize("name", list(FAMILIES))
def test_nchw_tensors_are_bit_identical_to_the_transposed_nhwc_formula(name: str) -> None:
    family = FAMILIES[name]
    rng = np.random.default_rng(4)
    batch = rng.uniform(-20.0, 280.0, (3, 33, 33, 3)).astype(np.float32)
    batch[0, 0, 0] = (np.nan, np.inf, -np.inf)
    batch[2, 0, 0] = (-0.0, 0.0, -0.0)
    for crops in (batch, batch[1], batch[:, 1:, :-1], batch.astype(np.float64)):
        tensor = crops_to_nchw(crops, family)
        assert tensor.dtype == np.float32 and tensor.flags.c_contiguous
        assert tensor.tobytes() == _transposed(crops, family).tobytes()
        nhwc = crops_to_nhwc(crops, family)
        assert tensor.tobytes() == np.ascontiguousarray(nhwc.transpose(0, 3, 1, 2)).tobytes()


def _broadcast_back(output: np.ndarray, family: Family) -> np.ndarray:
    """x * std + mean over the NHWC transpose with per-channel broadcasting, BGR, clipped."""
    pixels = np.asarray(output, np.float32).transpose(0, 2, 3, 1)
    mean, std = (np.asarray(v, np.float32) for v in family.normalisation())
    values = pixels * std + mean
    values = values[..., ::-1] if family.colour == "rgb" else values
    return np.ascontiguousarray(np.clip(values, 0.0, 255.0), dtype=np.float32)


@pytest.mark.parametrize("name", list(FAMILIES))
def test_crops_from_outputs_are_bit_identical_to_the_broadcast_formula(name: str) -> None:
    family = FAMILIES[name]
    rng = np.random.default_rng(6)
    outputs = rng.uniform(-2.0, 300.0, (2, 3, 33, 33)).astype(np.float32)
    outputs[0, :, 0, 0] = (np.nan, np.inf, -np.inf)
    outputs[1, :, 1, 1] = (-0.0, 0.0, -0.0)
    for output in (outputs, outputs[:, :, 1:, :-1], outputs.astype(np.float16)):
        crops = nchw_to_crops(output, family)
        expected = _broadcast_back(output, family)
        assert crops.dtype == np.float32 and crops.flags.c_contiguous
        assert crops.tobytes() == expected.tobytes()
    one = nchw_to_crop(outputs[1], family)
    assert one.tobytes() == _broadcast_back(outputs[1:], family)[0].tobytes()
