"""The C2PA SDK (c2pa-python, the sign extra), loaded when credentials are made or checked, so
that `import facefuse.credentials` works without it.

Settings the SDK is given (c2pa-rs settings, as JSON): ``builder.thumbnail.enabled`` false (the
signed file is its own picture: a claim thumbnail would cost a decode and a JPEG per frame) and,
to check against a trust list, ``trust.trust_anchors`` (the PEM text of the CA certificates).
"""

from __future__ import annotations

from types import ModuleType
from typing import Any

from ..errors import InputError

INSTALL_HINT = "content credentials need the sign extra: pip install -e '.[sign]'"


def load_sdk() -> ModuleType:
    """The c2pa module; InputError with the install command when the sign extra is missing."""
    try:
        import c2pa
    except ImportError:
        raise InputError(INSTALL_HINT) from None
    return c2pa


def signing_context() -> Any:
    """An SDK Context for builders: no claim thumbnail (see the module docstring)."""
    return load_sdk().Context.from_dict({"builder": {"thumbnail": {"enabled": False}}})


def reading_context(trust_anchors: str | None) -> Any:
    """An SDK Context for readers: the default trust settings, or `trust_anchors` (PEM text of
    CA certificates) as the trust list."""
    sdk = load_sdk()
    if trust_anchors is None:
        return sdk.Context()
    return sdk.Context.from_dict({"trust": {"trust_anchors": trust_anchors}})


def sdk_reason(exc: BaseException) -> str:
    """An SDK error's own words, without its class prefix ("Signature: the certificate is
    invalid" -> "the certificate is invalid"); the class alone when it says nothing more
    ("AssertionNotFound")."""
    text = str(exc).strip()
    head, colon, rest = text.partition(":")
    if colon and " " not in head:
        return rest.strip() or head
    return text or type(exc).__name__.lstrip("_").removeprefix("C2pa")
