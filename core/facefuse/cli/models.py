"""`facefuse models` (list, fetch, verify, check, path, prepare) and `facefuse cache`."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from functools import partial
from pathlib import Path
from typing import Any

from ..cache.hashes import HashMemo
from ..cache.layout import CacheLayout
from ..errors import ChecksumError, ExitCode, InputError
from ..models.locations import (
    bad_file_message,
    default_models_dir,
    looks_like_model_path,
    offline_from_env,
)
from ..models.manifest import USES, load_manifest
from ..models.store import ModelStatus, ModelStore
from ..models.verification import VerifyResult
from ..runtime.precision import UNVERIFIED
from ..runtime.prepare import prepare_model
from ..runtime.providers import parse_providers
from ..runtime.tensorrt import GpuFacts
from .options import DEFAULTS, DownloadProgress, model_options

DEFAULT_MODELS = (DEFAULTS.detector, DEFAULTS.recogniser, DEFAULTS.swapper)


def add_parsers(commands: Any) -> None:
    models = commands.add_parser("models", help="list, fetch or verify model files")
    models.add_argument("action", choices=("list", "fetch", "verify", "check", "path",
                                           "prepare"),
                        help="list the models, fetch them, verify them (hashes every file: "
                        "exit 4 naming any bad one), check that the ones a job needs are here "
                        "(quick: a file hashed before is trusted by its size and mtime; never "
                        "downloads: exit 4 naming any missing), print their folder, or prepare "
                        "them for a GPU (--providers tensorrt: build the TensorRT engines and "
                        "decide fp16 or fp32 per model, with progress; renders never build "
                        "engines themselves)")
    models.add_argument("names", nargs="*", help="model names (default: the default set); "
                        "check also takes .onnx paths")
    models.add_argument("--all", action="store_true", help="fetch every model in the manifest")
    models.add_argument("--use", choices=USES, help="list: only the models whose licence "
                        "allows this use (commercial or research)")
    models.add_argument("--force", action="store_true", help="fetch again, replacing a file that "
                        "fails verification")
    models.add_argument("--providers", default="tensorrt",
                        help="prepare: the providers to prepare for (default: tensorrt)")
    models.add_argument("--detector-size", type=int, default=DEFAULTS.detector_size_px,
                        help="prepare: the detector size renders will use (default: "
                        f"{DEFAULTS.detector_size_px}); an engine is built for one size")
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
        rows = store.status()
        if args.use is not None:
            rows = [row for row in rows if USES.index(row.use) >= USES.index(args.use)]
        _print_model_table(rows)
        return ExitCode.OK
    names = list(args.names) or (list(store.manifest.models) if args.all else list(DEFAULT_MODELS))
    if args.action == "check":
        return _check(store, names)
    if args.action == "prepare":
        return _prepare(store, names, args.providers, args.detector_size)
    if args.action == "fetch":
        for name, path in store.fetch_each(names, force=args.force):
            print(f"{name}: {path}")
        return ExitCode.OK
    return _verify(store, names, named=bool(args.names))


def _verify(store: ModelStore, names: Sequence[str], named: bool) -> int:
    """Hash every present file of `names` (whatever verified.json says), refresh its record,
    and print one line each saying which check ran; exit 4 if a file is bad (or, when named,
    missing)."""
    results = [store.verify(name, full=True) for name in names or store.manifest.models]
    for result in results:
        state = "ok" if result.ok else ("missing" if not result.present else "BAD")
        print(f"{result.name:22} {state:8} {_check_kind(result):7} {result.reason}")
    bad = [r.name for r in results if r.present and not r.ok]
    if bad:
        print(f"facefuse: error: {', '.join(bad)} failed the sha256 check; delete the file "
              f"and run: facefuse models fetch {' '.join(bad)}", file=sys.stderr)
    ok = all(r.ok for r in results if r.present or named)
    return ExitCode.OK if ok else ExitCode.MODEL


def _check_kind(result: VerifyResult) -> str:
    """Which check a line reports: sha256 (the bytes were hashed), quick (size and mtime
    against verified.json), or - (nothing to check)."""
    return "sha256" if result.hashed else ("quick" if result.present else "-")


def _check(store: ModelStore, names: Sequence[str]) -> int:
    """Every model in `names` present (manifest models verified quickly: see _check_kind;
    .onnx paths existing), with no download whatever the settings: one error naming every
    missing manifest model, else the first bad file (a farm's step environment runs this once
    per worker session)."""
    offline = ModelStore(store.manifest, store.models_dir, offline=True)
    for name in names:
        if name not in offline.manifest.models and not looks_like_model_path(name):
            raise InputError(f"unknown model {name!r}: give a model name from `facefuse models "
                             "list` or a path to an .onnx file")
    offline.require_present(names, copies=False)
    for name in names:
        if name in offline.manifest.models and not looks_like_model_path(name):
            result = offline.verify(name)
            if not result.ok:
                raise ChecksumError(bad_file_message(name, result.reason))
            print(f"{name:22} ok       {_check_kind(result):7} {result.path}")
        else:
            located = offline.locate(name, "detector")
            print(f"{located.label:22} ok       {'file':7} {located.path}")
    return ExitCode.OK


def _prepare(store: ModelStore, names: Sequence[str], providers: str, detector_px: int) -> int:
    """Build every named model's TensorRT engines and decide its precision (runtime.prepare);
    for providers without TensorRT say that fp16 stays unverified and models run in fp32."""
    wanted = parse_providers(providers)
    if wanted == "auto" or "TensorrtExecutionProvider" not in wanted:
        for name in names:
            print(f"{name:22} {UNVERIFIED.reason} (fp16 is checked on TensorRT only)")
        return ExitCode.OK
    from ..runtime.sessions import create_session  # the engine loads here

    offered = _offered_providers()
    if "TensorrtExecutionProvider" not in offered:
        raise InputError("TensorRT is not offered by this onnxruntime build (it offers "
                         f"{', '.join(offered)}); install onnxruntime-gpu and TensorRT, then "
                         "run `facefuse models prepare --providers tensorrt` again")
    facts = GpuFacts.of_machine()
    print(f"preparing {len(names)} model(s) for {facts.gpu}, TensorRT {facts.tensorrt}")
    hashes = HashMemo(CacheLayout.at(None).hashes)
    for index, name in enumerate(names, 1):
        located = store.locate(name, _role_of(store, name))
        digest = located.entry.sha256 if located.entry is not None else hashes.sha256(
            located.path)
        hashes.flush()
        step = f"[{index}/{len(names)}]"
        done = prepare_model(
            located.label, located.path, digest, store.models_dir, facts,
            lambda path, entries: create_session(path, [n for n, _ in entries],
                                                 entries=entries),
            partial(_say, step), detector_px)
        print(f"[{index}/{len(names)}] {located.label}: done in {done.seconds:.0f} s, engine in "
              f"{done.build.folder}")
    return ExitCode.OK


def _say(step: str, line: str) -> None:
    print(f"{step} {line}", flush=True)


def _offered_providers() -> list[str]:
    import onnxruntime as ort

    return list(ort.get_available_providers())


def _role_of(store: ModelStore, name: str) -> str:
    """The role of a manifest model (a user's .onnx file: any role takes it)."""
    entry = store.manifest.models.get(name)
    return store.manifest.families[entry.family].role if entry is not None else "detector"


def _print_model_table(rows: Sequence[ModelStatus]) -> None:
    print(f"{'name':22} {'role':10} {'size':>9}  {'state':9} {'use':10} licence")
    for row in rows:
        state = "verified" if row.verified else ("present" if row.present else "missing")
        print(f"{row.name:22} {row.role:10} {row.size_bytes / 1e6:8.1f}M  {state:9} "
              f"{row.use:10} {row.licence}")


def cmd_cache(args: argparse.Namespace) -> int:
    layout = CacheLayout.at(args.cache_dir)
    if layout.root.exists() and not layout.root.is_dir():  # nothing of ours to count or clear
        raise InputError(f"the cache folder {layout.root} is not a folder; give the folder "
                         "facefuse caches in (--cache-dir or FACEFUSE_CACHE)")
    if args.action == "clear":
        print(layout.clear().describe())
        return ExitCode.OK
    print(f"{layout.root}:")
    for part, (files, size) in layout.usage().items():
        print(f"  {part:11} {files:6d} files {size / 1e6:10.1f} MB")
    return ExitCode.OK
