"""One reader for the small files a user names (issue 34, class 3): overrides, review reports,
model manifests (FACEFUSE_MANIFEST), Resolve jobs and results. A FIFO, /dev/zero, a folder, a
file past the size limit, JSON or TOML nested 10000 deep and bytes that are not UTF-8 are each
one sentence with exit 2 (a manifest: exit 4, as every manifest fault), at once: nothing blocks
(each test has a timeout, as a FIFO read would block for good) and nothing is read whole.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from addon.resolve.job_file import read_job
from addon.resolve.swaps import read_result
from facefuse.errors import ExitCode, FacefuseError, InputError, ModelError
from facefuse.io import small_files
from facefuse.models.manifest import load_manifest
from facefuse.review.report import load_report
from facefuse.shot.plan.overrides import load_overrides

pytestmark = [pytest.mark.timeout(20),
              pytest.mark.skipif(os.name != "posix", reason="FIFOs and /dev/zero are POSIX")]

DEEP = 10_000


def _fifo(folder: Path) -> Path:
    path = folder / "file.json"
    os.mkfifo(path)
    return path


def _folder(folder: Path) -> Path:
    path = folder / "file.json"
    path.mkdir()
    return path


def _huge(folder: Path) -> Path:
    path = folder / "file.json"
    with path.open("wb") as handle:  # sparse: 300 MiB on no disk at all
        handle.truncate(300 * small_files.MIB)
    return path


def _write(folder: Path, data: bytes) -> Path:
    path = folder / "file.json"
    path.write_bytes(data)
    return path


def _symlink_to_fifo(folder: Path) -> Path:
    fifo = folder / "pipe"
    os.mkfifo(fifo)
    path = folder / "file.json"
    path.symlink_to(fifo)
    return path


CASES: dict[str, tuple[Callable[[Path], Path], str]] = {
    "fifo": (_fifo, "not a regular file"),
    "symlink to a fifo": (_symlink_to_fifo, "not a regular file"),
    "/dev/zero": (lambda _: Path("/dev/zero"), "not a regular file"),
    "folder": (_folder, "is a folder"),
    "huge": (_huge, "more than the"),
    "deep arrays": (lambda f: _write(f, b"[" * DEEP + b"]" * DEEP), "nested deeper than 64"),
    "deep objects": (lambda f: _write(f, b'{"a":' * DEEP + b"1" + b"}" * DEEP),
                     "nested deeper than 64"),
    "invalid utf-8": (lambda f: _write(f, b'{"schema": "\xff\xfe"}'),
                      r"is not UTF-8 text \(byte 0xff at offset 12\)"),
}

Reader = Callable[[Path], Any]
READERS: dict[str, tuple[Reader, type[FacefuseError]]] = {
    "overrides": (load_overrides, InputError),
    "review report": (load_report, InputError),
    "resolve job": (read_job, InputError),
    "resolve result": (read_result, InputError),
    "json": (lambda p: small_files.load_json_file(p, f"the file {p}"), InputError),
}


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("reader", READERS)
def test_every_small_file_reader_refuses_at_once_in_one_sentence(
        tmp_path: Path, reader: str, case: str) -> None:
    make, words = CASES[case]
    path = make(tmp_path)
    if (reader, case) == ("review report", "folder"):  # a report folder: its report.json
        words = r"file\.json/report\.json does not exist"
    read, error = READERS[reader]
    with pytest.raises(error, match=words) as caught:
        read(path)
    assert caught.value.exit_code == ExitCode.USAGE
    assert "\n" not in str(caught.value) and str(path) in str(caught.value)


@pytest.mark.parametrize("case", [c for c in CASES if c != "deep objects"])
def test_a_manifest_is_refused_the_same_way_with_the_manifest_code(
        tmp_path: Path, case: str) -> None:
    make, words = CASES[case]
    path = make(tmp_path)
    if case == "deep arrays":
        path.write_bytes(b"a = " + b"[" * DEEP + b"]" * DEEP + b"\n")
    elif case == "invalid utf-8":
        path.write_bytes(b'schema_version = "\xff\xfe"\n')
        words = r"is not UTF-8 text \(byte 0xff at offset 18\)"
    with pytest.raises(ModelError, match=words) as caught:
        load_manifest(path)
    assert caught.value.exit_code == ExitCode.MODEL and "\n" not in str(caught.value)


def test_the_manifest_named_by_the_environment_is_read_by_the_same_reader(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FACEFUSE_MANIFEST", str(_fifo(tmp_path)))
    with pytest.raises(ModelError, match="not a regular file"):
        load_manifest()


def test_nesting_up_to_the_limit_is_read_and_a_byte_order_mark_is_allowed(
        tmp_path: Path) -> None:
    depth = small_files.MAX_NESTING
    path = _write(tmp_path, b"\xef\xbb\xbf" + b"[" * depth + b"]" * depth)
    value = small_files.load_json_file(path, "the file")
    for _ in range(depth - 1):
        value = value[0]
    assert value == []
    path.write_bytes(b"[" * (depth + 1) + b"]" * (depth + 1))
    with pytest.raises(InputError, match="nested deeper"):
        small_files.load_json_file(path, "the file")


def test_a_report_may_be_larger_than_other_small_files(tmp_path: Path) -> None:
    data = json.dumps({"pad": "x" * (small_files.SMALL_FILE_LIMIT + 10)}).encode()
    path = _write(tmp_path, data)
    with pytest.raises(InputError, match="more than the 8 MiB"):
        small_files.load_json_file(path, "the file")
    assert small_files.load_json_file(path, "the file", small_files.REPORT_LIMIT)["pad"]


def test_a_missing_file_and_bad_json_are_one_sentence(tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r"^the file .*none\.json does not exist$"):
        small_files.load_json_file(tmp_path / "none.json", f"the file {tmp_path / 'none.json'}")
    path = _write(tmp_path, b"{nope")
    with pytest.raises(InputError, match=r"is not JSON \(.* at line 1\)$"):
        small_files.load_json_file(path, "the file")
