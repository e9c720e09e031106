"""io.video.read.open_decoder: the decoder opened with its threads named as the decoder's; one
that cannot open is left for the first decode to report (frames become DecodeFailures)."""

from __future__ import annotations

import sys
import threading
from types import SimpleNamespace

import av
import pytest

from facefuse.io.video.read import open_decoder

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")


def _comm() -> str:
    with open(f"/proc/self/task/{threading.get_native_id()}/comm", encoding="utf-8") as comm:
        return comm.read().strip()


def test_a_decoder_that_cannot_open_is_left_to_its_first_decode() -> None:
    names: list[str] = []

    def refuse(strict: bool = True) -> None:
        names.append(_comm())
        raise av.FFmpegError(1094995529, "Invalid data found when processing input")

    before = _comm()
    open_decoder(SimpleNamespace(codec_context=SimpleNamespace(name="h264", open=refuse)))
    assert names == ["ffdec-h264"]  # opened under the decoder's name
    assert _comm() == before  # and the thread's own name is back
