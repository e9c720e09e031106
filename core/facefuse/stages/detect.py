"""Face detection: SCRFD (InsightFace det_* / retinaface_10g) and YuNet 2023mar.

Coordinate spaces:
    frame   the caller's picture, BGR uint8 (H, W, 3|4); pixels, x right, y down.
    canvas  the detector input: the frame resized by ``scale`` (keeping its aspect) and placed at
            the top-left of a zero canvas of the detector size, so ``canvas = frame * scale``.
Decoders work in canvas pixels; the classes map results back to frame pixels (divide by scale).

Landmarks come out in the order left eye, right eye, nose tip, left mouth corner, right mouth
corner as they appear in the image (the subject's right eye is the image's left eye). Both model
families already emit that order; the golden tests pin it.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Mapping, Sequence
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Self

import cv2
import numpy as np

from ..config import Settings
from ..errors import InputError, ModelContractError
from ..models.manifest import Family
from ..types import Face
from .boxes import nms
from .roles import ModelFile

if TYPE_CHECKING:
    import onnxruntime as ort

log = logging.getLogger(__name__)

STRIDES = (8, 16, 32)
NMS_IOU = 0.4
# A box with at least this share of its own area inside a higher-scoring kept box is dropped: a
# spurious low-score box nested in a real face (an eye or a mouth taken for a small face) has a
# small IoU with it, so IoU-based NMS alone keeps it. Two real faces overlap far less than this
# (a face half hidden behind another one shares about half of its box).
CONTAINED_SHARE = 0.8
_GROUP_WIDTHS = MappingProxyType({"score": 1, "bbox": 4, "kps": 10})

# Decoded detections in canvas pixels: boxes float32 (N, 4) xyxy, scores float32 (N,),
# kps float32 (N, 5, 2).
Detections = tuple[np.ndarray, np.ndarray, np.ndarray]


# --------------------------------------------------------------------------------------------
# Geometry shared by both families.


def letterbox(image_bgr_uint8: np.ndarray, size_wh: tuple[int, int]) -> tuple[np.ndarray, float]:
    """Fit an image into a (width, height) canvas keeping its aspect, placed top-left.

    image_bgr_uint8: uint8 (H, W, 3). Returns the canvas, uint8 (size_h, size_w, 3) with zeros
    right and below the picture, and ``scale`` = resized / original (canvas px per frame px).
    """
    height, width = image_bgr_uint8.shape[:2]
    size_w, size_h = int(size_wh[0]), int(size_wh[1])
    scale = min(size_w / width, size_h / height)
    new_w = min(size_w, max(1, round(width * scale)))
    new_h = min(size_h, max(1, round(height * scale)))
    interpolation = cv2.INTER_AREA if scale < 1.0 else cv2.INTER_LINEAR
    resized = cv2.resize(image_bgr_uint8, (new_w, new_h), interpolation=interpolation)
    canvas = np.zeros((size_h, size_w, 3), dtype=np.uint8)
    canvas[:new_h, :new_w] = resized
    return canvas, float(scale)


def _to_blob(canvas: np.ndarray, colour: str, mean: float, std: float) -> np.ndarray:
    """BGR uint8 (H, W, 3) -> float32 (1, 3, H, W) in the given channel order, (x - mean) / std."""
    # contiguous planes, each cast in one SIMD pass, then normalised in place
    planes = cv2.split(np.ascontiguousarray(canvas))
    blob = np.empty((1, 3, canvas.shape[0], canvas.shape[1]), dtype=np.float32)
    for channel, plane in enumerate(planes[::-1] if colour == "rgb" else planes):
        blob[0, channel] = plane
    if mean != 0.0:
        blob -= np.float32(mean)
    if std != 1.0:
        blob *= np.float32(1.0 / std)
    return blob


def _grid_xy(input_hw: tuple[int, int], stride: int) -> np.ndarray:
    """Cell indices (column, row) of a stride's feature map, row-major; float32 (cells, 2)."""
    rows, cols = math.ceil(input_hw[0] / stride), math.ceil(input_hw[1] / stride)
    col_idx, row_idx = np.meshgrid(np.arange(cols), np.arange(rows))
    return np.stack([col_idx.ravel(), row_idx.ravel()], axis=1).astype(np.float32)


def _cells_xy(input_hw: tuple[int, int], stride: int, hit: np.ndarray) -> np.ndarray:
    """_grid_xy(input_hw, stride)[hit] for a boolean `hit` over its cells, without the grid."""
    cols = math.ceil(input_hw[1] / stride)
    rows, columns = np.divmod(np.flatnonzero(hit), cols)
    return np.stack([columns, rows], axis=1).astype(np.float32)


