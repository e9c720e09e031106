"""Content credentials with the real C2PA SDK: each output kind signed and checked (embedded in
PNG, JPEG, 16-bit TIFF, MP4, MOV; a sidecar beside EXR, DPX, MKV), one flipped byte of picture
data read as tampered, a file never signed as missing, a trust list making a signer trusted,
re-signing, a sequence signed by two processes checked as one, the signing key's mistakes as
one sentence each, and the `facefuse credentials` command's output and exit codes.

The certificate chain (a CA and an ES256 signer under it) is made here with `cryptography`,
once per session."""

from __future__ import annotations

import datetime as dt
import json
import os
import subprocess
import sys
from collections.abc import Callable
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest

c2pa = pytest.importorskip("c2pa")

import av
import cv2
import numpy as np
import OpenImageIO as oiio
from cryptography import x509
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa

from facefuse.cli.main import main
from facefuse.credentials import (
    ConsentReference,
    Credential,
    Ingredient,
    LoadedSigner,
    ModelRecord,
    SigningKey,
    check_file,
    check_sequence,
    load_signer,
    sidecar_path,
    sign_file,
)
from facefuse.errors import ExitCode, InputError, OutputError
from tests.media_factory import write_h264_clip
from tests.signing_chain import (
    Chain,
    key_pem,
    make_ca,
    make_chain,
    signer_cert,
    write_signer,
)

SIZE = 64
CREDENTIAL = Credential(
    title="shot 010", version="0.1.0",
    ingredients=(Ingredient("plate.mov", "a" * 64, "parentOf"),
                 Ingredient("jane.jpg", "b" * 64, "inputTo")),
    models=(ModelRecord("detector", "yunet_2023mar", "c" * 64, "MIT"),
            ModelRecord("recogniser", "arcface_w600k_r50", "d" * 64, "non-commercial"),
            ModelRecord("swapper", "inswapper_128", "e" * 64, "non-commercial")),
    consent=(ConsentReference("p1", "Jane Doe", "1" * 64, "2" * 64),),
    fingerprint="0123456789abcdef", use="research")


@pytest.fixture(scope="session")
def chain(tmp_path_factory: pytest.TempPathFactory) -> Chain:
    """A test CA (ca.pem) and an ES256 signer under it (signer.pem: signer then CA)."""
    return make_chain(tmp_path_factory.mktemp("chain"))


@pytest.fixture(scope="session")
def signer(chain: Chain) -> LoadedSigner:
    return load_signer(chain.signing_key)


# --- the outputs ------------------------------------------------------------------------------

def _pixels(seed: int, dtype: Any = np.uint8) -> np.ndarray:
    top = np.iinfo(dtype).max
    return np.random.default_rng(seed).integers(0, top, (SIZE, SIZE, 3), dtype=dtype)


def _oiio(path: Path, pixel_type: str, **attributes: Any) -> None:
    spec = oiio.ImageSpec(SIZE, SIZE, 3, pixel_type)
    for name, value in attributes.items():
        spec.attribute(name, value)
    out = oiio.ImageOutput.create(str(path))
    assert out is not None and out.open(str(path), spec), oiio.geterror()
    assert out.write_image(np.random.default_rng(3).random((SIZE, SIZE, 3), np.float32))
    assert out.close()


def _ffv1(path: Path) -> None:
    with av.open(str(path), "w") as container:
        stream = container.add_stream("ffv1", rate=24)
        stream.width = stream.height = SIZE
        stream.pix_fmt = "yuv444p"
        for index in range(3):
            frame = av.VideoFrame.from_ndarray(_pixels(index), format="bgr24")
            container.mux(stream.encode(frame))
        container.mux(stream.encode(None))


WRITERS: dict[str, Callable[[Path], object]] = {
    ".png": lambda p: cv2.imwrite(str(p), _pixels(1)),
    ".jpg": lambda p: cv2.imwrite(str(p), _pixels(1)),
    ".tif": lambda p: cv2.imwrite(str(p), _pixels(1, np.uint16),
                                  [cv2.IMWRITE_TIFF_COMPRESSION, 1]),
    ".mp4": lambda p: write_h264_clip(p, [_pixels(i) for i in range(3)], Fraction(24)),
    ".mov": lambda p: write_h264_clip(p, [_pixels(i) for i in range(3)], Fraction(24)),
    ".exr": lambda p: _oiio(p, "half", compression="zip"),
    ".dpx": lambda p: _oiio(p, "uint16", **{"oiio:BitsPerSample": 10}),
    ".mkv": _ffv1,
}
EMBEDDED = (".png", ".jpg", ".tif", ".mp4", ".mov")
SIDECARS = (".exr", ".dpx", ".mkv")


