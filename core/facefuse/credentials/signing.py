"""A signing key (a certificate chain and its private key, PEM files), loaded once and checked
before anything is signed.

`load_signer` reads both files once, picks the algorithm from the key (EC P-256 es256, P-384
es384, P-521 es512, Ed25519 ed25519, RSA ps256), puts the certificate that matches the key first
in the chain, and signs a few bytes as a probe, so that a certificate the SDK refuses (self-signed,
no digitalSignature key usage, no suitable extended key usage) is refused at the start of a
render, not at its end. Each mistake is one sentence (InputError) naming the file and the fix.
"""

from __future__ import annotations

import io
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from types import TracebackType
from typing import Any, Self

from ..errors import InputError
from ..io.small_files import read_bytes
from .record import DIGITAL_SOURCE_TYPE
from .sdk import load_sdk, sdk_reason, signing_context

GUIDE = "docs/credentials.md"


@dataclass(frozen=True, slots=True)
class SigningKey:
    """Where a signer's certificate chain (PEM, the signer's certificate and the CAs above it)
    and private key (PEM, unencrypted) are; `timestamp_url`: an RFC 3161 timestamp authority
    whose time is then written into each signature."""

    cert: Path
    key: Path
    timestamp_url: str | None = None


class LoadedSigner:
    """A SigningKey loaded and checked (`load_signer`): reusable for any number of files;
    `close()` (or a with block) frees the SDK's signer."""

    def __init__(self, key: SigningKey, algorithm: str, common_name: str, organisation: str,
                 not_after: datetime, sdk_signer: Any) -> None:
        self.key = key
        self.algorithm = algorithm
        self.common_name = common_name
        self.organisation = organisation
        self.not_after = not_after
        self._signer = sdk_signer
        self._context = signing_context()

    def sign(self, definition: dict[str, Any], media_type: str, source: Any, dest: Any,
             embed: bool = True) -> bytes:
        """Sign `source` (a binary stream) as `media_type` with the manifest `definition`:
        embedded, the signed file is written to `dest` (a stream opened for reading and
        writing); not embedded, the manifest store is returned (bound to `source` by a data
        hash over the whole stream) and `dest` receives nothing. Raises the SDK's C2paError."""
        builder = load_sdk().Builder(definition, self._context)
        if not embed:
            builder.set_no_embed()
        with builder:
            return bytes(builder.sign(self._signer, media_type, source, dest))

    def close(self) -> None:
        self._signer.close()
        self._context.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, kind: type[BaseException] | None, value: BaseException | None,
                 traceback: TracebackType | None) -> None:
        self.close()


def load_signer(key: SigningKey) -> LoadedSigner:
    """Read and check `key` (see the module docstring); InputError for a file that is missing,
    not PEM, encrypted, of another key type, a key that does not match the certificate, a
    certificate expired or not yet valid or refused by the SDK, or the SDK not installed."""
    sdk = load_sdk()
    certificates = _certificates(key.cert)
    private_key = _private_key(key.key)
    algorithm = _algorithm(private_key, key.key)
    chain = _chain(certificates, private_key, key)
    leaf = chain[0]
    _check_validity(leaf, key.cert)
    chain_pem, key_pem = _sdk_pem(chain, private_key)
    try:
        sdk_signer = sdk.Signer.from_info(sdk.C2paSignerInfo(
            algorithm.encode(), chain_pem, key_pem, key.timestamp_url))
    except sdk.C2paError as exc:
        raise _refused(key, exc) from None
    signer = LoadedSigner(key, algorithm, _name_part(leaf, "COMMON_NAME"),
                          _name_part(leaf, "ORGANIZATION_NAME"), leaf.not_valid_after_utc,
                          sdk_signer)
    _probe(signer)
    return signer


def _read(path: Path, label: str, remedy: str) -> bytes:
    try:
        return read_bytes(path, label)
    except InputError as exc:
        raise InputError(f"{exc}; {remedy}") from None


def _certificates(path: Path) -> list[Any]:
    from cryptography import x509

    remedy = f"give the signer's certificate chain as a PEM file (see {GUIDE})"
    data = _read(path, f"the signing certificate {path}", remedy)
    try:
        return list(x509.load_pem_x509_certificates(data))
    except ValueError:
        raise InputError(f"the signing certificate {path} is not a PEM certificate (text that "
                         "starts with -----BEGIN CERTIFICATE-----); convert it with `openssl "
                         f"x509 -in {path} -out cert.pem` (add -inform der for a DER "
                         "file)") from None