def _concat(parts: list[Detections]) -> Detections:
    """Join per-stride detections (in stride order) into one Detections triple."""
    boxes, scores, kps = (np.concatenate(group).astype(np.float32) for group in zip(*parts))
    return boxes, scores, kps


# --------------------------------------------------------------------------------------------
# SCRFD.


def preprocess_scrfd(canvas: np.ndarray, family: Family) -> np.ndarray:
    """Canvas BGR uint8 (H, W, 3) -> float32 (1, 3, H, W), family.colour order, (x-mean)/std."""
    return _to_blob(canvas, family.colour, family.mean, family.std)


def _squeeze_batch(output: np.ndarray) -> np.ndarray:
    """(1, N, C) -> (N, C); (N, C) unchanged."""
    array = np.asarray(output)
    if array.ndim == 3 and array.shape[0] == 1:
        array = array[0]
    if array.ndim != 2:
        raise ModelContractError(f"a detector output has shape {array.shape}; expected (N, C) "
                                 "or (1, N, C)")
    return array


def group_scrfd_outputs(outputs: Sequence[np.ndarray]) -> dict[str, list[np.ndarray]]:
    """Sort SCRFD's 9 outputs into score/bbox/kps lists, each ordered stride 8, 16, 32.

    Group by last dimension (1 score, 4 bbox, 10 kps); within a group, more rows = finer stride.
    Raises ModelContractError when the outputs do not form three groups of three.
    """
    arrays = [_squeeze_batch(o) for o in outputs]
    groups: dict[str, list[np.ndarray]] = {}
    for key, width in _GROUP_WIDTHS.items():
        members = [a for a in arrays if a.shape[1] == width]
        if len(members) != len(STRIDES):
            raise ModelContractError(
                f"SCRFD needs {len(STRIDES)} outputs of width {width} ({key}); got shapes "
                f"{[a.shape for a in arrays]}")
        groups[key] = sorted(members, key=lambda a: -a.shape[0])
    return groups


def _scrfd_anchor_centres(input_hw: tuple[int, int], stride: int, rows: int) -> np.ndarray:
    """Anchor centres (x*stride, y*stride), float32 (rows, 2); anchors of one cell adjacent."""
    cells = _grid_xy(input_hw, stride)
    anchors, remainder = divmod(rows, len(cells))
    if remainder or anchors < 1:
        raise ModelContractError(f"SCRFD stride {stride} output has {rows} rows, not a multiple "
                                 f"of the {len(cells)} cells of a {input_hw} input")
    return np.repeat(cells * np.float32(stride), anchors, axis=0)


def _decode_scrfd_stride(score: np.ndarray, bbox: np.ndarray, kps: np.ndarray,
                         centres: np.ndarray, stride: int, threshold: float) -> Detections:
    """One stride: distances and offsets (in strides) around anchor centres -> canvas pixels."""
    hit = score[:, 0] >= threshold
    centre = centres[hit]
    dist = bbox[hit].astype(np.float32) * np.float32(stride)
    boxes = np.concatenate([centre - dist[:, :2], centre + dist[:, 2:]], axis=1)
    offsets = kps[hit].astype(np.float32).reshape(-1, 5, 2) * np.float32(stride)
    return boxes, score[hit, 0].astype(np.float32), centre[:, None, :] + offsets


def decode_scrfd(outputs: Sequence[np.ndarray], input_hw: tuple[int, int],
                 score_threshold: float) -> Detections:
    """SCRFD raw outputs (any order, batch dim optional) -> detections in canvas pixels.

    input_hw: the canvas (height, width). Returns boxes float32 (N, 4) xyxy, scores float32 (N,),
    kps float32 (N, 5, 2); unsorted, before NMS. Scores are the model's (already sigmoid) values.
    """
    groups = group_scrfd_outputs(outputs)
    parts = []
    for stride, score, bbox, kps in zip(STRIDES, groups["score"], groups["bbox"], groups["kps"]):
        if not score.shape[0] == bbox.shape[0] == kps.shape[0]:
            raise ModelContractError(f"SCRFD stride {stride} outputs disagree in length: "
                                     f"{score.shape}, {bbox.shape}, {kps.shape}")
        centres = _scrfd_anchor_centres(input_hw, stride, score.shape[0])
        parts.append(_decode_scrfd_stride(score, bbox, kps, centres, stride, score_threshold))
    return _concat(parts)


