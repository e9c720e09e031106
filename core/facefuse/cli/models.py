"""`facefuse models` (list, fetch, verify, path) and `facefuse cache` (info, clear)."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..cache.layout import CacheLayout
from ..errors import ExitCode, InputError
from ..models.manifest import load_manifest
from ..models.store import (
    ModelStatus,
    ModelStore,
    default_models_dir,
    looks_like_model_path,
    offline_from_env,
)
from .options import DEFAULTS, DownloadProgress, model_options

DEFAULT_MODELS = (DEFAULTS.detector, DEFAULTS.recogniser, DEFAULTS.swapper)


def add_parsers(commands: Any) -> None:
    models = commands.add_parser("models", help="list, fetch or verify model files")
    models.add_argument("action", choices=("list", "fetch", "verify", "check", "path"),
                        help="list the models, fetch or verify them, check that the ones a "
                        "job needs are here (never downloads: exit 4 naming any missing), or "
                        "print their folder")
    models.add_argument("names", nargs="*", help="model names (default: the default set); "
                        "check also takes .onnx paths")
    models.add_argument("--all", action="store_true", help="fetch every model in the manifest")
    models.add_argument("--force", action="store_true", help="fetch again, replacing a file that "
                        "fails verification")
    model_options(models)
    models.set_defaults(handler=cmd_models)
    cache = commands.add_parser("cache", help="show or clear what facefuse caches (embeddings, "
                                "shot analyses, previews, file hashes)")
    cache.add_argument("action", choices=("info", "clear"),
                       help="show what each cache holds, or remove every cached file")
    cache.add_argument("--cache-dir", type=Path, help="the cache folder (default: "
                       "$FACEFUSE_CACHE, else the user cache folder)")
    cache.set_defaults(handler=cmd_cache)


def _store(args: argparse.Namespace) -> ModelStore:
    return ModelStore(load_manifest(), default_models_dir(args.models_dir),
                      offline=args.offline or offline_from_env(), on_progress=DownloadProgress())


def cmd_models(args: argparse.Namespace) -> int:
    store = _store(args)
    if args.action == "path":
        print(store.models_dir)
        return ExitCode.OK
    if args.action == "list":
        _print_model_table(store.status())
        return ExitCode.OK
    names = list(args.names) or (list(store.manifest.models) if args.all else list(DEFAULT_MODELS))
    if args.action == "check":
        return _check(store, names)
    if args.action == "fetch":
        for name in names:
            print(f"{name}: {store.fetch(name, force=args.force)}")
        return ExitCode.OK
    results = [store.verify(name) for name in names or store.manifest.models]
    for result in results:
        state = "ok" if result.ok else ("missing" if not result.present else "BAD")
        print(f"{result.name:22} {state:8} {result.reason}")
    ok = all(r.ok for r in results if r.present or args.names)
    return ExitCode.OK if ok else ExitCode.MODEL


def _check(store: ModelStore, names: Sequence[str]) -> int:
    """Every model in `names` present (manifest models verified, .onnx paths existing), with no
    download whatever the settings: one error naming every missing manifest model, else the
    first bad file (a farm's step environment runs this once per worker session)."""
    offline = ModelStore(store.manifest, store.models_dir, offline=True)
    for name in names:
        if name not in offline.manifest.models and not looks_like_model_path(name):
            raise InputError(f"unknown model {name!r}: give a model name from `facefuse models "
                             "list` or a path to an .onnx file")
    offline.require_present(names)
    for name in names:
        entry = offline.manifest.models.get(name)
        role = offline.manifest.families[entry.family].role if entry is not None else "detector"
        located = offline.locate(name, role)
        print(f"{located.label:22} ok       {located.path}")
    return ExitCode.OK


def _print_model_table(rows: Sequence[ModelStatus]) -> None:
    print(f"{'name':22} {'role':10} {'size':>9}  {'state':9} licence")
    for row in rows:
        state = "verified" if row.verified else ("present" if row.present else "missing")
        print(f"{row.name:22} {row.role:10} {row.size_bytes / 1e6:8.1f}M  {state:9} {row.licence}")


def cmd_cache(args: argparse.Namespace) -> int:
    layout = CacheLayout.at(args.cache_dir)
    if args.action == "clear":
        print(layout.clear().describe())
        return ExitCode.OK
    print(f"{layout.root}:")
    for part, (files, size) in layout.usage().items():
        print(f"  {part:11} {files:6d} files {size / 1e6:10.1f} MB")
    return ExitCode.OK
