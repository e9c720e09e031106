"""Helpers for whole-render tests (tests/integration/test_render_*.py, tests/hosts): media with a
real face, render requests, and reading the results back independently. No fixtures: the models
and cache they take come from tests/conftest.py (`render_models`, `render_cache`).

Media with a real face: every generated frame is media_factory.marked_frame(i) (its index burned in
as a binary marker at the top-left) with a photo of a face (testdata obama.jpg, cropped round the
face and shrunk) pasted at FACE_XY, far from the marker, so the real YuNet detector finds it.
Clips are written with PyAV directly and plates with OpenImageIO directly, never with the code
under test; reference frames are decoded the same independent way.

Models: `render_models` holds the contract models (identity and colour swappers, the 512-d
contract recogniser) and a copy of YuNet under its manifest file name, so the detector is located
by manifest name and carries its sha256 into provenance. Use `render_settings` / `render_request`
to build an offline, CPU-only RenderRequest on them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import fields as dataclass_fields
from dataclasses import replace
from fractions import Fraction
from functools import lru_cache
from pathlib import Path
from typing import Any

import av
import cv2
import numpy as np
import OpenImageIO as oiio

from facefuse.config import Settings
from facefuse.io.video import DecodeFailure
from facefuse.io.video.yuv import chroma_centred, picture_to_bgr
from facefuse.shot.contract.request import (
    FrameReport,
    FrameSpec,
    InputSpec,
    OutputSpec,
    PlanChoices,
    PolicyChoices,
    RenderRequest,
    RenderSummary,
    SigningChoices,
)
from facefuse.shot.run.render import render
from tests import media_factory
from tests.media_factory import marked_frame

YUNET_FILE = "face_detection_yunet_2023mar.onnx"
YUNET_NAME = "yunet_2023mar"  # its manifest name
YUNET_SHA256 = "8f2383e4dd3cfbb4553ea8718107fc0423210dc964f9f4280604804ed2552fa4"
SIZE = (320, 240)  # (width, height) of the generated media
FACE_SIZE = (96, 120)  # (width, height) of the pasted face photo: the face is ~60 px wide
FACE_XY = (190, 80)  # top-left corner of the pasted photo (the marker ends at x=200, y=24)
_OBAMA_FACE_BOX = (290, 20, 690, 520)  # x0, y0, x1, y1 of the face area in obama.jpg


# --- settings and requests ---------------------------------------------------------------------

def arrays(frames: Iterable[tuple[int, Any]]) -> Iterator[tuple[int, Any]]:
    """The (number, frame) pairs of a read with each frame as its whole engine frame
    (DecodedFrame.to_ndarray()), failures as they are."""
    for number, frame in frames:
        yield number, frame if isinstance(frame, DecodeFailure) else frame.to_ndarray()


def render_settings(models: Path, cache_dir: Path, swapper: str = "identity",
                    **changes: Any) -> Settings:
    """Real YuNet (by manifest name, from `models`), contract recogniser and the identity or
    colour contract swapper; offline, CPU only, models and caches in the given folders."""
    settings = Settings(
        detector=YUNET_NAME, recogniser=str(models / "recogniser_512.onnx"),
        swapper=str(models / f"{swapper}_swapper.onnx"), providers=("CPUExecutionProvider",),
        models_dir=models, cache_dir=cache_dir, offline=True)
    return replace(settings, **changes) if changes else settings


def render_request(models: Path, cache_dir: Path, source: Path, input: InputSpec | str | Path,
                   output: OutputSpec | str | Path, swapper: str = "identity",
                   settings: Mapping[str, Any] | None = None, **fields: Any) -> RenderRequest:
    """A RenderRequest for one source photo; `input` / `output` a spec or just its path,
    `settings` changes Settings fields. `fields`: the request's own (frames, plan, fail_fast),
    or, for tests that vary one option, a group's field by its name (matte=..., frames=(A, B)
    for the range, smoothing=...), put into its group."""
    groups: dict[str, dict[str, Any]] = {name: {} for name in _GROUPS}
    for name, value in list(fields.items()):
        if name == "frames" and not isinstance(value, FrameSpec):
            groups["frames"]["range"] = fields.pop(name)
        elif name in _GROUP_OF:
            groups[_GROUP_OF[name]][name] = fields.pop(name)
    made = {"input": input if isinstance(input, InputSpec) else InputSpec(str(input)),
            "output": output if isinstance(output, OutputSpec) else OutputSpec(str(output))}
    for name, kind in _GROUPS.items():
        base = made.get(name) or fields.pop(name, None) or kind()
        made[name] = replace(base, **groups[name]) if groups[name] else base
    return RenderRequest(
        sources=(Path(source),),
        settings=render_settings(models, cache_dir, swapper, **(settings or {})),
        **made, **fields)


_GROUPS: Mapping[str, Any] = {"input": InputSpec, "frames": FrameSpec, "plan": PlanChoices,
                              "output": OutputSpec, "policy": PolicyChoices,
                              "signing": SigningChoices}
_GROUP_OF = {f.name: group for group, kind in _GROUPS.items() for f in dataclass_fields(kind)
             if f.name not in ("path", "range")}


def run_render(request: RenderRequest) -> tuple[RenderSummary, list[FrameReport]]:
    """render() with the progress reports collected (the callback runs on a worker thread;
    the list is complete once render() returns)."""
    reports: list[FrameReport] = []
    summary = render(request, reports.append)
    return summary, reports


def cli_args(models: Path, source: Path, input: str | Path, output: str | Path,
             *extra: str, swapper: str = "identity") -> list[str]:
    """`facefuse render ...` arguments matching render_settings (cache: $FACEFUSE_CACHE)."""
    return ["render", "-i", str(input), "-o", str(output), "-s", str(source),
            "--detector", YUNET_NAME, "--recogniser", str(models / "recogniser_512.onnx"),
            "--swapper", str(models / f"{swapper}_swapper.onnx"), "--providers", "cpu",
            "--models-dir", str(models), "--offline", *extra]


# --- pictures ----------------------------------------------------------------------------------

@lru_cache(maxsize=4)
def face_photo(testdata: Path, size: tuple[int, int] = FACE_SIZE) -> np.ndarray:
    """obama.jpg cut round the face and shrunk to `size` (width, height): BGR uint8."""
    photo = cv2.imread(str(testdata / "media" / "obama.jpg"), cv2.IMREAD_COLOR)
    x0, y0, x1, y1 = _OBAMA_FACE_BOX
    face = cv2.resize(photo[y0:y1, x0:x1], size, interpolation=cv2.INTER_AREA)
    face.setflags(write=False)
    return face


def face_frame(index: int, face: np.ndarray | None, size: tuple[int, int] = SIZE,
               alpha: bool = False) -> np.ndarray:
    """marked_frame(index) with `face` pasted at FACE_XY (None: no face). BGR(A) uint8."""
    frame = marked_frame(index, size, alpha)
    if face is not None:
        x, y = FACE_XY
        h, w = face.shape[:2]
        frame[y:y + h, x:x + w, :3] = face
    return frame


def make_face_clip(path: Path, face: np.ndarray, frames: int = 12,
                   rate: Fraction = Fraction(24), codec: str = "h264",
                   timecode: str | None = "01:00:00:00", audio: str | None = "aac",
                   without_face: Iterable[int] = (), size: tuple[int, int] = SIZE,
                   gop: int | None = 6, matrix: str | None = "itu709",
                   picture: Callable[[int], np.ndarray] | None = None,
                   zeroed: Iterable[int] = ()) -> Path:
    """A clip whose frame i (0-based) is face_frame(i), without the face for `without_face`, or
    picture(i) when given. codec as media_factory (h264 with B-frames, mjpeg, prores_422,
    prores_4444, ffv1); gop None: the encoder's own; matrix: the RGB -> YUV matrix (None:
    swscale's default); audio: a tone as long as the video (codec name, e.g. "aac" or
    "pcm_s16le") or None. `zeroed`: 0-based indices whose packet payloads are then overwritten
    with zeros in the file (same length: the demuxer still indexes every frame, the decoder
    cannot decode those)."""
    path = Path(path)
    missing = set(without_face)
    alpha = codec == "prores_4444"
    packed = "bgra" if alpha else "bgr24"
    conversion = {"dst_colorspace": matrix} if matrix else {}
    with av.open(str(path), "w") as container:
        stream = media_factory._video_stream(container, codec, Fraction(rate), size, gop, None)
        if timecode:
            stream.metadata["timecode"] = timecode
        tone = media_factory._add_audio(container, audio, frames / rate) if audio else None
        for i in range(frames):
            pixels = (picture(i) if picture is not None
                      else face_frame(i, None if i in missing else face, size, alpha))
            frame = av.VideoFrame.from_ndarray(pixels, format=packed)
            frame = frame.reformat(format=stream.pix_fmt, **conversion,
                                   dst_color_range=2 if stream.pix_fmt.startswith("yuvj") else 1)
            frame.pts = i
            container.mux(stream.encode(frame))
        container.mux(stream.encode(None))
        if tone is not None:
            media_factory._encode_tone(container, tone, float(frames / Fraction(rate)))
    if zeroed:
        _zero_packets(path, tuple(zeroed))
    return path


def _zero_packets(path: Path, indices: tuple[int, ...]) -> None:
    with av.open(str(path)) as container:
        packets = [(p.pos, bytes(p)) for p in container.demux(container.streams.video[0])
                   if p.size]
    data = bytearray(path.read_bytes())
    for index in indices:
        pos, payload = packets[index]
        start = data.index(payload[:64], pos)
        data[start:start + len(payload)] = bytes(len(payload))
    path.write_bytes(bytes(data))


def decode_video(path: Path, fmt: str = "bgr24") -> list[np.ndarray]:
    """Every picture of the first video stream in presentation order (PyAV, like VideoSource:
    8-bit YUV pictures to bgr24, and 10-bit limited-range planar ones to bgr48le, through
    io.video.yuv's chroma upsampling at the codec's siting and its matrix rounded once, which
    tests/unit/io/video/test_yuv*.py check against the float64 formula; others
    through 4:4:4 and swscale)."""
    with av.open(str(path)) as container:
        stream = container.streams.video[0]
        centred = chroma_centred(stream.codec_context.name)
        frames = sorted(((f.pts, _as_array(f, fmt, centred)) for f in container.decode(stream)),
                        key=lambda item: item[0])
    return [np.ascontiguousarray(array) for _, array in frames]


def _as_array(frame: Any, fmt: str, centred: bool) -> np.ndarray:
    fast = picture_to_bgr(frame, centred) if fmt in ("bgr24", "bgr48le") else None
    if fast is not None and fast.dtype == (np.uint16 if fmt == "bgr48le" else np.uint8):
        return fast
    return _through_444(frame).to_ndarray(format=fmt)


def _through_444(frame: Any) -> Any:
    target = {"yuv420p": "yuv444p", "yuv422p": "yuv444p", "yuvj420p": "yuvj444p",
              "yuvj422p": "yuvj444p"}.get(frame.format.name)
    return frame.reformat(format=target) if target else frame


# --- plates through OpenImageIO directly --------------------------------------------------------

def write_plate_oiio(path: Path, pixels_rgb: np.ndarray, pixel_type: str, bits: int = 0,
                     attributes: Mapping[str, Any] | None = None) -> Path:
    """Write RGB(A) `pixels_rgb` (H, W, C) to `path` with OIIO as `pixel_type` ("half",
    "float", "uint16", "uint8"). `bits` < 16 for uint16 writes that many bits (10-bit DPX): the
    values must then be bit-replicated codes (see codes_to_uint16), which OIIO stores exactly."""
    height, width, channels = pixels_rgb.shape
    spec = oiio.ImageSpec(width, height, channels, pixel_type)
    spec.channelnames = ("R", "G", "B", "A")[:channels]
    if channels == 4:
        spec.alpha_channel = 3
    if bits:
        spec.attribute("oiio:BitsPerSample", bits)
    for name, value in (attributes or {}).items():
        spec.attribute(name, value)
    out = oiio.ImageOutput.create(str(path))
    assert out is not None, oiio.geterror()
    assert out.open(str(path), spec), out.geterror()
    assert out.write_image(np.ascontiguousarray(pixels_rgb)), out.geterror()
    assert out.close()
    return path


def read_plate_oiio(path: Path) -> tuple[np.ndarray, Any]:
    """(pixels as stored, RGB(A) order: float32 for half/float, else the integer type; spec).
    Straight-alpha files (PNG) are read as stored, not premultiplied."""
    config = oiio.ImageSpec()
    config.attribute("oiio:UnassociatedAlpha", 1)
    image = oiio.ImageInput.open(str(path), config)
    assert image is not None, oiio.geterror()
    try:
        spec = image.spec()
        stored = str(spec.format)
        pixels = image.read_image(format="float" if stored in ("half", "float") else stored)
        assert pixels is not None, image.geterror()
    finally:
        image.close()
    if pixels.ndim == 2:
        pixels = pixels[..., None]
    return pixels, spec


def plate_attributes(path: Path) -> dict[str, Any]:
    """Every extra attribute of an image file, by name (OIIO)."""
    _, spec = read_plate_oiio(path)
    return {p.name: p.value for p in spec.extra_attribs}


def codes_to_uint16(codes: np.ndarray, bits: int) -> np.ndarray:
    """`bits`-bit codes as the uint16 values OIIO reads them as (10-bit c -> c<<6 | c>>4)."""
    codes = codes.astype(np.uint32)
    value, shift = codes << (16 - bits), 16 - bits
    while shift > 0:
        value |= codes >> (bits - shift) if bits > shift else codes << (shift - bits)
        shift -= bits
    return value.astype(np.uint16)


def srgb_to_linear(encoded: np.ndarray) -> np.ndarray:
    """The sRGB transfer curve decoded (IEC 61966-2-1), float64."""
    c = np.asarray(encoded, np.float64)
    return np.where(c <= 0.04045, c / 12.92, ((c + 0.055) / 1.055) ** 2.4)


def linear_to_srgb(linear: np.ndarray) -> np.ndarray:
    c = np.asarray(linear, np.float64)
    return np.where(c <= 0.0031308, c * 12.92, 1.055 * np.abs(c) ** (1 / 2.4) - 0.055)


def sequence_files(folder: Path, prefix: str) -> list[Path]:
    return sorted(p for p in folder.iterdir() if p.name.startswith(prefix))


def stray_files(folder: Path) -> list[str]:
    """Temporary files (ours are hidden: .name.xxxx.tmp.ext) left in a folder."""
    return sorted(p.name for p in folder.iterdir() if p.name.startswith(".") or ".tmp" in p.name)


def matching_numbers(files: Sequence[Path]) -> list[int]:
    """The frame numbers of name.NNNN.ext files."""
    return [int(p.name.split(".")[-2]) for p in files]


def read_clip_opencv(path: Path) -> tuple[list[np.ndarray], float]:
    """Every frame of a clip as OpenCV decodes it (BGR uint8) and its frame rate: how the golden
    tests read the testdata clips, independent of the engine's own reader."""
    capture = cv2.VideoCapture(str(path))
    frames = []
    while True:
        ok, frame = capture.read()
        if not ok:
            break
        frames.append(frame)
    rate = float(capture.get(cv2.CAP_PROP_FPS))
    capture.release()
    return frames, rate
