"""Checking a file's content credentials: who signed it, what made it, whether it changed.

A file's state is one of STATES, best first:
- "trusted": signature and hashes verify, and the signer chains to a CA of the trust list given;
- "valid": signature and hashes verify; the signer is not in the trust list (the normal state
  for a studio's own chain checked without one);
- "missing": no manifest embedded and no sidecar (``NAME.EXT.c2pa``) beside the file;
- "tampered": a manifest is there but does not verify: the file changed after it was signed
  (a hash mismatch) or the signature is bad; or the SDK cannot read the file or its manifest
  (a damaged file: whether it was signed cannot be told, so it takes the worst state).

The manifest embedded in the file is read first; a file without one is read with its sidecar.
Signing time: the timestamp authority's time when the signature has one, else the time
facefuse wrote on its action (the signing machine's clock).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from types import MappingProxyType
from typing import Any

from ..errors import InputError
from ..io.files import check_regular_file
from ..io.small_files import read_bytes
from .formats import EMBEDDABLE, OCTET_STREAM, embeds, sidecar_path
from .record import (
    FACEFUSE_LABEL,
    SOFTWARE,
    Credential,
    credential_from_assertion,
    render_assertion,
)
from .sdk import load_sdk, reading_context, sdk_reason

TRUSTED, VALID, MISSING, TAMPERED = "trusted", "valid", "missing", "tampered"
STATES = (TRUSTED, VALID, MISSING, TAMPERED)  # best to worst
FINE = frozenset({TRUSTED, VALID})
UNTRUSTED = "signingCredential.untrusted"
UNREADABLE = "facefuse.unreadable"  # facefuse's code: the SDK could not read the file
_CHANGED = "the file changed after it was signed"
_REASONS = MappingProxyType({  # failure code -> what it means, in a summary
    "assertion.dataHash.mismatch": _CHANGED,
    "assertion.bmffHash.mismatch": _CHANGED,
    "assertion.boxesHash.mismatch": _CHANGED,
    "assertion.collectionHash.mismatch": _CHANGED,
    "assertion.hashedURI.mismatch": "the manifest was altered after it was signed",
    "claimSignature.mismatch": "the signature does not match the manifest",
})
_LABEL_TAIL = re.compile(r"(\.v\d+)?(__\d+)?$")  # c2pa.actions.v2, com.x__1: version, repeat


@dataclass(frozen=True, slots=True)
class Failure:
    """A validation failure the SDK reported: its C2PA code and explanation."""

    code: str
    explanation: str


@dataclass(frozen=True, slots=True)
class CredentialCheck:
    """What `check_file` found. `where`: "embedded", "sidecar" or "" (missing); `common_name`
    and `organisation`: the signer certificate's subject CN and O ("" when unknown);
    `signed_at`: timezone-aware, from a timestamp authority when `timestamped`, else the
    signer's clock; `credential`: facefuse's record read back, None for a manifest another tool
    made; `failures`: every failure the SDK reported (signingCredential.untrusted for a valid
    file); `trust`: the trust list checked against."""

    path: Path
    state: str
    where: str = ""
    common_name: str = ""
    organisation: str = ""
    signed_at: datetime | None = None
    timestamped: bool = False
    title: str = ""
    credential: Credential | None = None
    failures: tuple[Failure, ...] = ()
    trust: Path | None = None

    @property
    def fine(self) -> bool:
        """Whether the credentials verify (trusted or valid)."""
        return self.state in FINE

    @property
    def signer(self) -> str:
        """'CN (O)', 'CN' or 'an unnamed signer'."""
        name = self.common_name or self.organisation or "an unnamed signer"
        both = self.common_name and self.organisation
        return f"{name} ({self.organisation})" if both else name

    def reasons(self) -> list[str]:
        """Why the file is not fine, in words (no repeats); [] when it is fine."""
        if self.state == MISSING:
            sidecar = sidecar_path(self.path).name
            return [f"no content credentials, neither embedded nor in a sidecar {sidecar}"]
        if self.fine:
            return []
        words = [_REASONS.get(f.code) or f.explanation or f.code for f in self.failures
                 if f.code != UNTRUSTED]
        return list(dict.fromkeys(words)) or ["its manifest does not verify"]

    def summary(self) -> str:
        """One line: 'shot.mov: valid, signed by Test Signer (Test Studio) on 2026-12-07
        14:03 UTC, facefuse 0.1.0, 3 models, 1 consent record; signer not in a trust list
        (--trust CA.pem)'."""
        if self.state == MISSING or any(f.code == UNREADABLE for f in self.failures):
            return f"{self.path}: {self.state}: {'; '.join(self.reasons())}"
        where = f" (sidecar {sidecar_path(self.path).name})" if self.where == "sidecar" else ""
        tail = "; ".join(self.reasons()) if not self.fine else trust_words(self)
        return f"{self.path}: {self.state}{where}, {describe(self)}; {tail}"

    def to_json(self) -> dict[str, Any]:
        """The check as JSON-ready data."""
        return {
            "path": str(self.path), "state": self.state, "where": self.where or None,
            "signer": ({"common_name": self.common_name, "organisation": self.organisation}
                       if self.state != MISSING else None),
            "signed_at": self.signed_at.isoformat() if self.signed_at else None,
            "timestamped": self.timestamped, "title": self.title or None,
            "trust": str(self.trust) if self.trust else None,
            "failures": [{"code": f.code, "explanation": f.explanation} for f in self.failures],
            "reasons": self.reasons(),
            "facefuse": render_assertion(self.credential) if self.credential else None,
        }


