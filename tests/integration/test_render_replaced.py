"""A render that replaces finished frames made with other choices says so: replaced_frames asks
beforehand (writing nothing), the summary counts them, and the command line says which frames
and what differs before it renders (a line, or a JSON event).

The shot (`media`: 16 frames, a face in frames 5-16) comes from tests/integration/conftest.py.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import replace
from pathlib import Path

import pytest

from facefuse import OutputSpec, Replacement, replaced_frames
from facefuse.cli.main import main
from tests.integration.render_helpers import Media
from tests.render_media import cli_args, render_request, run_render


def _state(folder: Path) -> dict[str, tuple[str, int]]:
    return {p.name: (hashlib.sha256(p.read_bytes()).hexdigest(), p.stat().st_mtime_ns)
            for p in sorted(folder.iterdir())}


def test_replaced_frames_names_the_frames_and_what_differs_and_writes_nothing(
        media: Media, render_models: Path, render_cache: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    request = render_request(render_models, render_cache, media.source, media.clip,
                             out / "o.####.png", "colour")
    assert replaced_frames(request) == Replacement(request.output.path)  # nothing there yet
    first, _ = run_render(request)
    before = _state(out)
    assert not replaced_frames(request)  # the same choices: a resume, not a replacement

    weighted = replace(request, settings=replace(request.settings, swapper_weight=0.7))
    asked = replaced_frames(weighted)
    assert (asked.count, asked.frames, asked.whole_file) == (16, ((1, 16),), False)
    assert asked.differences == ("swapper_weight 0.5 -> 0.7",)
    assert asked.message == ("this render replaces 16 finished frames (1-16) of "
                             f"{request.output.path}, made with other choices: swapper_weight "
                             "0.5 -> 0.7")
    assert _state(out) == before  # asking wrote nothing
    assert asked.made_by == (first.request_fingerprint,) and len(first.request_fingerprint) == 64

    fix = tmp_path / "fix.json"
    fix.write_text(json.dumps({"schema": "facefuse.overrides/1",
                               "overrides": [{"frames": "8-9", "action": "keep"}]}))
    planned = replaced_frames(replace(request, plan=replace(request.plan, overrides=fix)))
    assert (planned.count, planned.frames) == (2, ((8, 9),))
    assert planned.differences == (
        "the plan (people, sources or corrections) in frames 8-9",)
    assert planned.made_by == (first.request_fingerprint,)  # the plan changed, not the render

    summary, _ = run_render(weighted)
    assert (summary.replaced, summary.replaced_ranges, summary.swapped) == (16, ((1, 16),), 12)
    assert not replaced_frames(weighted)
    assert replaced_frames(request).made_by == (summary.request_fingerprint,) != asked.made_by


def test_a_video_made_otherwise_is_replaced_whole_only_with_overwrite(
        media: Media, render_models: Path, render_cache: Path, tmp_path: Path) -> None:
    request = render_request(render_models, render_cache, media.source, media.clip,
                             OutputSpec(str(tmp_path / "o.mkv"), codec="ffv1"), "colour")
    summary, _ = run_render(request)
    other = replace(request, settings=replace(request.settings, mask_blur=0.1))
    assert not replaced_frames(other)  # without --overwrite the render refuses it anyway
    again = replaced_frames(replace(other, output=replace(other.output, overwrite=True)))
    assert (again.whole_file, again.count) == (True, 16)
    assert again.differences == ("mask_blur 0.3 -> 0.1",)
    assert again.made_by == (summary.request_fingerprint,)
    again_overwriting = replace(request, output=replace(request.output, overwrite=True))
    assert not replaced_frames(again_overwriting)  # the same choices


@pytest.mark.parametrize("mode", ["line", "json"])
def test_the_command_line_says_what_it_replaces_before_rendering(
        mode: str, media: Media, render_models: Path, cli_cache: Path, tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    output = tmp_path / "out" / "o.####.png"
    assert main(cli_args(render_models, media.source, media.clip, output, "--frames", "3-8",
                         swapper="colour")) == 0
    capsys.readouterr()
    progress = ["--progress", "json"] if mode == "json" else []
    assert main(cli_args(render_models, media.source, media.clip, output, "--frames", "3-8",
                         "--swapper-weight", "0.6", *progress, swapper="colour")) == 0
    captured = capsys.readouterr()
    if mode == "line":
        note = [line for line in captured.err.splitlines() if "replaces" in line]
        assert note == [(f"facefuse: note: this render replaces 6 finished frames (3-8) of "
                        f"{output}, made with other choices: swapper_weight 0.5 -> 0.6")]
        assert "(6 frames made with other choices replaced: 3-8)" in captured.out
        return
    lines = [json.loads(line) for line in captured.out.splitlines()]
    first_frame = next(i for i, line in enumerate(lines) if "frame" in line)
    event = next(i for i, line in enumerate(lines) if "replaces" in line)
    assert event < first_frame
    assert lines[event]["replaces"]["frames"] == [[3, 8]]
    assert lines[event]["replaces"]["differences"] == ["swapper_weight 0.5 -> 0.6"]
    assert lines[-1]["summary"]["replaced"] == 6
