"""Colour conversion between plate spaces and the models' display space (facefuse.color).

Timings are logged and recorded as junit properties, asserted only against a generous ceiling
(a full frame in well under a second); see them with
``pytest tests/unit/test_color.py -k timing -o log_cli=true --log-cli-level=INFO``.
"""

from __future__ import annotations

import logging
import time
from pathlib import Path

import numpy as np
import pytest

from facefuse import color
from facefuse.color import ColourConverter
from facefuse.errors import InputError

log = logging.getLogger(__name__)

LIN = "Linear Rec.709 (sRGB)"

# A minimal OCIO v2 config: "lin" is the reference, "srgb_tx" a pure 2.2 power curve, so its
# results (0.18 -> 0.4587) differ from the built-in sRGB curve (0.18 -> 0.4614).
MINIMAL_CONFIG = """\
ocio_profile_version: 2

roles:
  default: lin
  scene_linear: lin

file_rules:
  - !<Rule> {name: Default, colorspace: default}

displays:
  screen:
    - !<View> {name: Raw, colorspace: srgb_tx}

colorspaces:
  - !<ColorSpace>
    name: lin
    encoding: scene-linear

  - !<ColorSpace>
    name: srgb_tx
    encoding: sdr-video
    from_scene_reference: !<ExponentTransform> {value: 2.2, direction: inverse}
"""


def srgb_oetf(linear: np.ndarray) -> np.ndarray:
    """The IEC 61966-2-1 sRGB encoding, written out independently of OCIO."""
    linear = np.asarray(linear, dtype=np.float64)
    return np.where(linear <= 0.0031308, 12.92 * linear, 1.055 * linear ** (1 / 2.4) - 0.055)


@pytest.fixture(autouse=True)
def _no_user_ocio(monkeypatch: pytest.MonkeyPatch) -> None:
    """The developer's own $OCIO must not change what these tests see."""
    monkeypatch.delenv("OCIO", raising=False)


@pytest.fixture(scope="module")
def linear() -> ColourConverter:
    return ColourConverter(LIN)


@pytest.fixture
def minimal_config(tmp_path: Path) -> Path:
    path = tmp_path / "minimal.ocio"
    path.write_text(MINIMAL_CONFIG, encoding="utf-8")
    return path


def grey(value: float, shape: tuple[int, int] = (2, 3)) -> np.ndarray:
    return np.full((*shape, 3), value, np.float32)


# --- linear Rec.709 -> sRGB --------------------------------------------------------------------

@pytest.mark.parametrize("value", [0.0, 0.001, 0.0031308, 0.05, 0.18, 0.5, 1.0])
def test_linear_to_display_follows_the_srgb_curve(linear: ColourConverter, value: float) -> None:
    out = linear.to_display(grey(value))
    assert out.dtype == np.float32
    np.testing.assert_allclose(out, srgb_oetf(value), atol=1e-5)


def test_mid_grey_black_and_white(linear: ColourConverter) -> None:
    out = linear.to_display(np.array([[[0.18] * 3, [1.0] * 3, [0.0] * 3]], np.float32))
    np.testing.assert_allclose(out[0, 0], 0.4613, atol=2e-4)
    np.testing.assert_allclose(out[0, 1], 1.0, atol=1e-6)
    np.testing.assert_allclose(out[0, 2], 0.0, atol=1e-6)


def test_to_display_clips_highlights_negatives_and_nan(linear: ColourConverter) -> None:
    pixels = np.array([[[4.0, 1.5, 1e6], [-0.5, -1e-3, 0.0], [np.nan, 0.5, np.inf]]], np.float32)
    out = linear.to_display(pixels)
    np.testing.assert_array_equal(out[0, :2], [[1.0, 1.0, 1.0], [0.0, 0.0, 0.0]])
    np.testing.assert_array_equal(out[0, 2], [0.0, 0.0, 0.0])  # non-finite pixels go black


def test_from_display_does_not_clip(linear: ColourConverter) -> None:
    out = linear.from_display(np.array([[[1.2, 1.0, -0.1]]], np.float32))
    assert out[0, 0, 0] > 1.0 and out[0, 0, 2] < 0.0


