"""What a cache returns is checked, and a cache that cannot be written only costs time (issue 8,
items 3, 9 and 10): poisoned entries (NaN, huge values, wrong shapes, non-unit embeddings) and
damaged ones (0-byte or truncated .npy / .npz / JSON) are misses, warned about by file name,
computed again and replaced, in the embedding cache, the analysis cache, the swapper's emap cache
and the file-hash memo.

The tests run as root, where chmod 0o555 does not stop writes, so read-only folders are simulated
by making the write function raise PermissionError or OSError(EROFS)."""

from __future__ import annotations

import errno
import io
import logging
from pathlib import Path

import numpy as np
import pytest

from facefuse.cache import embeddings as embeddings_module
from facefuse.cache import hashes as hashes_module
from facefuse.cache.embeddings import EmbeddingCache
from facefuse.cache.hashes import HashMemo, sha256_file
from facefuse.shot.plan import analysis as analysis_module
from facefuse.shot.plan.analysis import AnalysisCache, AnalysisKey, ShotAnalysis, pack_detections
from facefuse.shot.plan.cuts import frame_signature, pack_signatures
from facefuse.stages import swap as swap_module
from facefuse.stages.roles import ModelFile
from facefuse.types import Face

KEY = AnalysisKey("c" * 64, "det:1", "rec:2", 640, 0.5, None)


def _npy(array: np.ndarray) -> bytes:
    buffer = io.BytesIO()
    np.save(buffer, array, allow_pickle=False)
    return buffer.getvalue()


def _npz(arrays: dict[str, np.ndarray]) -> bytes:
    buffer = io.BytesIO()
    np.savez(buffer, **arrays)  # type: ignore[arg-type]
    return buffer.getvalue()


def _unit(dim: int = 8, index: int = 0) -> np.ndarray:
    vector = np.zeros(dim, np.float32)
    vector[index] = 1.0
    return vector


def _refuse(error: OSError):  # type: ignore[no-untyped-def]
    def write(*args: object, **kwargs: object) -> None:
        raise error
    return write


# ---- the embedding cache ----------------------------------------------------------------------

def _poisoned_embeddings() -> dict[str, bytes]:
    nan = _unit()
    nan[3] = np.nan
    huge = _unit() * 1e30
    full = np.full(8, 1e3, np.float32)
    full[0] = 1.0
    return {"nan": _npy(nan), "huge": _npy(huge), "2d": _npy(np.stack([_unit(), _unit()])),
            "ints": _npy(np.arange(8)), "spike": _npy(full), "empty": _npy(np.zeros(0, np.float32)),
            "zero-byte": b"", "truncated": _npy(_unit())[:-5], "header-only": _npy(_unit())[:60]}


@pytest.mark.parametrize("kind", list(_poisoned_embeddings()))
def test_a_poisoned_or_damaged_embedding_is_a_miss_and_replaced(
        tmp_path: Path, caplog: pytest.LogCaptureFixture, kind: str) -> None:
    cache = EmbeddingCache(tmp_path)
    key = EmbeddingCache.key("a" * 64, "d", "r", 640)
    entry = tmp_path / f"{key}.npy"
    entry.write_bytes(_poisoned_embeddings()[kind])
    with caplog.at_level(logging.WARNING):
        assert cache.get(key) is None
    assert entry.name in caplog.text
    cache.put(key, _unit(index=2))
    got = cache.get(key)
    assert got is not None
    np.testing.assert_array_equal(got, _unit(index=2))


def test_a_good_embedding_is_a_hit(tmp_path: Path) -> None:
    cache = EmbeddingCache(tmp_path)
    vector = np.arange(1, 9, dtype=np.float32)
    vector /= np.linalg.norm(vector)
    cache.put("k", vector)
    got = cache.get("k")
    assert got is not None and got.dtype == np.float32
    np.testing.assert_array_equal(got, vector)


@pytest.mark.parametrize("error", [PermissionError(errno.EACCES, "Permission denied"),
                                   OSError(errno.EROFS, "Read-only file system")])
def test_an_unwritable_embedding_cache_warns_once(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture,
        error: OSError) -> None:
    monkeypatch.setattr(embeddings_module, "atomic_write_bytes", _refuse(error))
    cache = EmbeddingCache(tmp_path / "embeddings")
    with caplog.at_level(logging.WARNING):
        cache.put("a", _unit())
        cache.put("b", _unit())
    warnings = [r for r in caplog.records if "cannot write the embedding cache" in r.getMessage()]
    assert len(warnings) == 1 and str(tmp_path / "embeddings") in warnings[0].getMessage()
    assert cache.get("a") is None


