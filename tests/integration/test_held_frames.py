"""Frames decoded once (Settings.frame_memory_mib, shot.run.held_frames): a render whose frames
pass 1 holds on for pass 2 writes the same bytes as one that decodes every frame twice, whether all
of them fit, some, or none; for 8-bit and 10-bit YUV, alpha, and a plate sequence; for a chunk of an
analysed range. A plan alone (preview, review) and pass 1 beside pass 2 (selector many) hold
none. The real render code throughout: real YuNet, the contract recogniser and swapper."""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest

from facefuse.io.video.frame import DecodedFrame
from facefuse.shot.contract.request import OutputSpec
from facefuse.shot.run.plan_only import plan_shot
from facefuse.shot.run.render import render
from tests.render_media import (
    face_frame,
    face_photo,
    make_face_clip,
    render_request,
    run_render,
    write_plate_oiio,
)

FRAMES = 24
SOURCE = "media/obama.jpg"


@pytest.fixture(scope="module")
def clips(tmp_path_factory: pytest.TempPathFactory, testdata: Path) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("held-clips")
    face = face_photo(testdata)
    made = {codec: make_face_clip(root / f"{codec}.mov", face, frames=FRAMES, codec=codec,
                                  audio=None, without_face=(3,))
            for codec in ("h264", "prores_422", "prores_4444")}
    made["slow"] = make_face_clip(root / "slow.mp4", face, frames=FRAMES, rate=Fraction(4),
                                  audio=None)
    plates = root / "plates"
    plates.mkdir()
    for i in range(8):
        write_plate_oiio(plates / f"p.{i + 1}.png", face_frame(i, face)[..., ::-1].copy(),
                         "uint8")
    made["plates"] = plates / "p.#.png"
    return made


def _render(render_models: Path, render_cache: Path, testdata: Path, shot: Path, out: Path,
            memory_mib: int, settings: dict[str, Any] | None = None,
            **fields: Any) -> tuple[Any, bytes | list[bytes]]:
    out.parent.mkdir(parents=True, exist_ok=True)
    cache = out.parent / f"cache-{out.stem.strip('o.#')}"  # cold: pass 1 analyses every frame
    request = render_request(render_models, cache, testdata / SOURCE, shot, out,
                             settings={"frame_memory_mib": memory_mib, **(settings or {})},
                             overwrite=True, **fields)
    summary, reports = run_render(request)
    assert not summary.failed and [r.frame for r in reports] == sorted(r.frame for r in reports)
    if "#" in out.name:
        return summary, [p.read_bytes() for p in sorted(out.parent.glob("o.*"))]
    return summary, out.read_bytes()


@pytest.mark.parametrize("codec, output", [
    ("h264", "out.mov"), ("prores_422", "out.mov"), ("prores_4444", "o.####.png"),
    ("plates", "o.####.png")])
def test_frames_decoded_once_render_the_same_bytes_as_frames_decoded_twice(
        codec: str, output: str, clips: dict[str, Path], render_models: Path,
        render_cache: Path, testdata: Path, tmp_path: Path) -> None:
    fields = {"codec": "rawvideo"} if output.endswith(".mov") else {}
    twice, expected = _render(render_models, render_cache, testdata, clips[codec],
                              tmp_path / "twice" / output, 0, **fields)
    once, got = _render(render_models, render_cache, testdata, clips[codec],
                        tmp_path / "once" / output, 1024, **fields)
    assert twice.decoded_once == 0 and twice.held_mib == 0
    assert once.decoded_once == once.frames == twice.frames and once.held_mib > 0
    assert once.swapped == twice.swapped > 0
    assert got == expected


def test_a_budget_that_holds_some_frames_decodes_the_rest_and_renders_the_same(
        clips: dict[str, Path], render_models: Path, render_cache: Path, testdata: Path,
        tmp_path: Path) -> None:
    # 320x240 4:2:0 is about 0.12 MiB a frame: 1 MiB holds the first few of the 24
    _, expected = _render(render_models, render_cache, testdata, clips["h264"],
                          tmp_path / "twice.mov", 0, codec="rawvideo")
    some, got = _render(render_models, render_cache, testdata, clips["h264"],
                        tmp_path / "some.mov", 1, codec="rawvideo")
    assert 0 < some.decoded_once < FRAMES and some.held_mib <= 1.0
    assert got == expected


def test_a_plan_alone_holds_no_frame(clips: dict[str, Path], render_models: Path,
                                     testdata: Path, tmp_path: Path,
                                     monkeypatch: pytest.MonkeyPatch) -> None:
    handed: list[int] = []
    original = DecodedFrame.for_another_pass

    def counted(frame: DecodedFrame) -> DecodedFrame:
        handed.append(1)
        return original(frame)

    monkeypatch.setattr(DecodedFrame, "for_another_pass", counted)
    request = render_request(render_models, tmp_path / "cache", testdata / SOURCE, clips["h264"],
                             OutputSpec(str(tmp_path / "o.mov"), codec="rawvideo"))
    plan = plan_shot(request)  # what preview and review plan on: no pass 2 takes frames
    assert plan.faces(plan.frames[0]) and not handed
    summary, _ = _render(render_models, tmp_path, testdata, clips["h264"],
                         tmp_path / "r" / "o.mov", 1024, codec="rawvideo")
    assert len(handed) == summary.decoded_once == FRAMES


def test_a_chunk_holds_only_its_own_frames(clips: dict[str, Path], render_models: Path,
                                           render_cache: Path, testdata: Path,
                                           tmp_path: Path) -> None:
    results = {}
    for memory in (0, 1024):
        results[memory] = _render(render_models, render_cache, testdata, clips["h264"],
                                  tmp_path / f"m{memory}" / "o.####.png", memory,
                                  chunk=(2, 3))
    (twice, expected), (once, got) = results[0], results[1024]
    assert once.frames == twice.frames == FRAMES // 3
    assert once.decoded_once == FRAMES // 3 and got == expected


def test_with_pass_one_beside_pass_two_each_pass_decodes_its_own(
        clips: dict[str, Path], render_models: Path, testdata: Path, tmp_path: Path) -> None:
    results = {}
    for memory in (0, 1024):
        phases: list[str] = []
        request = render_request(render_models, tmp_path / f"cache{memory}", testdata / SOURCE,
                                 clips["slow"],
                                 OutputSpec(str(tmp_path / f"b{memory}.mov"), overwrite=True,
                                            codec="rawvideo"),
                                 settings={"frame_memory_mib": memory,
                                                             "selector": "many"})
        summary = render(request, on_phase=lambda step, seen=phases: seen.append(step.phase))
        # the analysis went on after pass 2 began: its horizon is 8 frames at 4 frames/s
        assert phases.index("swap") < len(phases) - 1 - phases[::-1].index("analysis")
        results[memory] = summary, (tmp_path / f"b{memory}.mov").read_bytes()
    (twice, expected), (beside, got) = results[0], results[1024]
    assert twice.decoded_once == 0 and beside.decoded_once == 0 and beside.held_mib == 0
    assert got == expected
