"""Content credentials (C2PA) on facefuse's outputs: what a render hands in to be signed, the
signing key, signing a file (embedded, or a sidecar beside it), and checking a file or the
frames of a sequence.

The C2PA SDK (c2pa-python, the sign extra) is imported where it is used, so this package loads
without it; a function that needs it says how to install it (InputError). The why of the
choices (per-frame sidecars, re-signing replaces, no claim thumbnail) is in
docs/credentials.md and the module docstrings.
"""

from .checking import STATES, CredentialCheck, Failure, check_file
from .embedding import sign_file
from .formats import EMBEDDABLE, media_type, sidecar_path
from .record import (
    ConsentReference,
    Credential,
    Ingredient,
    ModelRecord,
    credential_from_assertion,
    manifest_definition,
)
from .sequence_check import SequenceCheck, check_sequence
from .signing import LoadedSigner, SigningKey, load_signer

__all__ = [
    "EMBEDDABLE", "STATES", "ConsentReference", "Credential", "CredentialCheck", "Failure",
    "Ingredient", "LoadedSigner", "ModelRecord", "SequenceCheck", "SigningKey", "check_file",
    "check_sequence", "credential_from_assertion", "load_signer", "manifest_definition",
    "media_type", "sidecar_path", "sign_file",
]
