"""Renders sign what they write: every frame of a sequence as it is written (embedded in PNG, a
sidecar beside EXR), a video once complete; a chunked render checks as one; a resumed render
signs frames an unsigned render left; a bad key stops the render before anything is written."""

from __future__ import annotations

from pathlib import Path

import cv2
import pytest

c2pa = pytest.importorskip("c2pa")

from facefuse.cli import main as cli  # imported here, while sys.stderr is pytest's own stream
from facefuse.credentials import check_file, check_sequence, sidecar_path
from facefuse.errors import ExitCode
from facefuse.shot.output.signing import UNSIGNED_NOTE
from tests.integration.render_helpers import Media, one_line_error
from tests.render_media import YUNET_SHA256, cli_args, face_frame
from tests.signing_chain import Chain, make_chain
from tests.unit.test_consent import write_record


@pytest.fixture(scope="module")
def chain(tmp_path_factory: pytest.TempPathFactory) -> Chain:
    return make_chain(tmp_path_factory.mktemp("chain"))


def signed_args(media: Media, models: Path, output: Path, chain: Chain, *extra: str
                ) -> list[str]:
    return cli_args(models, media.source, media.clip, output, "--sign-cert", str(chain.cert),
                    "--sign-key", str(chain.key), *extra)


def run(args: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    """What a render that succeeds prints (stdout, then stderr)."""
    rc = cli.main(args)
    captured = capsys.readouterr()
    assert rc == ExitCode.OK, captured.err
    return captured.out + captured.err


def test_every_png_frame_carries_what_made_it(
        media: Media, render_models: Path, cli_cache: Path, tmp_path: Path, chain: Chain,
        capsys: pytest.CaptureFixture[str]) -> None:
    record = write_record(tmp_path, scope={}, expires=None)
    err = run(signed_args(media, render_models, tmp_path / "o.####.png", chain, "--frames",
                          "5-7", "--consent", f"p1={record}"), capsys)
    assert UNSIGNED_NOTE not in err
    frames = sorted(tmp_path.glob("o.*.png"))
    assert len(frames) == 3
    sequence = check_sequence(frames)
    assert sequence.fine and sequence.counts == {"valid": 3}
    made = check_file(frames[0]).credential
    assert made is not None and made.use == "research"
    assert [(i.title, i.relationship) for i in made.ingredients] == [
        ("shot.mp4", "parentOf"), ("obama.jpg", "inputTo")]
    models = {m.role: m for m in made.models}
    assert models["detector"].sha256 == YUNET_SHA256
    assert models["detector"].licence == "MIT (OpenCV Zoo)"
    assert models["swapper"].licence == "stated by the user"
    assert [(c.person, c.performer) for c in made.consent] == [("p1", "Jane Doe")]
    rc = cli.main(["credentials", str(tmp_path / "o.####.png")])
    line = capsys.readouterr().out.strip()
    assert rc == ExitCode.OK and line.startswith(f"{tmp_path}/o.####.png: 3 frames valid"), line


def test_an_exr_sequence_rendered_in_two_chunks_checks_as_one(
        media: Media, render_models: Path, cli_cache: Path, tmp_path: Path, chain: Chain,
        capsys: pytest.CaptureFixture[str]) -> None:
    output = tmp_path / "plate.####.exr"
    for chunk in ("1/2", "2/2"):
        run(signed_args(media, render_models, output, chain, "--frames", "3-8", "--chunk",
                        chunk), capsys)
    frames = sorted(tmp_path.glob("plate.*.exr"))
    assert len(frames) == 6 and all(sidecar_path(f).is_file() for f in frames)
    sequence = check_sequence(frames)
    assert sequence.fine and sequence.counts == {"valid": 6}
    frames[2].write_bytes(frames[2].read_bytes()[:-1] + b"\0")  # one byte of one frame
    assert check_sequence(frames).counts == {"valid": 5, "tampered": 1}
    rc = cli.main(["credentials", str(output)])
    assert rc == ExitCode.CREDENTIALS == 7, capsys.readouterr()


def test_a_video_is_signed_once_complete(
        media: Media, render_models: Path, cli_cache: Path, tmp_path: Path, chain: Chain,
        capsys: pytest.CaptureFixture[str]) -> None:
    output = tmp_path / "swapped.mp4"
    run(signed_args(media, render_models, output, chain, "--frames", "5-8"), capsys)
    checked = check_file(output)
    assert checked.state == "valid" and checked.where == "embedded"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["swapped.mp4"]


def test_a_resumed_render_signs_the_frames_an_unsigned_one_left(
        media: Media, render_models: Path, cli_cache: Path, tmp_path: Path, chain: Chain,
        capsys: pytest.CaptureFixture[str]) -> None:
    output = tmp_path / "o.####.png"
    err = run(cli_args(render_models, media.source, media.clip, output, "--frames", "5-6"),
              capsys)
    assert f"facefuse: {UNSIGNED_NOTE}" in err.splitlines()
    frames = sorted(tmp_path.glob("o.*.png"))
    assert [check_file(f).state for f in frames] == ["missing", "missing"]
    run(signed_args(media, render_models, output, chain, "--frames", "5-6"), capsys)
    assert [check_file(f).state for f in frames] == ["valid", "valid"]
    err = run(signed_args(media, render_models, output, chain, "--frames", "5-6"), capsys)
    assert "2 already done" in err


def test_a_key_that_will_not_sign_stops_the_render_before_anything_is_written(
        media: Media, render_models: Path, cli_cache: Path, tmp_path: Path, chain: Chain,
        capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "out"
    rc = cli.main(cli_args(render_models, media.source, media.clip, out / "o.####.png",
                           "--sign-cert", str(chain.cert), "--sign-key", str(chain.ca)))
    line = one_line_error(capsys.readouterr().err)
    assert rc == ExitCode.USAGE and str(chain.ca) in line, line
    assert not out.exists()
    rc = cli.main(cli_args(render_models, media.source, media.clip, out / "o.####.png",
                           "--sign-cert", str(chain.cert)))
    line = one_line_error(capsys.readouterr().err)
    assert rc == ExitCode.USAGE and "need both --sign-cert and --sign-key" in line


def test_a_swapped_still_is_signed_with_its_target_as_parent(
        media: Media, render_models: Path, tmp_path: Path, chain: Chain,
        capsys: pytest.CaptureFixture[str]) -> None:
    target = tmp_path / "plate.png"
    cv2.imwrite(str(target), face_frame(5, media.face))
    output = tmp_path / "swapped.png"
    args = cli_args(render_models, media.source, "-", output)
    args = ["swap", "-t", str(target), *args[args.index("-o"):], "--sign-cert", str(chain.cert),
            "--sign-key", str(chain.key)]
    err = run(args, capsys)
    assert "facefuse: licences: detector yunet_2023mar (MIT (OpenCV Zoo))" in err
    made = check_file(output)
    assert made.state == "valid" and made.credential is not None
    assert [(i.title, i.relationship) for i in made.credential.ingredients] == [
        ("plate.png", "parentOf"), ("obama.jpg", "inputTo")]
    rc = cli.main([*args[:-4], "--use", "commercial"])
    assert rc == ExitCode.USAGE
    assert "--use commercial refuses recogniser" in one_line_error(capsys.readouterr().err)


def test_a_preview_reads_no_key_and_signs_nothing(
        media: Media, render_models: Path, cli_cache: Path, tmp_path: Path, chain: Chain,
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """A still is scratch: even with a key in the environment (as a studio sets one for every
    render) and a key that would not load, a preview neither reads nor signs."""
    monkeypatch.setenv("FACEFUSE_SIGN_CERT", str(chain.cert))
    monkeypatch.setenv("FACEFUSE_SIGN_KEY", str(chain.ca))  # not a key: loading it fails
    still = tmp_path / "still.png"
    args = cli_args(render_models, media.source, media.clip, still)
    args[0] = "preview"
    run([*args, "--frame", "5"], capsys)
    assert check_file(still).state == "missing"
    rc = cli.main(cli_args(render_models, media.source, media.clip, tmp_path / "o.####.png",
                           "--frames", "5-5"))
    assert rc == ExitCode.USAGE and str(chain.ca) in one_line_error(capsys.readouterr().err)