def test_round_trip_is_exact_inside_the_display_range(linear: ColourConverter) -> None:
    rng = np.random.default_rng(1)
    x = rng.uniform(0.0, 1.0, (64, 48, 3)).astype(np.float32)
    np.testing.assert_allclose(linear.from_display(linear.to_display(x)), x, atol=1e-4)
    d = rng.uniform(0.0, 1.0, (64, 48, 3)).astype(np.float32)
    np.testing.assert_allclose(linear.to_display(linear.from_display(d)), d, atol=1e-4)


def test_channel_order_is_bgr(linear: ColourConverter) -> None:
    blue_bgr = np.array([[[0.18, 0.0, 0.0]]], np.float32)
    out = linear.to_display(blue_bgr)
    np.testing.assert_allclose(out[0, 0], [srgb_oetf(0.18), 0.0, 0.0], atol=1e-5)
    back = linear.from_display(np.array([[[0.0, 0.0, 0.5]]], np.float32))  # red in BGR
    np.testing.assert_allclose(back[0, 0], [0.0, 0.0, 0.2140], atol=1e-4)


def test_per_channel_values_differ_and_land_in_their_own_channel(linear: ColourConverter) -> None:
    pixels = np.array([[[0.01, 0.18, 0.9]]], np.float32)
    np.testing.assert_allclose(linear.to_display(pixels)[0, 0], srgb_oetf([0.01, 0.18, 0.9]),
                               atol=1e-5)


def test_inputs_are_not_modified_and_outputs_are_new(linear: ColourConverter) -> None:
    pixels = np.random.default_rng(2).uniform(0, 3, (5, 7, 3)).astype(np.float32)
    before = pixels.copy()
    for fn in (linear.to_display, linear.from_display):
        out = fn(pixels)
        np.testing.assert_array_equal(pixels, before)
        assert not np.shares_memory(out, pixels)
        assert out.shape == pixels.shape and out.dtype == np.float32 and out.flags.c_contiguous


def test_non_contiguous_views_and_float16_are_accepted(linear: ColourConverter) -> None:
    frame = np.random.default_rng(3).uniform(0, 1, (40, 60, 4)).astype(np.float32)
    view = frame[5:30:2, 10:50, :3]  # strided ROI of a BGRA frame
    expected = srgb_oetf(view)
    np.testing.assert_allclose(linear.to_display(view), expected, atol=1e-5)
    np.testing.assert_allclose(linear.to_display(view.astype(np.float16)), expected, atol=2e-3)


def test_large_frames_are_converted_everywhere(linear: ColourConverter) -> None:
    # Larger than one internal processing slice: the last rows must be converted too.
    frame = np.random.default_rng(4).uniform(0, 1, (300, 257, 3)).astype(np.float32)
    np.testing.assert_allclose(linear.to_display(frame), srgb_oetf(frame), atol=1e-5)


def test_wrong_shape_or_dtype_is_refused(linear: ColourConverter) -> None:
    with pytest.raises(ValueError):
        linear.to_display(np.zeros((4, 4, 4), np.float32))
    with pytest.raises(TypeError):
        linear.to_display(np.zeros((4, 4, 3), np.uint8))


# --- ACEScg ------------------------------------------------------------------------------------

def test_acescg_neutral_grey_stays_neutral_and_round_trips() -> None:
    acescg = ColourConverter("ACEScg")
    out = acescg.to_display(grey(0.18))
    np.testing.assert_allclose(out, srgb_oetf(0.18), atol=1e-4)  # same white point after CAT
    rng = np.random.default_rng(5)
    d = rng.uniform(0.0, 1.0, (32, 32, 3)).astype(np.float32)  # within the display gamut
    x = acescg.from_display(d)
    np.testing.assert_allclose(acescg.to_display(x), d, atol=1e-4)
    np.testing.assert_allclose(acescg.from_display(acescg.to_display(x)), x, atol=1e-4)


# ACEScg (AP1, D60) to linear Rec.709 (D65, Bradford), as published with the ACES documentation.
AP1_TO_REC709 = np.array([[1.7050509927, -0.6217921207, -0.0832588720],
                          [-0.1302564175, 1.1408047366, -0.0105483191],
                          [-0.0240033568, -0.1289689761, 1.1529723329]])


