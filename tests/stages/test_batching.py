"""The faces of a frame in one model run: batched results are bit for bit the one-by-one
results on the CPU provider (np.array_equal), for 1, 2 and 5 faces, on the contract models, a
small convolution swapper and the real MobileFaceNet re-declared with a free batch; models
whose batch is fixed at 1 run one crop at a time; the pipeline pastes in plan order."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from facefuse.config import Settings
from facefuse.io.images import read_image
from facefuse.models.manifest import Manifest, load_manifest
from facefuse.pipeline import Pipeline
from facefuse.stages.embed import ArcFaceEmbedder
from facefuse.stages.enhance import CodeFormerRestorer, FaceRestorer
from facefuse.stages.swap import HyperswapSwapper, InswapperSwapper
from facefuse.swapping import FaceSwap
from facefuse.types import AlignedCrop
from tests import contract_models as cm
from tests.stages.batch_models import conv_swapper, free_batch
from tests.stages.crops import random_crop

COUNTS = (1, 2, 5)


class CountingSession:
    """A real onnxruntime session that records the batch of every run."""

    def __init__(self, session: Any) -> None:
        self.session = session
        self.batches: list[int] = []

    def run(self, names: Any, feeds: dict[str, np.ndarray]) -> Any:
        self.batches.append(len(next(iter(feeds.values()))))
        return self.session.run(names, feeds)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.session, name)


@pytest.fixture(scope="module")
def manifest() -> Manifest:
    return load_manifest()


@pytest.fixture(scope="module")
def models(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("batching")


def _latents(swapper: Any, count: int) -> list[np.ndarray]:
    rng = np.random.default_rng(count)
    return [swapper.latent(rng.standard_normal(512).astype(np.float32)) for _ in range(count)]


def _crops(size_px: int, count: int, template: str = "arcface_128") -> list[AlignedCrop]:
    return [replace(random_crop(size_px, seed), template=template) for seed in range(count)]


def _swapper(kind: str, models: Path, manifest: Manifest) -> Any:
    families = manifest.families
    if kind == "conv":
        path = conv_swapper(models / "conv.onnx")
        return InswapperSwapper(CountingSession(cm.cpu_session(path)), families["inswapper"],
                                np.eye(512, dtype=np.float32))
    if kind == "inswapper-free":
        path = cm.identity_swapper(models / "in_free.onnx", batch="n")
        return InswapperSwapper(CountingSession(cm.cpu_session(path)), families["inswapper"],
                                cm.random_orthogonal())
    if kind == "inswapper-fixed":
        path = cm.colour_swapper(models / "in_fixed.onnx")
        return InswapperSwapper(CountingSession(cm.cpu_session(path)), families["inswapper"],
                                cm.random_orthogonal())
    path = cm.hyperswap_identity(models / "hs_free.onnx", batch="n")
    return HyperswapSwapper(CountingSession(cm.cpu_session(path)), families["hyperswap"])


@pytest.mark.parametrize("count", COUNTS)
@pytest.mark.parametrize("kind", ["conv", "inswapper-free", "inswapper-fixed", "hyperswap-free"])
def test_swapping_the_faces_together_gives_the_bits_of_one_by_one(
        models: Path, manifest: Manifest, kind: str, count: int) -> None:
    swapper = _swapper(kind, models, manifest)
    crops, latents = _crops(swapper.size_px, count), _latents(swapper, count)
    together = swapper.swap_all(crops, latents)
    runs_together = list(swapper.session.batches)
    alone = [swapper.swap(crop, latent) for crop, latent in zip(crops, latents)]
    assert all(np.array_equal(a, b) for a, b in zip(together, alone))
    assert runs_together == ([count] if swapper.batch_is_dynamic else [1] * count)


def test_pixel_boost_tiles_of_every_face_share_the_runs(models: Path,
                                                        manifest: Manifest) -> None:
    swapper = _swapper("conv", models, manifest)
    crops, latents = _crops(256, 3), _latents(swapper, 3)  # 3 faces x 4 sub-images
    together = swapper.swap_all(crops, latents)
    assert swapper.session.batches == [12]
    alone = [swapper.swap(crop, latent) for crop, latent in zip(crops, latents)]
    assert all(np.array_equal(a, b) for a, b in zip(together, alone))
    assert swapper.swap_all([], []) == []


def test_a_long_batch_goes_in_runs_of_the_largest_batch(models: Path, manifest: Manifest,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("facefuse.stages.swap.MAX_BATCH", 4)
    swapper = _swapper("inswapper-free", models, manifest)
    swapper.swap_all(_crops(128, 5), _latents(swapper, 5))
    assert swapper.session.batches == [4, 1]


@pytest.mark.parametrize("count", COUNTS)
@pytest.mark.parametrize("kind", ["gfpgan", "codeformer", "fixed"])
def test_restoring_the_faces_together_gives_the_bits_of_one_by_one(
        models: Path, manifest: Manifest, kind: str, count: int) -> None:
    if kind == "codeformer":
        path = free_batch(cm.codeformer_contract(models / "cf.onnx"), models / "cf_free.onnx")
        restorer: FaceRestorer = CodeFormerRestorer(CountingSession(cm.cpu_session(path)),
                                                    manifest.families["codeformer"], 0.3)
    else:
        path = cm.identity_restorer(models / "gfpgan.onnx")
        if kind == "gfpgan":
            path = free_batch(path, models / "gfpgan_free.onnx")
        restorer = FaceRestorer(CountingSession(cm.cpu_session(path)),
                                manifest.families["gfpgan"])
    assert restorer.batch_is_dynamic == (kind != "fixed")
    crops = _crops(512, count, "ffhq_512")
    together = restorer.enhance_all(crops)
    assert restorer.session.batches == ([count] if kind != "fixed" else [1] * count)
    assert all(np.array_equal(a, restorer.enhance(c)) for a, c in zip(together, crops))


@pytest.mark.parametrize("count", COUNTS)
def test_mobilefacenet_embeds_a_batch_with_the_bits_of_one_by_one(
        models: Path, manifest: Manifest, testdata: Path, count: int) -> None:
    path = free_batch(testdata / "models" / "mobilefacenet_128d.onnx", models / "mfn_free.onnx")
    session = CountingSession(cm.cpu_session(path))
    family = replace(manifest.families["arcface"], mean=127.5, std=128.0)
    embedder = ArcFaceEmbedder(session, family)
    assert embedder.batch_is_dynamic
    crops = _crops(112, count, "arcface_112_v2")
    together = embedder.embed_many(crops)
    assert session.batches == [count]
    assert np.array_equal(together, np.stack([embedder.embed(c) for c in crops]))


# --- the pipeline ------------------------------------------------------------------------------

def _two_apart(pipeline: Pipeline, testdata: Path) -> tuple[np.ndarray, list[Any]]:
    """The astronaut side by side twice (1024 x 512): two faces whose crops never meet."""
    photo = read_image(testdata / "media" / "astronaut.png")
    frame = np.ascontiguousarray(np.concatenate([photo, photo[:, ::-1]], axis=1))
    faces = sorted(pipeline.detect(frame), key=lambda f: float(f.bbox_xyxy[0]))
    assert len(faces) == 2
    return frame, faces


@pytest.mark.parametrize("swapper", ["conv", "identity"])
def test_the_pipeline_swaps_and_restores_the_faces_together_in_plan_order(
        settings: Settings, models: Path, testdata: Path, swapper: str,
        monkeypatch: pytest.MonkeyPatch) -> None:
    swap_path = (conv_swapper(models / "pipe_conv.onnx") if swapper == "conv"
                 else cm.identity_swapper(models / "pipe_id.onnx"))
    restorer = free_batch(cm.identity_restorer(models / "pipe_gfpgan.onnx"),
                          models / "pipe_gfpgan_free.onnx")
    batched = replace(settings, swapper=str(swap_path), enhancer=str(restorer))
    with Pipeline(batched) as pipeline:
        identity = pipeline.source_identity([testdata / "media" / "obama.jpg"])
        frame, faces = _two_apart(pipeline, testdata)
        assert pipeline._swapping._restores_together(faces, frame.shape, None)
        together = pipeline.swap_faces(frame, identity, faces)
        monkeypatch.setattr(FaceSwap, "_restores_together", lambda *a: False)
        kind = type(pipeline.models.swapper())
        one = kind.swap_all
        monkeypatch.setattr(kind, "swap_all", lambda self, crops, lats: [
            one(self, [c], [v])[0] for c, v in zip(crops, lats)])
        alone = pipeline.swap_faces(frame, identity, faces)
    assert np.array_equal(together.frame, alone.frame)
    assert together.matte is not None and alone.matte is not None
    assert np.array_equal(together.matte, alone.matte)
    assert [p.roi for p in together.pasted] == [p.roi for p in alone.pasted]  # plan order
    assert all(np.array_equal(a.mask, b.mask) for a, b in zip(together.pasted, alone.pasted))


def test_faces_whose_crops_meet_are_restored_one_by_one(settings: Settings, models: Path,
                                                        testdata: Path) -> None:
    restorer = free_batch(cm.identity_restorer(models / "near_gfpgan.onnx"),
                          models / "near_gfpgan_free.onnx")
    with Pipeline(replace(settings, enhancer=str(restorer))) as pipeline:
        face = pipeline.detect(read_image(testdata / "media" / "astronaut.png"))[0]
        near = replace(face, kps5=face.kps5 + (40.0, 0.0), bbox_xyxy=face.bbox_xyxy + 40.0)
        assert not pipeline._swapping._restores_together([face, near], (512, 512, 3), None)
        assert not pipeline._swapping._restores_together([face], (512, 512, 3), None)
