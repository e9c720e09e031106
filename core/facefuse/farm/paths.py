"""Paths in farm jobs: no job parameter may make a task write outside the declared output folder.

A job names one output folder; every output (-o, --matte, --patch) is a pattern relative to it.
Refused, with one sentence naming the path: a `..` component, an absolute path or drive that
leaves the folder, and a path whose existing folders lead elsewhere through a symbolic link.
The same check runs when the job is made and in every task (`facefuse render --output-root`),
so a parameter changed at submission is caught where it would do harm.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path, PurePosixPath, PureWindowsPath

from ..errors import InputError


def _parts(text: str) -> tuple[str, ...]:
    """The components of `text` read as a POSIX and as a Windows path (a farm mixes both)."""
    return PurePosixPath(text).parts + PureWindowsPath(text).parts


def check_pattern(pattern: str, what: str = "output") -> None:
    """InputError unless `pattern` is a relative path with no `..` component (no absolute path,
    drive or UNC share): what a job parameter naming an output inside the folder may hold."""
    if not pattern.strip():
        raise InputError(f"the {what} pattern is empty; name a file pattern such as "
                         "shot.####.exr")
    if ".." in _parts(pattern):
        raise InputError(f"the {what} {pattern!r} contains '..'; farm outputs must stay inside "
                         "the job's output folder")
    if PurePosixPath(pattern).is_absolute() or PureWindowsPath(pattern).drive or \
            PureWindowsPath(pattern).is_absolute():
        raise InputError(f"the {what} {pattern!r} is an absolute path; give it relative to the "
                         "job's output folder")


def inside(root: Path, path: Path) -> bool:
    """Whether `path` lies in `root` once the symbolic links of the parts of both that exist
    are followed (parts that do not exist yet are taken as written)."""
    real_root = Path(os.path.realpath(root))
    real = Path(os.path.realpath(path))
    return real == real_root or real.is_relative_to(real_root)


def check_inside(root: Path, outputs: Iterable[str | None], what: str = "output") -> None:
    """InputError unless every output (a path or sequence pattern, relative to the working
    folder as a render reads it; None skipped) has its folder inside `root` once `..` and the
    symbolic links of existing folders are followed."""
    for output in outputs:
        if output is None or inside(root, Path(output).parent):
            continue
        written = Path(os.path.abspath(Path(output).parent))  # as written, links not followed
        if ".." in _parts(output):
            why = "its '..' leads out of it"
        elif not written.is_relative_to(os.path.abspath(root)):
            why = "it is an absolute path elsewhere"
        else:
            why = "a symbolic link on the way leads elsewhere"
        raise InputError(f"the {what} {output} is outside the job's output folder {root}: "
                         f"{why}")


def relative_to_root(root: Path, output: str, what: str = "output") -> str:
    """`output` (absolute, or relative to the working folder) as a pattern relative to `root`,
    for a job parameter; InputError when it is not inside `root`."""
    check_inside(root, [output], what)
    folder = Path(os.path.realpath(Path(output).parent))
    return (folder / Path(output).name).relative_to(os.path.realpath(root)).as_posix()
