"""Colour conversion of the face region between a plate's colour space and the models'
display space.

The face models were trained on display-referred 8-bit sRGB pictures; VFX plates are often
scene-linear (EXR in "Linear Rec.709 (sRGB)" or "ACEScg", values above 1.0). The engine converts
only what the models see (the face crop, and a downscaled copy of the frame for detection) into
``DISPLAY_SPACE`` and the swapped crop back into the plate's space before blending, so a linear
plate stays linear and every pixel outside the pasted region keeps its exact value.

Colour spaces come from an OpenColorIO config: an explicit config path, else the one named by the
standard ``$OCIO`` environment variable, else OCIO's built-in ``studio-config-latest`` (ACES studio
config, with the camera log spaces).

Invertibility: conversions use each colour space's own to/from-reference transforms (an OCIO
``ColorSpaceTransform``), never a display/view transform. View transforms tone-map (ACES output
transforms compress highlights and gamut) and have no exact inverse; the plain reference conversion
is a matrix plus a transfer curve, so ``from_display(to_display(x)) == x`` (to float precision) for
every x whose display encoding lies in [0, 1]. What ``to_display`` clips (highlights above display
white, colours outside the display gamut) comes back at the clip value: only the pasted face can
change, and its highlights return at display white. Colour spaces on the other side of the config's
reference (display-referred spaces such as "sRGB - Display") are refused, because reaching them from
a scene-referred space needs a view transform.

Pixels follow the frame convention of ``facefuse.types`` on the float scale where 1.0 is display
white (not the 0..255 model-crop scale): BGR channel order, (..., 3) arrays, float32.

Display-referred frames written to EXR: an EXR holds scene-linear values, so a display-referred
input (a video, PNG/JPEG/TIFF frames: no input conversion) written to a float/half EXR is
converted whole with ``display_to_linear`` into ``LINEAR_REC709`` (the space an unlabelled float
EXR is read as, see ``default_colorspace``), not stored as display code values. The conversion is
the display space's own reference transform, so reading that EXR back with the default
``input_conversion`` returns the original display values (to float precision).
"""

from __future__ import annotations

import difflib
import logging
import os
from pathlib import Path

import numpy as np
import PyOpenColorIO as ocio  # type: ignore[import-untyped]  # no stubs; see pyproject mypy overrides

from .errors import InputError

log = logging.getLogger(__name__)

BUILTIN_CONFIG = "studio-config-latest"
"""OCIO built-in config used when neither a config path nor ``$OCIO`` is given."""

DISPLAY_SPACE = "sRGB - Texture"
"""The models' space: sRGB transfer curve, Rec.709 primaries, scene-referred encoding (no tone map).
Its canonical name in the built-in config of OCIO 2.4 and later is "sRGB Encoded Rec.709
(sRGB)"; "sRGB - Texture" is its alias there and its name in older ACES configs."""

DISPLAY_SPACE_FALLBACKS = ("sRGB Encoded Rec.709 (sRGB)", "srgb_tx", "srgb_texture",
                           "Utility - sRGB - Texture", "Input - Generic - sRGB - Texture")
"""Other names of the same space, tried in order when a user config lacks ``DISPLAY_SPACE``."""

LINEAR_REC709 = "Linear Rec.709 (sRGB)"
"""Scene-linear with sRGB/Rec.709 primaries: the default guess for float EXR plates."""

LIST_COMMAND = "facefuse render --list-colorspaces"

_CHUNK_PIXELS = 32_768  # applyRGB is about 2x faster on cache-sized slices than on a whole frame
_SWAP_RB = (0.0, 0.0, 1.0, 0.0, 0.0, 1.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0)
_FLOAT_EXR_TYPES = frozenset({"half", "float", "double", "float16", "float32", "float64"})


