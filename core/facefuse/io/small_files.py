"""The one reader for the small files a user names: overrides, review reports, model manifests,
host jobs and plans, settings (JSON and TOML).

What it takes, and the one sentence (InputError, exit 2) for anything else:
- a regular file, links followed. The file is opened without blocking (O_NONBLOCK) and judged
  by what was opened (fstat), so a FIFO, a device (/dev/zero), a socket or a folder is refused
  at once, never read, and a name swapped meanwhile is judged as the file actually read;
- at most `limit` bytes: SMALL_FILE_LIMIT (8 MiB) unless the caller allows more (a review
  report of a long shot: REPORT_LIMIT, 256 MiB). The size is checked before reading, and the
  read stops one byte past the limit, so a file that grows meanwhile is refused too;
- UTF-8 text (a leading byte-order mark is allowed): an invalid byte is named with its offset;
- JSON or TOML nested at most MAX_NESTING levels (objects, arrays, tables), so a 10000-deep
  file is one sentence instead of a RecursionError in the parser or in the code that walks it.
"""

from __future__ import annotations

import errno
import json
import os
import stat
import tomllib
from pathlib import Path
from typing import Any

from ..errors import InputError

MIB = 1024 * 1024
SMALL_FILE_LIMIT = 8 * MIB  # overrides, manifests, jobs, settings: kilobytes in practice
REPORT_LIMIT = 256 * MIB  # a review report lists every frame of its shot
MAX_NESTING = 64  # the deepest file facefuse writes is 5 levels


def read_bytes(path: Path | str, label: str, limit: int = SMALL_FILE_LIMIT) -> bytes:
    """The bytes of the regular file `path`, at most `limit` of them; `label` names it in the
    messages ("the overrides file d/ov.json"). InputError otherwise (see the module docstring)."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0))
    except FileNotFoundError:
        raise InputError(f"{label} does not exist") from None
    except IsADirectoryError:
        raise InputError(f"{label} is a folder, not a file") from None
    except OSError as exc:
        raise InputError(f"{label} cannot be read ({_reason(exc)})") from None
    try:
        mode = os.fstat(fd).st_mode
        if stat.S_ISDIR(mode):
            raise InputError(f"{label} is a folder, not a file")
        if not stat.S_ISREG(mode):
            raise InputError(f"{label} is not a regular file (a device, FIFO or socket); give "
                             "a file")
        size = os.fstat(fd).st_size
        if size > limit:
            raise InputError(f"{label} is {_mib(size)}, more than the {_mib(limit)} such a "
                             "file may have; give the right file")
        chunks: list[bytes] = []
        total = 0
        while total <= limit:
            chunk = os.read(fd, min(limit + 1 - total, MIB))
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
        if total > limit:
            raise InputError(f"{label} grew past the {_mib(limit)} such a file may have while "
                             "it was read; give the right file")
        return b"".join(chunks)
    except OSError as exc:
        raise InputError(f"{label} cannot be read ({_reason(exc)})") from None
    finally:
        os.close(fd)


def read_text(path: Path | str, label: str, limit: int = SMALL_FILE_LIMIT) -> str:
    """read_bytes as UTF-8 text (decode_text)."""
    return decode_text(read_bytes(path, label, limit), label)


def decode_text(raw: bytes, label: str) -> str:
    """`raw` as UTF-8 text (a leading byte-order mark dropped); InputError naming the first
    byte that is not UTF-8 and where it is."""
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InputError(f"{label} is not UTF-8 text (byte 0x{raw[exc.start]:02x} at offset "
                         f"{exc.start})") from None


def load_json_file(path: Path | str, label: str, limit: int = SMALL_FILE_LIMIT) -> Any:
    """The JSON value of the file `path` (read_bytes, then json_value)."""
    return json_value(read_bytes(path, label, limit), label)


def json_value(raw: bytes | str, label: str) -> Any:
    """The JSON value `raw` holds; InputError when it is not UTF-8, not JSON (where it fails),
    or nested deeper than MAX_NESTING."""
    text = decode_text(raw, label) if isinstance(raw, bytes) else raw
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(f"{label} is not JSON ({exc.msg} at line {exc.lineno})") from None
    except RecursionError:
        raise _too_deep(label) from None
    check_nesting(value, label)
    return value


def load_toml(path: Path | str, label: str, limit: int = SMALL_FILE_LIMIT) -> dict[str, Any]:
    """The TOML document of the file `path`; InputError as json_value's."""
    text = read_text(path, label, limit)
    try:
        value = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise InputError(f"{label} is not TOML ({exc})") from None
    except RecursionError:
        raise _too_deep(label) from None
    check_nesting(value, label)
    return value


def check_nesting(value: Any, label: str) -> None:
    """InputError when `value` (parsed JSON or TOML) nests containers deeper than MAX_NESTING
    (walked without recursion)."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        children = item.values() if isinstance(item, dict) else item \
            if isinstance(item, list) else None
        if children is None:
            continue
        if depth > MAX_NESTING:
            raise _too_deep(label)
        stack.extend((child, depth + 1) for child in children
                     if isinstance(child, (dict, list)))


def _too_deep(label: str) -> InputError:
    return InputError(f"{label} is nested deeper than {MAX_NESTING} levels, which no facefuse "
                      "file is; give the right file")


def _mib(size: int) -> str:
    return f"{size} bytes" if size < MIB else f"{size / MIB:.1f} MiB".replace(".0 MiB", " MiB")


def _reason(exc: OSError) -> str:
    if exc.errno in (errno.EACCES, errno.EPERM):
        return "permission denied"
    return exc.strerror or str(exc)
