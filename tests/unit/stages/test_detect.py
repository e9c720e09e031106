"""Detector math on synthetic tensors: letterbox, NMS, SCRFD and YuNet decoding (no onnxruntime)."""

from __future__ import annotations

import math
from types import SimpleNamespace

import numpy as np
import pytest

from facefuse.errors import InputError, ModelContractError
from facefuse.models.manifest import Family
from facefuse.stages.boxes import box_inside_share, nms
from facefuse.stages.detect import (
    CONTAINED_SHARE,
    ScrfdDetector,
    YunetDetector,
    decode_scrfd,
    decode_yunet,
    letterbox,
    preprocess_scrfd,
    preprocess_yunet,
    to_faces,
)

INPUT_HW = (64, 96)  # canvas height, width: 8x12, 4x6 and 2x3 cells at strides 8, 16, 32
CELLS = {8: (8, 12), 16: (4, 6), 32: (2, 3)}


def _family(name: str, colour: str, mean: float, std: float,
            input_size: tuple[int, int] = (640, 640)) -> Family:
    return Family(name=name, role="detector", class_name="", input_size=input_size,
                  template=None, colour=colour, mean=mean, std=std, inputs=(), outputs=())


SCRFD = _family("scrfd", "rgb", 127.5, 128.0)
YUNET = _family("yunet", "bgr", 0.0, 1.0)


# ---------------------------------------------------------------------------------- letterbox


@pytest.mark.parametrize(
    ("image_hw", "size_wh", "scale", "placed_hw"),
    [
        ((100, 200), (640, 640), 3.2, (320, 640)),   # wide: fills the width
        ((400, 100), (640, 640), 1.6, (640, 160)),   # tall: fills the height
        ((960, 1280), (640, 640), 0.5, (480, 640)),  # shrink
        ((100, 100), (320, 160), 1.6, (160, 160)),   # non-square canvas, (width, height) order
    ],
)
def test_letterbox_scale_placement_and_zero_pad(image_hw: tuple[int, int],
                                                size_wh: tuple[int, int], scale: float,
                                                placed_hw: tuple[int, int]) -> None:
    image = np.full((*image_hw, 3), 7, dtype=np.uint8)
    canvas, got_scale = letterbox(image, size_wh)
    assert canvas.shape == (size_wh[1], size_wh[0], 3) and canvas.dtype == np.uint8
    assert got_scale == pytest.approx(scale)
    h, w = placed_hw
    assert np.all(canvas[:h, :w] == 7)
    assert np.all(canvas[h:] == 0) and np.all(canvas[:, w:] == 0)


def test_letterbox_keeps_content_at_top_left() -> None:
    image = np.zeros((40, 80, 3), dtype=np.uint8)
    image[10:20, 60:70] = 255  # a bright square at x 60..70, y 10..20
    canvas, scale = letterbox(image, (160, 160))
    ys, xs = np.nonzero(canvas[..., 0] > 127)
    assert scale == 2.0
    assert (xs.min(), xs.max(), ys.min(), ys.max()) == (120, 139, 20, 39)


# ---------------------------------------------------------------------------------------- nms


def test_nms_suppresses_overlaps_and_orders_by_score() -> None:
    boxes = np.array([
        [0, 0, 10, 10],    # 0: score .90
        [1, 1, 11, 11],    # 1: IoU with 0 = 81/119 = .68 -> suppressed
        [20, 20, 30, 30],  # 2: apart -> kept
        [5, 0, 15, 10],    # 3: IoU with 0 = 50/150 = .33 -> kept at .4
        [0, 0, 10, 5],     # 4: IoU with 0 = .5 -> suppressed
    ], dtype=np.float32)
    scores = np.array([0.9, 0.8, 0.7, 0.95, 0.6], dtype=np.float32)
    keep = nms(boxes, scores, 0.4)
    assert keep.dtype == np.int64
    assert keep.tolist() == [3, 0, 2]
    assert nms(boxes, scores, 0.3).tolist() == [3, 2, 4]  # 0 now falls to 3; 4 only meets 0


