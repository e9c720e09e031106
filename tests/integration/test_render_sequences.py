"""`facefuse render` into image sequences: output frame N is input frame N, pixels change only
under the matte, the matte and the premultiplied patch, provenance in every file, --frames
and --start-number with JSON progress, and frames without a face passed through.

The shot (`media`: a 23.976 fps h264 clip with a face in all but its first frames) and
`cli_cache` come from tests/integration/conftest.py, the models and the session's analysis cache
from tests/conftest.py; frames carry their index as a burned-in marker and a real face
(tests/render_media.py), and pixels are compared with the input decoded independently.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

from facefuse.cli import main as cli  # imported here, while sys.stderr is pytest's own stream
from facefuse.shot.contract.request import FrameSpec, InputSpec, OutputSpec, RenderSummary
from tests.integration.render_helpers import (
    FACE_BOX,
    NO_FACE,
    Media,
    assert_changes_confined,
    read_bgr,
)
from tests.media_factory import read_marker
from tests.render_media import (
    SIZE,
    YUNET_NAME,
    YUNET_SHA256,
    cli_args,
    face_frame,
    read_plate_oiio,
    render_request,
    run_render,
    stray_files,
    write_plate_oiio,
)


@dataclass(frozen=True)
class SequenceRender:
    out: Path
    summary: RenderSummary
    reports: list
    numbers: range


@pytest.fixture(scope="module")
def video_to_png(media: Media, render_models: Path, render_cache: Path,
                 tmp_path_factory: pytest.TempPathFactory) -> SequenceRender:
    """Clip frames 1003-1014 (numbered from 1001) -> PNG, with an EXR matte and patch."""
    out = tmp_path_factory.mktemp("video-to-png")
    request = render_request(render_models, render_cache, media.source,
                             InputSpec(str(media.clip), start_number=1001),
                             OutputSpec(str(out / "shot.####.png"),
                                        matte=str(out / "matte.####.exr"),
                                        patch=str(out / "patch.####.exr")),
                             frames=FrameSpec(range=(1003, 1014)))
    summary, reports = run_render(request)
    return SequenceRender(out, summary, reports, range(1003, 1015))


def test_video_to_sequence_output_frame_n_is_input_frame_n(video_to_png: SequenceRender) -> None:
    result, numbers = video_to_png, list(video_to_png.numbers)
    s = result.summary
    assert (s.frames, s.swapped, s.no_face, s.skipped, s.failed, s.cancelled) == (
        12, 10, 2, 0, (), False)
    for kind in ("shot", "matte", "patch"):
        files = sorted(result.out.glob(f"{kind}.*"))
        assert [f.name for f in files] == [f"{kind}.{n}.{'png' if kind == 'shot' else 'exr'}"
                                           for n in numbers]
    assert stray_files(result.out) == []
    for n in numbers:
        assert read_marker(read_bgr(result.out / f"shot.{n}.png")) == n - 1001
    assert sorted(r.frame for r in result.reports) == numbers
    status = {r.frame: (r.status, r.faces) for r in result.reports}
    assert status == {n: ("no_face", 0) if n - 1001 in NO_FACE else ("swapped", 1)
                      for n in numbers}
    assert all({"decode", "swap", "paste"} <= set(r.ms) for r in result.reports
               if r.status == "swapped")


def test_video_to_sequence_changes_only_pixels_under_the_matte(video_to_png: SequenceRender,
                                                                media: Media) -> None:
    for n in video_to_png.numbers:
        out = read_bgr(video_to_png.out / f"shot.{n}.png")
        ref = media.clip_frames[n - 1001]
        matte = read_bgr(video_to_png.out / f"matte.{n}.exr")[..., 0]
        if n - 1001 in NO_FACE:
            np.testing.assert_array_equal(out, ref)
            assert matte.max() == 0.0
        else:
            assert_changes_confined(out, ref, matte, min_changed=1500)


def test_matte_is_one_channel_zero_outside_and_one_at_the_nose(video_to_png: SequenceRender,
                                                               media: Media) -> None:
    nx, ny = media.nose_xy
    for n in video_to_png.numbers:
        pixels, spec = read_plate_oiio(video_to_png.out / f"matte.{n}.exr")
        assert (spec.width, spec.height, spec.nchannels) == (*SIZE, 1)
        assert tuple(spec.channelnames) == ("Y",)
        matte = pixels[..., 0]
        assert matte.min() >= 0.0 and matte.max() <= 1.0
        if n - 1001 in NO_FACE:
            assert matte.max() == 0.0
            continue
        assert matte[ny, nx] > 0.99
        x0, y0, x1, y1 = FACE_BOX
        outside = np.ones(matte.shape, bool)
        outside[y0:y1, x0:x1] = False
        assert matte[outside].max() == 0.0
        assert (matte > 0.5).sum() > 1000  # a face-sized soft blob, not a speck


def test_patch_is_premultiplied_output_with_the_matte_as_alpha(video_to_png: SequenceRender
                                                               ) -> None:
    for n in list(video_to_png.numbers)[1:4]:  # a no-face frame and two swapped ones
        patch, spec = read_plate_oiio(video_to_png.out / f"patch.{n}.exr")
        assert tuple(spec.channelnames) == ("R", "G", "B", "A") and spec.alpha_channel == 3
        matte = read_plate_oiio(video_to_png.out / f"matte.{n}.exr")[0][..., 0]
        rgb = read_plate_oiio(video_to_png.out / f"shot.{n}.png")[0].astype(np.float32) / 255
        np.testing.assert_array_equal(patch[..., 3], matte)
        np.testing.assert_allclose(patch[..., :3], rgb * matte[..., None], atol=2e-3, rtol=2e-3)
        assert np.all(patch[matte == 0] == 0.0)


def test_sequence_outputs_carry_provenance(video_to_png: SequenceRender, media: Media) -> None:
    fingerprints: dict[int, set[str]] = {}
    for n in (1004, 1010):
        for name in (f"shot.{n}.png", f"matte.{n}.exr", f"patch.{n}.exr"):
            tags = _facefuse_tags(read_plate_oiio(video_to_png.out / name)[1])
            assert tags["frame"] == str(n)
            assert tags["input"] == media.clip.name, "no local path unless --provenance full"
            assert tags["sources_sha256"] == hashlib.sha256(media.source.read_bytes()).hexdigest()
            assert len(tags["source_identity"]) == 16
            models = json.loads(tags["models"])
            assert models["detector"] == {"model": YUNET_NAME, "sha256": YUNET_SHA256}
            assert models["swapper"]["model"] == "identity_swapper.onnx"
            assert set(models) == {"detector", "recogniser", "swapper"}
            assert json.loads(tags["settings"])["mask_blur"] == 0.3
            assert tags["version"]
            fingerprints.setdefault(n, set()).add(tags["fingerprint"])
    # each frame's own (its plan's faces differ), the same in all its files
    (a,), (b,) = fingerprints.values()
    assert a != b and len(a) == len(b) == 64


def _facefuse_tags(spec) -> dict[str, str]:
    return {p.name.removeprefix("facefuse:"): str(p.value) for p in spec.extra_attribs
            if p.name.startswith("facefuse:")}


def test_cli_frames_and_start_number_with_json_progress(media: Media, render_models: Path,
                                                        cli_cache: Path, tmp_path: Path,
                                                        capsys: pytest.CaptureFixture[str]
                                                        ) -> None:
    rc = cli.main(cli_args(render_models, media.source, media.clip, tmp_path / "f.%04d.png",
                           "--frames", "1004-1008", "--start-number", "1001",
                           "--progress", "json"))
    captured = capsys.readouterr()
    assert rc == 0, captured.err
    lines = [json.loads(line) for line in captured.out.splitlines()]
    frames = [line for line in lines if "frame" in line]
    assert sorted(f["frame"] for f in frames) == [1004, 1005, 1006, 1007, 1008]
    assert {f["frame"]: f["status"] for f in frames}[1004] == "no_face"
    summary = lines[-1]["summary"]
    assert (summary["frames"], summary["swapped"], summary["no_face"], summary["failed"]) == (
        5, 4, 1, [])
    files = sorted(tmp_path.glob("f.*.png"))
    assert [f.name for f in files] == [f"f.{n}.png" for n in range(1004, 1009)]
    for path in files:
        n = int(path.name.split(".")[1])
        out = read_bgr(path)
        assert read_marker(out) == n - 1001
        ref = media.clip_frames[n - 1001]
        x0, y0, x1, y1 = FACE_BOX  # no matte here: compare outside the face box
        outside = np.ones(out.shape[:2], bool)
        outside[y0:y1, x0:x1] = False
        np.testing.assert_array_equal(out[outside], ref[outside])


def test_frames_without_a_face_pass_through_and_are_counted(
        media: Media, render_models: Path, render_cache: Path, tmp_path: Path) -> None:
    """Frames 1-3: no face (before the face's track starts): unchanged, counted no_face.
    Frame 6: the face is missing for one frame inside its track, which is filled in
    (interpolated landmarks) so a detector drop-out does not flash the original face."""
    plates, out = tmp_path / "plates", tmp_path / "out"
    plates.mkdir(), out.mkdir()
    faceless = {1, 2, 3, 6}
    inputs = {}
    for n in range(1, 9):
        inputs[n] = face_frame(n, None if n in faceless else media.face)
        write_plate_oiio(plates / f"p.{n}.png", inputs[n][..., ::-1].copy(), "uint8")
    request = render_request(render_models, render_cache, media.source, plates / "p.#.png",
                             OutputSpec(str(out / "o.#.png"), matte=str(out / "m.#.exr")))
    summary, reports = run_render(request)
    assert (summary.frames, summary.swapped, summary.no_face, summary.skipped,
            summary.failed) == (8, 5, 3, 0, ())
    assert summary.done == 8
    status = {r.frame: (r.status, r.faces) for r in reports}
    assert status == {n: ("no_face", 0) if n <= 3 else ("swapped", 1) for n in range(1, 9)}
    for n in range(1, 9):
        got = read_bgr(out / f"o.{n}.png")
        matte = read_bgr(out / f"m.{n}.exr")[..., 0]
        if n <= 3:
            np.testing.assert_array_equal(got, inputs[n])
            assert matte.max() == 0.0
        else:
            assert matte.max() > 0.99
            np.testing.assert_array_equal(got[matte == 0], inputs[n][matte == 0])