def test_acescg_matches_the_published_matrix_in_bgr_order() -> None:
    acescg = ColourConverter("ACEScg")
    rng = np.random.default_rng(7)
    rgb = rng.uniform(0.05, 0.6, (16, 16, 3))
    expected_rgb = srgb_oetf(np.clip(rgb @ AP1_TO_REC709.T, 0.0, None))
    out = acescg.to_display(rgb[..., ::-1].astype(np.float32))  # the converter takes BGR
    np.testing.assert_allclose(out[..., ::-1], np.clip(expected_rgb, 0, 1), atol=2e-4)


def test_acescg_pure_blue_bgr_pixel_stays_blue() -> None:
    blue_bgr = np.array([[[0.18, 0.0, 0.0]]], np.float32)
    out = ColourConverter("ACEScg").to_display(blue_bgr)[0, 0]
    np.testing.assert_allclose(out, [srgb_oetf(1.1529723329 * 0.18), 0.0, 0.0], atol=2e-4)


def test_acescg_primaries_are_converted() -> None:
    # ACEScg red is wider than Rec.709 red: in sRGB it must leak into green/blue or be clipped,
    # and must not be the same numbers as linear Rec.709 red.
    acescg, lin = ColourConverter("ACEScg"), ColourConverter(LIN)
    red = np.array([[[0.0, 0.0, 0.5]]], np.float32)
    assert np.abs(acescg.to_display(red) - lin.to_display(red)).max() > 0.05


# --- identity, names, errors ------------------------------------------------------------------

@pytest.mark.parametrize("name", [color.DISPLAY_SPACE, "srgb_tx"])  # name and alias in every
# built-in studio config (canonical "sRGB Encoded Rec.709 (sRGB)" from OCIO 2.4 on)
def test_identity_space_only_copies_and_clips(name: str) -> None:
    conv = ColourConverter(name)
    assert conv.is_identity
    pixels = np.array([[[0.25, 1.5, -0.2], [0.5, 0.75, 1.0]]], np.float32)
    np.testing.assert_array_equal(conv.to_display(pixels), np.clip(pixels, 0, 1))
    np.testing.assert_array_equal(conv.from_display(pixels), pixels)
    assert not np.shares_memory(conv.from_display(pixels), pixels)


def test_non_identity_reports_canonical_names(linear: ColourConverter) -> None:
    assert not linear.is_identity
    assert linear.input_space == LIN
    assert ColourConverter("lin_ap1").input_space == "ACEScg"
    assert "built-in" in linear.config_source


def test_unknown_space_names_close_matches() -> None:
    with pytest.raises(InputError) as info:
        ColourConverter("ACEScgg")
    message = str(info.value)
    assert "'ACEScgg'" in message and "'ACEScg'" in message and color.LIST_COMMAND in message


def test_display_referred_space_is_refused() -> None:
    with pytest.raises(InputError, match="view transform"):
        ColourConverter("sRGB - Display")


def test_list_colorspaces_has_the_chosen_names_and_no_display_referred_ones() -> None:
    names = color.list_colorspaces()
    assert isinstance(names, tuple)
    assert {LIN, "ACEScg", "ACEScct", "ACES2065-1"} <= set(names)
    assert "sRGB - Display" not in names
    for name in names:
        ColourConverter(name)  # every listed space is usable


@pytest.mark.parametrize(("suffix", "pixel_type", "expected"), [
    (".exr", "half", LIN), ("exr", "float", LIN), (".EXR", "float32", LIN),
    (".exr", "uint32", None),
    (".dpx", "uint16", color.DISPLAY_SPACE), (".png", "uint8", None), (".tif", "uint16", None),
    (".jpg", "uint8", None), (".mov", "uint8", None), (".tif", "float", None),
])
def test_default_colorspace(suffix: str, pixel_type: str, expected: str | None) -> None:
    assert color.default_colorspace(suffix, pixel_type) == expected


