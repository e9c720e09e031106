"""RenderRequest's groups and typed people: the fingerprints, metadata and command line of a
request are those the flat request of facefuse 0.x made (values pinned from that code)."""

from __future__ import annotations

import hashlib
import json
from fractions import Fraction
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from facefuse.config import Settings
from facefuse.errors import InputError
from facefuse.shot.contract.commandline import render_args, request_from_args
from facefuse.shot.contract.request import (
    FrameSpec,
    InputSpec,
    OutputSpec,
    PersonId,
    PersonInPicture,
    PlanChoices,
    RenderRequest,
    parse_person,
)
from facefuse.shot.output.prints import render_prints
from facefuse.types import SourceIdentity

# render_prints of REQUEST over the stubs below, computed by the flat RenderRequest's code
OLD_BASE = "aa5066ba2f5acca45a829a0e126104dadbd4eb1173d802a0810e303b4fa119cb"
OLD_WHOLE = "8eafd61910ed44630d72b8d3746c02f15bef452bd8463a984001d846b74a781c"
OLD_METADATA_SHA256 = "05c30668056993482696354d17a1764f8325f5c7c2583657919d4e14922537e8"
OLD_ARGS = [
    "-s", "me.jpg", "-i", "shot.mov", "-o", "out/o.####.exr", "--swapper-weight", "0.7",
    "--frames", "1001-1010", "--crf", "12", "--rate", "24000/1001", "--start-number", "1001",
    "--conform-vfr", "--smooth-min-cutoff", "0.7", "--smooth-beta", "2.5",
    "--assign", "p2=b.jpg", "--assign", "ref:./pics/c.png=d.jpg", "--skip", "p3",
    "--skip", "ref:e.png", "--provenance", "full"]

REQUEST = RenderRequest(
    sources=(Path("me.jpg"),), settings=Settings(swapper_weight=0.7),
    input=InputSpec("shot.mov", start_number=1001, conform_vfr=True),
    frames=FrameSpec(range=(1001, 1010)),
    plan=PlanChoices(smoothing_min_cutoff=0.7, smoothing_beta=2.5,
                     assign=((PersonId("p2"), Path("b.jpg")),
                             (PersonInPicture("./pics/c.png"), Path("d.jpg"))),
                     skip=(PersonId("p3"), PersonInPicture("e.png"))),
    output=OutputSpec("out/o.####.exr", crf=12, rate=Fraction(24000, 1001), provenance="full"))


def _hex(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


class _Memo:
    def sha256(self, path: Path) -> str:
        return _hex(Path(path).name)

    def flush(self) -> None:
        pass


class _Models:
    def sha256(self, role: str) -> str:
        return _hex(role)

    def used(self) -> dict[str, dict[str, str]]:
        return {"swapper": {"model": "s.onnx", "sha256": _hex("swapper")}}


class _Pipeline:
    """Every value fixed, nothing read."""

    hashes = _Memo()
    models = _Models()

    def source_identity(self, paths: list[Path]) -> SourceIdentity:
        names = ",".join(Path(p).name for p in paths)
        return SourceIdentity(np.full(4, len(names), np.float32) / 2.0,
                              tuple(_hex(Path(p).name) for p in paths))


def test_the_fingerprints_and_metadata_are_the_flat_requests() -> None:
    shot = SimpleNamespace(content_sha256=lambda memo: _hex("shot"), label="shot.mov")
    prints = render_prints(REQUEST, _Pipeline(), shot, (1001, 1010), "ACEScg",  # type: ignore[arg-type]
                           None)
    assert (prints.base, prints.whole) == (OLD_BASE, OLD_WHOLE)
    metadata = json.dumps(dict(prints.metadata), sort_keys=True).encode()
    assert hashlib.sha256(metadata).hexdigest() == OLD_METADATA_SHA256


def test_the_command_line_is_the_flat_requests() -> None:
    assert render_args(REQUEST) == OLD_ARGS
    assert request_from_args(OLD_ARGS) == REQUEST


@pytest.mark.parametrize("text", ["p1", "p12", "ref:a.png", "ref:./x/y=z.png"])
def test_a_person_reads_back_as_its_text(text: str) -> None:
    assert str(parse_person(text)) == text


@pytest.mark.parametrize("text", ["", "p0", "q1", "ref:", "1"])
def test_anything_else_is_no_person(text: str) -> None:
    with pytest.raises(InputError, match="does not name a person"):
        parse_person(text)


def test_each_group_checks_its_own_fields() -> None:
    with pytest.raises(InputError, match="not both"):
        FrameSpec(chunk=(1, 2), chunk_frames=(1, 3))
    with pytest.raises(InputError, match="named twice"):
        PlanChoices(assign=((PersonId("p1"), Path("a.png")),), skip=(PersonId("p1"),))
    with pytest.raises(InputError, match="provenance"):
        OutputSpec("o.mp4", provenance="paths")
