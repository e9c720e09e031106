"""Real detectors on real pictures: YuNet 2023mar and SCRFD det_500m from ../shared/testdata.

The pinned astronaut.png numbers were measured once and checked by eye on a drawing of the
landmarks (both detectors put point 0 on the image-left eye, 1 on the image-right eye, 2 on the
nose tip, 3 and 4 on the image-left and image-right mouth corners). On a mismatch the test writes
that drawing into its tmp_path.
"""

from __future__ import annotations

from pathlib import Path
from typing import NamedTuple

import cv2
import numpy as np
import onnxruntime as ort
import pytest

from facefuse.models.manifest import load_manifest
from facefuse.stages.detect import ScrfdDetector, YunetDetector, letterbox
from facefuse.types import Face

Detector = ScrfdDetector | YunetDetector


class Pinned(NamedTuple):
    score: float
    bbox: list[float]
    kps: list[list[float]]


# Measured on onnxruntime 1.32 CPU, opencv 5.0, numpy 2.4 (frame pixels of the 512x512 image).
PINNED = {
    "yunet": Pinned(
        score=0.944,
        bbox=[178.9, 63.2, 269.7, 174.1],
        kps=[[201.5, 105.0], [245.2, 104.9], [220.7, 127.1], [203.9, 145.2], [242.4, 145.0]],
    ),
    "scrfd": Pinned(
        score=0.800,
        bbox=[180.1, 60.2, 271.6, 179.7],
        kps=[[204.1, 100.6], [246.8, 103.6], [223.8, 129.2], [202.0, 139.7], [245.7, 142.3]],
    ),
}
KPS_TOL_PX = 2.0
BBOX_TOL_PX = 3.0
# The two models place the landmarks slightly differently (YuNet's eyes and mouth corners sit
# up to ~6 px lower on this 45 px interocular face), so they agree to 8 px, not to 2.
AGREE_TOL_PX = 8.0


def _session(path: Path) -> ort.InferenceSession:
    return ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])


@pytest.fixture(scope="module")
def detectors(testdata: Path) -> dict[str, Detector]:
    families = load_manifest().families
    models = testdata / "models"
    return {
        "yunet": YunetDetector(_session(models / "face_detection_yunet_2023mar.onnx"),
                               families["yunet"]),
        "scrfd": ScrfdDetector(_session(models / "det_500m.onnx"), families["scrfd"]),
    }


@pytest.fixture(scope="module")
def astronaut(testdata: Path) -> np.ndarray:
    image = cv2.imread(str(testdata / "media" / "astronaut.png"), cv2.IMREAD_COLOR)
    assert image is not None
    return image


def _draw(image: np.ndarray, faces: tuple[Face, ...], path: Path) -> Path:
    """Write the image with boxes and numbered landmarks, for a person to look at."""
    canvas = image.copy()
    for face in faces:
        x1, y1, x2, y2 = (round(float(v)) for v in face.bbox_xyxy)
        cv2.rectangle(canvas, (x1, y1), (x2, y2), (0, 255, 0), 1)
        for i, (x, y) in enumerate(face.kps5):
            centre = (round(float(x)), round(float(y)))
            cv2.circle(canvas, centre, 2, (0, 0, 255), -1)
            cv2.putText(canvas, str(i), (centre[0] + 3, centre[1] - 3), cv2.FONT_HERSHEY_SIMPLEX,
                        0.35, (0, 0, 255), 1)
    cv2.imwrite(str(path), canvas)
    return path


@pytest.mark.parametrize("name", ["yunet", "scrfd"])
def test_astronaut_one_face_with_pinned_landmarks(name: str, detectors: dict[str, Detector],
                                                  astronaut: np.ndarray, tmp_path: Path) -> None:
    faces = detectors[name].detect(astronaut)
    pinned = PINNED[name]
    ok = (len(faces) == 1
          and np.allclose(faces[0].kps5, pinned.kps, atol=KPS_TOL_PX)
          and np.allclose(faces[0].bbox_xyxy, pinned.bbox, atol=BBOX_TOL_PX))
    if not ok:
        drawing = _draw(astronaut, faces, tmp_path / f"astronaut_{name}.png")
        found = [(f.score, f.bbox_xyxy.tolist(), f.kps5.tolist()) for f in faces]
        pytest.fail(f"{name} found {found}; expected {pinned}; drawing at {drawing}")
    face = faces[0]
    assert face.score > 0.5 and face.score == pytest.approx(pinned.score, abs=0.02)
    assert face.bbox_xyxy.dtype == face.kps5.dtype == np.float32
    assert face.kps5.shape == (5, 2) and face.embedding is None