def _output(folder: Path, suffix: str, name: str = "out") -> Path:
    path = folder / f"{name}{suffix}"
    WRITERS[suffix](path)
    assert path.is_file() and path.stat().st_size > 0
    return path


def _picture_offset(path: Path) -> int:
    """An offset inside the picture data of a signed file: in PNG's IDAT, after JPEG's start
    of scan, in an MP4/MOV's mdat; the middle of the other files (their pixels are most of
    them: the TIFF is uncompressed, and a sidecar's file is not changed by signing)."""
    data = path.read_bytes()
    suffix = path.suffix.lower()
    if suffix == ".png":
        return data.index(b"IDAT") + 8
    if suffix == ".jpg":
        return data.rindex(b"\xff\xda") + 20
    if suffix in (".mp4", ".mov"):
        return data.index(b"mdat") + 16
    return len(data) // 2


def _flip_picture_byte(path: Path) -> None:
    data = bytearray(path.read_bytes())
    data[_picture_offset(path)] ^= 0x10
    path.write_bytes(bytes(data))


def _manifests(path: Path) -> int:
    with c2pa.Reader(str(path)) as reader:
        return len(json.loads(reader.json())["manifests"])


# --- each output kind -----------------------------------------------------------------------

@pytest.mark.parametrize("suffix", EMBEDDED + SIDECARS)
def test_each_output_kind_is_signed_checked_and_caught_when_changed(
        suffix: str, tmp_path: Path, signer: LoadedSigner) -> None:
    path = _output(tmp_path, suffix)
    written = sign_file(path, CREDENTIAL, signer)
    assert written == (path if suffix in EMBEDDED else sidecar_path(path))
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted({path.name, written.name})
    check = check_file(path)
    assert (check.state, check.where) == (
        "valid", "embedded" if suffix in EMBEDDED else "sidecar"), check.summary()
    assert (check.common_name, check.organisation) == ("Test Signer", "Test Studio")
    assert check.credential == CREDENTIAL and check.title == path.name
    assert check.signed_at is not None and not check.timestamped
    assert abs(check.signed_at - dt.datetime.now(dt.UTC)) < dt.timedelta(minutes=5)
    assert [f.code for f in check.failures] == ["signingCredential.untrusted"]
    _flip_picture_byte(path)
    tampered = check_file(path)
    assert tampered.state == "tampered", tampered.summary()
    assert tampered.reasons() == ["the file changed after it was signed"]
    assert "Test Signer" in tampered.summary()


def test_an_embedded_output_still_decodes_after_signing(tmp_path: Path,
                                                        signer: LoadedSigner) -> None:
    still, movie = _output(tmp_path, ".tif"), _output(tmp_path, ".mov")
    before = cv2.imread(str(still), cv2.IMREAD_UNCHANGED)
    sign_file(still, CREDENTIAL, signer)
    sign_file(movie, CREDENTIAL, signer)
    assert np.array_equal(cv2.imread(str(still), cv2.IMREAD_UNCHANGED), before)
    assert before.dtype == np.uint16
    with av.open(str(movie)) as container:
        assert sum(1 for _ in container.decode(video=0)) == 3


def test_a_file_never_signed_is_missing(tmp_path: Path) -> None:
    for suffix in (".png", ".exr"):
        check = check_file(_output(tmp_path, suffix))
        assert check.state == "missing" and not check.fine
        assert check.summary() == (f"{tmp_path / f'out{suffix}'}: missing: no content "
                                   "credentials, neither embedded nor in a sidecar "
                                   f"out{suffix}.c2pa")


