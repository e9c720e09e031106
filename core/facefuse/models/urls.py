"""What a model's source URL says: whether it is local, the file name it ends in, and the host
it names when that host cannot be resolved (no network, no name server), with the sentence that
says so."""

from __future__ import annotations

import socket
import urllib.error
import urllib.parse
from collections.abc import Iterable
from pathlib import PurePosixPath


def unresolved_host(exc: BaseException, url: str) -> str | None:
    """The host name of url when exc says it cannot be resolved (socket.gaierror, bare or as
    a URLError's reason), else None: another attempt would fail the same way at once."""
    reason = exc.reason if isinstance(exc, urllib.error.URLError) else exc
    if isinstance(reason, socket.gaierror):
        return urllib.parse.urlsplit(url).hostname or url
    return None


def unresolved_message(label: str, hosts: Iterable[str]) -> str:
    """'could not download LABEL: the host H cannot be resolved (...)'."""
    names = sorted(set(hosts))
    which = f"the host {names[0]}" if len(names) == 1 else f"the hosts {', '.join(names)}"
    return (f"could not download {label}: {which} cannot be resolved (no network, or no name "
            "server reachable), so it was not retried")


def is_local_url(url: str) -> bool:
    """Whether url is a file:// URL (a local file or a mounted share, never the network)."""
    return urllib.parse.urlsplit(url).scheme.lower() == "file"


def url_file_name(url: str) -> str:
    """The last path segment of url, unquoted ('archive.zip' when the path has none)."""
    name = PurePosixPath(urllib.parse.unquote(urllib.parse.urlsplit(url).path)).name
    return name or "archive.zip"