def describe(check: CredentialCheck) -> str:
    """'signed by CN (O) on DATE, facefuse 0.1.0, 3 models, 1 consent record'."""
    when = (f" on {check.signed_at:%Y-%m-%d %H:%M} UTC" if check.signed_at else "")
    text = f"signed by {check.signer}{when}"
    record = check.credential
    if record is None:
        return f"{text}, not a facefuse render"
    return (f"{text}, facefuse {record.version}, {_count(len(record.models), 'model')}, "
            f"{_count(len(record.consent), 'consent record')}")


def _count(number: int, noun: str) -> str:
    return f"{number} {noun}" if number == 1 else f"{number} {noun}s"


def trust_words(check: CredentialCheck) -> str:
    """What the trust list says of a fine check's signer, in words."""
    if check.state == TRUSTED:
        return f"signer in the trust list {check.trust or 'of the C2PA SDK'}"
    if check.trust is not None:
        return f"signer not in the trust list {check.trust}"
    return "signer not in a trust list (--trust CA.pem)"


def check_file(path: Path, trust: Path | None = None) -> CredentialCheck:
    """Check the credentials of `path` (see the module docstring) against the CA certificates
    in `trust` (PEM), if given. InputError when `path` or `trust` cannot be read or the sign
    extra is not installed."""
    context = open_context(trust)
    try:
        return check_with(Path(path), context, trust)
    finally:
        context.close()


def open_context(trust: Path | None) -> Any:
    """The SDK context a check reads with: the trust list in `trust` (PEM CA certificates, read
    and checked here: InputError when it holds none), or the default settings."""
    load_sdk()
    if trust is None:
        return reading_context(None)
    from cryptography import x509

    data = read_bytes(trust, f"the trust list {trust}")
    try:
        x509.load_pem_x509_certificates(data)
    except ValueError:
        raise InputError(f"the trust list {trust} holds no PEM certificate; give your CA's "
                         "certificate (text that starts with -----BEGIN CERTIFICATE-----)"
                         ) from None
    return reading_context(data.decode("ascii", "replace"))


def check_with(path: Path, context: Any, trust: Path | None) -> CredentialCheck:
    """`check_file` with an open SDK context (open_context), for checking many files."""
    check_regular_file(path, "file")
    try:
        found = (_read_embedded(path, context) if embeds(path) else None) or \
            _read_sidecar(path, context)
    except OSError as exc:
        raise InputError(f"the file {path} cannot be read: {exc.strerror or exc}") from None
    if found is None:
        return CredentialCheck(path, MISSING, trust=trust)
    if found.error:
        failure = Failure(UNREADABLE, f"the C2PA SDK cannot read it ({found.error})")
        return CredentialCheck(path, TAMPERED, where=found.where, failures=(failure,),
                               trust=trust)
    return _from_store(path, found, trust)


