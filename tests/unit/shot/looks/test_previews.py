"""facefuse.shot.looks.previews with a stand-in Pipeline (no ONNX Runtime): what is drawn, where it
is written, which frame is read, and how a given pipeline is used. Real detection in previews is
covered by tests/hosts/addon/test_blender_swap.py; preview_frame, which renders, by
tests/integration/test_preview.py."""

from __future__ import annotations

from pathlib import Path
from typing import Self

import cv2
import numpy as np
import pytest

from facefuse.config import Settings
from facefuse.errors import InputError, NoFaceError
from facefuse.shot.contract.request import InputSpec, OutputSpec, RenderRequest
from facefuse.shot.looks import previews
from facefuse.types import Face, SourceIdentity

SIZE = (160, 120)  # width, height of the test frames


def face(x1: float, y1: float, x2: float, y2: float) -> Face:
    w, h = x2 - x1, y2 - y1
    kps = [(x1 + .3 * w, y1 + .4 * h), (x1 + .7 * w, y1 + .4 * h), (x1 + .5 * w, y1 + .6 * h),
           (x1 + .35 * w, y1 + .8 * h), (x1 + .65 * w, y1 + .8 * h)]
    return Face(np.array([x1, y1, x2, y2], np.float32), np.array(kps, np.float32), 0.9)


class FakePipeline:
    """Pipeline's duck type: detect returns fixed faces."""

    def __init__(self, settings: Settings, faces: tuple[Face, ...] = (),
                 crop_faces: tuple[Face, ...] | None = None) -> None:
        self.settings = settings
        self.faces = faces
        self.crop_faces = crop_faces
        self.detected: list[tuple[int, ...]] = []
        self.closed = False

    def detect(self, frame: np.ndarray, colour: object = None) -> tuple[Face, ...]:
        self.detected.append(frame.shape)
        if self.crop_faces is not None and len(self.detected) > 1:
            return self.crop_faces
        return self.faces

    def source_identity(self, paths: object) -> SourceIdentity:
        return SourceIdentity(np.full(4, 0.5, np.float32), ("digest",))

    def close(self) -> None:
        self.closed = True

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return Settings(cache_dir=tmp_path / "cache", offline=True)


def write_sequence(folder: Path, count: int = 3, first: int = 1) -> str:
    """PNG frames f.0001.png ...: frame n is a flat grey of 20 * n (BGR uint8)."""
    folder.mkdir(parents=True, exist_ok=True)
    for n in range(first, first + count):
        frame = np.full((SIZE[1], SIZE[0], 3), 20 * n, np.uint8)
        assert cv2.imwrite(str(folder / f"f.{n:04d}.png"), frame)
    return str(folder / "f.####.png")


def request_for(input_spec: str, settings: Settings, tmp_path: Path) -> RenderRequest:
    return RenderRequest(sources=(tmp_path / "unused.png",), settings=settings,
                         input=InputSpec(input_spec),
                         output=OutputSpec(str(tmp_path / "out" / "o.####.png")))


def files_in(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir())


def test_faces_are_numbered_left_to_right() -> None:
    right, left, middle = face(100, 10, 140, 50), face(0, 40, 30, 80), face(50, 0, 80, 30)
    assert previews.ordered_faces((right, left, middle)) == (left, middle, right)