def test_nms_identical_boxes_keep_first_of_ties_and_empty_input() -> None:
    boxes = np.array([[0, 0, 4, 4]] * 3, dtype=np.float32)
    assert nms(boxes, np.array([0.5, 0.5, 0.5]), 0.4).tolist() == [0]
    assert nms(np.zeros((0, 4)), np.zeros((0,)), 0.4).tolist() == []


def test_nms_ignores_degenerate_boxes() -> None:
    boxes = np.array([[0, 0, 0, 0], [0, 0, 0, 0]], dtype=np.float32)
    assert nms(boxes, np.array([0.9, 0.8]), 0.4).tolist() == [0, 1]


def test_a_weaker_box_mostly_inside_a_stronger_one_is_dropped() -> None:
    face = [100, 100, 200, 220]         # 0: a real face, score .9
    eye = [120, 130, 150, 155]          # 1: nested low-score box, IoU .06, all inside the face
    half_out = [170, 150, 230, 210]     # 2: half of it inside the face (a neighbour behind)
    stronger_inside = [110, 110, 140, 140]  # 3: inside the face but scores higher: kept
    boxes = np.array([face, eye, half_out, stronger_inside], np.float32)
    scores = np.array([0.9, 0.55, 0.6, 0.95], np.float32)
    assert box_inside_share(boxes[0], boxes[1:]).tolist() == pytest.approx([1.0, 0.5, 1.0])
    assert nms(boxes, scores, 0.4).tolist() == [3, 0, 2, 1]  # IoU alone keeps the nested box
    assert nms(boxes, scores, 0.4, CONTAINED_SHARE).tolist() == [3, 0, 2]
    kps = np.zeros((4, 5, 2), np.float32)
    faces = to_faces((boxes, scores, kps), 1.0, (400, 400), 0.4)
    assert [f.score for f in faces] == pytest.approx([0.95, 0.9, 0.6])


def test_containment_threshold_is_a_share_of_the_weaker_box() -> None:
    big = [0, 0, 100, 100]
    mostly_in, less_in = [90, 0, 102, 10], [90, 0, 103, 10]  # 10/12 = .83 and 10/13 = .77 inside
    boxes = np.array([big, mostly_in, less_in], np.float32)
    assert box_inside_share(boxes[0], boxes[1:]).tolist() == pytest.approx([10 / 12, 10 / 13])
    assert CONTAINED_SHARE == 0.8
    assert nms(boxes[:2], np.array([0.9, 0.5]), 0.4, CONTAINED_SHARE).tolist() == [0]
    assert nms(boxes[::2], np.array([0.9, 0.5]), 0.4, CONTAINED_SHARE).tolist() == [0, 1]
    assert box_inside_share(boxes[0], np.zeros((1, 4))).tolist() == [0.0]  # empty box


# ------------------------------------------------------------------------------- preprocessing


def test_preprocess_scrfd_is_rgb_normalised_nchw() -> None:
    canvas = np.zeros((4, 6, 3), dtype=np.uint8)
    canvas[1, 2] = (10, 20, 30)  # B, G, R
    blob = preprocess_scrfd(canvas, SCRFD)
    assert blob.shape == (1, 3, 4, 6) and blob.dtype == np.float32
    expected = (np.array([30, 20, 10], np.float32) - 127.5) / 128.0
    np.testing.assert_allclose(blob[0, :, 1, 2], expected, rtol=1e-6)
    np.testing.assert_allclose(blob[0, :, 0, 0], -127.5 / 128.0, rtol=1e-6)


def test_preprocess_yunet_is_raw_bgr_nchw() -> None:
    canvas = np.zeros((4, 6, 3), dtype=np.uint8)
    canvas[3, 5] = (10, 20, 30)
    blob = preprocess_yunet(canvas, YUNET)
    assert blob.shape == (1, 3, 4, 6) and blob.dtype == np.float32
    assert blob[0, :, 3, 5].tolist() == [10.0, 20.0, 30.0]
    assert blob.flags["C_CONTIGUOUS"]


