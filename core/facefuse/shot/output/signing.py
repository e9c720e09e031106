"""What a render's outputs answer for: the licences of its models, the consent it swapped under
and, when a signing key is configured, the content credentials (C2PA) each output file carries.

`render_credential` is the record a render's files are signed with (facefuse.credentials): the
plate and the source photos as ingredients by hash, the models with their licences, the consent
records, facefuse's version and the render's fingerprint. `OutputSigner` signs each file as the
writers put it in place (an image of a sequence as soon as it is written, so a farm chunk signs
what it writes; a video once it is complete) and tells a resumed render whether a finished
frame is signed already.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

from ...cache.hashes import sha256_file
from ...credentials.checking import check_file
from ...credentials.embedding import sign_file
from ...credentials.record import ConsentReference, Credential, Ingredient, ModelRecord
from ...credentials.signing import LoadedSigner, SigningKey, load_signer
from ...models.licences import ModelLicence
from ...types import SourceIdentity
from ...version import __version__
from ..contract.request import RenderRequest, SigningChoices
from ..plan.consent import Consented
from ..plan.plan import DEFAULT_SOURCE
from .prints import RenderPrints
from .provenance import PREFIX, file_name

CONSENT_KEY = f"{PREFIX}consent"
SIGNED_NOTE = "the outputs are signed with content credentials (`facefuse credentials FILE`)"
UNSIGNED_NOTE = ("the outputs carry no content credentials: no signing key is configured "
                 "(--sign-cert and --sign-key; see docs/credentials.md)")


def consent_metadata(consented: Sequence[Consented]) -> str:
    """The output metadata saying who was swapped to which source under which record (JSON)."""
    return json.dumps([{"person": item.person_id, "source": file_name(item.source),
                        "performer": item.record.performer if item.record else None,
                        "record_sha256": item.record.sha256 if item.record else None}
                       for item in consented], sort_keys=True)


def render_credential(request: RenderRequest, prints: RenderPrints, input_label: str,
                      licences: Sequence[ModelLicence],
                      consented: Sequence[Consented]) -> Credential:
    """The content credential of every file a render of `request` writes."""
    ingredients = [Ingredient(file_name(input_label), prints.content_sha256, "parentOf")]
    for key, identity in sorted(prints.identities.items()):
        names = ([file_name(str(p)) for p in request.sources] if key == DEFAULT_SOURCE
                 else [file_name(key)])
        for index, sha256 in enumerate(identity.source_sha256):
            title = names[index] if index < len(names) else f"source photo {index + 1}"
            ingredients.append(Ingredient(title, sha256, "inputTo"))
    models = tuple(ModelRecord(item.role, item.model, item.sha256, item.licence)
                   for item in licences)
    consent = tuple(ConsentReference(item.person_id, item.record.performer, item.record.sha256,
                                     item.record.document_sha256)
                    for item in consented if item.record is not None)
    return Credential(title=file_name(request.output.path), version=__version__,
                      ingredients=tuple(ingredients), models=models, consent=consent,
                      fingerprint=prints.whole, use=request.policy.use)


def still_credential(target: Path, sources: Sequence[Path], identity: SourceIdentity,
                     output: Path, licences: Sequence[ModelLicence], use: str) -> Credential:
    """The content credential of `facefuse swap`'s still: the target picture (its parent), the
    source photos, the models with their licences; the identity's digest as its fingerprint."""
    ingredients = [Ingredient(target.name, sha256_file(target), "parentOf")]
    ingredients += [Ingredient(Path(source).name, sha256, "inputTo")
                    for source, sha256 in zip(sources, identity.source_sha256, strict=False)]
    models = tuple(ModelRecord(item.role, item.model, item.sha256, item.licence)
                   for item in licences)
    return Credential(title=output.name, version=__version__, ingredients=tuple(ingredients),
                      models=models, consent=(), fingerprint=identity.digest, use=use)


class OutputSigner:
    """Signs output files with one render's credential (load the key once: `for_request`)."""

    def __init__(self, credential: Credential, signer: LoadedSigner) -> None:
        self.credential, self.signer = credential, signer

    def sign(self, path: Path) -> None:
        """Sign the file at `path` (embedded, or a sidecar beside it)."""
        sign_file(path, self.credential, self.signer)

    def signed(self, path: Path) -> bool:
        """Whether the file at `path` carries credentials that verify (a resumed render signs
        a finished frame that lacks them again)."""
        return check_file(path).fine


def load_key(signing: SigningChoices) -> LoadedSigner | None:
    """The loaded key of `signing` (InputError, one sentence, for one that will not sign: read
    before anything is rendered), or None when the outputs are not signed."""
    if signing.cert is None or signing.key is None:
        return None
    return load_signer(SigningKey(signing.cert, signing.key, signing.timestamp_url))