def test_a_file_the_sdk_cannot_read_takes_the_worst_state(tmp_path: Path,
                                                        signer: LoadedSigner) -> None:
    """A damaged file: whether it was signed cannot be told, so it does not pass."""
    junk, cut = tmp_path / "junk.png", _output(tmp_path, ".png")
    junk.write_bytes(b"not a picture")
    sign_file(cut, CREDENTIAL, signer)
    cut.write_bytes(cut.read_bytes()[:200])
    for path in (junk, cut):
        check = check_file(path)
        assert check.state == "tampered", check.summary()
        assert check.summary().startswith(f"{path}: tampered: the C2PA SDK cannot read it (")


def test_the_trust_list_makes_the_signer_trusted(tmp_path: Path, chain: Chain,
                                                 signer: LoadedSigner) -> None:
    embedded, beside = _output(tmp_path, ".png"), _output(tmp_path, ".exr")
    for path in (embedded, beside):
        sign_file(path, CREDENTIAL, signer)
        check = check_file(path, trust=chain.ca)
        assert check.state == "trusted" and check.failures == (), check.summary()
        assert check.summary().endswith(f"signer in the trust list {chain.ca}")
    other = tmp_path / "other-ca"
    other.mkdir()
    make_ca(other)
    assert check_file(embedded, trust=other / "ca.pem").state == "valid"


def test_re_signing_replaces_the_manifest(tmp_path: Path, signer: LoadedSigner) -> None:
    """A resumed render signs its output again: one manifest, the new one; the mode stays."""
    path, frame = _output(tmp_path, ".mp4"), _output(tmp_path, ".exr")
    path.chmod(0o640)
    sign_file(path, CREDENTIAL, signer)
    again = CREDENTIAL.__class__(**{**{f: getattr(CREDENTIAL, f) for f in (
        "title", "version", "ingredients", "models", "consent", "use")},
        "fingerprint": "fedcba9876543210"})
    for _ in range(2):
        sign_file(path, again, signer)
        sign_file(frame, again, signer)
    assert _manifests(path) == 1 and path.stat().st_mode & 0o777 == 0o640
    for signed in (path, frame):
        check = check_file(signed)
        assert check.state == "valid" and check.credential == again, check.summary()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.exr", "out.exr.c2pa", "out.mp4"]


def test_an_output_that_cannot_be_read_is_an_output_error(tmp_path: Path,
                                                          signer: LoadedSigner) -> None:
    for path in (tmp_path / "gone.png", tmp_path):
        with pytest.raises(OutputError) as refused:
            sign_file(path, CREDENTIAL, signer)
        assert str(path) in str(refused.value) and "\n" not in str(refused.value)
        assert refused.value.exit_code == ExitCode.OUTPUT


# --- sequences ------------------------------------------------------------------------------

CHUNK = """
import json, sys
from pathlib import Path
from facefuse.credentials import SigningKey, credential_from_assertion, load_signer, sign_file
credential = credential_from_assertion(json.loads(sys.argv[3]))
with load_signer(SigningKey(Path(sys.argv[1]), Path(sys.argv[2]))) as signer:
    for frame in sys.argv[4:]:
        sign_file(Path(frame), credential, signer)
"""


def test_a_sequence_signed_in_two_chunks_checks_as_one(tmp_path: Path, chain: Chain,
                                                       signer: LoadedSigner) -> None:
    from facefuse.credentials.record import render_assertion

    frames = [_output(tmp_path, ".exr", f"plate.{n}") for n in range(1001, 1007)]
    for frame in frames[:3]:  # chunk 1/2 here, chunk 2/2 in another process
        sign_file(frame, CREDENTIAL, signer)
    subprocess.run([sys.executable, "-c", CHUNK, str(chain.cert), str(chain.key),
                    json.dumps(render_assertion(CREDENTIAL)), *map(str, frames[3:])],
                   check=True, timeout=120, env={**os.environ, "PYTHONPATH": os.pathsep.join(
                       sys.path)})
    result = check_sequence(frames, label="plate.####.exr")
    assert result.fine and result.counts == {"valid": 6}
    assert result.summary().startswith("plate.####.exr: 6 frames valid, signed by Test Signer "
                                       "(Test Studio) on ")
    assert result.summary().endswith(", facefuse 0.1.0, 3 models, 1 consent record; "
                                     "signer not in a trust list (--trust CA.pem)")
    _flip_picture_byte(frames[2])
    sidecar_path(frames[4]).unlink()
    worse = check_sequence(frames, label="plate.####.exr")
    assert worse.state == "tampered" and not worse.fine
    assert worse.counts == {"valid": 4, "missing": 1, "tampered": 1}
    assert [f.path for f in worse.not_fine()] == [frames[2], frames[4]]
    assert "first not fine: plate.1003.exr tampered (the file changed after it was signed), " \
        "plate.1005.exr missing" in worse.summary()