def _transposed_blob(canvas: np.ndarray, colour: str, mean: float, std: float) -> np.ndarray:
    """The blob as one strided transpose-and-cast of the canvas, then (x - mean) / std in
    float32: what preprocessing is held bit-identical to."""
    pixels = canvas[..., ::-1] if colour == "rgb" else canvas
    blob = pixels.transpose(2, 0, 1)[None].astype(np.float32)
    if mean != 0.0:
        blob -= np.float32(mean)
    if std != 1.0:
        blob *= np.float32(1.0 / std)
    return blob


@pytest.mark.parametrize("family", [SCRFD, YUNET], ids=["scrfd", "yunet"])
def test_preprocessing_is_bit_identical_to_the_transposed_cast(family: Family) -> None:
    rng = np.random.default_rng(5)
    image = rng.integers(0, 256, (360, 640, 3), dtype=np.uint8)
    canvases = (letterbox(image, (640, 640))[0], rng.integers(0, 256, (37, 64, 3), np.uint8),
                image[10:200:2, 5:300])  # a strided view too
    for canvas in canvases:
        blob = (preprocess_scrfd if family is SCRFD else preprocess_yunet)(canvas, family)
        expected = _transposed_blob(canvas, family.colour, family.mean, family.std)
        assert blob.dtype == np.float32 and blob.flags["C_CONTIGUOUS"]
        assert np.array_equal(blob, expected)


# ---------------------------------------------------------------------------------------- scrfd

SCRFD_KPS_OFFSETS = np.array([[-1.0, -1.0], [1.0, -1.0], [0.0, 0.5], [-0.75, 1.5], [0.75, 1.5]])


def _scrfd_outputs(batch: bool = False) -> list[np.ndarray]:
    """Raw outputs (score, bbox, kps for strides 8, 16, 32) where only anchor 1 of cell
    (column 3, row 2) at stride 16 fires: centre (48, 32), distances (1, 2, 3, 4)."""
    scores, bboxes, kpss = [], [], []
    for rows, cols in CELLS.values():
        n = rows * cols * 2
        scores.append(np.full((n, 1), 0.1, np.float32))
        bboxes.append(np.full((n, 4), 0.5, np.float32))
        kpss.append(np.zeros((n, 10), np.float32))
    fired = (2 * 6 + 3) * 2 + 1
    scores[1][fired] = 0.9
    bboxes[1][fired] = (1, 2, 3, 4)
    kpss[1][fired] = SCRFD_KPS_OFFSETS.ravel()
    outputs = scores + bboxes + kpss
    return [o[None] for o in outputs] if batch else outputs


SCRFD_BOX = [48 - 16, 32 - 32, 48 + 48, 32 + 64]
SCRFD_KPS = np.array([48.0, 32.0]) + SCRFD_KPS_OFFSETS * 16


def test_decode_scrfd_one_anchor_gives_exact_box_and_kps() -> None:
    boxes, scores, kps = decode_scrfd(_scrfd_outputs(), INPUT_HW, 0.5)
    assert boxes.dtype == scores.dtype == kps.dtype == np.float32
    assert boxes.shape == (1, 4) and scores.shape == (1,) and kps.shape == (1, 5, 2)
    assert boxes[0].tolist() == SCRFD_BOX
    assert scores[0] == pytest.approx(0.9)
    np.testing.assert_array_equal(kps[0], SCRFD_KPS)


@pytest.mark.parametrize("batch", [False, True])
def test_decode_scrfd_ignores_output_order_and_batch_dim(batch: bool) -> None:
    outputs = _scrfd_outputs(batch)
    shuffled = [outputs[i] for i in (7, 2, 4, 0, 8, 5, 1, 6, 3)]
    boxes, _, kps = decode_scrfd(shuffled, INPUT_HW, 0.5)
    assert boxes.tolist() == [SCRFD_BOX]
    np.testing.assert_array_equal(kps[0], SCRFD_KPS)


