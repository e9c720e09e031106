"""How a timeline names its media files, and the same names from another folder.

Editors write a media path in one of three styles: a file URL (Premiere writes
`file://localhost/D%3a/media/a.mov`, Avid `file:///Users/...`), an absolute path (Resolve) or a
path relative to the timeline file's folder (`./a.mov`: OpenTimelineIO's convention and Avid's
exports). OpenTimelineIO's AAF reader turns every path into a URL by prefixing `file://`, so a
relative `./a.mov` reads as `file://./a.mov` and `D:\\a.mov` as `file://D:/a.mov`; Windows
shares read as `file://server/share/...` or `file:////server/share/...`. A swapped timeline names
its renders in the style of the clip they replace, and is written to another folder than the
edit, so every relative path in it is rewritten to reach the same file from there. Paths are
normalised (`..` and `.` resolved, symbolic links kept).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from urllib.parse import quote, urlparse
from urllib.request import url2pathname

URL, ABSOLUTE, RELATIVE = "url", "absolute", "relative"


@dataclass(frozen=True, slots=True)
class PathStyle:
    """How one reference names its file: `kind` URL, ABSOLUTE or RELATIVE; `host`: "localhost"
    where a URL names it (Premiere); `dot`: a relative path written as `./name`; `url`: a
    relative path written as a URL (`file://./name`, as the AAF reader gives it)."""

    kind: str
    host: str = ""
    dot: bool = False
    url: bool = False


def style_of(target: str) -> PathStyle:
    """The style of a reference's target URL or path."""
    relative = _relative_url(target)
    if relative is not None:
        return PathStyle(RELATIVE, dot=relative.startswith("./"), url=True)
    parsed = urlparse(target)
    if parsed.scheme == "file":
        return PathStyle(URL, "localhost" if parsed.netloc == "localhost" else "")
    if _is_absolute(target):
        return PathStyle(ABSOLUTE)
    return PathStyle(RELATIVE, dot=target.startswith(("./", ".\\")))


def local_path(target: str, base: Path) -> Path:
    """The file a target URL or path names, absolute and normalised (relative: from `base`)."""
    relative = _relative_url(target)
    if relative is not None:
        target = relative
    parsed = urlparse(target)
    if parsed.scheme == "file":
        path = Path(url2pathname(parsed.path))
        if parsed.netloc not in ("", "localhost"):
            # a drive (file://D:/a.mov) or a share (file://server/share/a.mov)
            drive = parsed.netloc if parsed.netloc.endswith(":") else f"//{parsed.netloc}"
            return Path(f"{drive}{url2pathname(parsed.path)}")
    else:
        path = Path(target)
    if not path.is_absolute() and _is_absolute(str(path)):
        return path  # another system's absolute path (C:\\media on Linux): no file here
    return normalised(path if path.is_absolute() else base / path)


def normalised(path: Path) -> Path:
    """`path` absolute with `.` and `..` resolved (symbolic links are kept)."""
    return Path(os.path.normpath(os.path.abspath(path)))


def target_in_style(path: Path, style: PathStyle, folder: Path) -> str:
    """How a timeline written into `folder` names the file `path` in `style`."""
    path = normalised(path)
    if style.kind == URL:
        return f"file://{style.host}{quote(path.as_posix(), safe='/:')}"
    if style.kind == RELATIVE:
        relative = _relative(path, folder)
        if relative is not None:
            if style.dot and not relative.startswith(".."):
                relative = "./" if relative == "." else f"./{relative}"
            return f"file://{relative}" if style.url else relative
    return str(path)


def rebased(target: str, base: Path, folder: Path) -> str:
    """`target` of a timeline read from `base` as a timeline in `folder` names the same file:
    a relative path is rewritten (in its own style), URLs and absolute paths are kept. A folder
    target (an image sequence's base) keeps its closing slash."""
    style = style_of(target)
    if style.kind != RELATIVE or not target:
        return target
    moved = target_in_style(local_path(target, base), style, folder)
    return moved + "/" if target.endswith(("/", "\\")) and not moved.endswith("/") else moved


def _relative_url(target: str) -> str | None:
    """The relative path of a `file://./a.mov` or `file://../a.mov` URL, else None."""
    for prefix in ("file://./", "file://../"):
        if target.startswith(prefix):
            return target.removeprefix("file://")
    return None


def _relative(path: Path, folder: Path) -> str | None:
    """`path` relative to `folder` with forward slashes, or None on another drive."""
    try:
        relative = os.path.relpath(path, normalised(folder))
    except ValueError:
        return None
    return PurePosixPath(*Path(relative).parts).as_posix()


def _is_absolute(target: str) -> bool:
    """An absolute path on any system an edit may come from (`/`, `C:\\`, `\\\\server`)."""
    return target.startswith(("/", "\\")) or (len(target) > 2 and target[1] == ":"
                                              and target[2] in "/\\")
