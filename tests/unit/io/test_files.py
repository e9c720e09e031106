"""Inputs must be regular files, checked before anything reads them (issue 24, item 15): a FIFO
would block for ever and /dev/zero never ends. The reads run in a child process with a timeout,
so a regression fails instead of hanging the suite."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from facefuse.errors import ExitCode, InputError
from facefuse.io import files

pytestmark = pytest.mark.skipif(os.name != "posix", reason="FIFOs and /dev/zero are POSIX")

READERS = {
    "image": "from facefuse.io.images import read_image_bytes as read",
    "hash": "from facefuse.cache.hashes import HashMemo\n"
            "read = HashMemo(Path(sys.argv[2])).sha256",
}


@pytest.fixture()
def fifo(tmp_path: Path) -> Path:
    path = tmp_path / "face.jpg"
    os.mkfifo(path)
    return path


def test_devices_fifos_and_folders_are_refused(tmp_path: Path, fifo: Path) -> None:
    for path, words in ((fifo, "not a regular file"), (Path("/dev/zero"), "not a regular file"),
                        (tmp_path, "is a folder"), (tmp_path / "none.jpg", "does not exist")):
        with pytest.raises(InputError, match=words) as info:
            files.check_regular_file(path, "source image")
        assert info.value.exit_code == ExitCode.USAGE and str(path) in str(info.value)
    photo = tmp_path / "face.png"
    photo.write_bytes(b"x")
    files.check_regular_file(photo, "source image")
    (tmp_path / "link.png").symlink_to(photo)
    files.check_regular_file(tmp_path / "link.png", "source image")


@pytest.mark.parametrize("reader", sorted(READERS))
@pytest.mark.parametrize("which", ["fifo", "/dev/zero"])
def test_readers_refuse_them_before_reading(tmp_path: Path, fifo: Path, reader: str,
                                            which: str) -> None:
    path = fifo if which == "fifo" else Path("/dev/zero")
    code = (f"import sys\nfrom pathlib import Path\n{READERS[reader]}\n"
            "from facefuse.errors import InputError\n"
            "try:\n    read(Path(sys.argv[1]))\nexcept InputError as exc:\n    print(exc)\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    done = subprocess.run([sys.executable, "-c", code, str(path), str(tmp_path / "memo.json")],
                          check=False, capture_output=True, text=True, timeout=30, env=env,
                          preexec_fn=lambda: _limit_memory(2 << 30))
    assert "not a regular file" in done.stdout, done.stderr[-500:]


def _limit_memory(size: int) -> None:
    import resource
    resource.setrlimit(resource.RLIMIT_AS, (size, size))
