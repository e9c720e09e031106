"""facefuse's own plate attributes: "facefuse:<key>" strings, and a JSON carrier for formats
that drop arbitrary string attributes (DPX user data, the TIFF and JPEG image description).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

import numpy as np
import OpenImageIO as oiio

# Formats that drop arbitrary string attributes: our metadata goes into one JSON attribute.
METADATA_CARRIERS = MappingProxyType({"dpx": "dpx:UserData", "tiff": "ImageDescription",
                                      "jpeg": "ImageDescription"})
METADATA_PREFIX = "facefuse:"


def prefixed(metadata: Mapping[str, str]) -> dict[str, str]:
    """`metadata` with every key under METADATA_PREFIX and every value a string."""
    return {(k if k.startswith(METADATA_PREFIX) else METADATA_PREFIX + k): str(v)
            for k, v in metadata.items()}


def add_carrier(spec: Any, file_format: str, metadata: Mapping[str, str]) -> None:
    """Put the prefixed `metadata` into the JSON carrier of `file_format`, if it has one."""
    if metadata and file_format in METADATA_CARRIERS:
        _set_carrier(spec, METADATA_CARRIERS[file_format], metadata)


def found_metadata(found: Mapping[str, Any]) -> dict[str, str]:
    """Our metadata among a file's attributes (name -> value): key (without the prefix) -> value,
    from the prefixed attributes and any JSON carrier."""
    ours = {k: str(v) for k, v in found.items() if k.startswith(METADATA_PREFIX)}
    for carrier in set(METADATA_CARRIERS.values()) & found.keys():
        ours.update(_decode_carrier(found[carrier]))
    return {k[len(METADATA_PREFIX):]: v for k, v in sorted(ours.items())}


def _set_carrier(spec: Any, name: str, metadata: Mapping[str, str]) -> None:
    blob = json.dumps(dict(metadata), sort_keys=True)
    if name == "dpx:UserData":
        data = np.frombuffer(blob.encode("utf-8"), dtype=np.uint8)
        spec.attribute(name, oiio.TypeDesc(f"uint8[{data.size}]"), data)
    else:
        spec.attribute(name, blob)


def _decode_carrier(value: Any) -> dict[str, str]:
    """The facefuse:* entries of a JSON carrier attribute, {} if it holds something else."""
    if isinstance(value, (np.ndarray, tuple, list)):
        value = bytes(np.asarray(value, dtype=np.uint8)).rstrip(b"\0").decode("utf-8", "replace")
    try:
        found = json.loads(value)
    except (TypeError, ValueError):
        return {}
    if not isinstance(found, dict):
        return {}
    return {k: str(v) for k, v in found.items() if str(k).startswith(METADATA_PREFIX)}