def test_source_preview_outlines_the_used_face_green_and_the_others_amber(
        tmp_path: Path, settings: Settings) -> None:
    image = np.full((400, 600, 3), 128, np.uint8)
    source = tmp_path / "actor.png"
    cv2.imwrite(str(source), image)
    big, small = face(100, 100, 300, 300), face(400, 50, 460, 110)
    pipeline = FakePipeline(settings, (small, big))

    path, count = previews.source_preview(source, settings, pipeline=pipeline)

    assert count == 2
    assert path.parent == tmp_path / "cache" / "previews"
    thumb = cv2.imread(str(path))
    assert max(thumb.shape[:2]) == previews.THUMBNAIL_PX
    scale = previews.THUMBNAIL_PX / 600
    # the middle of each box's left edge carries the box's colour
    big_edge = thumb[round(200 * scale), round(100 * scale)].astype(int)
    small_edge = thumb[round(80 * scale), round(400 * scale)].astype(int)
    assert big_edge[1] > 180 and big_edge[2] < 130, big_edge  # green (BGR)
    assert small_edge[2] > 200 and small_edge[0] < 90, small_edge  # amber
    assert thumb[5, thumb.shape[1] // 2].tolist() == [128, 128, 128]  # no border: faces found
    assert pipeline.detected == [(400, 600, 3)]  # detected on the full image, not the thumbnail


def test_source_without_a_face_gets_a_red_border(tmp_path: Path, settings: Settings) -> None:
    source = tmp_path / "wall.jpg"
    cv2.imwrite(str(source), np.full((100, 100, 3), 128, np.uint8))
    path, count = previews.source_preview(source, settings, pipeline=FakePipeline(settings))
    assert count == 0
    corner = cv2.imread(str(path))[1, 50].astype(int)
    assert corner[2] > 200 and corner[1] < 80


def test_source_preview_is_written_once_per_content_without_leftovers(
        tmp_path: Path, settings: Settings) -> None:
    first, second = tmp_path / "a.png", tmp_path / "b.png"
    cv2.imwrite(str(first), np.full((50, 50, 3), 90, np.uint8))
    cv2.imwrite(str(second), np.full((50, 50, 3), 90, np.uint8))
    pipeline = FakePipeline(settings)
    out = tmp_path / "thumbs"
    path_a, _ = previews.source_preview(first, settings, out, pipeline)
    path_b, _ = previews.source_preview(second, settings, out, pipeline)
    assert path_a == path_b  # same bytes, same detector settings: same file
    assert files_in(out) == [path_a.name]  # no temporary files left


def test_missing_source_is_an_input_error(tmp_path: Path, settings: Settings) -> None:
    with pytest.raises(InputError, match="does not exist"):
        previews.source_preview(tmp_path / "gone.png", settings,
                                pipeline=FakePipeline(settings))


def test_a_pipeline_built_from_other_settings_is_refused(tmp_path: Path,
                                                         settings: Settings) -> None:
    source = tmp_path / "a.png"
    cv2.imwrite(str(source), np.zeros((20, 20, 3), np.uint8))
    other = FakePipeline(Settings(mask_blur=0.9))
    with pytest.raises(ValueError, match="other settings"):
        previews.source_preview(source, settings, pipeline=other)


def test_preview_frame_outside_the_input_is_an_input_error(tmp_path: Path,
                                                           settings: Settings) -> None:
    request = request_for(write_sequence(tmp_path / "plate", count=2), settings, tmp_path)
    with pytest.raises(InputError, match="frame 7 is not in"):
        previews.preview_frame(request, 7, pipeline=FakePipeline(settings))


def test_faces_overlay_numbers_the_faces(tmp_path: Path, settings: Settings) -> None:
    request = request_for(write_sequence(tmp_path / "plate", count=1), settings, tmp_path)
    pipeline = FakePipeline(settings, (face(100, 40, 140, 80), face(10, 40, 50, 80)))
    path, count = previews.faces_overlay(request, 1, pipeline=pipeline, out_dir=tmp_path / "pv")
    assert count == 2
    picture = cv2.imread(str(path))
    assert picture.shape == (SIZE[1], SIZE[0], 3)
    assert (picture != 20).any()  # outlines and numbers drawn
    _, none = previews.faces_overlay(request, 1, pipeline=FakePipeline(settings),
                                     out_dir=tmp_path / "pv")
    assert none == 0


def test_reference_face_crops_the_chosen_face(tmp_path: Path, settings: Settings) -> None:
    request = request_for(write_sequence(tmp_path / "plate", count=2), settings, tmp_path)
    left, right = face(10, 30, 50, 80), face(100, 30, 140, 70)
    pipeline = FakePipeline(settings, (right, left))  # detector order: not left to right
    path = previews.reference_face(request, 2, 1, tmp_path / "ref", pipeline=pipeline)
    crop = cv2.imread(str(path))
    # face 1 from the left is `right`: 40x40 grown by 0.6 per side, clipped at x=160
    assert crop.shape[:2] == (88, 84)
    assert crop[0, 0].tolist() == [40, 40, 40]  # frame 2
    assert path.name.startswith("reference-") and path.parent == tmp_path / "ref"
    assert previews.reference_face(request, 2, 1, tmp_path / "ref", pipeline=pipeline) == path


def test_reference_face_errors(tmp_path: Path, settings: Settings) -> None:
    request = request_for(write_sequence(tmp_path / "plate", count=1), settings, tmp_path)
    one = FakePipeline(settings, (face(10, 30, 50, 80),))
    with pytest.raises(InputError, match="has 1 face"):
        previews.reference_face(request, 1, 1, tmp_path / "ref", pipeline=one)
    with pytest.raises(NoFaceError, match="no face found in frame 1"):
        previews.reference_face(request, 1, 0, tmp_path / "ref", pipeline=FakePipeline(settings))
    lost = FakePipeline(settings, (face(10, 30, 50, 80),), crop_faces=())
    with pytest.raises(NoFaceError, match="too small"):
        previews.reference_face(request, 1, 0, tmp_path / "ref", pipeline=lost)
    assert not (tmp_path / "ref").exists()  # nothing written on an error
