"""Fixtures of the whole-render and farm tests, shared by several files here.

The two expensive set-ups are session-scoped so each still runs once, now that their tests are
split by topic over several modules (as module fixtures they ran once for one big module):
- `media`: the shot of tests/integration/test_render_*.py (a 16-frame 23.976 fps h264 clip with
  a real face, and what YuNet and the colour swapper make of it);
- `farm`: the 120-frame clip of tests/integration/test_farm_*.py and its uninterrupted reference
  render in a real process.
Models and the session's analysis cache come from tests/conftest.py.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from facefuse.pipeline import Pipeline
from tests import contract_models
from tests.integration import farm_helpers
from tests.integration.farm_helpers import Farm
from tests.integration.render_helpers import CLIP_FRAMES, NO_FACE, NTSC_FILM, Media
from tests.render_media import (
    decode_video,
    face_frame,
    face_photo,
    make_face_clip,
    render_settings,
)

# --- whole renders (test_render_*.py) ----------------------------------------------------------

@pytest.fixture(scope="session")
def media(tmp_path_factory: pytest.TempPathFactory, testdata: Path, render_models: Path,
          render_cache: Path) -> Media:
    """The shared shot: a clip without a face in NO_FACE, the source photo, the clip decoded
    with PyAV, YuNet's nose landmark and the colour the colour swapper paints for the source."""
    root = tmp_path_factory.mktemp("render-media")
    face = face_photo(testdata)
    source = testdata / "media" / "obama.jpg"
    clip = make_face_clip(root / "shot.mp4", face, frames=CLIP_FRAMES, rate=NTSC_FILM,
                          without_face=NO_FACE)
    settings = render_settings(render_models, render_cache, "colour")
    with Pipeline(settings) as pipeline:
        faces = pipeline.detect(face_frame(5, face))
        identity = pipeline.source_identity([source])
        latent = pipeline.models.swapper().latent(identity.embedding)
    assert len(faces) == 1, "the composited face must be found by YuNet"
    nose = faces[0].kps5[2].round().astype(int)
    return Media(root, face, source, clip, decode_video(clip), (int(nose[0]), int(nose[1])),
                 contract_models.expected_colour_rgb(latent))


@pytest.fixture()
def cli_cache(render_cache: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """CLI renders share the session's analysis cache (the CLI takes it from $FACEFUSE_CACHE)."""
    monkeypatch.setenv("FACEFUSE_CACHE", str(render_cache))
    return render_cache


# --- farm processes (test_farm_*.py) -----------------------------------------------------------

@pytest.fixture(autouse=True)
def _no_render_outlives_its_test() -> Iterator[None]:
    """A render process a test started (farm_helpers.start) never outlives the test."""
    yield
    farm_helpers.kill_started()


@pytest.fixture(scope="session")
def farm(tmp_path_factory: pytest.TempPathFactory, testdata: Path, contract_dir: Path) -> Farm:
    """A 120-frame clip and its uninterrupted reference render (which also fills the shared
    analysis cache, so the interrupted renders spend their time in pass 2)."""
    root = tmp_path_factory.mktemp("farm")
    return farm_helpers.rendered_farm(root, farm_helpers.CLIP_FRAMES, testdata, contract_dir,
                                      root / "cache")
