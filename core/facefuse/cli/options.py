"""Options more than one command takes, and how they become Settings."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TextIO

from ..config import SELECTORS, Settings
from ..runtime.sessions import parse_providers

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


def model_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--models-dir", type=Path, help="where models live (default: "
                        "$FACEFUSE_MODELS, else the user cache folder)")
    parser.add_argument("--offline", action="store_true", help="never use the network "
                        "(also FACEFUSE_OFFLINE=1)")


def engine_options(p: argparse.ArgumentParser) -> None:
    """Options shared by swap and render: sources, models, selection, mask, runtime."""
    p.add_argument("-s", "--source", type=Path, action="append", required=True,
                   help="source face image (repeat to average several photos of one person)")
    p.add_argument("--detector", default=DEFAULTS.detector,
                   help="face detection model: manifest name or .onnx path")
    p.add_argument("--recogniser", default=DEFAULTS.recogniser,
                   help="face recognition model: manifest name or .onnx path")
    p.add_argument("--swapper", default=DEFAULTS.swapper,
                   help="face swap model: manifest name or .onnx path")
    p.add_argument("--enhancer", default="none", help="none, a manifest name or an .onnx path")
    p.add_argument("--enhancer-blend", type=float, default=DEFAULTS.enhancer_blend,
                   help="how much of the enhanced face to keep, 0-1")
    p.add_argument("--codeformer-fidelity", type=float, default=DEFAULTS.codeformer_fidelity,
                   help="CodeFormer: 0 sharper, 1 closer to the swapped face")
    p.add_argument("--selector", choices=SELECTORS, default=DEFAULTS.selector,
                   help="which faces to replace: one (the largest), many (all), or reference "
                   "(those like --reference)")
    p.add_argument("--reference", type=Path, action="append", default=[],
                   help="image of the target person to replace (selector reference)")
    p.add_argument("--similarity", type=float, default=DEFAULTS.similarity,
                   help="minimum cosine similarity to the reference face")
    p.add_argument("--mask-blur", type=float, default=DEFAULTS.mask_blur,
                   help="softness of the blend edge, as a share of the face size")
    p.add_argument("--landmark-mask", action="store_true", help="also limit the blend to the "
                   "area around the landmarks")
    p.add_argument("--detector-size", type=int, default=DEFAULTS.detector_size_px,
                   help="pixels the detector looks at (larger finds smaller faces, slower)")
    p.add_argument("--detector-score", type=float, default=DEFAULTS.detector_score,
                   help="minimum detector confidence, 0-1")
    p.add_argument("--providers", default="auto", help="auto, or a list such as cuda,cpu")
    p.add_argument("--no-cache", action="store_true", help="do not read or write the "
                   "source embedding cache")
    p.add_argument("--cache-dir", type=Path, help="where everything facefuse caches goes "
                   "(default: $FACEFUSE_CACHE, else the user cache folder)")
    model_options(p)


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
        offline=args.offline, cache_dir=args.cache_dir, use_embedding_cache=not args.no_cache,
    )
