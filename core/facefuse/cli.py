"""The `facefuse` command line: argparse -> Settings -> Pipeline. main() returns the exit code.

Exit codes: 0 done, 2 bad input or usage, 3 no face found in a source, 4 model missing or invalid,
1 unexpected internal error, 130 interrupted.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TextIO

from . import __version__
from .config import SELECTORS, Settings
from .errors import FacefuseError, InputError
from .io.images import check_writable_path, read_image, write_image
from .runtime.sessions import parse_providers

log = logging.getLogger("facefuse")
DEFAULTS = Settings()


class DownloadProgress:
    """Model download progress on stderr: a live line on a terminal, every 10% otherwise."""

    def __init__(self, stream: TextIO | None = None) -> None:
        self._stream = stream if stream is not None else sys.stderr
        self._last: dict[str, int] = {}

    def __call__(self, name: str, done: int, total: int | None) -> None:
        percent = int(done * 100 / total) if total else -1
        live = self._stream.isatty()
        if not live and percent // 10 == self._last.get(name, -10) // 10 and done != total:
            return
        self._last[name] = percent
        size = f"{done / 1e6:.1f}/{total / 1e6:.1f} MB" if total else f"{done / 1e6:.1f} MB"
        end = "\r" if live and done != total else "\n"
        self._stream.write(f"fetching {name}: {max(percent, 0):3d}% {size}{end}")
        self._stream.flush()


def _model_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--models-dir", type=Path, help="where models live (default: "
                        "$FACEFUSE_MODELS, else the user cache folder)")
    parser.add_argument("--offline", action="store_true", help="never use the network "
                        "(also FACEFUSE_OFFLINE=1)")


def engine_options(p: argparse.ArgumentParser) -> None:
    """Options shared by swap and render: sources, models, selection, mask, runtime."""
    p.add_argument("-s", "--source", type=Path, action="append", required=True,
                   help="source face image (repeat to average several photos of one person)")
    p.add_argument("--detector", default=DEFAULTS.detector, help="manifest name or .onnx path")
    p.add_argument("--recogniser", default=DEFAULTS.recogniser)
    p.add_argument("--swapper", default=DEFAULTS.swapper)
    p.add_argument("--enhancer", default="none", help="none, a manifest name or an .onnx path")
    p.add_argument("--enhancer-blend", type=float, default=DEFAULTS.enhancer_blend)
    p.add_argument("--codeformer-fidelity", type=float, default=DEFAULTS.codeformer_fidelity)
    p.add_argument("--selector", choices=SELECTORS, default=DEFAULTS.selector)
    p.add_argument("--reference", type=Path, action="append", default=[],
                   help="image of the target person to replace (selector reference)")
    p.add_argument("--similarity", type=float, default=DEFAULTS.similarity,
                   help="minimum cosine similarity to the reference face")
    p.add_argument("--mask-blur", type=float, default=DEFAULTS.mask_blur)
    p.add_argument("--landmark-mask", action="store_true", help="also limit the blend to the "
                   "area around the landmarks")
    p.add_argument("--detector-size", type=int, default=DEFAULTS.detector_size_px)
    p.add_argument("--detector-score", type=float, default=DEFAULTS.detector_score)
    p.add_argument("--providers", default="auto", help="auto, or a list such as cuda,cpu")
    p.add_argument("--no-cache", action="store_true", help="do not read or write the "
                   "source embedding cache")
    _model_options(p)


def _swap_parser(commands: Any) -> None:
    p = commands.add_parser("swap", help="replace faces in an image with a source identity")
    p.add_argument("-t", "--target", type=Path, required=True, help="image to change")
    p.add_argument("-o", "--output", type=Path, required=True, help="image to write")
    engine_options(p)
    p.add_argument("--json", action="store_true", help="print one JSON summary line")
    p.set_defaults(handler=cmd_swap)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="facefuse", description=__doc__.splitlines()[0])
    parser.add_argument("--version", action="version", version=f"facefuse {__version__}")
    parser.add_argument("-v", "--verbose", action="count", default=0)
    parser.add_argument("--debug", action="store_true", help="show tracebacks")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    _swap_parser(commands)
    add_render_parser(commands)
    models = commands.add_parser("models", help="list, fetch or verify model files")
    models.add_argument("action", choices=("list", "fetch", "verify", "path"))
    models.add_argument("names", nargs="*", help="model names (default: the default set)")
    models.add_argument("--all", action="store_true", help="fetch every model in the manifest")
    models.add_argument("--force", action="store_true", help="fetch again, replacing a file that "
                        "fails verification")
    _model_options(models)
    models.set_defaults(handler=cmd_models)
    cache = commands.add_parser("cache", help="show or clear the source embedding cache")
    cache.add_argument("action", choices=("info", "clear"))
    cache.add_argument("--cache-dir", type=Path)
    cache.set_defaults(handler=cmd_cache)
    doctor = commands.add_parser("doctor", help="why the GPU is (not) used, models, folders")
    doctor.add_argument("--models-dir", type=Path)
    doctor.add_argument("--json", action="store_true")
    doctor.set_defaults(handler=cmd_doctor)
    return parser


def settings_from_args(args: argparse.Namespace) -> Settings:
    """The Settings a `swap` command line asks for."""
    enhancer = None if args.enhancer.lower() == "none" else args.enhancer
    return Settings(
        detector=args.detector, recogniser=args.recogniser, swapper=args.swapper,
        enhancer=enhancer, selector=args.selector, reference_images=tuple(args.reference),
        similarity=args.similarity, mask_blur=args.mask_blur, landmark_mask=args.landmark_mask,
        detector_size_px=args.detector_size, detector_score=args.detector_score,
        enhancer_blend=args.enhancer_blend, codeformer_fidelity=args.codeformer_fidelity,
        providers=parse_providers(args.providers), models_dir=args.models_dir,
        offline=args.offline, use_embedding_cache=not args.no_cache,
    )


def check_swap_paths(sources: Sequence[Path], target: Path, references: Sequence[Path],
                     output: Path) -> None:
    """InputError for unreadable inputs, a bad output path, or an output that is an input."""
    check_writable_path(output)
    for path in [*sources, target, *references]:
        read_image(path)
        if _same_file(path, output):
            raise InputError(f"the output {output} is also an input; choose another file name")


def _same_file(a: Path, b: Path) -> bool:
    if a.exists() and b.exists():
        return os.path.samefile(a, b)
    return a.resolve() == b.resolve()


def cmd_swap(args: argparse.Namespace) -> int:
    from .pipeline import Pipeline

    started = time.perf_counter()
    settings = settings_from_args(args)
    if settings.selector == "reference" and not settings.reference_images:
        raise InputError("--selector reference needs --reference IMAGE (the person to replace)")
    check_swap_paths(args.source, args.target, args.reference, args.output)
    target = read_image(args.target)
    with Pipeline(settings, on_download=DownloadProgress()) as pipeline:
        identity_start = time.perf_counter()
        identity = pipeline.source_identity(args.source)
        identity_ms = (time.perf_counter() - identity_start) * 1000
        result = pipeline.process_frame(target, identity)
        write_start = time.perf_counter()
        write_image(args.output, result.frame)
        summary = _swap_summary(args, pipeline, result, identity_ms,
                                (time.perf_counter() - write_start) * 1000, started)
    if not result.swapped:
        log.warning("no face to replace in %s (%d found, selector %s); wrote it unchanged",
                    args.target, len(result.faces), settings.selector)
    _print_summary(summary, args.json)
    return 0


def _swap_summary(args: argparse.Namespace, pipeline: Any, result: Any, identity_ms: float,
                  write_ms: float, started: float) -> dict[str, Any]:
    timings = {"identity": round(identity_ms, 3), **result.timings_ms, "write": round(write_ms, 3),
               "total": round((time.perf_counter() - started) * 1000, 3)}
    return {"output": str(args.output), "faces_found": len(result.faces),
            "faces_swapped": len(result.swapped), "timings_ms": timings,
            "providers": list(pipeline.providers), "models": pipeline.models_used()}


def _print_summary(summary: dict[str, Any], as_json: bool) -> None:
    if as_json:
        print(json.dumps(summary, sort_keys=True))
        return
    print(f"{summary['output']}: swapped {summary['faces_swapped']} of "
          f"{summary['faces_found']} faces in {summary['timings_ms']['total']:.0f} ms")


DEFAULT_MODELS = (DEFAULTS.detector, DEFAULTS.recogniser, DEFAULTS.swapper)


def _store(args: argparse.Namespace) -> Any:
    from .models.manifest import load_manifest
    from .models.store import ModelStore, default_models_dir, offline_from_env

    return ModelStore(load_manifest(), default_models_dir(args.models_dir),
                      offline=args.offline or offline_from_env(), on_progress=DownloadProgress())


def cmd_models(args: argparse.Namespace) -> int:
    store = _store(args)
    if args.action == "path":
        print(store.models_dir)
        return 0
    if args.action == "list":
        _print_model_table(store.status())
        return 0
    names = list(args.names) or (list(store.manifest.models) if args.all else list(DEFAULT_MODELS))
    if args.action == "fetch":
        for name in names:
            print(f"{name}: {store.fetch(name, force=args.force)}")
        return 0
    results = [store.verify(name) for name in names or store.manifest.models]
    for result in results:
        state = "ok" if result.ok else ("missing" if not result.present else "BAD")
        print(f"{result.name:22} {state:8} {result.reason}")
    return 0 if all(r.ok for r in results if r.present or args.names) else 4


def _print_model_table(rows: Sequence[Any]) -> None:
    print(f"{'name':22} {'role':10} {'size':>9}  {'state':9} licence")
    for row in rows:
        state = "verified" if row.verified else ("present" if row.present else "missing")
        print(f"{row.name:22} {row.role:10} {row.size_bytes / 1e6:8.1f}M  {state:9} {row.licence}")


def cmd_cache(args: argparse.Namespace) -> int:
    from .embedding_cache import EmbeddingCache, default_cache_dir

    cache = EmbeddingCache(default_cache_dir(args.cache_dir))
    if args.action == "clear":
        print(f"removed {cache.clear()} cached embeddings from {cache.directory}")
        return 0
    info = cache.info()
    print(f"{info.directory}: {info.entries} embeddings, {info.size_bytes} bytes")
    return 0


def cmd_doctor(args: argparse.Namespace) -> int:
    from .doctor import report

    data = report(models_dir=args.models_dir)
    if args.json:
        print(json.dumps(data, default=str, sort_keys=True))
        return 0
    _print_doctor(data)
    return 0


def _print_doctor(data: dict[str, Any]) -> None:
    ort_info = data["onnxruntime"]
    flavours = ", ".join(f"{k} {v}" for k, v in ort_info["distributions"].items()) or "none"
    print(f"facefuse {data['facefuse']} on Python {data['python']} ({data['platform']})")
    print(f"onnxruntime {ort_info['version']} (installed: {flavours}; device {ort_info['device']})")
    if data["conflict"]:
        print("  PROBLEM: several onnxruntime packages are installed and overwrite each other; "
              "keep one: pip uninstall -y onnxruntime onnxruntime-gpu && "
              "pip install onnxruntime-gpu")
    print(f"providers offered: {', '.join(ort_info['providers'])}")
    for probe in data["probes"]:
        verdict = "works" if probe["works"] else f"not used: {probe['why']}"
        print(f"  {probe['provider']:28} {verdict}")
    print(f"GPU: {data['gpu']}")
    if data["cuda_visible_devices"] is not None:
        print(f"CUDA_VISIBLE_DEVICES={data['cuda_visible_devices']}")
    print(f"models dir: {data['models_dir']}{' (offline)' if data['offline'] else ''}")
    print(f"cache dir:  {data['cache_dir']}")
    for model in data["models"]:
        state = "verified" if model["verified"] else ("present" if model["present"] else "missing")
        print(f"  {model['name']:22} {state}")


def _configure_logging(verbosity: int) -> None:
    level = logging.WARNING - 10 * min(verbosity, 2)
    logging.basicConfig(level=level, format="facefuse: %(levelname)s: %(message)s",
                        stream=sys.stderr)


def add_render_parser(commands: Any) -> None:
    from .cli_render import render_parser

    render_parser(commands)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit code (never raises for user errors)."""
    args = build_parser().parse_args(argv)
    _configure_logging(args.verbose)
    try:
        return int(args.handler(args))
    except FacefuseError as exc:
        print(f"facefuse: error: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("facefuse: interrupted", file=sys.stderr)
        return 130
    except Exception as exc:  # a bug: one line unless --debug asks for the traceback
        if args.debug:
            raise
        print(f"facefuse: internal error: {type(exc).__name__}: {exc} "
              "(run with --debug for the traceback)", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