# ---- the analysis cache -----------------------------------------------------------------------

def _face(x: float, embedding: np.ndarray | None) -> Face:
    box = np.array([x, 10, x + 50, 60], np.float32)
    kps = np.array([[x + 15, 25], [x + 35, 25], [x + 25, 35], [x + 17, 48], [x + 33, 48]],
                   np.float32)
    return Face(box, kps, 0.9, embedding)


def _detections() -> dict[int, tuple[Face, ...]]:
    return {1: (_face(10, _unit()), _face(100, _unit(index=1))), 2: (), 3: (_face(12, _unit()),)}


def _analysis() -> ShotAnalysis:
    frames = {n: np.full((40, 60, 3), 60 * n, np.uint8) for n in (1, 2, 3)}
    return ShotAnalysis(_detections(), {n: frame_signature(f) for n, f in frames.items()})


def _poisoned_analyses() -> dict[str, bytes]:
    analysis = _analysis()
    good = {**pack_detections(analysis.faces), **pack_signatures(analysis.signatures)}
    good_bytes = _npz(good)

    def changed(**arrays: np.ndarray) -> bytes:
        return _npz({**good, **arrays})

    nan_boxes = good["boxes"].copy()
    nan_boxes[0, 1] = np.nan
    inf_kps = good["kps"].copy()
    inf_kps[2, 4, 0] = np.inf
    huge = good["embeddings"].copy()
    huge[1] *= 1e30
    nan_emb = good["embeddings"].copy()
    nan_emb[0, 0] = np.nan
    without = dict(good)
    del without["scores"]
    unsigned = dict(good)
    del unsigned["thumbnails"]
    nan_histogram = good["histograms"].copy()
    nan_histogram[1, 2, 3] = np.nan
    return {
        "nan boxes": changed(boxes=nan_boxes), "inf kps": changed(kps=inf_kps),
        "nan score": changed(scores=np.array([0.9, np.nan, 0.9], np.float32)),
        "huge embedding": changed(embeddings=huge), "nan embedding": changed(embeddings=nan_emb),
        "counts too many": changed(counts=np.array([2, 0, 5], np.int64)),
        "counts negative": changed(counts=np.array([4, -1, 0], np.int64)),
        "frames vs counts": changed(frames=np.array([1, 2], np.int64)),
        "boxes short": changed(boxes=good["boxes"][:2]),
        "kps shape": changed(kps=good["kps"].reshape(3, 10)),
        "embeddings rows": changed(embeddings=good["embeddings"][:1]),
        "float frames": changed(frames=good["frames"].astype(np.float32)),
        "no scores": _npz(without),
        "no thumbnails (an analysis without cut signatures)": _npz(unsigned),
        "nan histogram": changed(histograms=nan_histogram),
        "unnormalised histogram": changed(histograms=good["histograms"] * 2),
        "float thumbnails": changed(thumbnails=good["thumbnails"].astype(np.float32)),
        "thumbnails short": changed(thumbnails=good["thumbnails"][:2]),
        "a frame signed twice": changed(signature_frames=np.array([1, 1, 3], np.int64)),
        "zero-byte": b"", "truncated": good_bytes[: len(good_bytes) // 2],
        "not a zip": b"PK\x03\x04 not really",
    }


@pytest.mark.parametrize("kind", list(_poisoned_analyses()))
def test_a_poisoned_or_damaged_analysis_is_a_miss_and_replaced(
        tmp_path: Path, caplog: pytest.LogCaptureFixture, kind: str) -> None:
    cache = AnalysisCache(tmp_path)
    cache.path(KEY).write_bytes(_poisoned_analyses()[kind])
    with caplog.at_level(logging.WARNING):
        assert cache.load(KEY).faces == {}
    assert cache.path(KEY).name in caplog.text
    cache.save(KEY, _analysis())
    loaded = cache.load(KEY)
    assert sorted(loaded.faces) == [1, 2, 3] and len(loaded.faces[1]) == 2
    assert sorted(loaded.signatures) == [1, 2, 3]


def test_all_zero_embedding_rows_mean_none(tmp_path: Path) -> None:
    cache = AnalysisCache(tmp_path)
    cache.save(KEY, ShotAnalysis({5: (_face(10, None), _face(90, _unit(index=3)))}))
    loaded = cache.load(KEY).faces
    assert loaded[5][0].embedding is None and loaded[5][1].embedding is not None
    np.testing.assert_array_equal(loaded[5][1].embedding, _unit(index=3))


def test_an_unwritable_analysis_cache_warns_and_carries_on(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        caplog: pytest.LogCaptureFixture) -> None:
    monkeypatch.setattr(analysis_module, "atomic_write_bytes",
                        _refuse(OSError(errno.EROFS, "Read-only file system")))
    cache = AnalysisCache(tmp_path / "analysis")
    with caplog.at_level(logging.WARNING):
        cache.save(KEY, _analysis())
    assert "cannot write the analysis cache" in caplog.text
    assert str(tmp_path / "analysis") in caplog.text and cache.load(KEY).faces == {}


# ---- the swapper's emap cache -----------------------------------------------------------------

def _model(tmp_path: Path) -> ModelFile:
    return ModelFile(tmp_path / "inswapper.onnx", tmp_path / "derived", lambda: "f" * 64)


def _emap_reads(monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    reads: list[Path] = []

    def read(path: Path) -> np.ndarray:
        reads.append(path)
        return np.eye(4, dtype=np.float32) * 2

    monkeypatch.setattr(swap_module, "read_emap", read)
    return reads


def _poisoned_emaps() -> dict[str, bytes]:
    nan = np.eye(4, dtype=np.float32)
    nan[1, 2] = np.nan
    return {"nan": _npy(nan), "inf": _npy(np.full((4, 4), np.inf, np.float32)),
            "not square": _npy(np.ones((4, 3), np.float32)),
            "float64": _npy(np.eye(4)), "vector": _npy(np.ones(16, np.float32)),
            "zero-byte": b"", "truncated": _npy(np.eye(4, dtype=np.float32))[:-7]}


@pytest.mark.parametrize("kind", list(_poisoned_emaps()))
def test_a_poisoned_or_damaged_emap_cache_is_read_again_from_the_model(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture,
        kind: str) -> None:
    reads = _emap_reads(monkeypatch)
    model = _model(tmp_path)
    model.derived_dir.mkdir()
    cached = model.derived_dir / f"emap-{'f' * 16}.npy"
    cached.write_bytes(_poisoned_emaps()[kind])
    with caplog.at_level(logging.WARNING):
        emap = swap_module.cached_emap(model)
    assert len(reads) == 1 and cached.name in caplog.text
    np.testing.assert_array_equal(emap, np.eye(4, dtype=np.float32) * 2)
    np.testing.assert_array_equal(np.load(cached), emap)  # replaced
    np.testing.assert_array_equal(swap_module.cached_emap(model), emap)
    assert len(reads) == 1  # the replaced entry is a hit


def test_an_unwritable_models_folder_only_costs_the_emap_cache(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        caplog: pytest.LogCaptureFixture) -> None:
    reads = _emap_reads(monkeypatch)
    monkeypatch.setattr(swap_module, "atomic_write_bytes",
                        _refuse(PermissionError(errno.EACCES, "Permission denied")))
    model = _model(tmp_path)
    with caplog.at_level(logging.WARNING):
        emap = swap_module.cached_emap(model)
    assert emap.shape == (4, 4) and len(reads) == 1
    assert "cannot cache the swapper's emap" in caplog.text
    assert str(model.derived_dir) in caplog.text


# ---- the file-hash memo -----------------------------------------------------------------------

@pytest.mark.parametrize("content", [b"", b'{"/x": {"size": 1', b"\xff\xfe\x00",
                                     b"[1, 2]", b'{"%s": "not a record"}',
                                     b'{"%s": {"size": 5, "mtime_ns": 1, "sha256": 7}}'])
def test_a_damaged_hash_memo_is_ignored_and_replaced(tmp_path: Path, content: bytes) -> None:
    file = tmp_path / "clip.bin"
    file.write_bytes(b"hello")
    memo_path = tmp_path / "file-hashes.json"
    memo_path.write_bytes(content.replace(b"%s", str(file.resolve()).encode()))
    memo = HashMemo(memo_path)
    assert memo.sha256(file) == sha256_file(file)
    memo.flush()
    assert HashMemo(memo_path).sha256(file) == sha256_file(file)
    assert str(file.resolve()) in memo_path.read_text(encoding="utf-8")


def test_an_unwritable_hash_memo_warns_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                            caplog: pytest.LogCaptureFixture) -> None:
    monkeypatch.setattr(hashes_module, "atomic_write_bytes",
                        _refuse(OSError(errno.EROFS, "Read-only file system")))
    memo = HashMemo(tmp_path / "file-hashes.json")
    with caplog.at_level(logging.WARNING):
        for name in ("a", "b"):
            (tmp_path / name).write_bytes(name.encode())
            memo.sha256(tmp_path / name)
            memo.flush()
    assert len([r for r in caplog.records if "cannot remember file hashes" in r.getMessage()]) == 1
