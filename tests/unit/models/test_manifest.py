"""The shipped model manifest, and the loader's refusal of bad manifests."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from facefuse.errors import ModelError
from facefuse.models.manifest import ROLES, SCHEMA_VERSION, Manifest, load_manifest

DEFAULT_SET = ("retinaface_10g", "arcface_w600k_r50", "inswapper_128", "inswapper_128_fp16",
               "gfpgan_1.4", "codeformer", "yunet_2023mar")
# (name, bytes, sha256) copied from the shared REFERENCE.md, section 3.
REFERENCE = (
    ("inswapper_128", 555303150,
     "a290273ed497312095dac48cdef20feec9d5208298223dd01288ab202b54bea7"),
    ("inswapper_128_fp16", 277680829,
     "c4eccca86ad177586c85c28bf1a64a9d9ed237e283a15818d831f7facfd3f420"),
    ("retinaface_10g", 16926877,
     "808399c3d0b40ed340634ed590ae564a7caa09e5659916923a95d4470b54ff5a"),
    ("gfpgan_1.4", 340299087,
     "accc4757b26bdb89b32b4d3500d4f79c9dff97c1dd7c7104bf9dcb95e3311385"),
    ("yunet_2023mar", 232589,
     "8f2383e4dd3cfbb4553ea8718107fc0423210dc964f9f4280604804ed2552fa4"),
    ("det_10g", 16923827,
     "5838f7fe053675b1c7a08b633df49e7af5495cee0493c7dcf6697200b85b5b91"),
)
HEX64 = re.compile(r"[0-9a-f]{64}")

GOOD_FAMILY = """
[families.tiny]
role = "detector"
class = "TinyDetector"
input_size = [640, 640]
inputs = [{ shape = [1, 3, "h", "w"] }]
outputs = [{ shape = ["...", 1] }]
"""
GOOD_MODEL = """
[[models]]
name = "tiny"
family = "tiny"
file = "tiny.onnx"
urls = ["https://example.invalid/tiny.onnx"]
sha256 = "%s"
bytes = 10
licence = "MIT"
""" % ("0" * 64)


@pytest.fixture(scope="module")
def manifest() -> Manifest:
    return load_manifest()


def test_shipped_manifest_loads(manifest: Manifest) -> None:
    assert manifest.schema_version == SCHEMA_VERSION
    assert manifest.source is not None and manifest.source.is_file()
    assert set(DEFAULT_SET) <= set(manifest.models)


def test_every_model_is_complete(manifest: Manifest) -> None:
    for entry in manifest.models.values():
        assert HEX64.fullmatch(entry.sha256), entry.name
        assert entry.size_bytes > 0, entry.name
        assert entry.licence.strip(), entry.name
        assert entry.family in manifest.families, entry.name
        assert entry.file.endswith(".onnx"), entry.name
        assert entry.urls or entry.archive, entry.name
        assert all(url.startswith("https://") for url in entry.urls), entry.name
        if entry.archive is not None:
            assert entry.archive.url.startswith("https://"), entry.name
            assert HEX64.fullmatch(entry.archive.sha256), entry.name
            assert entry.archive.size_bytes > entry.size_bytes, entry.name


def test_model_files_are_unique(manifest: Manifest) -> None:
    files = [entry.file for entry in manifest.models.values()]
    assert len(files) == len(set(files))


def test_every_family_has_a_role_and_contract(manifest: Manifest) -> None:
    for family in manifest.families.values():
        assert family.role in ROLES, family.name
        assert family.inputs and family.outputs, family.name
    for role in ROLES:
        assert manifest.models_for_role(role), role


@pytest.mark.parametrize(("name", "size", "sha256"), REFERENCE)
def test_sizes_and_hashes_match_reference(manifest: Manifest, name: str, size: int,
                                          sha256: str) -> None:
    assert manifest.models[name].size_bytes == size
    assert manifest.models[name].sha256 == sha256


def test_buffalo_members_come_from_the_reference_zip(manifest: Manifest) -> None:
    archive = manifest.models["w600k_r50"].archive
    assert archive is not None
    assert archive.size_bytes == 288621354
    assert archive.sha256 == "80ffe37d8a5940d59a7384c201a2a38d4741f2f3c51eef46ebb28218a7b0ca2f"
    assert archive.member == "w600k_r50.onnx"


def test_families_for_role(manifest: Manifest) -> None:
    names = [f.name for f in manifest.families_for_role("detector")]
    assert names == ["scrfd", "yunet"]
    family = manifest.families[manifest.models["inswapper_128"].family]
    assert family.class_name == "InswapperSwapper"


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "manifest.toml"
    path.write_text(text, encoding="utf-8")
    return path


def test_small_manifest_loads(tmp_path: Path) -> None:
    loaded = load_manifest(_write(tmp_path, "schema_version = 1\n" + GOOD_FAMILY + GOOD_MODEL))
    assert loaded.models["tiny"].precision == "fp32"
    assert loaded.families["tiny"].inputs[0].names == ()


@pytest.mark.parametrize(("text", "words"), [
    ("schema_version = 2\n" + GOOD_FAMILY + GOOD_MODEL, "schema_version 2"),
    (GOOD_FAMILY + GOOD_MODEL, "schema_version None"),
    ("schema_version = 1\n" + GOOD_FAMILY + GOOD_MODEL.replace('family = "tiny"',
                                                               'family = "huge"'), "'huge'"),
    ("schema_version = 1\n" + GOOD_FAMILY + GOOD_MODEL.replace('bytes = 10\n', ""), "'bytes'"),
    ("schema_version = 1\n" + GOOD_FAMILY.replace('class = "TinyDetector"\n', "") + GOOD_MODEL,
     "'class'"),
    ("schema_version = 1\n" + GOOD_FAMILY.replace('"detector"', '"painter"') + GOOD_MODEL,
     "'painter'"),
    ("schema_version = 1\n[[models]\n", "cannot read"),
])
def test_bad_manifests_raise_model_error(tmp_path: Path, text: str, words: str) -> None:
    with pytest.raises(ModelError, match=re.escape(words)) as info:
        load_manifest(_write(tmp_path, text))
    assert info.value.exit_code == 4


def test_missing_manifest_file_raises_model_error(tmp_path: Path) -> None:
    with pytest.raises(ModelError, match="cannot read"):
        load_manifest(tmp_path / "absent.toml")


# -- issue 12: hyperswap, occlusion and region mask models -----------------------------------

# (name, bytes, sha256) from the shared REFERENCE.md, sections 3 and 3b.
MASK_AND_SWAP_REFERENCE = (
    ("hyperswap_1a_256", 402742682,
     "c0e98a8a03a238f461ed3d2570e426b49f46745ee400854a60dceeb70c246add"),
    ("hyperswap_1c_256", 402742682,
     "5528c2d76fe9986c99d829278987ef9f3a630cb606db7628d02b57b330f406a5"),
    ("xseg_1", 70324286, "c4d1498b8a03b5fe2a3a5d2ef2a0402ab03bd51edaf5b2d8d5fb764702a97dd3"),
    ("xseg_2", 70324286, "cd9a0879eaf43841d765472cf1f8c330dbf9dcb03da0eace93e95f3bcc399042"),
    ("xseg_3", 70327709, "48ccd7e8541e159a5a754ec9e62df2f12065f7df8f9af842c1750342c6533559"),
    ("bisenet_resnet_34", 93632546,
     "4a0b8c958a3c938913bd06a8365dbb3c8761afba6ecbf0d14b3b1f77eb230c96"),
)


@pytest.mark.parametrize(("name", "size", "sha256"), MASK_AND_SWAP_REFERENCE)
def test_new_models_match_reference(manifest: Manifest, name: str, size: int,
                                    sha256: str) -> None:
    entry = manifest.models[name]
    assert (entry.size_bytes, entry.sha256, entry.unconfirmed) == (size, sha256, "")


def test_the_single_record_hyperswap_1b_is_marked_unconfirmed(manifest: Manifest) -> None:
    entry = manifest.models["hyperswap_1b_256"]
    assert entry.sha256 == "5124031789c42f71b9558fb71954ef7aedb6da7ed9fac79293e23c61a792a73e"
    assert "one public record" in entry.unconfirmed
    assert [m.name for m in manifest.models.values() if m.unconfirmed] == ["hyperswap_1b_256"]


def test_mask_families_carry_their_numbers(manifest: Manifest) -> None:
    from facefuse.config import MASK_REGIONS, Settings

    parser = manifest.families["bisenet"]
    assert set(MASK_REGIONS) <= set(parser.classes)  # every region a user can name is mapped
    assert parser.classes["nose"] == 10 and parser.classes["mouth"] == 11
    assert parser.normalisation() == ((123.675, 116.28, 103.53), (58.395, 57.12, 57.375))
    occluder = manifest.families["xseg"]
    assert occluder.normalisation() == ((0.0,) * 3, (255.0,) * 3) and occluder.colour == "bgr"
    hyperswap = manifest.families["hyperswap"]
    assert hyperswap.normalisation() == ((127.5,) * 3, (127.5,) * 3)
    assert manifest.models[Settings().swapper].family == "hyperswap"


def test_per_channel_numbers_need_three_values(tmp_path: Path) -> None:
    family = GOOD_FAMILY + "channel_mean = [1.0, 2.0]\n"
    with pytest.raises(ModelError, match="2 values for channel_mean"):
        load_manifest(_write(tmp_path, "schema_version = 1\n" + family + GOOD_MODEL))