def _private_key(path: Path) -> Any:
    from cryptography.exceptions import UnsupportedAlgorithm
    from cryptography.hazmat.primitives import serialization

    data = _read(path, f"the signing key {path}",
                 f"give the signer's private key as a PEM file (see {GUIDE})")
    try:
        return serialization.load_pem_private_key(data, password=None)
    except TypeError:  # a password protects it
        raise InputError(f"the signing key {path} is encrypted; give it unencrypted: `openssl "
                         f"pkey -in {path} -out key.pem`, kept readable by you only") from None
    except ValueError:
        raise InputError(f"the signing key {path} is not a PEM private key (text that starts "
                         f"with -----BEGIN PRIVATE KEY-----); see {GUIDE}") from None
    except UnsupportedAlgorithm as exc:
        raise InputError(f"the signing key {path} cannot be used ({exc}); use an EC P-256, "
                         "P-384, Ed25519 or RSA key") from None


def _algorithm(private_key: Any, path: Path) -> str:
    from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa

    if isinstance(private_key, ec.EllipticCurvePrivateKey):
        curves = {"secp256r1": "es256", "secp384r1": "es384", "secp521r1": "es512"}
        if private_key.curve.name in curves:
            return curves[private_key.curve.name]
    elif isinstance(private_key, ed25519.Ed25519PrivateKey):
        return "ed25519"
    elif isinstance(private_key, rsa.RSAPrivateKey):
        return "ps256"
    kind = getattr(getattr(private_key, "curve", None), "name", type(private_key).__name__)
    raise InputError(f"the signing key {path} is a {kind} key, which C2PA does not sign with; "
                     "make an EC P-256, P-384, Ed25519 or RSA key")


def _chain(certificates: list[Any], private_key: Any, key: SigningKey) -> list[Any]:
    """The certificates with the one that matches the private key first (leaf, then CAs)."""
    from cryptography.hazmat.primitives import serialization

    def public(item: Any) -> bytes:
        return bytes(item.public_key().public_bytes(
            serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo))

    mine = public(private_key)
    leaf = next((c for c in certificates if public(c) == mine), None)
    if leaf is None:
        raise InputError(f"the signing key {key.key} does not match the certificate "
                         f"{key.cert}; give the key the certificate was issued for")
    return [leaf, *(c for c in certificates if c is not leaf)]


def _sdk_pem(chain: list[Any], private_key: Any) -> tuple[bytes, bytes]:
    """The chain (leaf first) and the key as the SDK takes them: PEM, the key as PKCS#8 (so a
    key written as `openssl ecparam -genkey` writes it, SEC1, is taken too)."""
    from cryptography.hazmat.primitives import serialization

    chain_pem = b"".join(c.public_bytes(serialization.Encoding.PEM) for c in chain)
    key_pem = private_key.private_bytes(serialization.Encoding.PEM,
                                        serialization.PrivateFormat.PKCS8,
                                        serialization.NoEncryption())
    return chain_pem, key_pem


def _check_validity(leaf: Any, path: Path) -> None:
    now = datetime.now(UTC)
    if leaf.not_valid_after_utc < now:
        raise InputError(f"the signing certificate {path} expired on "
                         f"{leaf.not_valid_after_utc:%Y-%m-%d}; have your CA issue a new one")
    if leaf.not_valid_before_utc > now:
        raise InputError(f"the signing certificate {path} is not valid before "
                         f"{leaf.not_valid_before_utc:%Y-%m-%d %H:%M} UTC; check this "
                         "machine's clock or wait")


def _name_part(certificate: Any, attribute: str) -> str:
    from cryptography.x509.oid import NameOID

    values = certificate.subject.get_attributes_for_oid(getattr(NameOID, attribute))
    return str(values[0].value) if values else ""


def _probe(signer: LoadedSigner) -> None:
    """Sign a few bytes, not embedded, so that the SDK judges the certificate now."""
    definition = {"claim_generator_info": [{"name": "facefuse"}], "title": "probe",
                  "assertions": [{"label": "c2pa.actions", "data": {"actions": [
                      {"action": "c2pa.created", "digitalSourceType": DIGITAL_SOURCE_TYPE}]}}]}
    try:
        signer.sign(definition, "application/octet-stream", io.BytesIO(b"facefuse"),
                    io.BytesIO(), embed=False)
    except load_sdk().C2paError as exc:
        signer.close()
        raise _refused(signer.key, exc) from None


def _refused(key: SigningKey, exc: BaseException) -> InputError:
    where = f" or the timestamp authority {key.timestamp_url}" if key.timestamp_url else ""
    return InputError(
        f"the C2PA SDK refuses to sign with the certificate {key.cert}{where} "
        f"({sdk_reason(exc)}); a signer certificate must be issued by a CA, not self-signed, "
        "with the digitalSignature key usage and an extended key usage such as "
        f"emailProtection (see {GUIDE})")
