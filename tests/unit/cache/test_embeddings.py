import numpy as np

from facefuse.cache.embeddings import EmbeddingCache
from facefuse.cache.layout import CacheLayout


def test_put_get(tmp_path):
    cache = EmbeddingCache(tmp_path / "c")
    key = EmbeddingCache.key("a" * 64, "det:1", "rec:2", 640)
    assert cache.get(key) is None and not (tmp_path / "c").exists()
    vector = np.arange(4, dtype=np.float32)
    vector /= np.linalg.norm(vector)
    cache.put(key, vector)
    np.testing.assert_array_equal(cache.get(key), vector)
    assert [p.name for p in (tmp_path / "c").iterdir()] == [f"{key}.npy"]


def test_key_depends_on_every_part():
    base = EmbeddingCache.key("a", "d", "r", 640)
    others = [EmbeddingCache.key("b", "d", "r", 640), EmbeddingCache.key("a", "x", "r", 640),
              EmbeddingCache.key("a", "d", "x", 640), EmbeddingCache.key("a", "d", "r", 320)]
    assert len({base, *others}) == 5


def test_damaged_entry_is_a_miss(tmp_path):
    cache = EmbeddingCache(tmp_path)
    (tmp_path / f"{'k' * 8}.npy").write_bytes(b"garbage")
    assert cache.get("k" * 8) is None


def test_the_cache_root_honours_the_environment(monkeypatch, tmp_path):
    monkeypatch.setenv("FACEFUSE_CACHE", str(tmp_path))
    assert CacheLayout.at().root == tmp_path
    assert CacheLayout.at(tmp_path / "x").embeddings == tmp_path / "x" / "embeddings"