def load_config(config_path: Path | str | None = None) -> tuple[ocio.Config, str]:
    """The OCIO config and a label saying where it came from.

    config_path: a .ocio file or an ``ocio://`` URI; None means ``$OCIO`` when set and non-empty,
    else the built-in ``BUILTIN_CONFIG``. Raises InputError when the file is missing or invalid.
    """
    if config_path is not None:
        source, label = str(config_path), str(config_path)
    elif os.environ.get("OCIO"):
        source = os.environ["OCIO"]
        label = f"$OCIO={source}"
    else:
        return ocio.Config.CreateFromBuiltinConfig(BUILTIN_CONFIG), f"built-in {BUILTIN_CONFIG}"
    if not source.startswith("ocio://") and not Path(source).is_file():
        raise InputError(f"the OCIO config {label} does not exist.")
    try:
        config = ocio.Config.CreateFromFile(source)
    except ocio.Exception as exc:
        raise InputError(f"the OCIO config {label} cannot be read: {exc}") from exc
    return config, label


def list_colorspaces(config_path: Path | str | None = None) -> tuple[str, ...]:
    """Names of the active scene-referred colour spaces of the config (see ``load_config``).

    Display-referred spaces (e.g. "sRGB - Display") are left out: ``ColourConverter`` refuses them.
    """
    config, _ = load_config(config_path)
    names = config.getColorSpaceNames(ocio.SEARCH_REFERENCE_SPACE_SCENE, ocio.COLORSPACE_ACTIVE)
    return tuple(names)


def default_colorspace(path_suffix: str, pixel_type: str) -> str | None:
    """The colour space to assume for a plate when the user gave none; None means "no conversion".

    path_suffix: the file suffix (".exr", "exr", ".DPX"...). pixel_type: the stored sample type as
    OpenImageIO or numpy name it ("half", "float", "uint16", "float32"...).

    - .exr / .hdr with float samples -> "Linear Rec.709 (sRGB)": scene-linear with sRGB primaries,
      the usual meaning of an unlabelled float EXR. ACEScg plates need ``--colorspace ACEScg``.
      Integer EXR channels (ids, masks) -> None.
    - .dpx -> ``DISPLAY_SPACE``: DPX from editorial is usually Rec.709 video, which the models take
      as it is (an identity conversion). Log DPX scans need an explicit ``--colorspace``, for
      example "ACEScct", "ARRI LogC3 (EI800)", or a Cineon space when the config has one.
    - .png, .tif, .jpg, video and everything else -> None: already display-referred.
    The names are those of the built-in config; with a user config, pass ``--colorspace``.
    """
    suffix = path_suffix.lower()
    suffix = suffix if suffix.startswith(".") else f".{suffix}"
    if suffix in (".exr", ".hdr"):
        return LINEAR_REC709 if pixel_type.lower() in _FLOAT_EXR_TYPES else None
    if suffix == ".dpx":
        return DISPLAY_SPACE
    return None


def input_conversion(requested: str | None, path_suffix: str, pixel_type: str
                     ) -> tuple[ColourConverter | None, str | None]:
    """The one decision of how a shot's pixels reach the models: (converter, input space name).

    requested: the user's colour space, None for the format's default (default_colorspace), or
    "none" for no conversion. The converter is None when no conversion is needed (also for an
    identity one); the name is the input space used, None when there is none.
    """
    if requested is not None and requested.lower() == "none":
        return None, None
    name = requested or default_colorspace(path_suffix, pixel_type)
    if name is None:
        return None, None
    converter = ColourConverter(name)
    return (None if converter.is_identity else converter), converter.input_space


def _find_space(config: ocio.Config, name: str, label: str) -> ocio.ColorSpace:
    """The colour space called `name` (or with that alias); InputError naming close matches."""
    space = config.getColorSpace(name)
    if space is not None:
        return space
    known = [n for cs in config.getColorSpaces() for n in (cs.getName(), *cs.getAliases())]
    close = difflib.get_close_matches(name, known, n=4, cutoff=0.5)
    hint = f"close names: {', '.join(repr(c) for c in close)}" if close else "no close names"
    raise InputError(f"the OCIO config {label} has no colour space {name!r} ({hint}); "
                     f"`{LIST_COMMAND}` lists them all.")


