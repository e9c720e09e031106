"""facefuse.cli.hosts: the hosts' commands are listed and parsed without their libraries; a
missing extra (PySide6, OpenTimelineIO) is one sentence naming it when the command runs, as
before the hosts contributed their commands themselves."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

# the hosts' libraries refused on import, as on a computer without the extras
PROBE = """
import json, sys
class Refuse:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ("PySide6", "opentimelineio"):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
sys.meta_path.insert(0, Refuse())
from facefuse.cli.main import main
code = main(sys.argv[1:])
print(json.dumps({"code": code}))
"""


def _run(tmp_path: Path, *argv: str) -> tuple[int, str, str]:
    done = subprocess.run([sys.executable, "-c", PROBE, *argv], capture_output=True,
                          text=True, check=False, timeout=120, cwd=tmp_path)
    lines = done.stdout.strip().splitlines()
    code = json.loads(lines[-1])["code"] if lines and lines[-1].startswith("{") else None
    return (done.returncode if code is None else code), done.stdout, done.stderr


def test_host_commands_are_listed_without_their_libraries(tmp_path: Path) -> None:
    code, out, _ = _run(tmp_path, "--help")
    assert code == 0 and all(f"    {name} " in out for name in ("resolve", "panel", "timeline"))
    for command in (["panel"], ["timeline", "swap"], ["resolve", "render"]):
        code, out, err = _run(tmp_path, *command, "--help")
        assert code == 0 and "usage: facefuse " + " ".join(command) in out, err


def test_a_missing_extra_is_named_when_its_command_runs(tmp_path: Path) -> None:
    clip = tmp_path / "clip.mp4"
    clip.write_bytes(b"")
    code, _, err = _run(tmp_path, "panel", str(clip))
    assert code == 2 and err.strip() == ("facefuse: error: the facefuse panel host needs "
                                         "PySide6: pip install 'facefuse[panel]'")
    edit = tmp_path / "edit.otio"
    edit.write_text("{}")
    code, _, err = _run(tmp_path, "timeline", "swap", str(edit), "-o", str(tmp_path / "out"))
    assert code == 2 and err.strip() == ("facefuse: error: the facefuse otio host needs "
                                         "opentimelineio: pip install 'facefuse[otio]'")


def test_the_resolve_and_timeline_commands_render_under_the_policy_given(
        tmp_path: Path) -> None:
    """`resolve swap/render` and `timeline swap` take render's policy and signing options, and
    the Resolve command renders its item's request under them."""
    import argparse
    import dataclasses

    from addon.resolve import command as resolve_command
    from addon.resolve.job_file import parse_job
    from facefuse.cli.hosts import Lent
    from facefuse.shot.contract.request import PersonId, PolicyChoices, SigningChoices
    from tests.resolve_facts import job

    lent = Lent()
    parser = argparse.ArgumentParser()
    lent.policy_options(parser)
    args = parser.parse_args(["--require-consent", "--consent", "p1=jane.json", "--project",
                              "NF", "--use", "commercial", "--sign-cert", "c.pem",
                              "--sign-key", "k.pem"])
    policy, signing = lent.policy(args)
    assert policy == PolicyChoices(use="commercial", consent=((PersonId("p1"),
                                                                Path("jane.json")),),
                                   require_consent=True, project="NF")
    assert signing == SigningChoices(Path("c.pem"), Path("k.pem"))

    media = tmp_path / "plate.mp4"
    media.write_bytes(b"a movie")
    rendered = []

    class Asked(Exception):
        """The render was asked for: what it was asked is all this test needs."""

    class Rendering(Lent):
        def render(self, request, report=None, cancel=None):  # type: ignore[no-untyped-def]
            rendered.append(request)
            raise Asked

    namespace = argparse.Namespace(**vars(args), review_report=None, source=[media],
                                   output="png", output_dir=tmp_path / "out", overwrite=False)
    settings = dataclasses.replace(resolve_command.Settings(), offline=True)
    with pytest.raises(Asked):
        resolve_command._render_clip(parse_job(job(media)), namespace, Rendering(), settings)
    assert rendered[0].policy == policy and rendered[0].signing == signing
