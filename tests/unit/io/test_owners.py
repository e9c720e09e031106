"""One owner rule for locks and temporaries (issue 24, item 4): a temporary's name records its
writer's pid, place (host and pid namespace) and start time, and the sweep judges it by
io.owners.owner_is_gone, the rule the locks use. A render in another pid namespace (a container
with the host's name) is never judged by its pid, so its temporaries stay until they go a week
untouched.

Another namespace is faked by writing the name (or lock record) its writer would write: the
same host name, another namespace id, a pid that is dead here.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from facefuse.cache.locking import LockOwner
from facefuse.io import files, owners

pytestmark = pytest.mark.skipif(os.name != "posix", reason="the owner probe is POSIX")


def _dead_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def _temporary(folder: Path, pid: int, place: str, started: int | str | None) -> Path:
    owner = f"{pid}-{place}" + ("" if started is None else f"-{started}")
    path = folder / f".o.0001.{owner}.0badc0de.tmp.png"
    path.write_bytes(b"partial")
    return path


def _sweep(folder: Path) -> list[str]:
    return [p.name for p in files.sweep_stale_temporaries(folder, lambda p, c, e: True)]


def test_a_temporary_of_another_pid_namespace_on_this_host_is_kept(tmp_path: Path) -> None:
    other = owners.place_tag(socket.gethostname(), "pid:[4026599999]")
    assert other != owners.here()
    kept = _temporary(tmp_path, _dead_pid(), other, 12345)
    assert _sweep(tmp_path) == []
    assert kept.exists()
    later = time.time() + files.FOREIGN_HOST_STALE_S + 60  # a week untouched: swept
    assert [p.name for p in files.sweep_stale_temporaries(
        tmp_path, lambda p, c, e: True, now=later)] == [kept.name]


def test_a_temporary_named_by_the_host_alone_is_not_this_namespaces(tmp_path: Path) -> None:
    """The host's hash without the namespace is what another namespace's writer does not
    write; a name carrying it is foreign here (kept) unless the namespace is unknown."""
    if owners.pid_namespace() is None:
        pytest.skip("no pid namespaces here")
    host_only = owners.place_tag(socket.gethostname(), None)
    kept = _temporary(tmp_path, _dead_pid(), host_only, None)
    assert _sweep(tmp_path) == [] and kept.exists()


def test_a_dead_writer_here_is_swept_and_a_live_one_kept(tmp_path: Path) -> None:
    here, me = owners.here(), owners.ProcessOwner.current()
    dead = _temporary(tmp_path, _dead_pid(), here, "x")
    alive = tmp_path / f".o.0002.{files.owner_tag()}.0badc0de.tmp.png"
    alive.write_bytes(b"partial")
    assert _sweep(tmp_path) == [dead.name]
    assert alive.exists() and f"-{me.place}-" in alive.name


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="start times from /proc")
def test_a_reused_pid_is_told_apart_by_its_start_time(tmp_path: Path) -> None:
    me = owners.ProcessOwner.current()
    assert me.started is not None
    reused = _temporary(tmp_path, me.pid, me.place, me.started - 1)
    assert _sweep(tmp_path) == [reused.name]


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="process states from /proc")
def test_a_killed_writer_its_parent_has_not_reaped_yet_is_gone(tmp_path: Path) -> None:
    """A render killed with SIGKILL whose parent has not waited for it yet (a zombie) writes
    nothing more: its temporaries are swept and its locks taken over at once."""
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        started = owners.process_start(child.pid)
        owner = owners.ProcessOwner(child.pid, owners.here(), started)
        assert not owners.owner_is_gone(owner)  # running
        child.kill()
        deadline = time.monotonic() + 10
        while not owners.process_ended(child.pid) and time.monotonic() < deadline:
            time.sleep(0.01)
        assert owners.process_start(child.pid) == started  # its pid still shows, unreaped
        assert owners.owner_is_gone(owner)
        stale = _temporary(tmp_path, child.pid, owner.place, started)
        assert _sweep(tmp_path) == [stale.name]
    finally:
        child.kill()
        child.wait()
    assert not owners.process_ended(child.pid)  # reaped: no process to speak of


def test_temporary_names_record_the_owner_the_sweep_reads(tmp_path: Path) -> None:
    tmp = files.temporary_path(tmp_path / "o.0001.png", keep_suffix=True)
    match = files._TEMP.match(tmp.name)
    assert match is not None
    me = owners.ProcessOwner.current()
    assert int(match["pid"]) == me.pid and match["host"] == me.place
    assert match["started"] == ("x" if me.started is None else str(me.started))


@pytest.mark.parametrize("where", ["here", "another namespace", "another host"])
def test_locks_and_temporaries_judge_an_owner_alike(where: str) -> None:
    host = "another-host.invalid" if where == "another host" else socket.gethostname()
    namespace = "pid:[4026599999]" if where == "another namespace" else owners.pid_namespace()
    lock = LockOwner(_dead_pid(), host, None, time.time(), "t", namespace)
    assert lock.process.place == owners.place_tag(host, namespace)
    assert owners.owner_is_gone(lock.process) is (where == "here")