def test_defaults_exist_in_the_builtin_config() -> None:
    for name in (color.default_colorspace(".exr", "half"), color.default_colorspace(".dpx", "")):
        assert name is not None
        ColourConverter(name)


# --- user configs ------------------------------------------------------------------------------

def test_ocio_environment_variable_is_honoured(minimal_config: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OCIO", str(minimal_config))
    conv = ColourConverter("lin")
    assert conv.display_space == "srgb_tx" and "$OCIO" in conv.config_source
    np.testing.assert_allclose(conv.to_display(grey(0.18)), 0.18 ** (1 / 2.2), atol=1e-5)
    np.testing.assert_allclose(conv.from_display(grey(0.5)), 0.5 ** 2.2, atol=1e-5)
    assert color.list_colorspaces() == ("lin", "srgb_tx")
    with pytest.raises(InputError):
        ColourConverter(LIN)  # the built-in names are gone with a user config


def test_explicit_config_path_wins_over_the_environment(minimal_config: Path, tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OCIO", str(tmp_path / "missing.ocio"))
    conv = ColourConverter("lin", config_path=minimal_config)
    np.testing.assert_allclose(conv.to_display(grey(0.18)), 0.18 ** (1 / 2.2), atol=1e-5)
    assert color.list_colorspaces(minimal_config) == ("lin", "srgb_tx")


def test_builtin_uri_in_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OCIO", f"ocio://{color.BUILTIN_CONFIG}")
    np.testing.assert_allclose(ColourConverter(LIN).to_display(grey(0.18)), srgb_oetf(0.18),
                               atol=1e-5)


def test_missing_or_broken_config_is_an_input_error(tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(InputError, match="does not exist"):
        ColourConverter("lin", config_path=tmp_path / "nope.ocio")
    monkeypatch.setenv("OCIO", str(tmp_path / "nope.ocio"))
    with pytest.raises(InputError, match=r"\$OCIO"):
        ColourConverter("lin")
    broken = tmp_path / "broken.ocio"
    broken.write_text("ocio_profile_version: 2\ncolorspaces: [oops\n", encoding="utf-8")
    with pytest.raises(InputError, match="cannot be read"):
        ColourConverter("lin", config_path=broken)


def test_user_config_without_an_srgb_space_is_an_input_error(tmp_path: Path) -> None:
    path = tmp_path / "nosrgb.ocio"
    path.write_text(MINIMAL_CONFIG.replace("srgb_tx", "gamma22"), encoding="utf-8")
    with pytest.raises(InputError, match="sRGB"):
        ColourConverter("lin", config_path=path)
    conv = ColourConverter("lin", config_path=path, display_space="gamma22")
    np.testing.assert_allclose(conv.to_display(grey(0.18)), 0.18 ** (1 / 2.2), atol=1e-5)


# --- timings (reported; only a generous ceiling is asserted) ----------------------------------

TIMING_CEILING_MS = 1000.0  # best of 5 for one 1920x1080 frame; a few to tens of ms in practice


def _best_ms(fn, pixels: np.ndarray, repeats: int = 5) -> tuple[float, np.ndarray]:
    """The fastest of `repeats` timed calls (after one warm-up), in ms, and the last result."""
    out = fn(pixels)
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        out = fn(pixels)
        best = min(best, time.perf_counter() - start)
    return best * 1000.0, out


@pytest.mark.parametrize("space", [LIN, "ACEScg"])
def test_timing(space: str, record_property) -> None:
    conv = ColourConverter(space)
    rng = np.random.default_rng(6)
    for label, shape in (("1920x1080", (1080, 1920, 3)), ("512x512", (512, 512, 3))):
        pixels = rng.uniform(0, 1, shape).astype(np.float32)
        for fn in (conv.to_display, conv.from_display):
            ms, out = _best_ms(fn, pixels)
            record_property(f"{label} {fn.__name__} ms", round(ms, 2))
            log.info("%s %s %s: %.2f ms", space, label, fn.__name__, ms)
            assert out.shape == shape and out.dtype == np.float32  # the whole frame converted
            assert np.isfinite(out).all()
            assert 0.0 < ms < TIMING_CEILING_MS, f"{label} {fn.__name__}: {ms:.1f} ms"