# --------------------------------------------------------------------------------------------
# YuNet.


def preprocess_yunet(canvas: np.ndarray, family: Family) -> np.ndarray:
    """Canvas BGR uint8 (H, W, 3) -> float32 (1, 3, H, W); YuNet takes raw BGR 0..255."""
    return _to_blob(canvas, family.colour, family.mean, family.std)


def _decode_yunet_stride(outputs: Mapping[str, np.ndarray], input_hw: tuple[int, int],
                         stride: int, threshold: float) -> Detections:
    """One stride: score sqrt(cls*obj); box centre (cell + d) * stride, size exp(s) * stride."""
    cls, obj = (_unit_clipped(outputs[f"{kind}_{stride}"]) for kind in ("cls", "obj"))
    cells = math.ceil(input_hw[0] / stride) * math.ceil(input_hw[1] / stride)
    if cls.size != cells:
        raise ModelContractError(f"YuNet cls_{stride} has {cls.size} entries; a {input_hw} "
                                 f"input has {cells} cells at stride {stride}")
    score = np.sqrt(cls * obj)
    hit = score >= threshold
    cell = _cells_xy(input_hw, stride, hit)
    bbox = np.asarray(outputs[f"bbox_{stride}"], np.float32).reshape(-1, 4)[hit]
    offsets = np.asarray(outputs[f"kps_{stride}"], np.float32).reshape(-1, 5, 2)[hit]
    centre = (cell + bbox[:, :2]) * np.float32(stride)
    half = np.exp(bbox[:, 2:]) * np.float32(stride / 2)
    boxes = np.concatenate([centre - half, centre + half], axis=1)
    kps = (cell[:, None, :] + offsets) * np.float32(stride)
    return boxes, score[hit], kps


def _unit_clipped(output: np.ndarray) -> np.ndarray:
    """A YuNet score output flattened to float32 and clipped to [0, 1] (NaN stays NaN)."""
    flat = np.asarray(output, np.float32).reshape(-1)
    return np.minimum(np.maximum(flat, np.float32(0.0)), np.float32(1.0))


def decode_yunet(outputs: Mapping[str, np.ndarray], input_hw: tuple[int, int],
                 score_threshold: float) -> Detections:
    """YuNet 2023mar outputs by name (cls_/obj_/bbox_/kps_ + stride) -> canvas-pixel detections.

    input_hw: the canvas (height, width). Returns boxes float32 (N, 4) xyxy, scores float32 (N,),
    kps float32 (N, 5, 2); unsorted, before NMS. A missing output raises ModelContractError.
    """
    missing = [f"{kind}_{s}" for s in STRIDES for kind in ("cls", "obj", "bbox", "kps")
               if f"{kind}_{s}" not in outputs]
    if missing:
        raise ModelContractError(f"YuNet outputs lack {', '.join(missing)}")
    return _concat([_decode_yunet_stride(outputs, input_hw, s, score_threshold)
                    for s in STRIDES])


# --------------------------------------------------------------------------------------------
# Shared tail and the detector classes.


def to_faces(detections: Detections, scale: float, frame_hw: tuple[int, int],
             nms_iou: float) -> tuple[Face, ...]:
    """NMS in canvas pixels, then map to frame pixels (divide by scale), highest score first.

    NMS also drops boxes lying mostly inside a stronger one (CONTAINED_SHARE). Boxes are clipped
    to the frame (width frame_hw[1], height frame_hw[0]); landmarks are not.
    """
    boxes, scores, kps = detections
    keep = nms(boxes, scores, nms_iou, CONTAINED_SHARE)
    limit = np.array([frame_hw[1], frame_hw[0]] * 2, dtype=np.float32)
    faces = []
    for i in keep:
        box = np.clip(boxes[i] / np.float32(scale), 0.0, limit).astype(np.float32)
        points = (kps[i] / np.float32(scale)).astype(np.float32)
        faces.append(Face(bbox_xyxy=box, kps5=points, score=float(scores[i])))
    return tuple(faces)


def _bgr_frame(frame: np.ndarray) -> np.ndarray:
    """Check a frame is uint8 (H, W, 3|4) and return its BGR part."""
    if frame.dtype != np.uint8 or frame.ndim != 3 or frame.shape[2] not in (3, 4):
        raise TypeError(f"detectors take BGR(A) uint8 (H, W, 3|4) frames, not {frame.dtype} "
                        f"{frame.shape}; convert with geometry.to_display_uint8")
    return np.ascontiguousarray(frame[..., :3])


