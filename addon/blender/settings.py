"""A strip's settings as facefuse Settings, and the engine's words about models said the
Blender way (the add-on's Download models button, not `facefuse models fetch`)."""

from __future__ import annotations

import re
import struct
from pathlib import Path
from typing import Any

import bpy

from facefuse import Settings, Tunable, tunable_options

FETCH_HINT = "open Preferences > Add-ons > facefuse and press Download models"
_FETCH_WITH = re.compile(r"fetch (?:it|them) with `facefuse models fetch[^`]*`")
_FETCH_RUN = re.compile(r"run:? `?facefuse models fetch[^;,`]*`?")
_CAST_HINT = "give an Own Source or Skip (Face Swap > People), or add a photo under Sources " \
    "for everyone the Target Face rule chooses"
_CAST_OPTIONS = re.compile(r"give -s PHOTO \(everyone the selector chooses\), --assign \S+ per "
                           r"person, or --skip \S+")
_CONSENT_HINT = r"give \1 a Consent Record or Skip (Face Swap > People)"
_CONSENT_OPTIONS = re.compile(r"give --consent (\S+)=RECORD\.json \(see docs/consent\.md\) or "
                              r"--skip \S+")


def engine_settings(props: Any) -> Settings:
    """facefuse Settings from a strip's settings; offline unless Blender allows online access."""
    reference: tuple[Path, ...] = ()
    if props.selector == 'reference' and props.reference_image:
        reference = (Path(bpy.path.abspath(props.reference_image)),)
    return Settings(
        **{option.name: _tunable_value(props, option) for option in tunable_options()},
        reference_images=reference,
        providers="auto" if props.providers == 'auto' else ("CPUExecutionProvider",),
        models_dir=_folder(props.models_dir), cache_dir=_folder(props.cache_dir),
        offline=not online_access())


def _tunable_value(props: Any, option: Tunable) -> Any:
    value = getattr(props, option.name)
    if option.kind == "optional-model" and not getattr(props, f"use_{option.name}"):
        return None
    if option.kind == "choices":  # Blender's set, in the engine's order
        return tuple(choice for choice in option.choices if choice in value)
    if option.kind == "float":
        return float32_decimal(value)
    return _model(value) if option.kind in ("model", "optional-model") else value


def float32_decimal(value: float) -> float:
    """The shortest decimal that reads back as the same float32 as `value`.

    Blender keeps a FloatProperty as float32: 0.3 typed in the panel reads back as
    0.30000001192092896. The engine gets 0.3, what `facefuse render --mask-blur 0.3` gives it,
    so the two make the same request, the same pixels and the same fingerprint.
    """
    single = _as_float32(value)
    for digits in range(1, 10):  # 9 significant digits always round-trip a float32
        text = float(f"{single:.{digits}g}")
        if _as_float32(text) == single:
            return text
    return single


def _as_float32(value: float) -> float:
    return float(struct.unpack("<f", struct.pack("<f", value))[0])


def online_access() -> bool:
    return bool(getattr(bpy.app, "online_access", False))


def _model(text: str) -> str:
    text = text.strip()
    looks_like_path = text.startswith("//") or "/" in text or "\\" in text or text.endswith(".onnx")
    return bpy.path.abspath(text) if looks_like_path else text


def _folder(text: str) -> Path | None:
    return Path(bpy.path.abspath(text)) if text.strip() else None


def in_blender(message: str) -> str:
    """An engine message with the command line's remedies (the model fetch, -s / --assign /
    --skip for a person without a source, --consent for one without consent) replaced by the
    add-on's buttons."""
    message = _FETCH_WITH.sub(FETCH_HINT, message)
    message = _CAST_OPTIONS.sub(_CAST_HINT, message)
    message = _CONSENT_OPTIONS.sub(_CONSENT_HINT, message)
    return _FETCH_RUN.sub(FETCH_HINT, message)