def test_decode_scrfd_threshold_and_anchor_centres() -> None:
    boxes, scores, _ = decode_scrfd(_scrfd_outputs(), INPUT_HW, 0.05)
    assert len(scores) == (96 + 24 + 6) * 2
    # Distances 0.5 stride around each centre: the first stride-8 anchors sit at (0, 0).
    assert boxes[0].tolist() == boxes[1].tolist() == [-4, -4, 4, 4]
    assert boxes[2].tolist() == [4, -4, 12, 4]  # next cell: centre (8, 0)
    assert len(decode_scrfd(_scrfd_outputs(), INPUT_HW, 0.95)[1]) == 0


def test_decode_scrfd_rejects_wrong_layouts() -> None:
    outputs = _scrfd_outputs()
    with pytest.raises(ModelContractError, match="width 10"):
        decode_scrfd(outputs[:8], INPUT_HW, 0.5)
    with pytest.raises(ModelContractError, match="not a multiple"):
        decode_scrfd(outputs, (64, 80), 0.5)  # 80 stride-8 cells: 192 rows do not divide


# ---------------------------------------------------------------------------------------- yunet

YUNET_KPS_OFFSETS = np.array([[0.25, 0.0], [0.75, 0.0], [0.5, 0.5], [0.25, 1.0], [0.75, 1.0]])


def _yunet_outputs(cls: float = 0.81, obj: float = 1.0) -> dict[str, np.ndarray]:
    """Outputs by name, with a batch dim as the real model has; only stride 32 cell
    (column 2, row 1) fires: bbox (0.5, 0.25, ln 2, ln 3)."""
    outputs = {}
    for stride, (rows, cols) in CELLS.items():
        n = rows * cols
        outputs[f"cls_{stride}"] = np.full((1, n, 1), 0.01, np.float32)
        outputs[f"obj_{stride}"] = np.full((1, n, 1), 0.01, np.float32)
        outputs[f"bbox_{stride}"] = np.zeros((1, n, 4), np.float32)
        outputs[f"kps_{stride}"] = np.zeros((1, n, 10), np.float32)
    fired = 1 * 3 + 2
    outputs["cls_32"][0, fired] = cls
    outputs["obj_32"][0, fired] = obj
    outputs["bbox_32"][0, fired] = (0.5, 0.25, math.log(2.0), math.log(3.0))
    outputs["kps_32"][0, fired] = YUNET_KPS_OFFSETS.ravel()
    return outputs


YUNET_KPS = (np.array([2.0, 1.0]) + YUNET_KPS_OFFSETS) * 32


def test_decode_yunet_one_cell_gives_exact_box_and_kps() -> None:
    boxes, scores, kps = decode_yunet(_yunet_outputs(), INPUT_HW, 0.5)
    assert boxes.dtype == scores.dtype == kps.dtype == np.float32
    assert boxes.shape == (1, 4) and kps.shape == (1, 5, 2)
    # centre ((2 + .5) * 32, (1 + .25) * 32) = (80, 40); size (2 * 32, 3 * 32) = (64, 96).
    np.testing.assert_allclose(boxes[0], [48, -8, 112, 88], atol=1e-4)
    assert scores[0] == pytest.approx(0.9)  # sqrt(0.81 * 1.0)
    np.testing.assert_allclose(kps[0], YUNET_KPS, atol=1e-5)


def test_decode_yunet_clips_cls_and_obj_and_ignores_extra_outputs() -> None:
    outputs = _yunet_outputs(cls=1.7, obj=0.81) | {"extra": np.zeros(3)}
    scores = decode_yunet(outputs, INPUT_HW, 0.5)[1]
    assert scores.tolist() == pytest.approx([0.9])
    assert len(decode_yunet(_yunet_outputs(cls=0.9, obj=-0.5), INPUT_HW, 0.05)[1]) == 0
    squeezed = {k: v[0] for k, v in _yunet_outputs().items()}
    assert decode_yunet(squeezed, INPUT_HW, 0.5)[1].tolist() == pytest.approx([0.9])