# --- the signing key's mistakes ---------------------------------------------------------------

def _mistakes(folder: Path, chain: Chain) -> dict[str, tuple[SigningKey, str]]:
    """name -> (a key with that mistake, what its sentence says)."""
    ca = x509.load_pem_x509_certificate(chain.ca.read_bytes())
    other = ec.generate_private_key(ec.SECP256R1())
    (folder / "other.key").write_bytes(key_pem(other))
    (folder / "garbage.pem").write_text("not a certificate\n")
    (folder / "encrypted.key").write_bytes(
        ec.generate_private_key(ec.SECP256R1()).private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
            serialization.BestAvailableEncryption(b"secret")))
    expired = write_signer(folder, "expired", other,
                            signer_cert(other, ca, chain.ca_key, (-60, -1)), ca)
    selfsigned = write_signer(folder, "self", other, signer_cert(other, None, None))
    return {
        "the key of another certificate": (SigningKey(chain.cert, folder / "other.key"),
                                           "does not match the certificate"),
        "no certificate file": (SigningKey(folder / "none.pem", chain.key), "does not exist"),
        "a certificate that is not PEM": (SigningKey(folder / "garbage.pem", chain.key),
                                          "is not a PEM certificate"),
        "a key that is not PEM": (SigningKey(chain.cert, folder / "garbage.pem"),
                                  "is not a PEM private key"),
        "an encrypted key": (SigningKey(chain.cert, folder / "encrypted.key"), "is encrypted"),
        "an expired certificate": (expired, "expired on"),
        "a self-signed certificate": (selfsigned, "must be issued by a CA"),
    }


def test_each_signing_key_mistake_is_one_sentence_naming_the_file(tmp_path: Path,
                                                                  chain: Chain) -> None:
    for what, (key, words) in _mistakes(tmp_path, chain).items():
        with pytest.raises(InputError) as refused:
            load_signer(key)
        message = str(refused.value)
        assert words in message and "\n" not in message, (what, message)
        assert str(key.cert) in message or str(key.key) in message, (what, message)
        assert refused.value.exit_code == ExitCode.USAGE == 2


@pytest.mark.parametrize("make, algorithm", [
    (lambda: ec.generate_private_key(ec.SECP384R1()), "es384"),
    (ed25519.Ed25519PrivateKey.generate, "ed25519"),
    (lambda: rsa.generate_private_key(65537, 2048), "ps256"),
])
def test_the_algorithm_follows_the_key(make: Callable[[], Any], algorithm: str, tmp_path: Path,
                                       chain: Chain) -> None:
    ca = x509.load_pem_x509_certificate(chain.ca.read_bytes())
    key = make()
    # the CA listed first: the signer's certificate is put first when loaded
    made = write_signer(tmp_path, "signer", key, ca, signer_cert(key, ca, chain.ca_key))
    with load_signer(made) as loaded:
        assert loaded.algorithm == algorithm
        path = sign_file(_output(tmp_path, ".png"), CREDENTIAL, loaded)
    assert check_file(path, trust=chain.ca).state == "trusted"


def test_a_key_written_by_openssl_ecparam_is_taken(tmp_path: Path, chain: Chain) -> None:
    """`openssl ecparam -genkey` writes SEC1 (BEGIN EC PRIVATE KEY), the SDK takes PKCS#8."""
    key = serialization.load_pem_private_key(chain.key.read_bytes(), None)
    sec1 = tmp_path / "sec1.key"
    sec1.write_bytes(key.private_bytes(serialization.Encoding.PEM,
                                       serialization.PrivateFormat.TraditionalOpenSSL,
                                       serialization.NoEncryption()))
    assert sec1.read_bytes().startswith(b"-----BEGIN EC PRIVATE KEY-----")
    with load_signer(SigningKey(chain.cert, sec1)) as loaded:
        assert loaded.algorithm == "es256"
        assert (loaded.common_name, loaded.organisation) == ("Test Signer", "Test Studio")


# --- the command ------------------------------------------------------------------------------

