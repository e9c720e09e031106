"""What a render answers for, checked before anything is written: the licences of its models
(refused by the request's use: models.licences), the key its outputs are signed with
(shot.output.signing) and who it swaps under which consent record (shot.plan.consent). The
sentences it keeps go into RenderSummary.answers."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from ...credentials.signing import LoadedSigner
from ...models.licences import ModelLicence, check_licences, licence_line, stated_uses
from ...models.manifest import ROLES
from ...pipeline import Pipeline
from ..contract.request import RenderRequest
from ..output.prints import RenderPrints
from ..output.signing import (
    CONSENT_KEY,
    SIGNED_NOTE,
    UNSIGNED_NOTE,
    OutputSigner,
    consent_metadata,
    load_key,
    render_credential,
)
from ..plan.consent import Consented, check_consent, consent_of, render_scope, source_names
from ..plan.plan import ShotPlan


class RenderAnswers:
    """One render's licences, signing key and consent, and the sentences saying so."""

    def __init__(self, request: RenderRequest) -> None:
        self.request = request
        self.licences: tuple[ModelLicence, ...] = ()
        self.consented: tuple[Consented, ...] = ()  # who is swapped under which record
        self.told: tuple[str, ...] = ()  # the licences, whether the outputs are signed

    @property
    def plans_first(self) -> bool:
        """Whether the render must plan the whole shot before writing: consent is decided
        on who the plan swaps."""
        policy = self.request.policy
        return bool(policy.consent) or policy.require_consent

    def check_licences(self, pipeline: Pipeline) -> None:
        """The licences of the render's models (none is fetched for this), told once;
        InputError when the request's use refuses one."""
        policy = self.request.policy
        self.licences = pipeline.models.licences(stated_uses(policy.model_licences, ROLES))
        check_licences(self.licences, policy.use)
        self.told += (licence_line(self.licences),)

    def signing_key(self) -> LoadedSigner | None:
        """The loaded signing key (read before any work: a bad one is one sentence), or None
        when the outputs are not signed; either is told once."""
        key = load_key(self.request.signing)
        self.told += (SIGNED_NOTE if key is not None else UNSIGNED_NOTE,)
        return key

    def check_consent(self, plan: ShotPlan, pipeline: Pipeline, rendered: Sequence[int],
                      metadata: Mapping[str, str]) -> Mapping[str, str]:
        """Who `plan` swaps in `rendered` under which consent record (InputError under
        require_consent for someone no record covers); the metadata, saying so."""
        if not self.plans_first:
            return metadata
        self.consented = consent_of(plan, self.request, pipeline, rendered,
                                    render_scope(self.request))
        if self.request.policy.require_consent:
            check_consent(self.consented, source_names(plan, self.request))
        return {**metadata, CONSENT_KEY: consent_metadata(self.consented)}

    def signer(self, prints: RenderPrints, input_label: str, key: LoadedSigner) -> OutputSigner:
        """What signs each output file with this render's credential."""
        credential = render_credential(self.request, prints, input_label, self.licences,
                                       self.consented)
        return OutputSigner(credential, key)

    @property
    def sentences(self) -> tuple[str, ...]:
        """What the summary tells: the licences, signed or not, and who was swapped under
        which record ('consent: p1 (Jane Doe, jane.consent.json)') when records were given."""
        if not self.consented:
            return self.told
        return (*self.told, "consent: " + "; ".join(
            f"{item.person_id} ({item.record.performer}, {item.record.path.name})"
            if item.record is not None else f"{item.person_id} none ({item.problem})"
            for item in self.consented))
