"""What the command line prints is a report (cli.streams): a stream whose reader went away
drops the lines, the command goes on and exits as its work says (issue 34, class 4)."""

from __future__ import annotations

import io
import sys

import pytest

from facefuse.cli.main import main
from facefuse.cli.streams import ReportStream


class ClosedPipe(io.StringIO):
    """A stream whose reader has gone: every write and flush fails as a closed pipe does."""

    def __init__(self) -> None:
        super().__init__()
        self.tries = 0

    def write(self, text: str) -> int:
        self.tries += 1
        raise BrokenPipeError(32, "Broken pipe")

    def flush(self) -> None:
        raise BrokenPipeError(32, "Broken pipe")


def test_a_closed_pipe_drops_the_lines_once_and_for_all() -> None:
    closed = ClosedPipe()
    stream = ReportStream(closed)  # type: ignore[arg-type]
    assert stream.write("one\n") == 4
    stream.flush()
    print("two", file=stream, flush=True)
    stream.writelines(["three\n"])
    assert stream.gone and closed.tries == 1


def test_other_write_errors_are_the_callers() -> None:
    class Full(io.StringIO):
        def write(self, text: str) -> int:
            raise OSError(28, "No space left on device")

    with pytest.raises(OSError, match="No space"):
        ReportStream(Full()).write("x")  # type: ignore[arg-type]


@pytest.mark.parametrize("closed", ["stdout", "stderr", "both"])
def test_a_command_whose_reader_went_away_exits_as_its_work_says(
        closed: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """`facefuse models list | true`: the listing is lost, the command is not (it was exit 1,
    "internal error: BrokenPipeError"); a usage error is still exit 2."""
    if closed in ("stdout", "both"):
        monkeypatch.setattr(sys, "stdout", ClosedPipe())
    if closed in ("stderr", "both"):
        monkeypatch.setattr(sys, "stderr", ClosedPipe())
    assert main(["models", "list"]) == 0
    assert main(["models", "no-such-action"]) == 2
    assert isinstance(sys.stdout, ClosedPipe if closed != "stderr" else object)