def _size_wh(size: int | tuple[int, int] | None, family: Family) -> tuple[int, int]:
    """The detector input (width, height): given, else the family's, else 640 x 640."""
    if size is None:
        size = family.input_size or (640, 640)
    width, height = (size, size) if isinstance(size, int) else (int(size[0]), int(size[1]))
    if width <= 0 or height <= 0 or width % 32 or height % 32:
        raise InputError(f"detector input size must be positive multiples of 32, not {size}")
    return width, height


def _check_thresholds(score_threshold: float, nms_iou: float) -> None:
    if not 0.0 <= score_threshold <= 1.0:
        raise InputError(f"detector score threshold must be within 0..1, not {score_threshold}")
    if not 0.0 < nms_iou <= 1.0:
        raise InputError(f"NMS IoU threshold must be within (0, 1], not {nms_iou}")


class _LetterboxDetector:
    """What every detector family shares: letterbox the frame, run, decode, NMS, map back.

    session: an onnxruntime.InferenceSession with one input; family: the manifest family.
    input_size: (width, height) or one int; None means family.input_size.
    """

    __slots__ = ("_family", "_input_name", "_nms_iou", "_score", "_session", "_size_wh")

    def __init__(self, session: ort.InferenceSession, family: Family, score_threshold: float = 0.5,
                 nms_iou: float = NMS_IOU, input_size: int | tuple[int, int] | None = None
                 ) -> None:
        _check_thresholds(score_threshold, nms_iou)
        self._session = session
        self._family = family
        self._input_name = session.get_inputs()[0].name
        self._size_wh = _size_wh(input_size, family)
        self._score = float(score_threshold)
        self._nms_iou = float(nms_iou)

    @property
    def input_size(self) -> tuple[int, int]:
        """Detector input (width, height) in canvas pixels."""
        return self._size_wh

    def detect(self, frame: np.ndarray) -> tuple[Face, ...]:
        """Faces in a BGR(A) uint8 (H, W, 3|4) frame, frame pixels, highest score first."""
        bgr = _bgr_frame(frame)
        canvas, scale = letterbox(bgr, self._size_wh)
        detections = self._run_and_decode(canvas)
        faces = to_faces(detections, scale, (bgr.shape[0], bgr.shape[1]), self._nms_iou)
        log.debug("%s: %d candidates, %d faces", self._family.name, len(detections[1]),
                  len(faces))
        return faces

    def _run_and_decode(self, canvas: np.ndarray) -> Detections:
        raise NotImplementedError


class ScrfdDetector(_LetterboxDetector):
    """SCRFD / RetinaFace detector (scrfd family); any input size that is a multiple of 32."""

    __slots__ = ()

    @classmethod
    def build(cls, session: Any, family: Family, settings: Settings, model: ModelFile) -> Self:
        """Input size and score threshold from the settings."""
        size = (settings.detector_size_px, settings.detector_size_px)
        return cls(session, family, score_threshold=settings.detector_score, input_size=size)

    def _run_and_decode(self, canvas: np.ndarray) -> Detections:
        blob = preprocess_scrfd(canvas, self._family)
        outputs = self._session.run(None, {self._input_name: blob})
        return decode_scrfd(outputs, (canvas.shape[0], canvas.shape[1]), self._score)


class YunetDetector(_LetterboxDetector):
    """YuNet 2023mar detector (yunet family), fixed 640 x 640 input; outputs mapped by name."""

    __slots__ = ("_output_names",)

    def __init__(self, session: ort.InferenceSession, family: Family, score_threshold: float = 0.5,
                 nms_iou: float = NMS_IOU) -> None:
        super().__init__(session, family, score_threshold, nms_iou)
        self._output_names = tuple(o.name for o in session.get_outputs())

    @classmethod
    def build(cls, session: Any, family: Family, settings: Settings, model: ModelFile) -> Self:
        """Score threshold from the settings; YuNet's input size is fixed by the model."""
        return cls(session, family, score_threshold=settings.detector_score)

    def _run_and_decode(self, canvas: np.ndarray) -> Detections:
        blob = preprocess_yunet(canvas, self._family)
        values = self._session.run(list(self._output_names), {self._input_name: blob})
        return decode_yunet(dict(zip(self._output_names, values)),
                            (canvas.shape[0], canvas.shape[1]), self._score)