def test_the_command_says_one_line_and_exits_0_or_7(
        tmp_path: Path, chain: Chain, signer: LoadedSigner,
        capsys: pytest.CaptureFixture[str]) -> None:
    movie = _output(tmp_path, ".mov", "shot")
    sign_file(movie, CREDENTIAL, signer)
    assert main(["credentials", str(movie)]) == ExitCode.OK
    line = capsys.readouterr().out
    assert line.startswith(f"{movie}: valid, signed by Test Signer (Test Studio) on ")
    assert line.endswith(" UTC, facefuse 0.1.0, 3 models, 1 consent record; "
                         "signer not in a trust list (--trust CA.pem)\n")
    assert main(["credentials", str(movie), "--trust", str(chain.ca)]) == ExitCode.OK
    assert ": trusted, " in capsys.readouterr().out
    _flip_picture_byte(movie)
    assert main(["credentials", str(movie)]) == ExitCode.CREDENTIALS == 7
    assert capsys.readouterr().out.startswith(f"{movie}: tampered, ")
    assert main(["credentials", str(_output(tmp_path, ".png"))]) == ExitCode.CREDENTIALS


def test_the_command_checks_a_sequence_pattern(tmp_path: Path, signer: LoadedSigner,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    for number in (1, 2, 3):
        sign_file(_output(tmp_path, ".exr", f"plate.{number:04d}"), CREDENTIAL, signer)
    for pattern in ("plate.####.exr", "plate.%04d.exr"):
        assert main(["credentials", str(tmp_path / pattern)]) == ExitCode.OK
        assert capsys.readouterr().out.startswith(f"{tmp_path / pattern}: 3 frames valid, ")
    assert main(["credentials", str(tmp_path / "plate.####.exr"), "--json"]) == ExitCode.OK
    data = json.loads(capsys.readouterr().out)
    assert (data["frames"], data["state"], data["counts"]) == (3, "valid", {"valid": 3})
    assert data["first_fine"]["facefuse"]["fingerprint"] == CREDENTIAL.fingerprint


def test_the_json_lists_the_models_and_consent_put_in(
        tmp_path: Path, signer: LoadedSigner, capsys: pytest.CaptureFixture[str]) -> None:
    path = _output(tmp_path, ".mkv")
    sign_file(path, CREDENTIAL, signer)
    assert main(["credentials", str(path), "--json"]) == ExitCode.OK
    out = capsys.readouterr().out
    assert out.count("\n") == 1
    data = json.loads(out)
    assert (data["state"], data["where"], data["path"]) == ("valid", "sidecar", str(path))
    assert data["signer"] == {"common_name": "Test Signer", "organisation": "Test Studio"}
    facefuse = data["facefuse"]
    assert [m["name"] for m in facefuse["models"]] == [
        "yunet_2023mar", "arcface_w600k_r50", "inswapper_128"]
    assert facefuse["models"][2] == {"role": "swapper", "name": "inswapper_128",
                                     "sha256": "e" * 64, "licence": "non-commercial"}
    assert facefuse["consent"] == [{"person": "p1", "performer": "Jane Doe",
                                    "record_sha256": "1" * 64, "document_sha256": "2" * 64}]
    assert facefuse["ingredients"][0] == {"title": "plate.mov", "sha256": "a" * 64,
                                          "relationship": "parentOf"}
    assert (facefuse["use"], facefuse["fingerprint"]) == ("research", "0123456789abcdef")
    assert main(["credentials", str(sidecar_path(path))]) == ExitCode.OK  # its file is checked
    assert capsys.readouterr().out.startswith(f"{path}: valid (sidecar out.mkv.c2pa), ")


def test_the_command_refuses_what_it_cannot_read_with_exit_2(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    picture = _output(tmp_path, ".png")
    (tmp_path / "notes.txt").write_text("not a certificate\n")
    for argv in ([str(tmp_path / "none.png")], [str(tmp_path / "none.####.exr")],
                 [str(picture), "--trust", str(tmp_path / "notes.txt")],
                 [str(picture), "--trust", str(tmp_path / "none.pem")]):
        assert main(["credentials", *argv]) == ExitCode.USAGE, argv
        err = capsys.readouterr().err
        assert err.startswith("facefuse: error: ") and err.count("\n") == 1, err