def test_yunet_and_scrfd_agree_on_astronaut(detectors: dict[str, Detector],
                                            astronaut: np.ndarray) -> None:
    (yunet,) = detectors["yunet"].detect(astronaut)
    (scrfd,) = detectors["scrfd"].detect(astronaut)
    distances = np.linalg.norm(yunet.kps5 - scrfd.kps5, axis=1)
    assert distances.max() < AGREE_TOL_PX, distances
    assert np.abs(yunet.bbox_xyxy - scrfd.bbox_xyxy).max() < AGREE_TOL_PX


def test_yunet_decoding_matches_opencv_face_detector(testdata: Path,
                                                     detectors: dict[str, Detector],
                                                     astronaut: np.ndarray) -> None:
    """Cross-check only: OpenCV's own YuNet decoder on the same letterboxed canvas."""
    if not hasattr(cv2, "FaceDetectorYN"):
        pytest.skip("this OpenCV build has no FaceDetectorYN")
    canvas, scale = letterbox(astronaut, (640, 640))
    reference = cv2.FaceDetectorYN.create(
        str(testdata / "models" / "face_detection_yunet_2023mar.onnx"), "", (640, 640), 0.5, 0.4)
    _, rows = reference.detect(canvas)
    assert rows is not None and len(rows) == 1
    x, y, w, h = rows[0, :4]
    (face,) = detectors["yunet"].detect(astronaut)
    np.testing.assert_allclose(face.bbox_xyxy * scale, [x, y, x + w, y + h], atol=0.1)
    np.testing.assert_allclose(face.kps5 * scale, rows[0, 4:14].reshape(5, 2), atol=0.1)
    assert face.score == pytest.approx(float(rows[0, 14]), abs=1e-3)


@pytest.mark.parametrize("name", ["yunet", "scrfd"])
def test_every_frame_of_asl_yes_has_one_face(name: str, detectors: dict[str, Detector],
                                             testdata: Path) -> None:
    capture = cv2.VideoCapture(str(testdata / "media" / "asl_yes.mp4"))
    counts: list[int] = []
    try:
        while True:
            ok, frame = capture.read()
            if not ok:
                break
            faces = detectors[name].detect(frame)
            counts.append(len(faces))
            if len(faces) == 1:
                left_eye, right_eye = faces[0].kps5[0], faces[0].kps5[1]
                assert left_eye[0] < right_eye[0], f"frame {len(counts) - 1}: eyes swapped"
    finally:
        capture.release()
    assert len(counts) >= 60, f"read only {len(counts)} frames"
    bad = [i for i, n in enumerate(counts) if n != 1]
    assert not bad, f"{name}: frames without exactly one face: {bad}"


@pytest.mark.parametrize("name", ["yunet", "scrfd"])
@pytest.mark.parametrize("photo", ["obama.jpg", "biden.jpg"])
def test_portraits_have_one_face(name: str, photo: str, detectors: dict[str, Detector],
                                 testdata: Path) -> None:
    image = cv2.imread(str(testdata / "media" / photo), cv2.IMREAD_COLOR)
    assert image is not None
    faces = detectors[name].detect(image)
    assert len(faces) == 1 and faces[0].score > 0.5
    x1, y1, x2, y2 = faces[0].bbox_xyxy
    assert 0 <= x1 < x2 <= image.shape[1] and 0 <= y1 < y2 <= image.shape[0]
    kps, box = faces[0].kps5, faces[0].bbox_xyxy
    assert np.all((kps > box[:2]) & (kps < box[2:])), "landmarks outside the box"


@pytest.mark.parametrize("name", ["yunet", "scrfd"])
def test_blank_grey_frame_has_no_face(name: str, detectors: dict[str, Detector]) -> None:
    assert detectors[name].detect(np.full((480, 640, 3), 128, np.uint8)) == ()


@pytest.mark.parametrize("name", ["yunet", "scrfd"])
def test_alpha_channel_is_ignored(name: str, detectors: dict[str, Detector],
                                  astronaut: np.ndarray) -> None:
    bgra = np.dstack([astronaut, np.random.default_rng(0).integers(0, 256, astronaut.shape[:2],
                                                                  dtype=np.uint8)])
    (plain,) = detectors[name].detect(astronaut)
    (with_alpha,) = detectors[name].detect(bgra)
    np.testing.assert_array_equal(with_alpha.kps5, plain.kps5)
    np.testing.assert_array_equal(with_alpha.bbox_xyxy, plain.bbox_xyxy)
    assert with_alpha.score == plain.score
