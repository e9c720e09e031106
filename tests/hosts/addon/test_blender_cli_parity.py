"""Blender and the command line make the same request: a strip's settings, which Blender keeps
as float32, reach the engine as the decimals typed (0.35, not 0.3499999940395355), so a render
folder made by `facefuse render` is a finished Swap Strip in Blender and the other way round.

Fixtures in tests/hosts/addon/conftest.py (`shot`: a saved .blend with a trimmed plate strip,
contract models, CPU, offline).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from types import SimpleNamespace

import pytest

# tests/hosts/conftest.py points BLENDER_USER_* at a temporary folder before bpy is imported.
bpy = pytest.importorskip("bpy", reason="bpy (Blender as a Python module) is not installed")

from tests.hosts.addon.blender_helpers import (
    TRIM_START,
    TRIMMED,
    add_source,
    last_message,
    module,
)

# typed into the panel: none of them is a float32 exactly
TYPED = {"mask_blur": "0.35", "similarity": "0.45", "swapper_weight": "0.7",
         "detector_score": "0.55"}


def _cli_args(shot: SimpleNamespace, clip: Path, source: Path) -> list[str]:
    """`facefuse render` arguments for what the strip is set to."""
    props = shot.strip.facefuse
    first, last = TRIM_START + 1, TRIM_START + TRIMMED
    args = ["-s", str(source), "-i", str(clip), "-o", str(shot.out / "plate.####.png"),
            "--frames", f"{first}-{last}", "--detector", props.detector,
            "--recogniser", props.recogniser, "--swapper", props.swapper,
            "--providers", "cpu", "--models-dir", props.models_dir,
            "--cache-dir", props.cache_dir, "--offline"]
    for name, text in TYPED.items():
        args += [f"--{name.replace('_', '-')}", text]
    return args


def test_blender_makes_the_command_lines_request_and_resumes_its_render(
        shot: SimpleNamespace, clip: Path, testdata: Path) -> None:
    from facefuse import render, request_from_args

    source = testdata / "media" / "obama.jpg"
    add_source(shot.strip, source)
    for name, text in TYPED.items():
        setattr(shot.strip.facefuse, name, float(text))
    assert shot.strip.facefuse.mask_blur != 0.35  # Blender holds the float32

    cli = request_from_args(_cli_args(shot, clip, source))
    plan = module("convert").strip_swap(shot.scene, shot.strip)
    ours = plan.request
    for field in dataclasses.fields(ours.settings):
        assert getattr(ours.settings, field.name) == getattr(cli.settings, field.name), \
            field.name
    for field in dataclasses.fields(ours):
        if field.name != "settings":
            assert getattr(ours, field.name) == getattr(cli, field.name), field.name
    assert ours == cli

    # a folder `facefuse render` filled is a finished swap in Blender: every frame skipped
    summary = render(cli)
    assert (summary.swapped, summary.failed) == (TRIMMED, ())
    assert bpy.ops.facefuse.swap_strip() == {'FINISHED'}, last_message()
    assert f"0 swapped, 0 without a face, {TRIMMED} already done" in last_message().text
