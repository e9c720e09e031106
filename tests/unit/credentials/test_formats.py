"""Which files carry their credentials inside, where the others keep them, and that the package
loads without the C2PA SDK (the sign extra)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from facefuse.credentials import (
    EMBEDDABLE,
    SigningKey,
    check_file,
    load_signer,
    media_type,
    sidecar_path,
)
from facefuse.credentials.formats import embeds
from facefuse.errors import InputError


def test_a_sidecar_sits_beside_its_file_with_the_whole_name() -> None:
    assert sidecar_path(Path("/r/plate.1001.exr")) == Path("/r/plate.1001.exr.c2pa")
    assert sidecar_path(Path("shot.mkv")) == Path("shot.mkv.c2pa")
    assert sidecar_path(Path("noext")) == Path("noext.c2pa")


def test_the_sdk_embeds_into_stills_and_mp4_family_movies_only() -> None:
    assert {".png", ".jpg", ".jpeg", ".tif", ".tiff", ".mp4", ".mov", ".m4v"} <= set(EMBEDDABLE)
    assert EMBEDDABLE[".mov"] == "video/quicktime" and EMBEDDABLE[".m4v"] == "video/x-m4v"
    assert embeds(Path("A.PNG")) and embeds(Path("x.Mov"))
    assert not any(embeds(Path(f"x{s}")) for s in (".exr", ".dpx", ".mkv", ".c2pa", ""))
    assert media_type("plate.####.EXR") == "image/x-exr"
    assert media_type("notes.txt") == "application/octet-stream"


def test_the_package_loads_without_the_sdk() -> None:
    code = ("import sys; import facefuse.credentials, facefuse.cli.credentials; "
            "print('c2pa' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True, timeout=60)
    assert done.stdout.strip() == "False"


def test_without_the_sign_extra_signing_and_checking_say_how_to_install_it(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setitem(sys.modules, "c2pa", None)  # import c2pa raises ImportError
    (tmp_path / "out.png").write_bytes(b"png")
    for attempt in (lambda: load_signer(SigningKey(tmp_path / "c.pem", tmp_path / "k.pem")),
                    lambda: check_file(tmp_path / "out.png")):
        with pytest.raises(InputError) as refused:
            attempt()
        assert str(refused.value) == ("content credentials need the sign extra: "
                                      "pip install -e '.[sign]'")
