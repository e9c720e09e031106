"""Where the models live, what a model option names, and what to tell a user whose models are
missing: the folder, offline mode, and the command (or the download by hand) that fills it."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

import platformdirs

from .manifest import ModelEntry

OFFLINE_VALUES = frozenset({"1", "true", "yes"})


def default_models_dir(explicit: Path | None = None) -> Path:
    """explicit, else $FACEFUSE_MODELS, else the user cache directory's facefuse/models."""
    if explicit is not None:
        return Path(explicit).expanduser()
    env = os.environ.get("FACEFUSE_MODELS", "").strip()
    if env:
        return Path(env).expanduser()
    return Path(platformdirs.user_cache_dir("facefuse")) / "models"


def offline_from_env() -> bool:
    """Whether $FACEFUSE_OFFLINE asks for offline mode (1, true or yes, any case)."""
    return os.environ.get("FACEFUSE_OFFLINE", "").strip().lower() in OFFLINE_VALUES


def looks_like_model_path(text: str) -> bool:
    """A model option that names a file (an .onnx path or an existing file), not a manifest
    model."""
    return text.lower().endswith(".onnx") or Path(text).expanduser().is_file()


def missing_models_message(models_dir: Path, offline: bool, entries: Sequence[ModelEntry]) -> str:
    """One sentence naming every missing model with its size, the folder, and the command that
    fetches them all (or that the files can be put there by hand)."""
    listed = ", ".join(f"{e.name} ({_megabytes(e.size_bytes)})" for e in entries)
    mode = " and offline mode is on" if offline else ""
    if len(entries) == 1:
        head, pronoun = f"model {listed} is missing from {models_dir}{mode}", "it"
    else:
        total = _megabytes(sum(e.size_bytes for e in entries))
        head = (f"{len(entries)} models ({total} in all) are missing from {models_dir}"
                f"{mode}: {listed}")
        pronoun = "them"
    command = fetch_command(models_dir, [e.name for e in entries])
    return (f"{head}; fetch {pronoun} with `{command}`, or put "
            f"{', '.join(e.file for e in entries)} in that folder by hand")


def fetch_command(models_dir: Path, names: Sequence[str]) -> str:
    """The command that fetches `names` into `models_dir`."""
    command = "facefuse models fetch " + " ".join(names)
    if models_dir != default_models_dir():
        command += f" --models-dir {models_dir}"
    return command


def by_hand(entry: ModelEntry) -> str:
    """How to get a model's file without facefuse: 'download FILE (N MB) from URL'."""
    size = _megabytes(entry.size_bytes)
    if entry.archive is not None:
        return (f"download {entry.archive.url}, take {entry.file} ({size}) out of it "
                f"(member {entry.archive.member})")
    return f"download {entry.file} ({size}) from {entry.urls[0] if entry.urls else 'its source'}"


def bad_file_message(name: str, reason: str) -> str:
    """The sentence for a present model file with other bytes than the manifest's."""
    return (f"model {name} is corrupt or a different build: {reason}; inspect it, then delete "
            f"it and run: facefuse models fetch {name}")


def _megabytes(size: int) -> str:
    return f"{size / 1e6:.1f} MB"
