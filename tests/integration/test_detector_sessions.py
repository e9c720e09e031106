"""Pass 1 with several detector sessions (Settings.detector_sessions): the frames of a window
detected side by side give the analysis one session gives, bit for bit and in frame order,
with the real YuNet and SCRFD detectors, on the small-picture path and the whole-frame one."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from facefuse.shot.contract.request import FrameSpec, OutputSpec
from tests.render_media import face_photo, make_face_clip, render_request, run_render

FRAMES = 8


@pytest.fixture(scope="module")
def clips(tmp_path_factory: pytest.TempPathFactory, testdata: Path) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("sessions")
    face = face_photo(testdata, (192, 240))
    return {"small": make_face_clip(folder / "hd.mp4", face, frames=FRAMES, size=(1280, 720),
                                    audio=None, without_face=(3,)),
            "whole": testdata / "media" / "asl_yes.mp4"}


def _analysis(render_models: Path, testdata: Path, clip: Path, folder: Path, detector: str,
              sessions: int, threads: int) -> dict[str, np.ndarray]:
    cache = folder / f"cache-{sessions}-{threads}"
    request = render_request(render_models, cache,
                             testdata / "media" /
                             "obama.jpg", clip,
                             OutputSpec(str(folder / f"out-{sessions}-{threads}.mp4"),
                                        overwrite=True),
                             settings={"detector": detector, "detector_sessions": sessions,
                                       "threads": threads},
                             frames=FrameSpec(range=(1, FRAMES)))
    summary, _ = run_render(request)
    assert summary.done == FRAMES
    (entry,) = cache.rglob("analysis/*.npz")
    with np.load(entry) as data:
        return {name: data[name] for name in data.files}


@pytest.mark.parametrize("path", ["small", "whole"])
@pytest.mark.parametrize("detector", ["yunet", "scrfd"])
def test_detector_sessions_find_one_sessions_faces_bit_for_bit(
        path: str, detector: str, clips: dict[str, Path], render_models: Path,
        testdata: Path, tmp_path: Path) -> None:
    model = ("yunet_2023mar" if detector == "yunet"
             else str(testdata / "models" / "det_500m.onnx"))
    one = _analysis(render_models, testdata, clips[path], tmp_path, model, 1, 0)
    assert int(one["counts"].sum()) > 0  # faces were found
    for sessions, threads in ((3, 0), (2, 2)):
        many = _analysis(render_models, testdata, clips[path], tmp_path, model, sessions,
                         threads)
        assert set(many) == set(one)
        for name, array in one.items():
            np.testing.assert_array_equal(many[name], array, err_msg=name)