def _find_display_space(config: ocio.Config, name: str | None, label: str) -> ocio.ColorSpace:
    """The display space: `name` when given, else the first of DISPLAY_SPACE and its fallbacks."""
    if name is not None:
        return _find_space(config, name, label)
    for candidate in (DISPLAY_SPACE, *DISPLAY_SPACE_FALLBACKS):
        space = config.getColorSpace(candidate)
        if space is not None:
            return space
    raise InputError(f"the OCIO config {label} has no sRGB texture colour space; add the alias "
                     f"{DISPLAY_SPACE!r} to the config's sRGB-encoded Rec.709 space.")


def _check_same_reference(source: ocio.ColorSpace, display: ocio.ColorSpace) -> None:
    """InputError when one space is scene-referred and the other display-referred."""
    if source.getReferenceSpaceType() == display.getReferenceSpaceType():
        return
    source_is_display = source.getReferenceSpaceType() == ocio.REFERENCE_SPACE_DISPLAY
    scene_side = display if source_is_display else source
    other = source if scene_side is display else display
    raise InputError(f"colour space {other.getName()!r} is display-referred, so reaching it from "
                     f"{scene_side.getName()!r} needs a non-invertible view transform; name a "
                     f"scene-referred encoding instead (e.g. {DISPLAY_SPACE!r}, "
                     "not 'sRGB - Display').")


def _bgr_processor(config: ocio.Config, src: str, dst: str) -> ocio.CPUProcessor:
    """A float32 CPU processor from src to dst that reads and writes BGR triplets.

    The R<->B swaps sit at both ends of the transform as exact permutation matrices (OCIO's
    optimiser merges them with the spaces' own gamut matrices where there are any), which is
    faster than reversing the channels in two extra numpy copies.
    """
    group = ocio.GroupTransform()
    group.appendTransform(ocio.MatrixTransform(list(_SWAP_RB)))
    group.appendTransform(ocio.ColorSpaceTransform(src=src, dst=dst))
    group.appendTransform(ocio.MatrixTransform(list(_SWAP_RB)))
    return config.getProcessor(group).getDefaultCPUProcessor()


def _as_float_copy(pixels: np.ndarray) -> np.ndarray:
    """A C-contiguous float32 copy of a (..., 3) float array (never a view of the input)."""
    if pixels.ndim < 1 or pixels.shape[-1] != 3:
        raise ValueError(f"expected BGR pixels of shape (..., 3), got {pixels.shape}")
    if not np.issubdtype(pixels.dtype, np.floating):
        raise TypeError(f"expected float pixels (1.0 = white), got {pixels.dtype}")
    return np.array(pixels, dtype=np.float32, order="C", copy=True)


def _apply_in_place(processor: ocio.CPUProcessor, pixels: np.ndarray) -> None:
    """Run processor over a C-contiguous float32 (..., 3) array, slice by slice."""
    flat = pixels.reshape(-1)
    step = _CHUNK_PIXELS * 3
    for start in range(0, flat.size, step):
        processor.applyRGB(flat[start:start + step])


def _clip_unit(pixels: np.ndarray) -> np.ndarray:
    """Clip to [0, 1] in place, NaN becoming 0 (fmax/fmin ignore NaN); returns pixels."""
    np.fmax(pixels, 0.0, out=pixels)
    np.fmin(pixels, 1.0, out=pixels)
    return pixels


