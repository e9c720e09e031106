"""Crop <-> model tensor conversions shared by the crop-based stages (embed, swap, enhance).

A family's `mean` and `std` (or its per-channel `channel_mean` / `channel_std`, see
Family.normalisation) define both directions: the model input is (x - mean) / std of the crop in
the family's colour order, and an image-valued model output in that same normalised space maps
back to crop pixels with x * std + mean.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from types import MappingProxyType

import cv2
import numpy as np
import onnxruntime as ort

from ..models.manifest import Family

# ONNX Runtime's type strings for the float tensors a model may declare, as numpy dtypes.
ORT_FLOAT_TYPES: Mapping[str, type[np.floating]] = MappingProxyType({
    "tensor(float)": np.float32,
    "tensor(float16)": np.float16,
    "tensor(double)": np.float64,
})


def batch_is_free(nodes: Iterable[ort.NodeArg]) -> bool:
    """Whether every one of `nodes` (model inputs) leaves its first dimension, the batch, free:
    a name or an unknown size rather than a count, so one run takes any number of crops. False
    for no nodes, or a node without dimensions."""
    shapes = [list(node.shape or ()) for node in nodes]
    return bool(shapes) and all(bool(shape) and not (isinstance(shape[0], int) and shape[0] >= 0)
                                for shape in shapes)


def input_dtype(node: ort.NodeArg) -> type[np.floating]:
    """The numpy float dtype a session input declares (float32 when it is not a float type)."""
    return ORT_FLOAT_TYPES.get(node.type, np.float32)


def crops_to_nchw(crops_bgr_0_255: np.ndarray, family: Family) -> np.ndarray:
    """Crop(s) float32 BGR 0..255, (S, S, 3) or (N, S, S, 3) -> float32 NCHW (1 or N, 3, S, S)
    in family.colour order, normalised per channel as (x - mean) / std: the same float32
    operations as crops_to_nhwc, plane by plane straight into the NCHW tensor."""
    pixels = np.asarray(crops_bgr_0_255, dtype=np.float32)
    if pixels.ndim == 3:
        pixels = pixels[None]
    count, height, width, _ = pixels.shape
    mean, std = (np.asarray(v, dtype=np.float32) for v in family.normalisation())
    order = (2, 1, 0) if family.colour == "rgb" else (0, 1, 2)
    tensor = np.empty((count, 3, height, width), np.float32)
    for crop, planes in zip(pixels, tensor, strict=True):
        bgr = cv2.split(np.ascontiguousarray(crop))
        for channel, plane in enumerate(planes):
            np.subtract(bgr[order[channel]], mean[channel], out=plane)
            np.divide(plane, std[channel], out=plane)
    return tensor


def crops_to_nhwc(crops_bgr_0_255: np.ndarray, family: Family) -> np.ndarray:
    """Crop(s) float32 BGR 0..255, (S, S, 3) or (N, S, S, 3) -> float32 NHWC (1 or N, S, S, 3)
    in family.colour order, normalised per channel as (x - mean) / std."""
    pixels = np.asarray(crops_bgr_0_255, dtype=np.float32)
    if pixels.ndim == 3:
        pixels = pixels[None]
    if family.colour == "rgb":
        pixels = pixels[..., ::-1]
    mean, std = (np.asarray(v, dtype=np.float32) for v in family.normalisation())
    return np.ascontiguousarray((pixels - mean) / std, dtype=np.float32)


def nchw_to_crop(output: np.ndarray, family: Family) -> np.ndarray:
    """An image output (1, 3, S, S) or (3, S, S) in the family's normalised space -> float32
    BGR 0..255 (S, S, 3): x * std + mean, clipped to 0..255 (inswapper: [0, 1] -> x * 255;
    GFPGAN/CodeFormer/GPEN: [-1, 1] -> (x + 1) * 127.5)."""
    planes = np.asarray(output, dtype=np.float32)
    return nchw_to_crops(planes.reshape((1, *planes.shape[-3:])), family)[0]


def nchw_to_crops(output: np.ndarray, family: Family) -> np.ndarray:
    """An image batch (N, 3, S, S) in the family's normalised space -> float32 BGR 0..255
    (N, S, S, 3), as nchw_to_crop does for one (plane by plane, then interleaved)."""
    planes = np.asarray(output, dtype=np.float32)
    mean, std = (np.asarray(v, dtype=np.float32) for v in family.normalisation())
    order = (2, 1, 0) if family.colour == "rgb" else (0, 1, 2)  # each BGR channel's plane
    crops = np.empty((planes.shape[0], *planes.shape[2:], 3), np.float32)
    for image, crop in zip(planes, crops, strict=True):
        values = [np.multiply(image[k], std[k]) for k in order]
        for value, k in zip(values, order, strict=True):
            value += mean[k]
        cv2.merge(values, dst=crop)
    return np.clip(crops, 0.0, 255.0, out=crops)


def check_crop_size(image: np.ndarray, family: Family) -> None:
    """ValueError unless the crop is the family's square input size."""
    _, size = family.crop_spec()
    if image.shape[-3:-1] != (size, size):
        raise ValueError(f"crop is {image.shape[-2]}x{image.shape[-3]} px; "
                         f"{family.name} takes {size} px crops")
