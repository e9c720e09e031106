"""The report folder, written whole or not at all: checked before anything runs, every file
written into a hidden staging folder beside it (named as io.files names temporaries, so the
next report written beside it sweeps one a killed run left), then moved into place (report.json
last, so a report.json that exists always has its pictures and page beside it); pictures an
earlier report left in the picture folders that the new one does not list are then removed. No
file it writes may be one the command reads (`inputs`: the same path once links are followed, or
a hard link)."""

from __future__ import annotations

import os
import shutil
from collections.abc import Sequence
from pathlib import Path
from types import TracebackType
from typing import Self

from ..errors import InputError, OutputError
from ..io.files import (
    check_folder_writable,
    check_path_length,
    file_ids,
    make_folder,
    sweep_leftovers,
    temporary_path,
    write_error,
)
from ..shot.output.output_checks import check_not_input

LAST = ("index.html", "report.json")  # moved into place after every other file, in this order
PICTURES = ("people", "plots", "samples")  # the report's own picture folders (review.writing)
PICTURE_SUFFIXES = frozenset({".jpg", ".png"})


def check_report_folder(folder: Path | str, inputs: Sequence[Path] = ()) -> Path:
    """The report folder as a Path; one sentence, nothing written, when it is an empty name,
    the root folder, a name too long for its file system, a file, or its report.json or
    index.html is one of `inputs` (InputError), or it cannot be written nor created
    (OutputError)."""
    if not str(folder).strip():
        raise InputError("the report folder is an empty name; give a folder for the report")
    folder = Path(folder)
    check_path_length(folder / "report.json", "the report folder")
    if folder.resolve() == Path(folder.resolve().anchor):
        raise InputError(f"the report folder {folder} is the root of the file system; give a "
                         "folder of its own for the report")
    if folder.exists() and not folder.is_dir():
        raise InputError(f"the report folder {folder} is a file; give a folder for the report")
    try:
        check_folder_writable(folder)
    except OutputError as exc:  # exit 6: the storage refuses (read-only, full, permissions)
        raise OutputError(f"the report folder {folder} cannot be written ({exc})") from exc
    check_not_inputs([folder / name for name in LAST], inputs)
    return folder


def check_not_inputs(targets: Sequence[Path], inputs: Sequence[Path]) -> None:
    """InputError when a file of `targets` is one of `inputs`."""
    for target in targets:
        check_not_input("the report file", target, inputs)


class ReportFolder:
    """Stage a report's files, then move them into `folder` (see the module docstring); a
    failure (or leaving the with-block by an exception) leaves the folder as it was."""

    def __init__(self, folder: Path, inputs: Sequence[Path] = ()) -> None:
        self.inputs = tuple(inputs)
        self.folder = check_report_folder(folder, self.inputs)
        make_folder(self.folder.parent)
        sweep_leftovers(self.folder.parent, file_ids(self.inputs))  # a killed run's staging
        try:
            self.staging = temporary_path(self.folder)
            self.staging.mkdir()
        except OSError as exc:
            raise write_error(self.folder, exc) from exc

    def write(self, name: str, data: bytes) -> str:
        """Stage one file (name relative to the folder, "/" separated); returns the name."""
        path = self.staging / name
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data)
        except OSError as exc:
            raise write_error(self.folder / name, exc) from exc
        return name

    def commit(self) -> None:
        """Move every staged file into the folder (subfolders created), the LAST ones last."""
        staged = sorted(p for p in self.staging.rglob("*") if p.is_file())
        staged.sort(key=lambda p: LAST.index(p.name) + 1 if p.parent == self.staging
                    and p.name in LAST else 0)
        try:
            check_not_inputs([self.folder / p.relative_to(self.staging) for p in staged],
                             self.inputs)
            targets = [self.folder / path.relative_to(self.staging) for path in staged]
            for path, target in zip(staged, targets, strict=True):
                target.parent.mkdir(parents=True, exist_ok=True)
                os.replace(path, target)
            self._drop_earlier_pictures(set(targets))
        except OSError as exc:
            raise write_error(self.folder, exc) from exc
        finally:
            self.discard()

    def _drop_earlier_pictures(self, written: set[Path]) -> None:
        """Remove the pictures an earlier report left in the picture folders (PICTURES) that
        this one did not write: the report.json just moved in does not list them. Plain files
        with a picture's suffix only; links, folders and other files are left."""
        for name in PICTURES:
            folder = self.folder / name
            if folder.is_symlink() or not folder.is_dir():
                continue
            for entry in folder.iterdir():
                if entry not in written and entry.suffix in PICTURE_SUFFIXES \
                        and entry.is_file() and not entry.is_symlink():
                    entry.unlink(missing_ok=True)

    def discard(self) -> None:
        shutil.rmtree(self.staging, ignore_errors=True)

    def __enter__(self) -> Self:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        if kind is not None:
            self.discard()
