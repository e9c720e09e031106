"""Each render of a Resolve clip under a new versioned name: `<clip>_v001.####.png`,
`<clip>_v002...`, or `<clip>_v001_facefuse.mov`.

Resolve keeps serving the frames it cached for a path it has imported, and importing a known
path again brings in nothing new, so facefuse never writes into a version it may have handed to
Resolve: every render starts the next version. An image sequence's new version starts as hard
links to the previous version's files (no space, no copy), so a render that was stopped resumes
and a finished one run again renders nothing; a frame the render changes is written to a new
file that replaces its link (the writers write a temporary file and rename it), so the
previous version's files, which Resolve may show, are never changed. Where the file system has
no hard links, the new version starts empty and is rendered whole.

A frame's content credentials travel with it: the sidecar `NAME.EXT.c2pa` a signed render
writes beside each EXR frame (docs/credentials.md) is linked with its frame, so the new version
carries them as the previous did (the sidecar binds its frame's bytes, which the link keeps; a
frame rendered again gets a new sidecar in the same way, replacing the link).
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Iterable
from pathlib import Path

from facefuse import sidecar_path

log = logging.getLogger(__name__)

VERSION_DIGITS = 3


def version_stem(stem: str, version: int) -> str:
    return f"{stem}_v{version:0{VERSION_DIGITS}d}"


def latest_version(folder: Path, stem: str) -> int:
    """The highest version of `stem` with a file in `folder` (0 when none)."""
    found = re.compile(re.escape(stem) + r"_v(\d{3,})(?:[._]|$)")
    try:
        names = os.listdir(folder)
    except OSError:
        return 0
    return max((int(m[1]) for m in map(found.match, names) if m is not None), default=0)


def seed(previous: str, new: str, numbers: Iterable[int]) -> int:
    """Hard-link the files of the sequence `previous` (a %0Nd pattern) to the same numbers of
    `new` where `new` has none, each with its credentials sidecar where it has one; the count
    of frames linked. Stops, leaving the rest to render, at the first link the file system
    refuses."""
    linked = 0
    for number in numbers:
        source, target = Path(previous % number), Path(new % number)
        if not source.is_file() or target.exists():
            continue
        try:
            _link_sidecar(source, target)
            os.link(source, target)
        except OSError as exc:
            log.info("no hard links in %s (%s): the new version is rendered whole",
                     target.parent, exc.strerror)
            break
        linked += 1
    return linked


def _link_sidecar(source: Path, target: Path) -> None:
    """Link `source`'s credentials sidecar to `target`'s, when it has one (before the frame
    itself: a frame is never linked without the credentials it had)."""
    sidecar = sidecar_path(source)
    if not sidecar.is_file():
        return
    linked = sidecar_path(target)
    if os.path.lexists(linked):  # a sidecar without its frame: a seed stopped between the two
        os.unlink(linked)
    os.link(sidecar, linked)
