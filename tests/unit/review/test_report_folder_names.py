"""Report folders that are no folder of their own, refused in one sentence (exit 2) before
anything is written (issue 34, class 4): an empty name (the current folder), the root folder,
a name longer than the file system takes. check_report_folder is the one check `review -o`,
`render --report` and `timeline swap --report` use; nothing here ever writes into `/`."""

from __future__ import annotations

from pathlib import Path

import pytest

from facefuse.errors import ExitCode, InputError
from facefuse.review import folder as report_folder


@pytest.mark.parametrize("name, expected", [
    ("", "is an empty name"), ("  ", "is an empty name"),
    ("/", "is the root of the file system"), ("/..", "is the root of the file system"),
    ("//", "is the root of the file system"),
    ("x" * 256, "is 256 bytes, and the file system takes names of at most 255 bytes"),
    ("é" * 128 + "/sub", "is 256 bytes"),
])
def test_a_report_folder_of_no_use_is_refused(name: str, expected: str,
                                              monkeypatch: pytest.MonkeyPatch,
                                              tmp_path: Path) -> None:
    monkeypatch.chdir(tmp_path)
    probed: list[Path] = []
    monkeypatch.setattr(report_folder, "check_folder_writable", probed.append)  # writes nothing
    with pytest.raises(InputError, match=expected) as info:
        report_folder.check_report_folder(name)
    assert info.value.exit_code == ExitCode.USAGE
    assert probed == [] and list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("name", [".", "review", "x" * 255])
def test_a_folder_of_its_own_is_taken(name: str, monkeypatch: pytest.MonkeyPatch,
                                      tmp_path: Path) -> None:
    monkeypatch.chdir(tmp_path)
    assert report_folder.check_report_folder(name) == Path(name)
