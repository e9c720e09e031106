"""Files written whole or not at all: a temporary name beside the target, then a rename.

Kept free of image libraries, so caches and model bookkeeping can write files without
loading OpenCV.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path


def new_file_mode() -> int:
    """The mode an ordinary new file gets here (0o666 less the umask); mkstemp's is 0o600."""
    umask = os.umask(0o022)
    os.umask(umask)
    return 0o666 & ~umask


def atomic_write_bytes(path: Path, data: bytes) -> None:
    """Write bytes to a temporary name in the same folder, then os.replace onto `path`."""
    handle, tmp_name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        os.chmod(tmp_name, new_file_mode())
        with os.fdopen(handle, "wb") as tmp:
            tmp.write(data)
            tmp.flush()
            os.fsync(tmp.fileno())
        os.replace(tmp_name, path)
    except BaseException:
        Path(tmp_name).unlink(missing_ok=True)
        raise