def test_decode_yunet_rejects_missing_or_misshapen_outputs() -> None:
    outputs = _yunet_outputs()
    del outputs["kps_16"]
    with pytest.raises(ModelContractError, match="kps_16"):
        decode_yunet(outputs, INPUT_HW, 0.5)
    with pytest.raises(ModelContractError, match="cells"):
        decode_yunet(_yunet_outputs(), (64, 64), 0.5)



def _gridded_yunet(outputs: dict[str, np.ndarray], input_hw: tuple[int, int],
                   threshold: float) -> list[tuple[np.ndarray, ...]]:
    """Each stride's decode from the whole grid of cells (meshgrid), np.clip'ed scores: what
    decode_yunet is held bit-identical to."""
    parts = []
    for stride in (8, 16, 32):
        rows, cols = math.ceil(input_hw[0] / stride), math.ceil(input_hw[1] / stride)
        col_idx, row_idx = np.meshgrid(np.arange(cols), np.arange(rows))
        cells = np.stack([col_idx.ravel(), row_idx.ravel()], axis=1).astype(np.float32)
        cls, obj = (np.clip(outputs[f"{k}_{stride}"].reshape(-1), 0.0, 1.0) for k in ("cls", "obj"))
        score = np.sqrt(cls * obj)
        hit = score >= threshold
        bbox = outputs[f"bbox_{stride}"].reshape(-1, 4)[hit]
        centre = (cells[hit] + bbox[:, :2]) * np.float32(stride)
        half = np.exp(bbox[:, 2:]) * np.float32(stride / 2)
        kps = (cells[hit][:, None, :] + outputs[f"kps_{stride}"].reshape(-1, 5, 2)[hit])
        parts.append((np.concatenate([centre - half, centre + half], axis=1), score[hit],
                      kps * np.float32(stride)))
    return [np.concatenate(group) for group in zip(*parts)]


