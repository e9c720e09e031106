"""Signing one output file: its credentials embedded, or in a sidecar beside it.

The formats of EMBEDDABLE (PNG, JPEG, TIFF, MP4, MOV, M4V) get the manifest store inside: the
SDK writes the signed copy to a hidden temporary in the same folder (io.files' naming, so a
later run sweeps one left by a crash), which then replaces the file (os.replace) with the
file's mode; a crash never leaves a half-signed output. Every other format (EXR, DPX, MKV, ...)
gets a sidecar, ``NAME.EXT.c2pa`` (formats.sidecar_path), written whole or not at all.

An image sequence gets one sidecar per frame, not one per sequence: the chunks of a farm
render write and sign their frames independently, in separate processes, and a frame re-rendered
later is re-signed alone; `checking.check_sequence` reads the frames back as one result.

Re-signing replaces: a file signed again (a resumed render re-signs its output) holds the new
manifest store only, and a sidecar is overwritten. The old manifest described the same render's
earlier state of this very file, not an asset the new one was made from, so it is not stacked
as an ingredient.
"""

from __future__ import annotations

import io
import logging
import os
import stat
from datetime import UTC, datetime
from pathlib import Path
from typing import IO

from ..errors import OutputError
from ..io.files import atomic_write_bytes, create_temporary, write_error
from .formats import EMBEDDABLE, OCTET_STREAM, sidecar_path
from .record import Credential, manifest_definition
from .sdk import load_sdk, sdk_reason
from .signing import LoadedSigner

log = logging.getLogger(__name__)


def sign_file(path: Path, credential: Credential, signer: LoadedSigner) -> Path:
    """Sign `path` with `credential` (see the module docstring); returns the file written: `path`
    itself when its format embeds, else its sidecar. OutputError when `path` cannot be read or
    the signed file cannot be written (disk full, read-only) or the SDK cannot parse the file."""
    path = Path(path)
    definition = manifest_definition(credential, path.name, when=datetime.now(UTC))
    media_type = EMBEDDABLE.get(path.suffix.lower())
    try:  # what follows turns its own write failures into OutputError: an OSError is a read's
        with open(path, "rb") as source:
            if media_type is None:
                written = _sign_into_sidecar(path, source, definition, signer)
            else:
                written = _sign_embedded(path, source, media_type, definition, signer)
    except OSError as exc:
        raise OutputError(f"cannot read {path} to sign it: {exc.strerror or exc}") from None
    log.debug("signed %s (%s)", path, written.name)
    return written


def _sign_into_sidecar(path: Path, source: IO[bytes], definition: dict[str, object],
                       signer: LoadedSigner) -> Path:
    target = sidecar_path(path)
    manifest = _sdk_sign(path, signer, definition, OCTET_STREAM, source, io.BytesIO(),
                         embed=False)
    try:
        atomic_write_bytes(target, manifest)
    except OSError as exc:
        raise write_error(target, exc) from None
    return target


def _sign_embedded(path: Path, source: IO[bytes], media_type: str,
                   definition: dict[str, object], signer: LoadedSigner) -> Path:
    try:
        handle, temporary = create_temporary(path, keep_suffix=True)
    except OSError as exc:
        raise write_error(path, exc) from None
    os.close(handle)  # the SDK reads back what it writes: the temporary is opened again r+b
    try:
        with open(temporary, "r+b") as dest:
            _sdk_sign(path, signer, definition, media_type, source, dest, embed=True)
            dest.flush()
            os.fsync(dest.fileno())
        os.chmod(temporary, stat.S_IMODE(os.fstat(source.fileno()).st_mode))
        os.replace(temporary, path)
    except OSError as exc:
        temporary.unlink(missing_ok=True)
        raise write_error(path, exc) from None
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise
    return path


def _sdk_sign(path: Path, signer: LoadedSigner, definition: dict[str, object], media_type: str,
              source: IO[bytes], dest: IO[bytes], embed: bool) -> bytes:
    try:
        return signer.sign(definition, media_type, source, dest, embed=embed)
    except load_sdk().C2paError as exc:
        raise OutputError(f"cannot add content credentials to {path}: "
                          f"{sdk_reason(exc)}") from None
