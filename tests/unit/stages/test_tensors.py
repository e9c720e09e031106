"""stages.tensors: the crops' model tensors bit-identical to the NHWC formula transposed."""

from __future__ import annotations

import numpy as np
import pytest

from facefuse.models.manifest import Family
from facefuse.stages.tensors import crops_to_nchw, crops_to_nhwc


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
    for crops in (batch, batch[1], batch[:, 1:, :-1], batch.astype(np.float64)):
        tensor = crops_to_nchw(crops, family)
        assert tensor.dtype == np.float32 and tensor.flags.c_contiguous
        assert np.array_equal(tensor, _transposed(crops, family), equal_nan=True)
        nhwc = crops_to_nhwc(crops, family)
        assert np.array_equal(tensor, nhwc.transpose(0, 3, 1, 2), equal_nan=True)