def test_decode_yunet_is_bit_identical_to_the_gridded_decode() -> None:
    rng = np.random.default_rng(3)
    input_hw = (640, 640)
    outputs = {}
    for stride in (8, 16, 32):
        n = (640 // stride) ** 2
        for kind, width in (("cls", 1), ("obj", 1), ("bbox", 4), ("kps", 10)):
            outputs[f"{kind}_{stride}"] = rng.normal(0.5, 0.4, (1, n, width)).astype(np.float32)
    outputs["cls_8"][0, :5] = np.nan
    for threshold in (0.3, 0.6, 0.95):
        got = decode_yunet(outputs, input_hw, threshold)
        expected = _gridded_yunet(outputs, input_hw, threshold)
        assert len(got[1]) > 0
        for a, b in zip(got, expected, strict=True):
            assert a.dtype == np.float32 and np.array_equal(a, b)

# ------------------------------------------------------------------------------- to frame space


def test_to_faces_maps_to_frame_sorts_suppresses_and_clips_only_boxes() -> None:
    boxes = np.array([[10, 10, 50, 50], [12, 10, 52, 50], [-20, 60, 40, 120]], np.float32)
    scores = np.array([0.6, 0.7, 0.9], np.float32)
    kps = np.stack([np.full((5, 2), 30.0), np.full((5, 2), 31.0),
                    np.array([[-10.0, 70.0]] * 5)]).astype(np.float32)
    faces = to_faces((boxes, scores, kps), 2.0, (50, 60), 0.4)
    assert [f.score for f in faces] == pytest.approx([0.9, 0.7])
    assert faces[0].bbox_xyxy.tolist() == [0, 30, 20, 50]  # (-10, 30, 20, 60) clipped to 60x50
    assert faces[0].kps5.tolist() == [[-5.0, 35.0]] * 5  # landmarks are never clipped
    assert faces[1].bbox_xyxy.tolist() == [6, 5, 26, 25]
    for face in faces:
        assert face.bbox_xyxy.dtype == face.kps5.dtype == np.float32
        assert face.kps5.shape == (5, 2) and face.embedding is None
        assert isinstance(face.score, float)


def test_to_faces_of_nothing_is_empty() -> None:
    empty = (np.zeros((0, 4), np.float32), np.zeros((0,), np.float32),
             np.zeros((0, 5, 2), np.float32))
    assert to_faces(empty, 1.0, (10, 10), 0.4) == ()


# ------------------------------------------------------------------- classes with fake sessions


class FakeSession:
    """Stands in for an InferenceSession: fixed input/output names, canned outputs."""

    def __init__(self, input_name: str, outputs: list[np.ndarray] | dict[str, np.ndarray]) -> None:
        self._input_name = input_name
        self._outputs = outputs
        self.feeds: list[dict[str, np.ndarray]] = []

    def get_inputs(self) -> list[SimpleNamespace]:
        return [SimpleNamespace(name=self._input_name)]

    def get_outputs(self) -> list[SimpleNamespace]:
        names = list(self._outputs) if isinstance(self._outputs, dict) else [
            str(i) for i in range(len(self._outputs))]
        return [SimpleNamespace(name=n) for n in names]

    def run(self, names: list[str] | None, feed: dict[str, np.ndarray]) -> list[np.ndarray]:
        self.feeds.append(feed)
        if isinstance(self._outputs, dict):
            assert names is not None
            return [self._outputs[n] for n in names]
        return list(self._outputs)


def test_scrfd_detector_feeds_the_real_input_name_and_maps_to_frame() -> None:
    session = FakeSession("input", _scrfd_outputs(batch=True))
    detector = ScrfdDetector(session, SCRFD, input_size=(96, 64))
    assert detector.input_size == (96, 64)
    frame = np.zeros((32, 48, 4), np.uint8)  # scale 2; alpha ignored
    faces = detector.detect(frame)
    (feed,) = session.feeds
    assert list(feed) == ["input"] and feed["input"].shape == (1, 3, 64, 96)
    assert len(faces) == 1
    assert faces[0].bbox_xyxy.tolist() == [16, 0, 48, 32]  # (32, 0, 96, 96) / 2, clipped
    np.testing.assert_array_equal(faces[0].kps5, SCRFD_KPS / 2)


def test_yunet_detector_maps_outputs_by_name() -> None:
    outputs = _yunet_outputs()
    reordered = {k: outputs[k] for k in sorted(outputs, reverse=True)}
    session = FakeSession("input", reordered)
    family = _family("yunet", "bgr", 0.0, 1.0, input_size=(96, 64))
    detector = YunetDetector(session, family)
    faces = detector.detect(np.zeros((64, 96, 3), np.uint8))
    assert detector.input_size == (96, 64)
    assert len(faces) == 1 and faces[0].score == pytest.approx(0.9)
    np.testing.assert_allclose(faces[0].kps5, YUNET_KPS, atol=1e-5)
    np.testing.assert_allclose(faces[0].bbox_xyxy, [48, 0, 96, 64], atol=1e-4)


def test_detectors_default_to_the_family_size_and_validate_options() -> None:
    session = FakeSession("input.1", [])
    assert ScrfdDetector(session, SCRFD).input_size == (640, 640)
    small = ScrfdDetector(session, SCRFD, input_size=320)
    assert small.input_size == (320, 320)
    with pytest.raises(InputError):
        ScrfdDetector(session, SCRFD, input_size=(100, 640))
    with pytest.raises(InputError):
        ScrfdDetector(session, SCRFD, score_threshold=1.5)
    with pytest.raises(InputError):
        YunetDetector(session, YUNET, nms_iou=0.0)


def test_detectors_reject_non_uint8_frames() -> None:
    detector = ScrfdDetector(FakeSession("input.1", []), SCRFD)
    with pytest.raises(TypeError, match="to_display_uint8"):
        detector.detect(np.zeros((8, 8, 3), np.float32))
    with pytest.raises(TypeError):
        detector.detect(np.zeros((8, 8), np.uint8))


def test_detectors_expose_nothing_mutable() -> None:
    detector = ScrfdDetector(FakeSession("input.1", []), SCRFD)
    with pytest.raises(AttributeError):
        detector.input_size = (320, 320)  # type: ignore[misc]
    with pytest.raises(AttributeError):
        detector.anything = 1  # type: ignore[attr-defined]