@dataclass(frozen=True, slots=True)
class _Found:
    """A manifest store the SDK read: where, its validation state and JSON report, or the
    SDK's words when it could not read it."""

    where: str
    sdk_state: str | None = None
    store: dict[str, Any] | None = None
    error: str = ""


def _read_embedded(path: Path, context: Any) -> _Found | None:
    sdk = load_sdk()
    with open(path, "rb") as stream:
        try:
            reader = sdk.Reader.try_create(EMBEDDABLE[path.suffix.lower()], stream, None,
                                           context)
            if reader is None:
                return None
            with reader:
                return _Found("embedded", reader.get_validation_state(),
                              json.loads(reader.json()))
        except sdk.C2paError as exc:
            return _Found("embedded", error=sdk_reason(exc))


def _read_sidecar(path: Path, context: Any) -> _Found | None:
    sidecar = sidecar_path(path)
    if not sidecar.is_file():
        return None
    manifest = read_bytes(sidecar, f"the sidecar {sidecar}")
    sdk = load_sdk()
    with open(path, "rb") as stream:
        try:
            with sdk.Reader(OCTET_STREAM, stream, manifest, context) as reader:
                return _Found("sidecar", reader.get_validation_state(),
                              json.loads(reader.json()))
        except sdk.C2paError as exc:
            return _Found("sidecar", error=sdk_reason(exc))


def _from_store(path: Path, found: _Found, trust: Path | None) -> CredentialCheck:
    store = found.store or {}
    state = {"Trusted": TRUSTED, "Valid": VALID}.get(found.sdk_state or "", TAMPERED)
    active = store.get("manifests", {}).get(store.get("active_manifest"), {})
    signature = active.get("signature_info") or {}
    results = (store.get("validation_results") or {}).get("activeManifest") or {}
    failures = tuple(Failure(str(f.get("code", "")), str(f.get("explanation", "")))
                     for f in results.get("failure", ()))
    signed_at, timestamped = _signing_time(signature, active)
    return CredentialCheck(
        path, state, where=found.where, common_name=str(signature.get("common_name") or ""),
        organisation=str(signature.get("issuer") or ""), signed_at=signed_at,
        timestamped=timestamped, title=str(active.get("title") or ""),
        credential=_credential(active), failures=failures, trust=trust)


def _assertions(active: dict[str, Any], label: str) -> list[Any]:
    return [a.get("data") for a in active.get("assertions", ())
            if _LABEL_TAIL.sub("", str(a.get("label", ""))) == label]


def _credential(active: dict[str, Any]) -> Credential | None:
    for data in _assertions(active, FACEFUSE_LABEL):
        try:
            return credential_from_assertion(data)
        except (ValueError, TypeError):  # another schema, or not facefuse's record
            continue
    return None


def _signing_time(signature: dict[str, Any],
                  active: dict[str, Any]) -> tuple[datetime | None, bool]:
    if signature.get("time"):
        return _parse_time(signature["time"]), True
    for data in _assertions(active, "c2pa.actions"):
        actions = data.get("actions", ()) if isinstance(data, dict) else ()
        for action in actions:
            agent = action.get("softwareAgent") if isinstance(action, dict) else None
            if isinstance(agent, dict) and agent.get("name") == SOFTWARE and action.get("when"):
                return _parse_time(action["when"]), False
    return None, False


def _parse_time(text: Any) -> datetime | None:
    """An ISO 8601 time in UTC (a time without an offset is taken as UTC); None if not one."""
    try:
        when = datetime.fromisoformat(str(text))
    except ValueError:
        return None
    return when.replace(tzinfo=UTC) if when.tzinfo is None else \
        when.astimezone(UTC)
