"""facefuse.stopping: SIGTERM and SIGINT stop the work the same way everywhere (exit 143 / 130),
and no other module decides it (the one helper every entry point uses)."""

from __future__ import annotations

import os
import re
import signal
from pathlib import Path

import pytest

from facefuse.errors import ExitCode
from facefuse.stopping import stop_signals

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def _default_handlers() -> None:
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)


@pytest.mark.parametrize(("signum", "code"), [(signal.SIGTERM, ExitCode.TERMINATED),
                                              (signal.SIGINT, ExitCode.INTERRUPTED)])
def test_either_signal_sets_the_stop_with_its_exit_code(signum: int, code: ExitCode) -> None:
    with stop_signals() as stop:
        assert not stop.is_set() and stop.exit_code == ExitCode.OK
        os.kill(os.getpid(), signum)
        assert stop.is_set() and stop.exit_code == code
        assert stop.name == signal.Signals(signum).name
        assert stop.terminated == (signum == signal.SIGTERM)
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def test_a_second_ctrl_c_interrupts_and_the_first_signal_decides_the_code() -> None:
    with pytest.raises(KeyboardInterrupt), stop_signals() as stop:
        os.kill(os.getpid(), signal.SIGINT)
        os.kill(os.getpid(), signal.SIGINT)
    with stop_signals() as stop:
        os.kill(os.getpid(), signal.SIGTERM)
        os.kill(os.getpid(), signal.SIGINT)  # stopping already: no interrupt, still 143
        assert stop.exit_code == ExitCode.TERMINATED


def test_nested_blocks_share_one_stop() -> None:
    with stop_signals() as outer:
        with stop_signals() as inner:
            assert inner is outer
            os.kill(os.getpid(), signal.SIGTERM)
        assert outer.is_set()
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL


def test_an_ignored_signal_stays_ignored() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    with stop_signals() as stop:
        os.kill(os.getpid(), signal.SIGINT)
        assert not stop.is_set()
    assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN


def test_no_other_module_handles_sigterm_or_sigint_itself() -> None:
    """The decision is written once (facefuse/stopping.py); every entry point uses it."""
    own = re.compile(r"signal\.signal\(\s*signal\.SIG(TERM|INT)")
    found = [str(path.relative_to(ROOT)) for folder in ("core", "addon")
             for path in (ROOT / folder).rglob("*.py")
             if own.search(path.read_text(encoding="utf-8")) and path.name != "stopping.py"]
    assert found == []
