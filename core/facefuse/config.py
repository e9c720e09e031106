"""The one settings object a Pipeline is built from, and the description every host shows of it.

Settings is frozen: change it with dataclasses.replace. The fields a user tunes carry a `Tunable`
(label, help, kind, range, command-line flag) in their metadata; `tunable_options()` lists them, so
the command line, the Blender panel and the Qt panel all offer the same options from one place.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, fields
from numbers import Real
from pathlib import Path
from typing import Any

from .errors import InputError

SELECTORS = ("one", "many", "reference")
# The face regions a parser mask can keep (models/manifest.toml maps them to a parser's classes).
MASK_REGIONS = ("skin", "left-eyebrow", "right-eyebrow", "left-eye", "right-eye", "glasses",
                "nose", "mouth", "upper-lip", "lower-lip")
TUNABLE_KINDS = ("model", "optional-model", "choice", "choices", "float", "int", "bool")
TUNABLE_GROUPS = ("models", "faces", "detection", "mask", "detail", "performance")


@dataclass(frozen=True, slots=True)
class Tunable:
    """How hosts show one Settings field: `name` is the field, `flag` its command-line switch.

    kind: "model" (manifest name or .onnx path), "optional-model" (the same, or None for off),
    "choice" (one of `choices`), "choices" (a non-empty tuple of some of `choices`, in their
    order), "float", "int" or "bool". group: where panels put it.
    minimum/maximum bound floats and ints (inclusive) and are checked by Settings itself
    (check_value); a float must be a finite number whatever its bounds (no inf, no nan).
    suggestion: the model a panel offers when an optional model is switched on.
    """

    name: str
    label: str
    help: str
    kind: str
    group: str
    flag: str
    default: Any = None
    minimum: float | None = None
    maximum: float | None = None
    choices: tuple[str, ...] = ()
    suggestion: str = ""

    @property
    def cli_dest(self) -> str:
        """The argparse attribute the flag fills."""
        return self.flag.removeprefix("--").replace("-", "_")


def _tune(default: Any, label: str, help: str, kind: str, group: str, flag: str,
          minimum: float | None = None, maximum: float | None = None,
          choices: tuple[str, ...] = (), suggestion: str = "") -> Any:
    described = Tunable(name="", label=label, help=help, kind=kind, group=group, flag=flag,
                        minimum=minimum, maximum=maximum, choices=choices,
                        suggestion=suggestion)
    return field(default=default, metadata={"tunable": described})


@dataclass(frozen=True, slots=True)
class Settings:
    """Everything that decides what a Pipeline does.

    Model options take a manifest name or a path to an .onnx file; enhancer may be None.
    providers: "auto" or an explicit tuple of ONNX Runtime provider names.
    models_dir: None means $FACEFUSE_MODELS, else the user cache folder. cache_dir: the one folder
    everything cached lives under (see cache.layout.CacheLayout); None means $FACEFUSE_CACHE,
    else the user cache folder.
    """

    detector: str = _tune("retinaface_10g", "Detector", "face detection model: manifest name or "
                          ".onnx path", "model", "models", "--detector")
    recogniser: str = _tune("arcface_w600k_r50", "Recogniser", "face recognition model: manifest "
                            "name or .onnx path", "model", "models", "--recogniser")
    swapper: str = _tune("hyperswap_1a_256", "Swapper", "face swap model: manifest name or "
                         ".onnx path (see docs/models.md for why hyperswap_1a_256 is the "
                         "default)", "model", "models", "--swapper")
    swapper_weight: float = _tune(0.5, "Identity Strength", "how much of the source identity "
                                  "goes in: 0.5 as the swapper does it, lower keeps more of the "
                                  "target, higher pushes the source", "float", "models",
                                  "--swapper-weight", 0.0, 1.0)
    pixel_boost: int = _tune(0, "Pixel Boost", "swap at this crop size, a multiple of the "
                             "swapper's own (256, 384, 512 ... for a 128 px swapper; 256, 512 "
                             "... for 256 px ones), at k*k times the cost; 0: the swapper's own "
                             "size", "int", "models", "--pixel-boost", 0, 2048)
    enhancer: str | None = _tune(None, "Enhancer", "face restorer: none, a manifest name or an "
                                 ".onnx path", "optional-model", "detail", "--enhancer",
                                 suggestion="gfpgan_1.4")
    selector: str = _tune("one", "Target Face", "which faces to replace: one (main person), many "
                          "(all), or reference (those like --reference)", "choice", "faces",
                          "--selector", choices=SELECTORS)
    reference_images: tuple[Path, ...] = ()
    similarity: float = _tune(0.4, "Similarity", "minimum cosine similarity to the reference "
                              "face", "float", "faces", "--similarity", -1.0, 1.0)
    detector_score: float = _tune(0.5, "Detector Score", "minimum detector confidence, 0-1",
                                  "float", "detection", "--detector-score", 0.0, 1.0)
    detector_size_px: int = _tune(640, "Detector Size", "pixels the detector looks at (larger "
                                  "finds smaller faces, slower)", "int", "detection",
                                  "--detector-size", 128, 4096)
    mask_blur: float = _tune(0.3, "Mask Blur", "softness of the blend edge, as a share of the "
                             "face size", "float", "mask", "--mask-blur", 0.0, 1.0)
    mask_padding: tuple[float, float, float, float] = (0.0, 0.0, 0.0, 0.0)
    landmark_mask: bool = _tune(False, "Landmark Mask", "also limit the blend to the area around "
                                "the landmarks", "bool", "mask", "--landmark-mask")
    occluder: str | None = _tune(None, "Occlusion Mask", "keep what is in front of the target "
                                 "face (hands, cups, hair) with an occlusion model: none, a "
                                 "manifest name or an .onnx path", "optional-model", "mask",
                                 "--occluder", suggestion="xseg_1")
    parser: str | None = _tune(None, "Region Mask", "swap only the chosen face regions "
                               "(--mask-regions), found by a face parser: none, a manifest "
                               "name or an .onnx path", "optional-model", "mask", "--parser",
                               suggestion="bisenet_resnet_34")
    mask_regions: tuple[str, ...] = _tune(MASK_REGIONS, "Mask Regions", "the face regions the "
                                          "region mask keeps, comma-separated: "
                                          + ",".join(MASK_REGIONS), "choices", "mask",
                                          "--mask-regions", choices=MASK_REGIONS)
    mouth_mask: bool = _tune(False, "Mouth Mask", "keep the target's own mouth (the inside of "
                             "the lips) for speech; needs the region mask's parser", "bool",
                             "mask", "--mouth-mask")
    enhancer_blend: float = _tune(0.8, "Enhancer Blend", "how much of the enhanced face to keep, "
                                  "0-1", "float", "detail", "--enhancer-blend", 0.0, 1.0)
    codeformer_fidelity: float = _tune(0.5, "CodeFormer Fidelity", "CodeFormer: 0 sharper, 1 "
                                       "closer to the swapped face", "float", "detail",
                                       "--codeformer-fidelity", 0.0, 1.0)
    threads: int = _tune(0, "Threads", "CPU threads for inference, decoding and encoding (the "
                         "size of each of their pools); 0: all cores", "int", "performance",
                         "--threads", 0, 1024)
    detector_sessions: int = _tune(0, "Detector Sessions", "sessions of the detector that "
                                   "analyse frames side by side, sharing the inference "
                                   "threads; 0: the provider's default", "int", "performance",
                                   "--detector-sessions", 0, 64)
    swap_workers: int = _tune(0, "Swap Workers", "frames pass 2 swaps side by side, each "
                              "through its own sessions of the batch-1 models, written in "
                              "frame order; 0: the provider's default (1 on the CPU, 4 on "
                              "CUDA and TensorRT)", "int", "performance", "--swap-workers",
                              0, 64)
    frame_memory_mib: int = _tune(1024, "Frame Memory (MiB)", "MiB of decoded frames the "
                                  "analysis holds for the swap, so that the frames of a range "
                                  "that fits are decoded once, not twice; 0: decode twice",
                                  "int", "performance", "--frame-memory", 0, 2**20)
    normalise_latent: bool = True
    providers: str | tuple[str, ...] = "auto"
    models_dir: Path | None = None
    cache_dir: Path | None = None
    offline: bool = False
    use_embedding_cache: bool = True

    def __post_init__(self) -> None:
        for option in tunable_options():
            check_value(option, getattr(self, option.name))
        padding = self.mask_padding
        if len(padding) != 4 or not all(isinstance(p, Real) and not isinstance(p, bool)
                                        and math.isfinite(p) and 0.0 <= p <= 1.0
                                        for p in padding):
            raise InputError(f"the mask padding must be four fractions within 0..1 (top, right, "
                             f"bottom, left), not {padding!r}")
        if self.mouth_mask and not self.parser:
            raise InputError("the mouth mask finds the mouth with the face parser: choose one "
                             "(--parser bisenet_resnet_34) or switch the mouth mask off")


# The landmark smoothing of a render (shot.contract.request.RenderRequest's smoothing_min_cutoff and
# smoothing_beta; None there means the filter's own defaults), bounded like the tunables: the
# One Euro filter's blend overflows to nan beyond these.
SMOOTHING_OPTIONS = (
    Tunable("smoothing_min_cutoff", "Smoothing Min Cutoff", "One Euro cutoff when the face is "
            "still, Hz (lower: smoother)", "float", "faces", "--smooth-min-cutoff",
            minimum=0.001, maximum=1000.0),
    Tunable("smoothing_beta", "Smoothing Beta", "One Euro cutoff rise per face scale per second "
            "of speed (higher: less lag)", "float", "faces", "--smooth-beta",
            minimum=0.0, maximum=1000.0),
)


def check_smoothing(min_cutoff: float | None, beta: float | None) -> None:
    """InputError for a landmark smoothing value outside SMOOTHING_OPTIONS' bounds, or not
    finite (None: the default)."""
    for option, value in zip(SMOOTHING_OPTIONS, (min_cutoff, beta), strict=True):
        if value is not None:
            check_value(option, value)


def tunable_options() -> tuple[Tunable, ...]:
    """The Settings fields a user tunes, in declaration order, with their defaults filled in."""
    return tuple(
        Tunable(**{**_as_dict(item.metadata["tunable"]), "name": item.name,
                   "default": item.default})
        for item in fields(Settings) if "tunable" in item.metadata)


def _as_dict(option: Tunable) -> dict[str, Any]:
    return {item.name: getattr(option, item.name) for item in fields(Tunable)}


def check_value(option: Tunable, value: Any) -> None:
    """InputError (one sentence naming the option) for a value `option` does not take: outside
    its choices or bounds, or, for a float, not a finite number."""
    label = option.label.lower()
    if option.kind == "choices":
        _check_choices(option, value)
        return
    if option.choices and value not in option.choices:
        raise InputError(f"{label} must be one of {', '.join(option.choices)}, not {value!r}")
    if option.kind == "float":
        _check_finite(option, value)
    if option.minimum is None or option.maximum is None:
        return
    if not option.minimum <= value <= option.maximum:
        bounds = f"{option.minimum:g}..{option.maximum:g}"
        raise InputError(f"{label} must be within {bounds}, not {value}")


def _check_finite(option: Tunable, value: Any) -> None:
    if isinstance(value, bool) or not isinstance(value, Real) or not math.isfinite(value):
        bounds = ("" if option.minimum is None or option.maximum is None
                  else f" within {option.minimum:g}..{option.maximum:g}")
        raise InputError(f"{option.label.lower()} ({option.flag}) must be a finite number"
                         f"{bounds}, not {value!r}")


def _check_choices(option: Tunable, value: Any) -> None:
    label = option.label.lower()
    if not isinstance(value, tuple) or not value:
        raise InputError(f"{label} must name at least one of {', '.join(option.choices)}")
    unknown = [v for v in value if v not in option.choices]
    if unknown:
        raise InputError(f"{label} must be some of {', '.join(option.choices)}, not "
                         f"{', '.join(map(repr, unknown))}")
    if len(set(value)) != len(value):
        raise InputError(f"{label} names a region twice: {', '.join(value)}")
