"""The one settings object a Pipeline is built from. Frozen: change it with dataclasses.replace."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from .errors import InputError

SELECTORS = ("one", "many", "reference")


@dataclass(frozen=True, slots=True)
class Settings:
    """Everything that decides what a Pipeline does.

    Model options take a manifest name or a path to an .onnx file; enhancer may be None.
    providers: "auto" or an explicit tuple of ONNX Runtime provider names.
    models_dir: None means $FACEFUSE_MODELS, else the user cache folder. cache_dir: the one folder
    everything cached lives under (see cache.layout.CacheLayout); None means $FACEFUSE_CACHE,
    else the user cache folder.
    """

    detector: str = "retinaface_10g"
    recogniser: str = "arcface_w600k_r50"
    swapper: str = "inswapper_128"
    enhancer: str | None = None
    selector: str = "one"
    reference_images: tuple[Path, ...] = ()
    similarity: float = 0.4
    detector_score: float = 0.5
    detector_size_px: int = 640
    mask_blur: float = 0.3
    mask_padding: tuple[float, float, float, float] = (0.0, 0.0, 0.0, 0.0)
    landmark_mask: bool = False
    enhancer_blend: float = 0.8
    codeformer_fidelity: float = 0.5
    normalise_latent: bool = True
    providers: str | tuple[str, ...] = "auto"
    models_dir: Path | None = None
    cache_dir: Path | None = None
    offline: bool = False
    use_embedding_cache: bool = True

    def __post_init__(self) -> None:
        if self.selector not in SELECTORS:
            raise InputError(f"selector must be one of {', '.join(SELECTORS)}, not {self.selector!r}")
        if not 0.0 <= self.mask_blur <= 1.0:
            raise InputError(f"mask blur must be within 0..1, not {self.mask_blur}")
        if not -1.0 <= self.similarity <= 1.0:
            raise InputError(f"similarity must be within -1..1, not {self.similarity}")
        if not 0.0 <= self.enhancer_blend <= 1.0:
            raise InputError(f"enhancer blend must be within 0..1, not {self.enhancer_blend}")
