"""The licence gate: which models a render may use for the work it is for.

Every manifest model says the widest use its licence allows (manifest `use`: "commercial" or
"research"). A render runs under a use (`--use`, default "research"): under "commercial" every
model whose licence allows research only is refused, naming the model and its licence. A user's
own model file has no manifest entry: its use is what the user states (`--model-licence
ROLE=USE`); unstated, it counts as research only, so a commercial render refuses it too.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from ..errors import InputError
from .manifest import USES

STATED = "stated by the user"


@dataclass(frozen=True, slots=True)
class ModelLicence:
    """The licence one model of a render carries: its `role`, `model` (manifest name or file
    name), `sha256`, `licence` (the manifest's words, or STATED) and `use` (the widest use
    allowed; None for a user's own file whose use nobody stated)."""

    role: str
    model: str
    sha256: str
    licence: str
    use: str | None

    def allows(self, use: str) -> bool:
        """Whether this model may be used for `use` work (an unstated use is research)."""
        return USES.index(self.use or "research") >= USES.index(use)

    def describe(self) -> str:
        """'swapper hyperswap_1a_256 (ResearchRAIL-MS: research only)'."""
        licence = self.licence if self.use is not None else "licence not stated"
        return f"{self.role} {self.model} ({licence})"


def parse_use(text: str) -> str:
    """A use as written ("commercial" or "research"); InputError for another."""
    if text not in USES:
        raise InputError(f"use {text!r} is not one of {', '.join(USES)}")
    return text


def stated_uses(pairs: Iterable[tuple[str, str]], roles: Sequence[str]
                ) -> Mapping[str, str]:
    """role -> use from (role, use) pairs (`--model-licence ROLE=USE`); InputError for an
    unknown role or use."""
    stated = {}
    for role, use in pairs:
        if role not in roles:
            raise InputError(f"--model-licence {role}={use}: {role} is not a model role; use "
                             f"one of {', '.join(roles)}")
        stated[role] = parse_use(use)
    return stated


def refused(licences: Iterable[ModelLicence], use: str) -> tuple[ModelLicence, ...]:
    """The models of `licences` a render for `use` work may not use."""
    return tuple(licence for licence in licences if not licence.allows(use))


def check_licences(licences: Sequence[ModelLicence], use: str) -> None:
    """InputError naming every model a render for `use` work may not use, and what to do."""
    bad = refused(licences, use)
    if not bad:
        return
    names = "; ".join(licence.describe() for licence in bad)
    own = [licence.role for licence in bad if licence.use is None]
    remedy = (f"state a model file's licence with --model-licence {own[0]}=commercial if it "
              "allows commercial use, or " if own else "")
    raise InputError(f"--use {use} refuses {names}: {remedy}choose models whose licence allows "
                     f"{use} use (`facefuse models list --use {use}`)")


def licence_line(licences: Sequence[ModelLicence]) -> str:
    """'licences: detector yunet_2023mar (MIT (OpenCV Zoo)); swapper ...': once per render."""
    return "licences: " + "; ".join(licence.describe() for licence in licences)
