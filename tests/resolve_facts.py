"""Resolve job files as the launcher and the bridge write them, for tests of every layer.

`job(...)` builds the JSON-shaped dict of one timeline item: numbers as the launcher sends them
(ints), clip properties as Resolve gives them (strings), a 1-based track.
"""

from __future__ import annotations

import copy
import errno
from pathlib import Path
from typing import Any

import pytest

from addon.resolve.job_file import JOB_VERSION
from facefuse.io import files


def job(media: Path | str | None, *, start: int = 86400 + 48, duration: int = 10,
        left_offset: int = 3, track: int = 1, rate: str = "24", drop: str = "0",
        clip_fps: str | None = None, frames: int = 20, start_frame: int = 86400,
        start_timecode: str = "01:00:00:00", current_timecode: str = "01:00:02:02",
        video_tracks: int = 1, busy: dict[str, list[list[int]]] | None = None,
        kind: str = "Video + Audio", product: str = "DaVinci Resolve Studio",
        version: str = "19.1.3.7", name: str = "plate.mp4") -> dict[str, Any]:
    """One job: an item of `duration` frames at record frame `start` showing source frames
    left_offset.. of `media` (None: a title/generator without media)."""
    item: dict[str, Any] = {
        "name": name, "start": start, "end": start + duration, "duration": duration,
        "left_offset": left_offset, "track": track, "media": None}
    if media is not None:
        item["media"] = {"File Path": str(media), "Type": kind, "FPS": clip_fps or rate,
                         "Frames": str(frames), "Clip Name": name}
    return {
        "schema": "facefuse-resolve-job", "version": JOB_VERSION, "product": product,
        "resolve_version": version, "platform": "Linux", "sandboxed": False,
        "project": "Project 1",
        "timeline": {"name": "Timeline 1", "start_frame": start_frame,
                     "start_timecode": start_timecode, "current_timecode": current_timecode,
                     "frame_rate": rate, "drop_frame": drop, "video_tracks": video_tracks,
                     "busy": copy.deepcopy(busy) if busy is not None else
                     {"1": [[start, start + duration]]}},
        "item": item}


def read_only_folder(monkeypatch: pytest.MonkeyPatch, folder: Path) -> None:
    """Make `folder` (and folders below it) refuse new files as a read-only file system does;
    the tests run as root here, which chmod does not stop."""
    real = files.create_temporary

    def refuse(path: Path, keep_suffix: bool = False) -> tuple[int, Path]:
        if Path(path).parent == folder or folder in Path(path).parents:
            raise PermissionError(errno.EROFS, "Read-only file system", str(path))
        return real(path, keep_suffix)

    monkeypatch.setattr(files, "create_temporary", refuse)

