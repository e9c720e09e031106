"""Models ready to run: located (fetched and verified if needed), a session made once, the
contract checked, and the family's stage class built from the settings.

A ModelLoader belongs to one Pipeline (or one host job): it owns the model store, the session
pool and the loaded stages, and `close()` frees the sessions.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import cast

from ..cache.hashes import HashMemo
from ..config import Settings
from ..models.licences import STATED, ModelLicence
from ..models.locations import default_models_dir, looks_like_model_path, offline_from_env
from ..models.manifest import OPTIONAL_ROLES, ROLES, Family, Manifest, load_manifest
from ..models.store import LocatedModel, ModelStore
from ..stages import (
    FAMILY_CLASSES,
    Detector,
    Embedder,
    ModelFile,
    Occluder,
    Parser,
    Restorer,
    Stage,
    Swapper,
)
from .precision import PrecisionStore
from .sessions import SessionPool, SessionTimer, resolve_providers
from .signature import Signature, pick_family, require
from .tensorrt import ENGINES_FOLDER, EngineBuild, GpuFacts, engine_build
from .threads import detector_sessions, swap_workers, thread_budget

log = logging.getLogger(__name__)

# The roles pass 2's swap workers run for every frame: with several workers each model whose
# batch is fixed gets a session per worker (ModelLoader.replicas).
SWAP_ROLES = ("swapper", "enhancer", "occluder", "parser")

DownloadProgress = Callable[[str, int, "int | None"], None]
"""on_download(model name, bytes done, bytes total or None)."""


@dataclass(frozen=True, slots=True)
class LoadedModel:
    """A model ready to run: where it came from, its family, and the stage object running it."""

    located: LocatedModel
    family: Family
    stage: Stage


class ModelLoader:
    """The models a Settings object names, by role (detector, recogniser, swapper, and the
    optional enhancer, occluder and parser: see models.manifest.ROLES).

    hashes: where the sha256 of a user's own model files is remembered (by size and mtime).
    timer: when given, session creation and inference are timed into it (`facefuse bench`).
    """

    def __init__(self, settings: Settings, hashes: HashMemo, manifest: Manifest | None = None,
                 on_download: DownloadProgress | None = None,
                 timer: SessionTimer | None = None) -> None:
        self.settings = settings
        self.manifest = manifest if manifest is not None else load_manifest()
        self.models_dir = default_models_dir(settings.models_dir)
        self.store = ModelStore(self.manifest, self.models_dir,
                                offline=settings.offline or offline_from_env(),
                                on_progress=on_download)
        self.providers = resolve_providers(settings.providers)
        self.sessions = SessionPool(self.providers, cache_dir=self.models_dir, timer=timer,
                                    threads=thread_budget(settings.threads).inference,
                                    engines=self.engine_build)
        self._hashes = hashes
        self._gpu: GpuFacts | None = None
        self._located: dict[str, LocatedModel] = {}
        self._loaded: dict[str, LoadedModel] = {}
        # pass 2's swap workers (and pass 1 beside them) load models from several threads:
        # each role's model is loaded once, by whichever asks first
        self._loading = threading.RLock()

    def option(self, role: str) -> str:
        """The settings' model name or path for `role`; ValueError when none is configured."""
        if role not in ROLES:
            raise ValueError(f"role must be one of {', '.join(ROLES)}, not {role!r}")
        option: str | None = getattr(self.settings, role)
        if option is None:
            raise ValueError(f"no {role} is configured")
        return option

    def locate(self, role: str) -> LocatedModel:
        """Where the model for `role` is (fetched and verified if needed); no session is made."""
        located = self._located.get(role)
        if located is not None:
            return located
        with self._loading:
            if role not in self._located:
                self._located[role] = self.store.locate(self.option(role), role)
            return self._located[role]

    def load(self, role: str) -> LoadedModel:
        """The loaded model for `role`: session created once, contract checked, stage built."""
        loaded = self._loaded.get(role)
        if loaded is not None:
            return loaded
        with self._loading:
            if role not in self._loaded:
                self._loaded[role] = self._load(role)
            return self._loaded[role]

    def _load(self, role: str) -> LoadedModel:
        located = self.locate(role)
        session = self.sessions.get(located.path, self.replicas(role),
                                    fixed_batch_only=role in SWAP_ROLES)
        family = self._family_for(role, located, Signature.of_session(session))
        model = ModelFile(located.path, self.models_dir, partial(self.sha256, role))
        stage = FAMILY_CLASSES[family.class_name].build(session, family, self.settings, model)
        return LoadedModel(located, family, stage)

    def replicas(self, role: str) -> int:
        """The sessions `role`'s model gets: the detector's from the settings
        (threads.detector_sessions); for the models of SWAP_ROLES one per swap worker where
        the model's batch is fixed (runtime.sessions.SessionPool.get: one with a free batch
        is one session whatever the workers, see below); one for every other role.

        A free-batch model shares one session among the workers: ONNX Runtime's run() is
        thread-safe, its weights are held once (on a GPU, once rather than once a worker), and
        the published pass-2 models whose runs are the cost (inswapper, HyperSwap, GFPGAN) fix
        their batch at 1 and so get a session each. On CUDA the runs of one session share its
        compute stream; bench/gpu.sh stage 2 measures the workers on batch-1 stand-ins."""
        budget = thread_budget(self.settings.threads).inference
        if role == "detector":
            return detector_sessions(self.settings.detector_sessions, self.providers, budget)
        if role in SWAP_ROLES:
            return self.swap_workers
        return 1

    @property
    def swap_workers(self) -> int:
        """Pass 2's swap workers: frames swapped side by side (threads.swap_workers)."""
        return swap_workers(self.settings.swap_workers, self.providers,
                            thread_budget(self.settings.threads).inference)

    def require_models(self, roles: Sequence[str] = ROLES) -> None:
        """Every manifest model of `roles` present before any model is loaded: offline, one
        ModelMissingError naming every missing one (with sizes and the fetch command); online,
        the missing ones are fetched, a failed download naming every one still missing."""
        names = (getattr(self.settings, role) for role in roles)
        self.store.require_present(name for name in names if name)

    def detector(self) -> Detector:
        return cast(Detector, self.load("detector").stage)

    def embedder(self) -> Embedder:
        return cast(Embedder, self.load("recogniser").stage)

    def swapper(self) -> Swapper:
        return cast(Swapper, self.load("swapper").stage)

    def restorer(self) -> Restorer:
        return cast(Restorer, self.load("enhancer").stage)

    def occluder(self) -> Occluder:
        return cast(Occluder, self.load("occluder").stage)

    def parser(self) -> Parser:
        return cast(Parser, self.load("parser").stage)

    def _family_for(self, role: str, located: LocatedModel, signature: Signature) -> Family:
        if located.entry is not None:
            family = self.manifest.families[located.entry.family]
            require(signature, family, located.label)
            return family
        return pick_family(signature, self.manifest.families_for_role(role), located.label)

    def sha256(self, role: str) -> str:
        """The sha256 of the role's model file: from the manifest, or hashed once (remembered by
        size and mtime) for a user's own file; "" for an optional role the settings leave off."""
        if role in OPTIONAL_ROLES and getattr(self.settings, role) is None:
            return ""
        located = self.locate(role)
        if located.entry is not None:
            return located.entry.sha256
        digest = self._hashes.sha256(located.path)
        self._hashes.flush()
        return digest

    def identity(self, role: str) -> str:
        """A content identity of the role's model: its label and sha256."""
        return f"{self.locate(role).label}:{self.sha256(role)}"

    def used(self) -> dict[str, dict[str, str]]:
        """Role -> {model, path, sha256} for the models located so far."""
        return {role: {"model": located.label, "path": str(located.path),
                       "sha256": self.sha256(role)}
                for role, located in self._located.items()}

    def licences(self, stated: Mapping[str, str]) -> tuple[ModelLicence, ...]:
        """The licence of every model the settings name, in role order, without fetching any:
        a manifest model's is the manifest's; a user's own file's is the use `stated` (role ->
        use) gives it (models.licences)."""
        licences = []
        for role in ROLES:
            option = getattr(self.settings, role)
            if option is None:
                continue
            entry = None if looks_like_model_path(option) else self.manifest.models.get(option)
            if entry is not None:
                licences.append(ModelLicence(role, entry.name, entry.sha256, entry.licence,
                                             entry.use))
            else:
                licences.append(ModelLicence(role, self.locate(role).label, self.sha256(role),
                                             STATED, stated.get(role)))
        return tuple(licences)

    def engine_build(self, path: Path) -> EngineBuild | None:
        """The TensorRT plan of the model file at `path` when `facefuse models prepare` has
        prepared it for this GPU and TensorRT (its precision as decided then), else None."""
        if self._gpu is None:
            self._gpu = GpuFacts.of_machine()
        digest = self._hashes.sha256(path)
        self._hashes.flush()
        store = PrecisionStore(self.models_dir / ENGINES_FOLDER)
        declared = store.declared(digest, self._gpu.gpu, self._gpu.tensorrt)
        if declared is None:
            return None
        fp16 = store.get(digest, self._gpu.gpu, self._gpu.tensorrt).fp16 is True
        return engine_build(self.models_dir, digest, declared, self._gpu, fp16,
                            self.settings.detector_size_px)

    def close(self) -> None:
        """Free every session; models are loaded again on next use."""
        self._loaded.clear()
        self.sessions.close()