class ColourConverter:
    """Converts BGR pixels between a plate's colour space and the models' display space.

    Built once per plate colour space; holds the OCIO config and two CPU processors, and keeps no
    other state, so calls are pure and may run from several threads at once (OCIO releases the GIL).
    """

    __slots__ = ("_config_label", "_display", "_from_display", "_input", "_to_display")

    def __init__(self, input_space: str, config_path: Path | str | None = None,
                 display_space: str | None = None) -> None:
        """input_space: a colour space name or alias of the config (see ``load_config``).

        display_space: the models' space, by default ``DISPLAY_SPACE`` (or a fallback alias of it).
        Raises InputError for an unknown name, or a space on the other side of the reference
        (display-referred) from the display space.
        """
        config, self._config_label = load_config(config_path)
        source = _find_space(config, input_space, self._config_label)
        display = _find_display_space(config, display_space, self._config_label)
        _check_same_reference(source, display)
        self._input, self._display = source.getName(), display.getName()
        self._to_display: ocio.CPUProcessor | None = None
        self._from_display: ocio.CPUProcessor | None = None
        if not config.getProcessor(self._input, self._display).isNoOp():
            self._to_display = _bgr_processor(config, self._input, self._display)
            self._from_display = _bgr_processor(config, self._display, self._input)
        log.debug("colour: %s <-> %s (%s)%s", self._input, self._display, self._config_label,
                  ", identity" if self.is_identity else "")

    def __repr__(self) -> str:
        return (f"ColourConverter({self._input!r} <-> {self._display!r}, "
                f"config={self._config_label!r})")

    @property
    def input_space(self) -> str:
        """Canonical name of the plate's colour space in the config."""
        return self._input

    @property
    def display_space(self) -> str:
        """Canonical name of the models' display space in the config."""
        return self._display

    @property
    def config_source(self) -> str:
        """Where the OCIO config came from (built-in, $OCIO or a path), for logs and provenance."""
        return self._config_label

    @property
    def is_identity(self) -> bool:
        """True when the plate is already in the display space (conversions only copy and clip)."""
        return self._to_display is None

    def to_display(self, pixels_bgr: np.ndarray) -> np.ndarray:
        """Input-space BGR (..., 3) float values of any range -> display-encoded float32 in [0, 1].

        The result is clipped to [0, 1] after the transform, since the models take 8-bit-like
        pictures; a value that is NaN after the transform becomes 0 (OCIO's matrices spread a NaN
        or inf channel to the whole pixel). The input is never modified.
        """
        out = _as_float_copy(pixels_bgr)
        if self._to_display is not None:
            _apply_in_place(self._to_display, out)
        return _clip_unit(out)

    def from_display(self, pixels_bgr: np.ndarray) -> np.ndarray:
        """Display-encoded BGR (..., 3) float values in 0..1 -> input-space float32, not clipped.

        Exact inverse of ``to_display`` for pixels that ``to_display`` did not clip. The input is
        never modified.
        """
        out = _as_float_copy(pixels_bgr)
        if self._from_display is not None:
            _apply_in_place(self._from_display, out)
        return out


def linear_output_converter(config_path: Path | str | None = None) -> ColourConverter:
    """The converter between the models' display space and ``LINEAR_REC709``, built once per
    output: its ``from_display`` is what ``display_to_linear`` applies."""
    return ColourConverter(LINEAR_REC709, config_path)


def display_to_linear(frame: np.ndarray, converter: ColourConverter | None = None) -> np.ndarray:
    """A display-referred frame as scene-linear ``LINEAR_REC709`` float32, for an EXR output.

    frame: (H, W, 3|4) BGR(A) uint8, uint16 or float (1.0 = white), display-encoded (sRGB
    transfer, Rec.709 primaries). Colour goes through OCIO (display 0.5 becomes about 0.214);
    alpha is only scaled to 0..1. converter: from ``linear_output_converter`` (pass one per
    output to build the OCIO processors once); None builds one from the default config. The
    input is never modified."""
    if frame.ndim != 3 or frame.shape[2] not in (3, 4):
        raise ValueError(f"expected an (H, W, 3|4) frame, got {frame.shape}")
    if frame.dtype == np.uint8:
        scaled = frame.astype(np.float32) / np.float32(255.0)
    elif frame.dtype == np.uint16:
        scaled = frame.astype(np.float32) / np.float32(65535.0)
    elif np.issubdtype(frame.dtype, np.floating):
        scaled = frame.astype(np.float32)
    else:
        raise TypeError(f"expected uint8, uint16 or float pixels, got {frame.dtype}")
    linear = (converter or linear_output_converter()).from_display(scaled[..., :3])
    return np.dstack([linear, scaled[..., 3:]]) if frame.shape[2] == 4 else linear
