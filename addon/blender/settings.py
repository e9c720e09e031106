"""A strip's settings as facefuse Settings, and the engine's words about models said the
Blender way (the add-on's Download models button, not `facefuse models fetch`)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import bpy

from facefuse import Settings, Tunable, tunable_options

FETCH_HINT = "open Preferences > Add-ons > facefuse and press Download models"
_FETCH_WITH = re.compile(r"fetch (?:it|them) with `facefuse models fetch[^`]*`")
_FETCH_RUN = re.compile(r"run:? `?facefuse models fetch[^;,`]*`?")


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
    return _model(value) if option.kind in ("model", "optional-model") else value


def online_access() -> bool:
    return bool(getattr(bpy.app, "online_access", False))


def _model(text: str) -> str:
    text = text.strip()
    looks_like_path = text.startswith("//") or "/" in text or "\\" in text or text.endswith(".onnx")
    return bpy.path.abspath(text) if looks_like_path else text


def _folder(text: str) -> Path | None:
    return Path(bpy.path.abspath(text)) if text.strip() else None


def in_blender(message: str) -> str:
    """An engine message with the command-line model fetch replaced by the add-on's button."""
    message = _FETCH_WITH.sub(FETCH_HINT, message)
    return _FETCH_RUN.sub(FETCH_HINT, message)
