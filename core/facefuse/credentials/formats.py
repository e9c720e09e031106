"""Which media type a file is, which formats carry their credentials inside, and where the
others keep them (pure: no file is opened).

The C2PA SDK embeds a manifest store into the formats of EMBEDDABLE. Every other file (EXR,
DPX, MKV, ...) gets a sidecar, ``NAME.EXT.c2pa`` beside it, that binds the manifest to the
whole file by a data hash.
"""

from __future__ import annotations

from pathlib import Path
from types import MappingProxyType

OCTET_STREAM = "application/octet-stream"
SIDECAR_SUFFIX = ".c2pa"

# file suffix (lower case) -> media type, for the files facefuse reads and writes
MEDIA_TYPES = MappingProxyType({
    ".png": "image/png",
    ".jpg": "image/jpeg",
    ".jpeg": "image/jpeg",
    ".tif": "image/tiff",
    ".tiff": "image/tiff",
    ".webp": "image/webp",
    ".exr": "image/x-exr",
    ".dpx": "image/x-dpx",
    ".mp4": "video/mp4",
    ".m4v": "video/x-m4v",
    ".mov": "video/quicktime",
    ".mkv": "video/x-matroska",
    ".webm": "video/webm",
    ".mxf": "application/mxf",
})
# the suffixes whose files the SDK embeds a manifest store into (c2pa.Builder's media types)
EMBEDDABLE = MappingProxyType({suffix: MEDIA_TYPES[suffix] for suffix in (
    ".png", ".jpg", ".jpeg", ".tif", ".tiff", ".mp4", ".m4v", ".mov")})


def media_type(name: str | Path) -> str:
    """The media type of a file name by its suffix (any case); application/octet-stream for a
    suffix facefuse does not know."""
    return MEDIA_TYPES.get(Path(name).suffix.lower(), OCTET_STREAM)


def embeds(path: Path) -> bool:
    """Whether `path`'s credentials go inside the file (else into its sidecar)."""
    return Path(path).suffix.lower() in EMBEDDABLE


def sidecar_path(path: Path) -> Path:
    """Where the credentials of a file that cannot hold them are kept: ``NAME.EXT.c2pa``
    beside it (``plate.1001.exr`` -> ``plate.1001.exr.c2pa``)."""
    path = Path(path)
    return path.with_name(path.name + SIDECAR_SUFFIX)
