"""Settings.cache_dir is the one folder a render caches into: a farm job given a scratch cache
folder writes nothing beside it (not into its parent, not into $FACEFUSE_CACHE)."""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path

from facefuse.config import Settings
from facefuse.shot.contract.request import FrameSpec, InputSpec, OutputSpec, RenderRequest
from facefuse.shot.looks import previews
from facefuse.shot.run.render import render


def _files(root: Path) -> set[Path]:
    return {p for p in root.rglob("*") if p.is_file()} if root.exists() else set()


def test_a_render_and_its_previews_cache_only_under_the_folder_named(settings: Settings,
                                                                    testdata: Path,
                                                                    tmp_path: Path):
    farm = tmp_path / "farm"
    scratch, out = farm / "job-17" / "cache", tmp_path / "out"
    scratch.mkdir(parents=True)
    out.mkdir()
    user_cache = Path(os.environ["FACEFUSE_CACHE"])
    user_before = _files(user_cache)
    job = replace(settings, cache_dir=scratch)
    request = RenderRequest(sources=(testdata / "media" / "obama.jpg",), settings=job,
                            input=InputSpec(str(testdata / "media" / "asl_yes.mp4")),
                            frames=FrameSpec(range=(1, 3)),
                            output=OutputSpec(str(out / "shot.####.png")))

    summary = render(request)
    preview = previews.preview_frame(request, 2)

    assert summary.done == 3 and not summary.failed
    assert _files(farm) == _files(scratch), "the render wrote beside its cache folder"
    assert _files(user_cache) == user_before, "the render wrote into $FACEFUSE_CACHE"
    cached = {p.relative_to(scratch).parts[0] for p in _files(scratch)}
    assert cached == {"embeddings", "analysis", "previews", "file-hashes.json"}
    assert preview.parent == scratch / "previews"
    assert sorted(p.name for p in out.iterdir()) == [f"shot.{n:04d}.png" for n in (1, 2, 3)]
