"""Pipeline stages: one module per stage, one class per model family, a Protocol per role.

FAMILY_CLASSES is the explicit table from a manifest family's `class` to the class that runs it.
"""

from collections.abc import Mapping
from types import MappingProxyType

from .detect import ScrfdDetector, YunetDetector
from .embed import ArcFaceEmbedder
from .enhance import CodeFormerRestorer, FaceRestorer
from .mask import BisenetParser, XsegOccluder
from .roles import Detector, Embedder, ModelFile, Occluder, Parser, Restorer, Stage, Swapper
from .swap import HyperswapSwapper, InswapperSwapper

FAMILY_CLASSES: Mapping[str, type[Stage]] = MappingProxyType({
    cls.__name__: cls
    for cls in (ScrfdDetector, YunetDetector, ArcFaceEmbedder, InswapperSwapper, FaceRestorer,
                CodeFormerRestorer, HyperswapSwapper, XsegOccluder, BisenetParser)
})

__all__ = [
    "FAMILY_CLASSES",
    "ArcFaceEmbedder",
    "BisenetParser",
    "CodeFormerRestorer",
    "Detector",
    "Embedder",
    "FaceRestorer",
    "HyperswapSwapper",
    "InswapperSwapper",
    "ModelFile",
    "Occluder",
    "Parser",
    "Restorer",
    "ScrfdDetector",
    "Stage",
    "Swapper",
    "XsegOccluder",
    "YunetDetector",
]
