"""A certificate chain of the tests' own for content credentials: a CA and an ES256 signer
under it (cryptography), which the C2PA SDK accepts and reports as untrusted unless the CA is
given as a trust anchor."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from facefuse.credentials import SigningKey


@dataclass(frozen=True)
class Chain:
    cert: Path  # the signer's certificate, then the CA's
    key: Path
    ca: Path
    ca_key: Any

    @property
    def signing_key(self) -> SigningKey:
        return SigningKey(self.cert, self.key)


def subject(common_name: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name),
                      x509.NameAttribute(NameOID.ORGANIZATION_NAME, "Test Studio")])


def usage(signer: bool) -> x509.KeyUsage:
    return x509.KeyUsage(digital_signature=True, key_cert_sign=not signer, crl_sign=not signer,
                         content_commitment=False, key_encipherment=False,
                         data_encipherment=False, key_agreement=False, encipher_only=False,
                         decipher_only=False)


def pem(*items: Any) -> bytes:
    return b"".join(item.public_bytes(serialization.Encoding.PEM) for item in items)


def key_pem(key: Any) -> bytes:
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption())


def make_ca(folder: Path) -> tuple[x509.Certificate, Any]:
    now = dt.datetime.now(dt.UTC)
    key = ec.generate_private_key(ec.SECP256R1())
    cert = (x509.CertificateBuilder().subject_name(subject("Test CA"))
            .issuer_name(subject("Test CA"))
            .public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - dt.timedelta(days=1))
            .not_valid_after(now + dt.timedelta(days=365))
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .add_extension(usage(signer=False), critical=True)
            .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()),
                           critical=False)
            .sign(key, hashes.SHA256()))
    (folder / "ca.pem").write_bytes(pem(cert))
    return cert, key


def signer_cert(key: Any, issuer: x509.Certificate | None, issuer_key: Any,
                 valid_days: tuple[int, int] = (-1, 30)) -> x509.Certificate:
    """A signer certificate for `key`, issued by `issuer` (None: self-signed)."""
    now = dt.datetime.now(dt.UTC)
    builder = (x509.CertificateBuilder().subject_name(subject("Test Signer"))
               .issuer_name(issuer.subject if issuer else subject("Test Signer"))
               .public_key(key.public_key()).serial_number(x509.random_serial_number())
               .not_valid_before(now + dt.timedelta(days=valid_days[0]))
               .not_valid_after(now + dt.timedelta(days=valid_days[1]))
               .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
               .add_extension(usage(signer=True), critical=True)
               .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.EMAIL_PROTECTION]),
                              critical=False))
    if issuer is not None:
        builder = builder.add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(issuer_key.public_key()),
            critical=False)
    algorithm = None if isinstance(key, ed25519.Ed25519PrivateKey) and issuer is None \
        else hashes.SHA256()
    return builder.sign(issuer_key if issuer is not None else key, algorithm)


def write_signer(folder: Path, name: str, key: Any, cert: x509.Certificate,
                  *chain: x509.Certificate) -> SigningKey:
    (folder / f"{name}.pem").write_bytes(pem(cert, *chain))
    (folder / f"{name}.key").write_bytes(key_pem(key))
    return SigningKey(folder / f"{name}.pem", folder / f"{name}.key")


def make_chain(folder: Path) -> Chain:
    """A test CA (ca.pem) and an ES256 signer under it (signer.pem: signer then CA) in
    `folder`."""
    ca, ca_key = make_ca(folder)
    key = ec.generate_private_key(ec.SECP256R1())
    made = write_signer(folder, "signer", key, signer_cert(key, ca, ca_key), ca)
    return Chain(made.cert, made.key, folder / "ca.pem", ca_key)
